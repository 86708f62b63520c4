// SGEMM through cuBLAS (column-major C = alpha * A * B + beta * C).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>

#define CUBLAS_CHECK(call)                                              \
  do {                                                                  \
    cublasStatus_t s_ = (call);                                         \
    if (s_ != CUBLAS_STATUS_SUCCESS) { printf("cublas error %d\n", s_); return 1; } \
  } while (0)

int main() {
  const int m = 256, n = 128, k = 64;
  std::vector<float> a(m * k, 1.0f), b(k * n, 1.0f), c(m * n, 0.0f);
  float *d_a, *d_b, *d_c;
  cudaMalloc(&d_a, a.size() * sizeof(float));
  cudaMalloc(&d_b, b.size() * sizeof(float));
  cudaMalloc(&d_c, c.size() * sizeof(float));
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  CUBLAS_CHECK(cublasSetMatrix(m, k, sizeof(float), a.data(), m, d_a, m));
  CUBLAS_CHECK(cublasSetMatrix(k, n, sizeof(float), b.data(), k, d_b, k));
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, d_a, m, d_b, k, &beta, d_c, m));
  CUBLAS_CHECK(cublasGetMatrix(m, n, sizeof(float), d_c, m, c.data(), m));
  printf("c[0] = %f (expect %d)\n", c[0], k);
  CUBLAS_CHECK(cublasDestroy(handle));
  cudaStreamDestroy(stream);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_c);
  return 0;
}
