// Templated kernels launched with nested template arguments and expressions in <<<...>>>.
#include <hip/hip_runtime.h>
#include <cstdio>

template <typename T, int N>
struct Vec {
  T values[N];
};

template <typename T>
struct Plus {
  __device__ T operator()(T a, T b) const { return a + b; }
};

template <typename T, typename Op, int BLOCK>
__global__ void block_reduce(const T* in, T* out, int n, Op op) {
  extern __shared__ unsigned char raw[];
  T* shared = reinterpret_cast<T*>(raw);
  int i = blockIdx.x * BLOCK + threadIdx.x;
  shared[threadIdx.x] = i < n ? in[i] : T(0);
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = shared[0];
}

template <typename T, int N>
__global__ void copy_vec(const Vec<T, N>* in, Vec<T, N>* out) {
  out[threadIdx.x] = in[threadIdx.x];
}

int main() {
  const int n = 1 << 16;
  constexpr int kBlock = 256;
  float *in, *out;
  hipMalloc(&in, n * sizeof(float));
  hipMalloc(&out, (n / kBlock) * sizeof(float));
  hipStream_t stream;
  hipStreamCreate(&stream);
  block_reduce<float, Plus<float>, kBlock><<<dim3((n + kBlock - 1) / kBlock), dim3(kBlock), kBlock * sizeof(float), stream>>>(
      in, out, n, Plus<float>());
  Vec<float, 4>* vectors;
  hipMalloc(&vectors, 2 * 32 * sizeof(Vec<float, 4>));
  copy_vec<float, 4><<<1, 32>>>(vectors, vectors + 32 /* a comment with <<<chevrons>>> */);
  hipStreamSynchronize(stream);
  printf("%s\n", hipGetErrorString(hipGetLastError()));
  hipFree(in);
  hipFree(out);
  hipFree(vectors);
  hipStreamDestroy(stream);
  return 0;
}
