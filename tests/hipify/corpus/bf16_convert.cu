// BF16 conversion kernels with cuda_bf16.h.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void to_bf16(const float* in, __nv_bfloat16* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16(in[i]);
}

int main() {
  const int n = 1024;
  float* in;
  __nv_bfloat16* out;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(__nv_bfloat16));
  to_bf16<<<n / 256, 256>>>(in, out, n);
  cudaDeviceSynchronize();
  cudaFree(in);
  cudaFree(out);
  return 0;
}
