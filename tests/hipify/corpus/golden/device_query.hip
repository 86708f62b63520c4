// Query devices and versions, then pick an occupancy-optimal block size.
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void busy(float* data) { data[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f; }

int main() {
  int count = 0, runtime_version = 0, driver_version = 0;
  hipGetDeviceCount(&count);
  hipRuntimeGetVersion(&runtime_version);
  hipDriverGetVersion(&driver_version);
  printf("runtime %d, driver %d, %d devices\n", runtime_version, driver_version, count);
  for (int d = 0; d < count; ++d) {
    hipDeviceProp_t prop;
    hipGetDeviceProperties(&prop, d);
    printf("%d: %s cc %d.%d, %d SMs, warp %d, %zu bytes global, %zu shared/block\n", d, prop.name,
           prop.major, prop.minor, prop.multiProcessorCount, prop.warpSize, prop.totalGlobalMem,
           prop.sharedMemPerBlock);
  }
  int min_grid = 0, block = 0;
  hipOccupancyMaxPotentialBlockSize(&min_grid, &block, busy, 0, 0);
  size_t free_bytes = 0, total_bytes = 0;
  hipMemGetInfo(&free_bytes, &total_bytes);
  printf("suggested block %d, grid >= %d, free %zu of %zu\n", block, min_grid, free_bytes, total_bytes);
  return 0;
}
