/* Pinned and mapped (zero-copy) host memory. */
#include <hip/hip_runtime.h>
#include <cstdio>

static void check(hipError_t status, const char* what) {
  if (status != hipSuccess) printf("%s: %s\n", what, hipGetErrorString(status));
}

__global__ void increment(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

int main() {
  const int n = 4096;
  int* pinned = nullptr;
  int* mapped = nullptr;
  int* mapped_device = nullptr;
  check(hipSetDeviceFlags(hipDeviceMapHost), "set flags");
  check(hipHostMalloc(reinterpret_cast<void**>(&pinned), n * sizeof(int), hipHostMallocDefault), "pinned");
  check(hipHostMalloc(reinterpret_cast<void**>(&mapped), n * sizeof(int),
                      hipHostMallocMapped | hipHostMallocPortable), "mapped");
  check(hipHostGetDevicePointer(reinterpret_cast<void**>(&mapped_device), mapped, 0), "device ptr");
  increment<<<(n + 127) / 128, 128>>>(mapped_device, n);
  check(hipDeviceSynchronize(), "sync");
  int* registered = new int[n];
  check(hipHostRegister(registered, n * sizeof(int), hipHostRegisterDefault), "register");
  check(hipHostUnregister(registered), "unregister");
  delete[] registered;
  check(hipHostFree(pinned), "free pinned");
  check(hipHostFree(mapped), "free mapped");
  return 0;
}
