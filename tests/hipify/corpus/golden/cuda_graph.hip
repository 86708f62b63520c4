// Capture a stream into a CUDA graph and replay it.
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void add_one(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}

int main() {
  const int n = 1 << 14;
  float* data;
  hipMalloc(&data, n * sizeof(float));
  hipStream_t stream;
  hipStreamCreateWithFlags(&stream, hipStreamNonBlocking);
  hipGraph_t graph;
  hipGraphExec_t instance;
  hipStreamBeginCapture(stream, hipStreamCaptureModeGlobal);
  for (int step = 0; step < 10; ++step) add_one<<<n / 256, 256, 0, stream>>>(data, n);
  hipStreamEndCapture(stream, &graph);
  hipGraphInstantiate(&instance, graph, 0);
  for (int replay = 0; replay < 5; ++replay) hipGraphLaunch(instance, stream);
  hipStreamSynchronize(stream);
  printf("graph: %s\n", hipGetErrorString(hipGetLastError()));
  hipGraphExecDestroy(instance);
  hipGraphDestroy(graph);
  hipStreamDestroy(stream);
  hipFree(data);
  return 0;
}
