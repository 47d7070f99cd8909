/*
 * gpu_test_kernels.cu - kernels with known behaviour for the counter and timing tests: a streaming copy
 * (DRAM-bound, no tensor work), an mma.sync loop (tensor-bound, no DRAM traffic) and a fixed-duration
 * spin (known time). See gpu_test_kernels.h.
 */
#include "gpu_test_kernels.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

static hx_status launched(const char *what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    return HX_ECUDA;
  }
  return HX_OK;
}

extern "C" int tk_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

extern "C" int tk_sm_count(void) {
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) return 0;
  return n;
}

extern "C" hx_status tk_malloc(void **p, size_t bytes) {
  return cudaMalloc(p, bytes) == cudaSuccess ? HX_OK : HX_ECUDA;
}
extern "C" void tk_free(void *p) { cudaFree(p); }
extern "C" hx_status tk_sync(void) { return cudaDeviceSynchronize() == cudaSuccess ? HX_OK : HX_ECUDA; }

__global__ void copy_kernel(float4 *__restrict__ dst, const float4 *__restrict__ src, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

extern "C" hx_status tk_copy(float *d_dst, const float *d_src, size_t n, void *stream) {
  size_t n4 = n / 4;
  int blocks = tk_sm_count() * 8;
  copy_kernel<<<blocks > 0 ? blocks : 1, 256, 0, (cudaStream_t)stream>>>((float4 *)d_dst, (const float4 *)d_src, n4);
  return launched("copy_kernel");
}

__global__ void mma_kernel(float *out, int iters) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  /* fragments of arbitrary half values; 4 independent accumulators keep the tensor pipe fed */
  unsigned a0 = 0x3c003c00u ^ threadIdx.x, a1 = 0x3c003c00u, a2 = 0x3c003c00u, a3 = 0x3c003c00u;
  unsigned b0 = 0x3c003c00u, b1 = 0x3c003c00u ^ blockIdx.x;
  float d[4][4] = {};
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int k = 0; k < 4; k++) {
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                   "{%8,%9}, {%0,%1,%2,%3};\n"
                   : "+f"(d[k][0]), "+f"(d[k][1]), "+f"(d[k][2]), "+f"(d[k][3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 4; k++) s += d[k][0] + d[k][1] + d[k][2] + d[k][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
#else
  (void)iters;
  out[blockIdx.x * blockDim.x + threadIdx.x] = 0.f;
#endif
}

extern "C" hx_status tk_mma(float *d_out, int blocks, int iters, void *stream) {
  mma_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>(d_out, iters);
  return launched("mma_kernel");
}

__global__ void spin_kernel(uint64_t ns) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

extern "C" hx_status tk_spin(uint64_t ns, void *stream) {
  spin_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(ns);
  return launched("spin_kernel");
}

__global__ void spin_fresh_kernel(uint64_t ns) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

extern "C" hx_status tk_spin_fresh(uint64_t ns, void *stream) {
  spin_fresh_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(ns);
  return launched("spin_fresh_kernel");
}
