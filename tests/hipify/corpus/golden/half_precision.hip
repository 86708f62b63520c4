// FP16 arithmetic with cuda_fp16.h intrinsics (half2 packed math).
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void axpy_half2(int n, __half2 alpha, const __half2* x, __half2* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hfma2(alpha, x[i], y[i]);
}

__global__ void to_half(const float* in, __half* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2half(in[i]);
}

int main() {
  const int n = 1 << 12;
  __half2 *x, *y;
  hipMalloc(&x, n * sizeof(__half2));
  hipMalloc(&y, n * sizeof(__half2));
  axpy_half2<<<n / 128, 128>>>(n, __floats2half2_rn(0.5f, 0.5f), x, y);
  float* f;
  __half* h;
  hipMalloc(&f, n * sizeof(float));
  hipMalloc(&h, n * sizeof(__half));
  to_half<<<n / 128, 128>>>(f, h, n);
  hipDeviceSynchronize();
  hipFree(x);
  hipFree(y);
  hipFree(f);
  hipFree(h);
  return 0;
}
