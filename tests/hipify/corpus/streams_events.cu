// Overlap copies and kernels on several streams; time them with events.
#include <cuda_runtime.h>
#include <cstdio>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s failed: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void scale(float* data, int n, float factor) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    data[i] *= factor;
}

int main() {
  const int num_streams = 4;
  const int chunk = 1 << 18;
  float* host = nullptr;
  float* device = nullptr;
  CHECK(cudaMallocHost(&host, num_streams * chunk * sizeof(float)));
  CHECK(cudaMalloc(&device, num_streams * chunk * sizeof(float)));
  cudaStream_t streams[num_streams];
  for (int s = 0; s < num_streams; ++s) CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreateWithFlags(&stop, cudaEventDefault));
  CHECK(cudaEventRecord(start, 0));
  for (int s = 0; s < num_streams; ++s) {
    float* h = host + s * chunk;
    float* d = device + s * chunk;
    CHECK(cudaMemcpyAsync(d, h, chunk * sizeof(float), cudaMemcpyHostToDevice, streams[s]));
    scale<<<64, 256, 0, streams[s]>>>(d, chunk, 2.0f);
    CHECK(cudaMemcpyAsync(h, d, chunk * sizeof(float), cudaMemcpyDeviceToHost, streams[s]));
  }
  CHECK(cudaEventRecord(stop, 0));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  printf("pipeline took %.3f ms\n", ms);
  for (int s = 0; s < num_streams; ++s) CHECK(cudaStreamDestroy(streams[s]));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(device));
  return 0;
}
