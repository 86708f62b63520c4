// Driver API: create a context, load a module from a file, launch a kernel by name.
#include <hip/hip_runtime.h>
#include <cstdio>

#define DRV_CHECK(call)                                               \
  do {                                                                \
    hipError_t r_ = (call);                                             \
    if (r_ != hipSuccess) { printf("%s -> %d\n", #call, (int)r_); return 1; } \
  } while (0)

int main(int argc, char** argv) {
  const char* module_path = argc > 1 ? argv[1] : "kernels.cubin";
  DRV_CHECK(hipInit(0));
  int count = 0;
  DRV_CHECK(hipGetDeviceCount(&count));
  hipDevice_t device;
  DRV_CHECK(hipDeviceGet(&device, 0));
  char name[128];
  DRV_CHECK(hipDeviceGetName(name, sizeof(name), device));
  hipCtx_t context;
  DRV_CHECK(hipDevicePrimaryCtxRetain(&context, device));
  DRV_CHECK(hipCtxSetCurrent(context));
  hipModule_t module;
  DRV_CHECK(hipModuleLoad(&module, module_path));
  hipFunction_t function;
  DRV_CHECK(hipModuleGetFunction(&function, module, "scale"));
  const int n = 1024;
  hipDeviceptr_t buffer;
  DRV_CHECK(hipMalloc(&buffer, n * sizeof(float)));
  float host[n] = {};
  DRV_CHECK(hipMemcpyHtoD(buffer, host, sizeof(host)));
  int length = n;
  void* params[] = {&buffer, &length};
  DRV_CHECK(hipModuleLaunchKernel(function, n / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
  DRV_CHECK(hipCtxSynchronize());
  DRV_CHECK(hipMemcpyDtoH(host, buffer, sizeof(host)));
  DRV_CHECK(hipFree(buffer));
  DRV_CHECK(hipModuleUnload(module));
  DRV_CHECK(hipDevicePrimaryCtxRelease(device));
  printf("ran on %s (%d devices)\n", name, count);
  return 0;
}
