// Overlap copies and kernels on several streams; time them with events.
#include <hip/hip_runtime.h>
#include <cstdio>

#define CHECK(x) do { hipError_t e = (x); if (e != hipSuccess) { \
  printf("%s failed: %s\n", #x, hipGetErrorString(e)); return 1; } } while (0)

__global__ void scale(float* data, int n, float factor) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    data[i] *= factor;
}

int main() {
  const int num_streams = 4;
  const int chunk = 1 << 18;
  float* host = nullptr;
  float* device = nullptr;
  CHECK(hipHostMalloc(&host, num_streams * chunk * sizeof(float)));
  CHECK(hipMalloc(&device, num_streams * chunk * sizeof(float)));
  hipStream_t streams[num_streams];
  for (int s = 0; s < num_streams; ++s) CHECK(hipStreamCreateWithFlags(&streams[s], hipStreamNonBlocking));
  hipEvent_t start, stop;
  CHECK(hipEventCreate(&start));
  CHECK(hipEventCreateWithFlags(&stop, hipEventDefault));
  CHECK(hipEventRecord(start, 0));
  for (int s = 0; s < num_streams; ++s) {
    float* h = host + s * chunk;
    float* d = device + s * chunk;
    CHECK(hipMemcpyAsync(d, h, chunk * sizeof(float), hipMemcpyHostToDevice, streams[s]));
    scale<<<64, 256, 0, streams[s]>>>(d, chunk, 2.0f);
    CHECK(hipMemcpyAsync(h, d, chunk * sizeof(float), hipMemcpyDeviceToHost, streams[s]));
  }
  CHECK(hipEventRecord(stop, 0));
  CHECK(hipEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(hipEventElapsedTime(&ms, start, stop));
  printf("pipeline took %.3f ms\n", ms);
  for (int s = 0; s < num_streams; ++s) CHECK(hipStreamDestroy(streams[s]));
  CHECK(hipEventDestroy(start));
  CHECK(hipEventDestroy(stop));
  CHECK(hipHostFree(host));
  CHECK(hipFree(device));
  return 0;
}
