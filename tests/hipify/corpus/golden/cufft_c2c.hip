// 1D complex-to-complex FFT forward and inverse with cuFFT.
#include <hipfft/hipfft.h>
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void normalize(hipfftComplex* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    data[i].x /= n;
    data[i].y /= n;
  }
}

int main() {
  const int n = 4096;
  hipfftComplex* data;
  hipMalloc(&data, n * sizeof(hipfftComplex));
  hipfftHandle plan;
  if (hipfftPlan1d(&plan, n, HIPFFT_C2C, 1) != HIPFFT_SUCCESS) { printf("plan failed\n"); return 1; }
  hipfftResult result = hipfftExecC2C(plan, data, data, HIPFFT_FORWARD);
  result = hipfftExecC2C(plan, data, data, HIPFFT_BACKWARD);
  normalize<<<n / 256, 256>>>(data, n);
  hipDeviceSynchronize();
  printf("cufft: %d\n", static_cast<int>(result));
  hipfftDestroy(plan);
  hipFree(data);
  return 0;
}
