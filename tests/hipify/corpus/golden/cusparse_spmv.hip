// y = A x for a CSR matrix with cuSPARSE's generic SpMV API.
#include <hip/hip_runtime.h>
#include <hipsparse/hipsparse.h>
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
  hipMalloc(&d_offsets, sizeof(h_offsets));
  hipMalloc(&d_columns, sizeof(h_columns));
  hipMalloc(&d_values, sizeof(h_values));
  hipMalloc(&d_x, sizeof(h_x));
  hipMalloc(&d_y, sizeof(h_x));
  hipMemcpy(d_offsets, h_offsets, sizeof(h_offsets), hipMemcpyHostToDevice);
  hipMemcpy(d_columns, h_columns, sizeof(h_columns), hipMemcpyHostToDevice);
  hipMemcpy(d_values, h_values, sizeof(h_values), hipMemcpyHostToDevice);
  hipMemcpy(d_x, h_x, sizeof(h_x), hipMemcpyHostToDevice);

  hipsparseHandle_t handle;
  hipsparseCreate(&handle);
  hipsparseSpMatDescr_t matrix;
  hipsparseDnVecDescr_t x, y;
  hipsparseCreateCsr(&matrix, rows, cols, nnz, d_offsets, d_columns, d_values, HIPSPARSE_INDEX_32I,
                    HIPSPARSE_INDEX_32I, HIPSPARSE_INDEX_BASE_ZERO, HIP_R_32F);
  hipsparseCreateDnVec(&x, cols, d_x, HIP_R_32F);
  hipsparseCreateDnVec(&y, rows, d_y, HIP_R_32F);
  float alpha = 1.0f, beta = 0.0f;
  size_t buffer_size = 0;
  hipsparseSpMV_bufferSize(handle, HIPSPARSE_OPERATION_NON_TRANSPOSE, &alpha, matrix, x, &beta, y,
                          HIP_R_32F, HIPSPARSE_SPMV_ALG_DEFAULT, &buffer_size);
  void* buffer;
  hipMalloc(&buffer, buffer_size);
  hipsparseStatus_t status = hipsparseSpMV(handle, HIPSPARSE_OPERATION_NON_TRANSPOSE, &alpha, matrix, x,
                                         &beta, y, HIP_R_32F, HIPSPARSE_SPMV_ALG_DEFAULT, buffer);
  printf("spmv status %d\n", static_cast<int>(status));
  hipsparseDestroySpMat(matrix);
  hipsparseDestroyDnVec(x);
  hipsparseDestroyDnVec(y);
  hipsparseDestroy(handle);
  hipFree(buffer);
  return 0;
}
