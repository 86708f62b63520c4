// SGEMM through cuBLAS (column-major C = alpha * A * B + beta * C).
#include <hipblas/hipblas.h>
#include <hip/hip_runtime.h>
#include <cstdio>
#include <vector>

#define CUBLAS_CHECK(call)                                              \
  do {                                                                  \
    hipblasStatus_t s_ = (call);                                         \
    if (s_ != HIPBLAS_STATUS_SUCCESS) { printf("cublas error %d\n", s_); return 1; } \
  } while (0)

int main() {
  const int m = 256, n = 128, k = 64;
  std::vector<float> a(m * k, 1.0f), b(k * n, 1.0f), c(m * n, 0.0f);
  float *d_a, *d_b, *d_c;
  hipMalloc(&d_a, a.size() * sizeof(float));
  hipMalloc(&d_b, b.size() * sizeof(float));
  hipMalloc(&d_c, c.size() * sizeof(float));
  hipblasHandle_t handle;
  CUBLAS_CHECK(hipblasCreate(&handle));
  hipStream_t stream;
  hipStreamCreate(&stream);
  CUBLAS_CHECK(hipblasSetStream(handle, stream));
  CUBLAS_CHECK(hipblasSetMatrix(m, k, sizeof(float), a.data(), m, d_a, m));
  CUBLAS_CHECK(hipblasSetMatrix(k, n, sizeof(float), b.data(), k, d_b, k));
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(hipblasSgemm(handle, HIPBLAS_OP_N, HIPBLAS_OP_N, m, n, k, &alpha, d_a, m, d_b, k, &beta, d_c, m));
  CUBLAS_CHECK(hipblasGetMatrix(m, n, sizeof(float), d_c, m, c.data(), m));
  printf("c[0] = %f (expect %d)\n", c[0], k);
  CUBLAS_CHECK(hipblasDestroy(handle));
  hipStreamDestroy(stream);
  hipFree(d_a);
  hipFree(d_b);
  hipFree(d_c);
  return 0;
}
