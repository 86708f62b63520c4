// Driver API: create a context, load a module from a file, launch a kernel by name.
#include <cuda.h>
#include <cstdio>

#define DRV_CHECK(call)                                               \
  do {                                                                \
    CUresult r_ = (call);                                             \
    if (r_ != CUDA_SUCCESS) { printf("%s -> %d\n", #call, (int)r_); return 1; } \
  } while (0)

int main(int argc, char** argv) {
  const char* module_path = argc > 1 ? argv[1] : "kernels.cubin";
  DRV_CHECK(cuInit(0));
  int count = 0;
  DRV_CHECK(cuDeviceGetCount(&count));
  CUdevice device;
  DRV_CHECK(cuDeviceGet(&device, 0));
  char name[128];
  DRV_CHECK(cuDeviceGetName(name, sizeof(name), device));
  CUcontext context;
  DRV_CHECK(cuDevicePrimaryCtxRetain(&context, device));
  DRV_CHECK(cuCtxSetCurrent(context));
  CUmodule module;
  DRV_CHECK(cuModuleLoad(&module, module_path));
  CUfunction function;
  DRV_CHECK(cuModuleGetFunction(&function, module, "scale"));
  const int n = 1024;
  CUdeviceptr buffer;
  DRV_CHECK(cuMemAlloc(&buffer, n * sizeof(float)));
  float host[n] = {};
  DRV_CHECK(cuMemcpyHtoD(buffer, host, sizeof(host)));
  int length = n;
  void* params[] = {&buffer, &length};
  DRV_CHECK(cuLaunchKernel(function, n / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
  DRV_CHECK(cuCtxSynchronize());
  DRV_CHECK(cuMemcpyDtoH(host, buffer, sizeof(host)));
  DRV_CHECK(cuMemFree(buffer));
  DRV_CHECK(cuModuleUnload(module));
  DRV_CHECK(cuDevicePrimaryCtxRelease(device));
  printf("ran on %s (%d devices)\n", name, count);
  return 0;
}
