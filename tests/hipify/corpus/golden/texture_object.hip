// Texture objects over linear memory (bindless textures).
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstring>

__global__ void read_texture(hipTextureObject_t tex, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(tex, i) * 2.0f;
}

int main() {
  const int n = 1024;
  float* input = nullptr;
  float* output = nullptr;
  hipMalloc(&input, n * sizeof(float));
  hipMalloc(&output, n * sizeof(float));
  hipResourceDesc resource;
  std::memset(&resource, 0, sizeof(resource));
  resource.resType = hipResourceTypeLinear;
  resource.res.linear.devPtr = input;
  resource.res.linear.desc = hipCreateChannelDesc<float>();
  resource.res.linear.sizeInBytes = n * sizeof(float);
  hipTextureDesc description;
  std::memset(&description, 0, sizeof(description));
  description.readMode = hipReadModeElementType;
  description.addressMode[0] = hipAddressModeClamp;
  description.filterMode = hipFilterModePoint;
  hipTextureObject_t tex = 0;
  hipError_t status = hipCreateTextureObject(&tex, &resource, &description, nullptr);
  if (status != hipSuccess) { printf("texture: %s\n", hipGetErrorString(status)); return 1; }
  read_texture<<<n / 256, 256>>>(tex, output, n);
  hipDeviceSynchronize();
  hipDestroyTextureObject(tex);
  hipFree(input);
  hipFree(output);
  return 0;
}
