// Monte Carlo pi with cuRAND: device API (per-thread states) and host API (bulk generation).
#include <curand.h>
#include <curand_kernel.h>
#include <cuda_runtime.h>
#include <cstdio>

__global__ void setup(curandState* states, unsigned long long seed) {
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  curand_init(seed, id, 0, &states[id]);
}

__global__ void count_inside(curandState* states, int samples, unsigned int* inside) {
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  curandState local = states[id];
  unsigned int hits = 0;
  for (int s = 0; s < samples; ++s) {
    float x = curand_uniform(&local);
    float y = curand_uniform(&local);
    hits += (x * x + y * y <= 1.0f);
  }
  states[id] = local;
  atomicAdd(inside, hits);
}

int main() {
  const int threads = 64 * 128;
  curandState* states;
  unsigned int* inside;
  cudaMalloc(&states, threads * sizeof(curandState));
  cudaMalloc(&inside, sizeof(unsigned int));
  cudaMemset(inside, 0, sizeof(unsigned int));
  setup<<<64, 128>>>(states, 1234ULL);
  count_inside<<<64, 128>>>(states, 256, inside);

  curandGenerator_t generator;
  float* uniform;
  cudaMalloc(&uniform, 1 << 20);
  curandCreateGenerator(&generator, CURAND_RNG_PSEUDO_DEFAULT);
  curandSetPseudoRandomGeneratorSeed(generator, 42ULL);
  if (curandGenerateUniform(generator, uniform, (1 << 20) / sizeof(float)) != CURAND_STATUS_SUCCESS)
    printf("generation failed\n");
  curandDestroyGenerator(generator);
  cudaDeviceSynchronize();
  cudaFree(states);
  cudaFree(inside);
  cudaFree(uniform);
  return 0;
}
