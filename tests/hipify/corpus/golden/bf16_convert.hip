// BF16 conversion kernels with cuda_bf16.h.
#include <hip/hip_runtime.h>
#include <hip/hip_bf16.h>
#include <hip/hip_runtime.h>

__global__ void to_bf16(const float* in, __hip_bfloat16* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16(in[i]);
}

int main() {
  const int n = 1024;
  float* in;
  __hip_bfloat16* out;
  hipMalloc(&in, n * sizeof(float));
  hipMalloc(&out, n * sizeof(__hip_bfloat16));
  to_bf16<<<n / 256, 256>>>(in, out, n);
  hipDeviceSynchronize();
  hipFree(in);
  hipFree(out);
  return 0;
}
