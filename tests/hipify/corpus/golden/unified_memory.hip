// Unified (managed) memory with an attach flag and a host-side read after sync.
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void fill(float* data, int n, float value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = value * i;
}

int main() {
  const int n = 1 << 16;
  float* data = nullptr;
  if (hipMallocManaged(&data, n * sizeof(float), hipMemAttachGlobal) != hipSuccess) return 1;
  int device = 0;
  hipGetDevice(&device);
  int concurrent = 0;
  hipDeviceGetAttribute(&concurrent, hipDeviceAttributeConcurrentManagedAccess, device);
  fill<<<(n + 255) / 256, 256>>>(data, n, 0.5f);
  hipDeviceSynchronize();
  printf("data[10] = %f, concurrent managed access: %d\n", data[10], concurrent);
  hipFree(data);
  return 0;
}
