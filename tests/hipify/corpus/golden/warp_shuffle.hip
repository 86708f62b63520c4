// Warp-level reduction with shuffles and votes: the classic 32-lane idioms.
#include <hip/hip_runtime.h>
#include <cstdio>

#define WARP_SIZE 32
#define FULL_MASK 0xffffffff

__inline__ __device__ float warp_reduce_sum(float value) {
  for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2)
    value += __shfl_down_sync(0xffffffff, value, offset);
  return value;
}

__global__ void reduce(const float* in, float* out, int* positive_warps, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float value = i < n ? in[i] : 0.0f;
  unsigned int lane = threadIdx.x % 32;
  unsigned int ballot = __ballot_sync(FULL_MASK, value > 0.0f);
  float sum = warp_reduce_sum(value);
  float first = __shfl_sync(__activemask(), value, 0);
  if (lane == 0) {
    atomicAdd(out, sum + 0.0f * first);
    if (ballot == 0xffffffffu) atomicAdd(positive_warps, 1);
  }
}

int main() {
  const int n = 1 << 12;
  float *in, *out;
  int* warps;
  hipMalloc(&in, n * sizeof(float));
  hipMalloc(&out, sizeof(float));
  hipMalloc(&warps, sizeof(int));
  reduce<<<n / 256, 256>>>(in, out, warps, n);
  hipDeviceSynchronize();
  hipFree(in);
  hipFree(out);
  hipFree(warps);
  return 0;
}
