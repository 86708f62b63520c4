// 1D complex-to-complex FFT forward and inverse with cuFFT.
#include <cufft.h>
#include <cuda_runtime.h>
#include <cstdio>

__global__ void normalize(cufftComplex* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    data[i].x /= n;
    data[i].y /= n;
  }
}

int main() {
  const int n = 4096;
  cufftComplex* data;
  cudaMalloc(&data, n * sizeof(cufftComplex));
  cufftHandle plan;
  if (cufftPlan1d(&plan, n, CUFFT_C2C, 1) != CUFFT_SUCCESS) { printf("plan failed\n"); return 1; }
  cufftResult result = cufftExecC2C(plan, data, data, CUFFT_FORWARD);
  result = cufftExecC2C(plan, data, data, CUFFT_INVERSE);
  normalize<<<n / 256, 256>>>(data, n);
  cudaDeviceSynchronize();
  printf("cufft: %d\n", static_cast<int>(result));
  cufftDestroy(plan);
  cudaFree(data);
  return 0;
}
