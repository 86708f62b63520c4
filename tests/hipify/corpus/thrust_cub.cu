// Reductions with Thrust (device_vector, transform_reduce) and CUB (DeviceReduce::Sum).
#include <cub/cub.cuh>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/transform_reduce.h>
#include <cstdio>

struct square {
  __host__ __device__ float operator()(float x) const { return x * x; }
};

int main() {
  const int n = 1 << 16;
  thrust::device_vector<float> values(n, 2.0f);
  float sum_of_squares = thrust::transform_reduce(values.begin(), values.end(), square(), 0.0f,
                                                  thrust::plus<float>());
  float* d_out;
  cudaMalloc(&d_out, sizeof(float));
  void* temp = nullptr;
  size_t temp_bytes = 0;
  const float* d_in = thrust::raw_pointer_cast(values.data());
  cub::DeviceReduce::Sum(temp, temp_bytes, d_in, d_out, n);
  cudaMalloc(&temp, temp_bytes);
  cub::DeviceReduce::Sum(temp, temp_bytes, d_in, d_out, n);
  float sum = 0.0f;
  cudaMemcpy(&sum, d_out, sizeof(float), cudaMemcpyDeviceToHost);
  printf("sum %f, sum of squares %f\n", sum, sum_of_squares);
  cudaFree(temp);
  cudaFree(d_out);
  return 0;
}
