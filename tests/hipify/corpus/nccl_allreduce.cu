// Single-process, multi-GPU all-reduce with NCCL.
#include <cuda_runtime.h>
#include <nccl.h>
#include <cstdio>
#include <vector>

#define NCCL_CHECK(call) do { ncclResult_t r = (call); if (r != ncclSuccess) { \
  printf("NCCL error: %s\n", ncclGetErrorString(r)); return 1; } } while (0)

int main() {
  int num_devices = 0;
  cudaGetDeviceCount(&num_devices);
  if (num_devices < 1) return 0;
  std::vector<ncclComm_t> comms(num_devices);
  std::vector<int> devices(num_devices);
  for (int d = 0; d < num_devices; ++d) devices[d] = d;
  NCCL_CHECK(ncclCommInitAll(comms.data(), num_devices, devices.data()));
  const size_t count = 1 << 20;
  std::vector<float*> buffers(num_devices);
  std::vector<cudaStream_t> streams(num_devices);
  for (int d = 0; d < num_devices; ++d) {
    cudaSetDevice(d);
    cudaMalloc(&buffers[d], count * sizeof(float));
    cudaStreamCreate(&streams[d]);
  }
  NCCL_CHECK(ncclGroupStart());
  for (int d = 0; d < num_devices; ++d)
    NCCL_CHECK(ncclAllReduce(buffers[d], buffers[d], count, ncclFloat, ncclSum, comms[d], streams[d]));
  NCCL_CHECK(ncclGroupEnd());
  for (int d = 0; d < num_devices; ++d) {
    cudaSetDevice(d);
    cudaStreamSynchronize(streams[d]);
    cudaFree(buffers[d]);
    ncclCommDestroy(comms[d]);
  }
  return 0;
}
