// Capture a stream into a CUDA graph and replay it.
#include <cuda_runtime.h>
#include <cstdio>

__global__ void add_one(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}

int main() {
  const int n = 1 << 14;
  float* data;
  cudaMalloc(&data, n * sizeof(float));
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaGraph_t graph;
  cudaGraphExec_t instance;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  for (int step = 0; step < 10; ++step) add_one<<<n / 256, 256, 0, stream>>>(data, n);
  cudaStreamEndCapture(stream, &graph);
  cudaGraphInstantiate(&instance, graph, 0);
  for (int replay = 0; replay < 5; ++replay) cudaGraphLaunch(instance, stream);
  cudaStreamSynchronize(stream);
  printf("graph: %s\n", cudaGetErrorString(cudaGetLastError()));
  cudaGraphExecDestroy(instance);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaFree(data);
  return 0;
}
