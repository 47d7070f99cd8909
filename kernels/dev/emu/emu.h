/*
 * emu.h - a host emulation of the CUDA subset kernels/psh_v4.cu uses, for checking v4's logic on a
 * machine without a GPU (kernels/dev/emu/run.sh): one std::thread per CUDA thread, the blocks of a launch
 * in sequence, __syncthreads as a block barrier, warp intrinsics as mask-keyed exchanges among the lanes
 * of the mask, atomics as GCC __atomic builtins, cub::BlockScan as a shared-array scan. It checks the
 * algorithm and the barrier placement inside a block; it says nothing about timing, cross-block
 * scheduling or the memory model of the real device.
 */
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>
#include <algorithm>
struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
struct float2 { float x, y; };
inline float2 make_float2(float a, float b) { return {a, b}; }
struct float4 { float x, y, z, w; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
extern thread_local dim3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(x)
typedef int cudaError_t;
typedef void *cudaStream_t;
#define cudaSuccess 0
enum { cudaDevAttrMultiProcessorCount = 1 };
inline cudaError_t cudaGetLastError() { return 0; }
inline const char *cudaGetErrorString(cudaError_t) { return "emu"; }
inline cudaError_t cudaGetDevice(int *d) { *d = 0; return 0; }
enum { cudaMemcpyDeviceToHost = 2 };
inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int) { memcpy(d, s, n); return 0; }
extern int emu_sms;
inline cudaError_t cudaDeviceGetAttribute(int *v, int a, int) { *v = a == 3 ? 232448 : a == 2 ? 1 : emu_sms; return 0; }
template <class T> inline T __ldg(const T *p) { return *p; }
template <class T> inline T __ldcg(const T *p) { return *p; }
enum { cudaDevAttrCooperativeLaunch = 2, cudaDevAttrMaxSharedMemoryPerBlockOptin = 3 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
/* v8: dynamic shared memory (227 KB, as an H100/H200 grants one block); the attribute call is accepted */
inline cudaError_t cudaFuncSetAttribute(const void *, cudaFuncAttribute, int) { return 0; }
struct cudaFuncAttributes { size_t sharedSizeBytes; };
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, const void *) { a->sharedSizeBytes = 2208; return 0; }
/* v5: a cooperative launch runs every block at once; occupancy is fixed at 2 blocks per SM */
template <class F> inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, F, int, size_t) {
  *n = 2;
  return 0;
}
void emu_grid_sync();
extern int emu_fallbacks; /* v5 calls that ran v4 instead (counted by the rewritten launcher) */
/* per-block instance of a kernel's shared-memory struct (v5 declares all its shared memory as one) */
void *emu_smem_get(size_t bytes);
template <class T> inline T &emu_smem() { return *(T *)emu_smem_get(sizeof(T)); }
inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
/* The lanes converged here: the emulation runs no two lanes together, so only this one (the GPU may group more,
 * and code that aggregates over __activemask() must be right for any grouping). */
inline unsigned __activemask() { return 1u << (threadIdx.x & 31u); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicSub(unsigned *p, unsigned v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicOr(unsigned *p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicAnd(unsigned *p, unsigned v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicCAS(unsigned *p, unsigned cmp, unsigned v) { /* returns the old value */
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}
inline unsigned atomicMin(unsigned *p, unsigned v) {
  unsigned o = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (o > v && !__atomic_compare_exchange_n(p, &o, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return o;
}
inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v) {
  unsigned long long o = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (o < v && !__atomic_compare_exchange_n(p, &o, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return o;
}
unsigned long long emu_clock_ns(); /* %globaltimer */
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
void __syncthreads();
int __syncthreads_count(int pred); /* barrier + number of threads with pred != 0 */
inline int __syncthreads_or(int pred) { return __syncthreads_count(pred) != 0; }
uint64_t emu_exchange(unsigned mask, uint64_t v, uint64_t out[32]);
inline unsigned __ballot_sync(unsigned mask, int pred) {
  uint64_t o[32]; emu_exchange(mask, pred ? 1 : 0, o);
  unsigned r = 0; for (int l = 0; l < 32; l++) if ((mask >> l & 1) && o[l]) r |= 1u << l; return r;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline unsigned __match_any_sync(unsigned mask, unsigned v) {
  uint64_t o[32]; emu_exchange(mask, v, o);
  unsigned r = 0; for (int l = 0; l < 32; l++) if ((mask >> l & 1) && o[l] == v) r |= 1u << l; return r;
}
inline unsigned __shfl_sync(unsigned mask, unsigned v, int src) { uint64_t o[32]; emu_exchange(mask, v, o); return (unsigned)o[src]; }
inline unsigned __shfl_xor_sync(unsigned mask, unsigned v, int x) {
  uint64_t o[32]; emu_exchange(mask, v, o); return (unsigned)o[(threadIdx.x & 31) ^ (unsigned)x];
}
inline int __shfl_sync(unsigned mask, int v, int src) { return (int)__shfl_sync(mask, (unsigned)v, src); }
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) {
  uint64_t o[32]; emu_exchange(mask, v, o);
  unsigned r = 0xFFFFFFFFu; for (int l = 0; l < 32; l++) if ((mask >> l & 1) && (unsigned)o[l] < r) r = (unsigned)o[l]; return r;
}
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) { uint64_t o[32]; emu_exchange(mask, 0, o); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fsub_rn(float a, float b) { return a - b; }
namespace cub {
template <class T, int N> struct BlockScan {
  struct TempStorage { T vals[N]; };
  TempStorage &t;
  BlockScan(TempStorage &tt) : t(tt) {}
  void ExclusiveSum(T in, T &out, T &agg) {
    t.vals[threadIdx.x] = in;
    __syncthreads();
    T s = 0, a = 0;
    for (unsigned i = 0; i < blockDim.x; i++) { if (i < threadIdx.x) s += t.vals[i]; a += t.vals[i]; }
    out = s; agg = a;
  }
  void ExclusiveSum(T in, T &out) { T a; ExclusiveSum(in, out, a); }
};
}
void emu_run_all(unsigned grid, unsigned threads, void (*body)(void *), void *arg);
template <class P> struct EmuCoop { void (*k)(P); const P *p; };
template <class P> void emu_coop_body(void *a) { EmuCoop<P> *c = (EmuCoop<P> *)a; c->k(*c->p); }
/* all blocks concurrently (grid barriers need every block resident), small thread stacks */
template <class P> cudaError_t emu_launch_coop(void (*k)(P), unsigned grid, unsigned threads, const P &p) {
  EmuCoop<P> c{k, &p};
  emu_run_all(grid, threads, emu_coop_body<P>, &c);
  return 0;
}
/* A launch, blocks in turn, with `bytes` of dynamic shared memory (emu_dyn_smem inside the kernel): each block
 * gets a buffer of exactly that size, poisoned (0xEE, as garbage on the device), followed by a canary; a block
 * that writes past its size aborts the emulation with the kernel's launch size and the first overwritten byte. */
void emu_dyn_begin(size_t bytes);
void emu_dyn_end_block(unsigned b);
void *emu_dyn_smem();
template <class P> void emu_launch_dyn(void (*k)(P), unsigned grid, unsigned threads, size_t bytes, const P &p) {
  blockDim.x = threads;
  gridDim.x = grid;
  for (unsigned b = 0; b < grid; b++) {
    emu_dyn_begin(bytes);
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; t++) ts.emplace_back([=] { blockIdx.x = b; threadIdx.x = t; k(p); });
    for (auto &x : ts) x.join();
    emu_dyn_end_block(b);
  }
}
