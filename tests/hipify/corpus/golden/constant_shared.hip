// __constant__ memory filled with cudaMemcpyToSymbol; dynamic shared memory above the default limit.
#include <hip/hip_runtime.h>
#include <cstdio>

__constant__ float kCoefficients[16];

__global__ void stencil(const float* in, float* out, int n) {
  extern __shared__ float tile[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  float acc = 0.0f;
  for (int k = 0; k < 16; ++k) {
    int j = threadIdx.x + k;
    acc += kCoefficients[k] * (j < blockDim.x ? tile[j] : 0.0f);
  }
  if (i < n) out[i] = acc;
}

int main() {
  float host_coefficients[16];
  for (int k = 0; k < 16; ++k) host_coefficients[k] = 1.0f / 16;
  hipMemcpyToSymbol(kCoefficients, host_coefficients, sizeof(host_coefficients));
  const int n = 1 << 16, block = 1024;
  float *in, *out;
  hipMalloc(&in, n * sizeof(float));
  hipMalloc(&out, n * sizeof(float));
  size_t shared_bytes = block * sizeof(float);
  hipFuncSetAttribute(reinterpret_cast<const void*>(stencil), hipFuncAttributeMaxDynamicSharedMemorySize, (int)shared_bytes);
  stencil<<<n / block, block, shared_bytes>>>(in, out, n);
  hipError_t status = hipDeviceSynchronize();
  printf("stencil: %s\n", hipGetErrorString(status));
  hipFree(in);
  hipFree(out);
  return 0;
}
