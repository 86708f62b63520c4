/* Pinned and mapped (zero-copy) host memory. */
#include <cuda_runtime.h>
#include <cstdio>

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) printf("%s: %s\n", what, cudaGetErrorString(status));
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
  check(cudaSetDeviceFlags(cudaDeviceMapHost), "set flags");
  check(cudaHostAlloc(reinterpret_cast<void**>(&pinned), n * sizeof(int), cudaHostAllocDefault), "pinned");
  check(cudaHostAlloc(reinterpret_cast<void**>(&mapped), n * sizeof(int),
                      cudaHostAllocMapped | cudaHostAllocPortable), "mapped");
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped_device), mapped, 0), "device ptr");
  increment<<<(n + 127) / 128, 128>>>(mapped_device, n);
  check(cudaDeviceSynchronize(), "sync");
  int* registered = new int[n];
  check(cudaHostRegister(registered, n * sizeof(int), cudaHostRegisterDefault), "register");
  check(cudaHostUnregister(registered), "unregister");
  delete[] registered;
  check(cudaFreeHost(pinned), "free pinned");
  check(cudaFreeHost(mapped), "free mapped");
  return 0;
}
