// Texture objects over linear memory (bindless textures).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>

__global__ void read_texture(cudaTextureObject_t tex, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(tex, i) * 2.0f;
}

int main() {
  const int n = 1024;
  float* input = nullptr;
  float* output = nullptr;
  cudaMalloc(&input, n * sizeof(float));
  cudaMalloc(&output, n * sizeof(float));
  cudaResourceDesc resource;
  std::memset(&resource, 0, sizeof(resource));
  resource.resType = cudaResourceTypeLinear;
  resource.res.linear.devPtr = input;
  resource.res.linear.desc = cudaCreateChannelDesc<float>();
  resource.res.linear.sizeInBytes = n * sizeof(float);
  cudaTextureDesc description;
  std::memset(&description, 0, sizeof(description));
  description.readMode = cudaReadModeElementType;
  description.addressMode[0] = cudaAddressModeClamp;
  description.filterMode = cudaFilterModePoint;
  cudaTextureObject_t tex = 0;
  cudaError_t status = cudaCreateTextureObject(&tex, &resource, &description, nullptr);
  if (status != cudaSuccess) { printf("texture: %s\n", cudaGetErrorString(status)); return 1; }
  read_texture<<<n / 256, 256>>>(tex, output, n);
  cudaDeviceSynchronize();
  cudaDestroyTextureObject(tex);
  cudaFree(input);
  cudaFree(output);
  return 0;
}
