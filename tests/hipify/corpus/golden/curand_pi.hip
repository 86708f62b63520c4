// Monte Carlo pi with cuRAND: device API (per-thread states) and host API (bulk generation).
#include <hiprand/hiprand.h>
#include <hiprand/hiprand_kernel.h>
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void setup(hiprandState_t* states, unsigned long long seed) {
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  hiprand_init(seed, id, 0, &states[id]);
}

__global__ void count_inside(hiprandState_t* states, int samples, unsigned int* inside) {
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  hiprandState_t local = states[id];
  unsigned int hits = 0;
  for (int s = 0; s < samples; ++s) {
    float x = hiprand_uniform(&local);
    float y = hiprand_uniform(&local);
    hits += (x * x + y * y <= 1.0f);
  }
  states[id] = local;
  atomicAdd(inside, hits);
}

int main() {
  const int threads = 64 * 128;
  hiprandState_t* states;
  unsigned int* inside;
  hipMalloc(&states, threads * sizeof(hiprandState_t));
  hipMalloc(&inside, sizeof(unsigned int));
  hipMemset(inside, 0, sizeof(unsigned int));
  setup<<<64, 128>>>(states, 1234ULL);
  count_inside<<<64, 128>>>(states, 256, inside);

  hiprandGenerator_t generator;
  float* uniform;
  hipMalloc(&uniform, 1 << 20);
  hiprandCreateGenerator(&generator, HIPRAND_RNG_PSEUDO_DEFAULT);
  hiprandSetPseudoRandomGeneratorSeed(generator, 42ULL);
  if (hiprandGenerateUniform(generator, uniform, (1 << 20) / sizeof(float)) != HIPRAND_STATUS_SUCCESS)
    printf("generation failed\n");
  hiprandDestroyGenerator(generator);
  hipDeviceSynchronize();
  hipFree(states);
  hipFree(inside);
  hipFree(uniform);
  return 0;
}
