// Shared-memory histogram with atomics; atomicCAS loop for a float max.
#include <cuda_runtime.h>
#include <cstdio>

constexpr int kBins = 64;

__device__ float atomic_max_float(float* address, float value) {
  int* address_as_int = reinterpret_cast<int*>(address);
  int old = *address_as_int;
  int assumed;
  do {
    assumed = old;
    old = atomicCAS(address_as_int, assumed, __float_as_int(fmaxf(value, __int_as_float(assumed))));
  } while (assumed != old);
  return __int_as_float(old);
}

__global__ void histogram(const unsigned char* data, int n, unsigned int* bins, float* max_value) {
  __shared__ unsigned int local[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    atomicAdd(&local[data[i] % kBins], 1u);
    atomic_max_float(max_value, static_cast<float>(data[i]));
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

int main() {
  const int n = 1 << 20;
  unsigned char* data;
  unsigned int* bins;
  float* max_value;
  cudaMalloc(&data, n);
  cudaMalloc(&bins, kBins * sizeof(unsigned int));
  cudaMalloc(&max_value, sizeof(float));
  cudaMemset(bins, 0, kBins * sizeof(unsigned int));
  cudaMemset(max_value, 0, sizeof(float));
  histogram<<<128, 256>>>(data, n, bins, max_value);
  cudaError_t status = cudaDeviceSynchronize();
  printf("histogram: %s\n", cudaGetErrorString(status));
  cudaFree(data);
  cudaFree(bins);
  cudaFree(max_value);
  return 0;
}
