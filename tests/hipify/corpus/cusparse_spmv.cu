// y = A x for a CSR matrix with cuSPARSE's generic SpMV API.
#include <cuda_runtime.h>
#include <cusparse.h>
#include <cstdio>

int main() {
  // 3x3 identity in CSR
  const int rows = 3, cols = 3, nnz = 3;
  int h_offsets[] = {0, 1, 2, 3};
  int h_columns[] = {0, 1, 2};
  float h_values[] = {1.0f, 1.0f, 1.0f};
  float h_x[] = {1.0f, 2.0f, 3.0f};
  int *d_offsets, *d_columns;
  float *d_values, *d_x, *d_y;
  cudaMalloc(&d_offsets, sizeof(h_offsets));
  cudaMalloc(&d_columns, sizeof(h_columns));
  cudaMalloc(&d_values, sizeof(h_values));
  cudaMalloc(&d_x, sizeof(h_x));
  cudaMalloc(&d_y, sizeof(h_x));
  cudaMemcpy(d_offsets, h_offsets, sizeof(h_offsets), cudaMemcpyHostToDevice);
  cudaMemcpy(d_columns, h_columns, sizeof(h_columns), cudaMemcpyHostToDevice);
  cudaMemcpy(d_values, h_values, sizeof(h_values), cudaMemcpyHostToDevice);
  cudaMemcpy(d_x, h_x, sizeof(h_x), cudaMemcpyHostToDevice);

  cusparseHandle_t handle;
  cusparseCreate(&handle);
  cusparseSpMatDescr_t matrix;
  cusparseDnVecDescr_t x, y;
  cusparseCreateCsr(&matrix, rows, cols, nnz, d_offsets, d_columns, d_values, CUSPARSE_INDEX_32I,
                    CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
  cusparseCreateDnVec(&x, cols, d_x, CUDA_R_32F);
  cusparseCreateDnVec(&y, rows, d_y, CUDA_R_32F);
  float alpha = 1.0f, beta = 0.0f;
  size_t buffer_size = 0;
  cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, matrix, x, &beta, y,
                          CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &buffer_size);
  void* buffer;
  cudaMalloc(&buffer, buffer_size);
  cusparseStatus_t status = cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, matrix, x,
                                         &beta, y, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buffer);
  printf("spmv status %d\n", static_cast<int>(status));
  cusparseDestroySpMat(matrix);
  cusparseDestroyDnVec(x);
  cusparseDestroyDnVec(y);
  cusparseDestroy(handle);
  cudaFree(buffer);
  return 0;
}
