// Vector addition with full error checking: the "hello world" of CUDA ports.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA_CHECK(call)                                                          \
  do {                                                                            \
    hipError_t err_ = (call);                                                    \
    if (err_ != hipSuccess) {                                                    \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", hipGetErrorName(err_), \
                   __FILE__, __LINE__, hipGetErrorString(err_));                 \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  const int n = 1 << 20;
  const size_t bytes = n * sizeof(float);
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  CUDA_CHECK(hipMalloc(&d_a, bytes));
  CUDA_CHECK(hipMalloc(&d_b, bytes));
  CUDA_CHECK(hipMalloc(&d_c, bytes));
  CUDA_CHECK(hipMemcpy(d_a, a.data(), bytes, hipMemcpyHostToDevice));
  CUDA_CHECK(hipMemcpy(d_b, b.data(), bytes, hipMemcpyHostToDevice));
  const int block = 256;
  const int grid = (n + block - 1) / block;
  vector_add<<<grid, block>>>(d_a, d_b, d_c, n);
  CUDA_CHECK(hipGetLastError());
  CUDA_CHECK(hipDeviceSynchronize());
  CUDA_CHECK(hipMemcpy(c.data(), d_c, bytes, hipMemcpyDeviceToHost));
  std::printf("c[0] = %f (expect 3)\n", c[0]);  // "cudaMemcpy" in a string stays
  CUDA_CHECK(hipFree(d_a));
  CUDA_CHECK(hipFree(d_b));
  CUDA_CHECK(hipFree(d_c));
  return 0;
}
