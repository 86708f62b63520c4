// Grid-wide synchronisation with cooperative groups and a cooperative launch.
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>
#include <hip/hip_runtime.h>
#include <cstdio>

namespace cg = cooperative_groups;

__global__ void two_phase(float* data, float* partial, int n) {
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  unsigned int i = grid.thread_rank();
  if (i < n) data[i] = data[i] * 2.0f;
  grid.sync();  // every block finished phase one
  if (block.thread_rank() == 0) partial[blockIdx.x] = data[blockIdx.x * blockDim.x];
  block.sync();
}

int main() {
  int device = 0;
  int supported = 0;
  hipDeviceGetAttribute(&supported, hipDeviceAttributeCooperativeLaunch, device);
  if (!supported) { printf("cooperative launch not supported\n"); return 0; }
  const int n = 64 * 256;
  float *data, *partial;
  hipMalloc(&data, n * sizeof(float));
  hipMalloc(&partial, 64 * sizeof(float));
  void* args[] = {&data, &partial, const_cast<int*>(&n)};
  hipError_t status = hipLaunchCooperativeKernel((void*)two_phase, dim3(64), dim3(256), args, 0, 0);
  printf("launch: %s\n", hipGetErrorString(status));
  hipDeviceSynchronize();
  hipFree(data);
  hipFree(partial);
  return 0;
}
