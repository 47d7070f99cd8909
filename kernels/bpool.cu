/*
 * bpool.cu - GPU in-bucket pooling (the bpool_ part of kernels.h): the plan (ceil(count/rho) + CUB scan),
 * the three-step sub-bucket construction and the feature reduction. Same steps, order and float
 * arithmetic as bpool.c, so the assignment, members, parents and output coordinates equal the CPU's bit
 * for bit (tests compare them exactly).
 *
 * Variants (the table at the bottom):
 *   v1  unpool: one thread per 16 bytes of a row (per element when the row is not 16-byte divisible).
 *   v1  assign: one 1024-thread block per bucket, tiles of <= 1024 rows in turn, everything in shared
 *       memory: cubic box (warp + shared atomicMin on ordered keys), slots, cub::BlockRadixSort on
 *       (slot, row), three block scans (slot starts, full sub-buckets, leftovers), seeds in parallel,
 *       step 3 by warp 0 in leftover order (64-wide window: two candidates per lane, shuffle argmin);
 *       reduce: one thread per (output row, channel), fp32 accumulation in member order.
 *   v2  assign: 128-thread blocks, 8 per SM; step 3 with fill counts in registers and one warp
 *       min-reduction per leftover (see the v2 section); reduce: 16 bytes per thread; unpool: v1's.
 *   v3  v2 with step 1's order (each row's rank within its slot) from __match_any_sync over 32-row chunks
 *       and per-warp slot counts instead of v2's block radix sort (see WarpCounts); reduce, unpool: v2's.
 *   v4  v3 with the reduction fused (bpool_variant.pool): each block reduces its tile's sub-buckets right
 *       after assigning them, members read from shared memory (Feat, feat_tile); assign, reduce alone and
 *       unpool are v3's. Same outputs as assign followed by reduce, bit for bit. Measured slower than v3's
 *       assign + reduce (H200: 118 vs 105 us at 600k, rho 2, fp32): at 8 blocks of 4 warps per SM the
 *       fused loads are latency-bound, and keeping more of them in flight spills under the 64-register cap
 *       the 8 blocks need. Kept as the measured answer to "does fusing pay?".
 *   v5  v3's assignment in 64-thread blocks of <= 512 rows (16 per SM: a 600k cloud's buckets in one wave),
 *       larger buckets by v3's kernel in a second launch; assign_plan (bpool_variant.assign_plan) does the
 *       plan and the parent fill inside the first kernel (no plan, scan or fill launches). See the v5 section.
 *   v6  pooling (bpool_variant.pool) as v5's assignment in two halves, the second half's assignment on an
 *       auxiliary stream overlapping the first half's reduction. Measured slower than v5 (ablation). See the
 *       v6 section.
 *   v7, v8  two more overlaps of assignment and reduction (one cooperative launch; a programmatic dependent
 *       launch), both slower than v5 (ablations; see their sections).
 *   v9  v5 with step 3 by lanes (step3_lanes) wherever a tile has <= 32 new sub-buckets: 32 leftovers at a
 *       time, one per lane, in rounds instead of one warp-wide reduction per leftover; the launch for buckets
 *       of more than 512 rows and, in the one-call pooling (pool_v9), the reduction are launched
 *       programmatically behind the launch before them. Same outputs.
 */
#include "kernels/bpool_internal.h"
#include "kernels/kernels.h"
#include "kernels/variants_internal.h"

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#define BPOOL_LAUNCHED(what)                                                                            \
  do {                                                                                                 \
    cudaError_t e_ = cudaGetLastError();                                                               \
    if (e_ != cudaSuccess) return hx_errf(err, HX_ECUDA, "bpool: launch of %s: %s", what, cudaGetErrorString(e_)); \
  } while (0)
#define BPOOL_CUDA(call)                                                                                \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) return hx_errf(err, HX_ECUDA, "bpool: %s: %s", #call, cudaGetErrorString(e_)); \
  } while (0)

namespace {

constexpr int kT = BPOOL_TILE; /* threads per block = rows per tile */
constexpr int kSlots = kT / 2; /* most sub-buckets of a tile (rho >= 2) */

/* Programmatic dependent launch (sm_90): let the next launch in the stream be placed now (a no-op without such a
 * launch); the wait is base.h's hx_pdl_wait. Kernels here trigger and wait where their design says, not first, so
 * they launch through hx_pdl_config by hand rather than through hx_launch. */
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
/* The launch attribute that makes a launch programmatic where the device has it (sm_90 on), else none. */
hx_status pdl_config(cudaLaunchConfig_t *cfg, cudaLaunchAttribute *attr, dim3 grid, dim3 block, cudaStream_t s,
                     hx_err *err) {
  const cudaError_t e = hx_pdl_config(cfg, attr, grid, block, 0, s);
  if (e != cudaSuccess) return hx_errf(err, HX_ECUDA, "bpool: device query for a programmatic launch: %s", cudaGetErrorString(e));
  return HX_OK;
}

__global__ void k_plan(uint32_t *out_count, const uint32_t *count, uint32_t nbuckets, uint32_t rho) {
  const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < nbuckets) out_count[b] = (count[b] + rho - 1) / rho;
}

__global__ void k_fill_none(uint32_t *a, uint32_t n) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] = BPOOL_NONE;
}

/* The start of every assign variant: rho checked, parent = NONE for all rows (rows outside every bucket,
 * such as padding, keep it: the unpool index map). */
hx_status assign_begin(uint32_t *d_parent, uint32_t n_rows, uint32_t rho, cudaStream_t s, hx_err *err) {
  if (rho != 2 && rho != 4 && rho != 8) return hx_errf(err, HX_EINVAL, "bpool: rho = %u (2, 4 or 8)", rho);
  if (n_rows) {
    k_fill_none<<<(n_rows + 255) / 256 < 4096 ? (n_rows + 255) / 256 : 4096, 256, 0, s>>>(d_parent, n_rows);
    BPOOL_LAUNCHED("parent init");
  }
  return HX_OK;
}

struct AssignSmem {
  float xyz[kT * 3];
  uint32_t cnt[kSlots], sbase[kSlots], fullbase[kSlots], leftbase[kSlots]; /* K <= 1024/2 slots */
  uint32_t lrow[kT], sub[kT], mem[kT], fill[kSlots], seedrow[kSlots];
  uint32_t memrow[kT + 8];
  uint32_t key[6];
  uint32_t agg[3];
  uint8_t seedflag[kT];
};

__global__ void __launch_bounds__(kT) k_assign(uint32_t *members, uint32_t *parent, float *xyz_out,
                                               const float *xyz, const uint32_t *bucket_start,
                                               const uint32_t *bucket_count, const uint32_t *out_start,
                                               uint32_t rho) {
  typedef cub::BlockRadixSort<uint32_t, kT, 1> Sort;
  typedef cub::BlockScan<uint32_t, kT> Scan;
  __shared__ union {
    typename Sort::TempStorage sort;
    typename Scan::TempStorage scan;
  } tmp;
  /* the tile arrays live in dynamic shared memory: with the sort's storage they pass the 48 KB static limit */
  extern __shared__ __align__(16) unsigned char dyn_smem[];
  AssignSmem &s = *reinterpret_cast<AssignSmem *>(dyn_smem);
  const uint32_t b = blockIdx.x, tid = threadIdx.x, lane = tid & 31;
  const uint32_t count = bucket_count[b];
  for (uint32_t t0 = 0; t0 < count; t0 += kT) {
    const uint32_t r0 = bucket_start[b] + t0;
    const uint32_t m = min((uint32_t)kT, count - t0);
    const uint32_t K = (m + rho - 1) / rho;
    const uint32_t out_base = out_start[b] + (t0 / kT) * (kT / rho);
    /* step 1a: load and cubic box */
    if (tid < 6) s.key[tid] = 0xFFFFFFFFu;
    uint32_t k6[6] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
    if (tid < m)
      for (int d = 0; d < 3; d++) {
        const float x = xyz[3 * (size_t)(r0 + tid) + d];
        s.xyz[3 * tid + d] = x;
        const uint32_t kk = psh_f2key(x);
        k6[d] = kk;
        k6[3 + d] = ~kk;
      }
    __syncthreads();
    for (int d = 0; d < 6; d++) {
      for (int o = 16; o > 0; o >>= 1) k6[d] = min(k6[d], __shfl_xor_sync(0xFFFFFFFFu, k6[d], o));
      if (lane == 0) atomicMin(&s.key[d], k6[d]);
    }
    if (tid < K) s.cnt[tid] = 0;
    __syncthreads();
    float lo[3], ext = 0.0f;
    for (int d = 0; d < 3; d++) {
      lo[d] = psh_key2f(s.key[d]);
      const float e = psh_key2f(~s.key[3 + d]) - lo[d];
      ext = e > ext ? e : ext;
    }
    const float scale = ext > 0.0f ? 1024.0f / ext : 0.0f;
    /* step 1b: slots, order by (slot, row) */
    uint32_t key[1];
    key[0] = tid < m ? (bpool_qslot(bpool_qpack(&s.xyz[3 * tid], lo, scale), K) << 10 | tid) : 0xFFFFFu;
    Sort(tmp.sort).Sort(key, 0, 20);
    __syncthreads();
    const uint32_t my_slot = key[0] >> 10, my_t = key[0] & 1023u;
    if (tid < m) atomicAdd(&s.cnt[my_slot], 1u);
    __syncthreads();
    /* three exclusive scans over the K slots */
    const uint32_t c = tid < K ? s.cnt[tid] : 0;
    uint32_t v, tot;
    Scan(tmp.scan).ExclusiveSum(c, v);
    if (tid < K) s.sbase[tid] = v;
    __syncthreads();
    Scan(tmp.scan).ExclusiveSum(c / rho, v, tot);
    if (tid < K) s.fullbase[tid] = v;
    if (tid == 0) s.agg[0] = tot;
    __syncthreads();
    Scan(tmp.scan).ExclusiveSum(c % rho, v, tot);
    if (tid < K) s.leftbase[tid] = v;
    if (tid == 0) s.agg[1] = tot;
    __syncthreads();
    const uint32_t A = s.agg[0], L = s.agg[1], nn = K - A;
    if (tid < m) {
      const uint32_t rank = tid - s.sbase[my_slot];
      const uint32_t F = s.cnt[my_slot] / rho * rho;
      if (rank < F) {
        s.sub[my_t] = s.fullbase[my_slot] + rank / rho;
        s.mem[my_t] = rank % rho;
      } else {
        s.lrow[s.leftbase[my_slot] + rank - F] = my_t;
      }
    }
    if (tid < L) s.seedflag[tid] = 0;
    __syncthreads();
    /* step 2: seeds */
    if (tid < nn) {
      const uint32_t l = bpool_seed_l(tid, L, nn), t = s.lrow[l];
      s.sub[t] = A + tid;
      s.mem[t] = 0;
      s.fill[tid] = 1;
      s.seedrow[tid] = t;
      s.seedflag[l] = 1;
    }
    __syncthreads();
    /* step 3: warp 0 walks the leftovers in order */
    if (tid < 32) {
      uint32_t first_free = 0;
      for (uint32_t l = 0; l < L; l++) {
        if (s.seedflag[l]) continue;
        const uint32_t t = s.lrow[l];
        const uint32_t xq = bpool_qpack(&s.xyz[3 * t], lo, scale);
        uint32_t lo_j, hi_j;
        bpool_window(l, L, nn, &lo_j, &hi_j);
        /* candidate (bad, d, j), lexicographic minimum: the CPU's "first strictly smaller" */
        uint32_t bj = 0xFFFFFFFFu, bd = 0xFFFFFFFFu;
        for (uint32_t j = lo_j + lane; j < hi_j; j += 32) {
          if (s.fill[j] >= rho) continue;
          const uint32_t d = bpool_qdist2(xq, bpool_qpack(&s.xyz[3 * s.seedrow[j]], lo, scale));
          if (bj == 0xFFFFFFFFu || d < bd) {
            bj = j;
            bd = d;
          }
        }
        for (int o = 16; o > 0; o >>= 1) {
          const uint32_t oj = __shfl_xor_sync(0xFFFFFFFFu, bj, o);
          const uint32_t od = __shfl_xor_sync(0xFFFFFFFFu, bd, o);
          const bool take = oj != 0xFFFFFFFFu && (bj == 0xFFFFFFFFu || od < bd || (od == bd && oj < bj));
          if (take) {
            bj = oj;
            bd = od;
          }
        }
        if (lane == 0) {
          if (bj == 0xFFFFFFFFu) {
            while (s.fill[first_free] >= rho) first_free++;
            bj = first_free;
          }
          s.sub[t] = A + bj;
          s.mem[t] = s.fill[bj]++;
        }
        __syncwarp();
      }
    }
    __syncthreads();
    /* outputs */
    for (uint32_t k = tid; k < K * rho; k += kT) s.memrow[k] = BPOOL_NONE;
    __syncthreads();
    if (tid < m) {
      s.memrow[s.sub[tid] * rho + s.mem[tid]] = tid;
      parent[r0 + tid] = out_base + s.sub[tid];
    }
    __syncthreads();
    for (uint32_t k = tid; k < K * rho; k += kT) {
      const uint32_t t = s.memrow[k];
      members[(size_t)out_base * rho + k] = t == BPOOL_NONE ? BPOOL_NONE : r0 + t;
    }
    if (tid < K) {
      float sx = 0.0f, sy = 0.0f, sz = 0.0f;
      uint32_t size = 0;
      for (uint32_t k = 0; k < rho; k++) {
        const uint32_t t = s.memrow[tid * rho + k];
        if (t == BPOOL_NONE) continue;
        sx = bpool_add(sx, s.xyz[3 * t]);
        sy = bpool_add(sy, s.xyz[3 * t + 1]);
        sz = bpool_add(sz, s.xyz[3 * t + 2]);
        size++;
      }
      float *o = xyz_out + 3 * (size_t)(out_base + tid);
      o[0] = sx / (float)size;
      o[1] = sy / (float)size;
      o[2] = sz / (float)size;
    }
    __syncthreads();
  }
}

template <typename T> struct io;
template <> struct io<float> {
  static __device__ __forceinline__ float ld(const float *p) { return __ldg(p); }
  static __device__ __forceinline__ float f(float x) { return x; }
  static __device__ __forceinline__ float st(float x) { return x; }
};
template <> struct io<uint16_t> { /* bf16 bits */
  static __device__ __forceinline__ float ld(const uint16_t *p) { return bpool_bf16_to_f(__ldg(p)); }
  static __device__ __forceinline__ float f(uint16_t x) { return bpool_bf16_to_f(x); }
  static __device__ __forceinline__ uint16_t st(float x) { return bpool_f_to_bf16(x); }
};
template <> struct io<__half> { /* IEEE binary16: exact widening, round to nearest even (battn_from_float's) */
  static __device__ __forceinline__ float ld(const __half *p) { return __half2float(__ldg(p)); }
  static __device__ __forceinline__ float f(__half x) { return __half2float(x); }
  static __device__ __forceinline__ __half st(float x) { return __float2half_rn(x); }
};

template <typename T, int RHO>
__global__ void k_reduce(T *out, const T *in, const uint32_t *members, uint32_t n_out, uint32_t channels,
                         bpool_op op) {
  const size_t total = (size_t)n_out * channels;
  for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    const uint32_t r = (uint32_t)(e / channels), ch = (uint32_t)(e % channels);
    float acc = 0.0f;
    uint32_t size = 0;
#pragma unroll
    for (int k = 0; k < RHO; k++) {
      const uint32_t row = __ldg(members + (size_t)r * RHO + k);
      if (row == BPOOL_NONE) continue;
      const float x = io<T>::ld(in + (size_t)row * channels + ch);
      acc = size == 0 ? x : bpool_combine(op, acc, x);
      size++;
    }
    if (op == BPOOL_MEAN && size) acc = acc / (float)size;
    out[e] = io<T>::st(acc);
  }
}

template <typename T>
hx_status launch_reduce(T *out, const T *in, const uint32_t *members, uint32_t n_out, uint32_t rho,
                        uint32_t channels, bpool_op op, cudaStream_t s, hx_err *err) {
  const size_t total = (size_t)n_out * channels;
  const unsigned blocks = (unsigned)((total + 255) / 256 < 16384 ? (total + 255) / 256 + 1 : 16384);
  switch (rho) {
  case 2: k_reduce<T, 2><<<blocks, 256, 0, s>>>(out, in, members, n_out, channels, op); break;
  case 4: k_reduce<T, 4><<<blocks, 256, 0, s>>>(out, in, members, n_out, channels, op); break;
  default: k_reduce<T, 8><<<blocks, 256, 0, s>>>(out, in, members, n_out, channels, op); break;
  }
  BPOOL_LAUNCHED("reduce");
  return HX_OK;
}

/* Unpool: one thread per VEC consecutive channels of a row (VEC = 16 bytes when the row and the pointers
 * allow 16-byte access, else 1); the fp32 sum and the rounding are bpool_unpool_dt_cpu's. */
template <typename T, int VEC>
__global__ void k_unpool(T *up, const T *down, const T *residual, const uint32_t *parent, uint32_t n_rows,
                         uint32_t channels) {
  const uint32_t per_row = channels / VEC;
  const size_t total = (size_t)n_rows * per_row;
  for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    const uint32_t r = (uint32_t)(e / per_row), q = (uint32_t)(e % per_row);
    const uint32_t par = __ldg(parent + r);
    const size_t o = (size_t)r * channels + (size_t)q * VEC, d = (size_t)par * channels + (size_t)q * VEC;
    T a[VEC], b[VEC];
    if (VEC == 1) {
      a[0] = par == BPOOL_NONE ? T(0) : __ldg(down + d);
      if (residual) b[0] = __ldg(residual + o);
    } else {
      if (par == BPOOL_NONE) *(uint4 *)a = make_uint4(0, 0, 0, 0);
      else *(uint4 *)a = __ldg((const uint4 *)(down + d));
      if (residual) *(uint4 *)b = __ldcs((const uint4 *)(residual + o)); /* read once: streaming */
    }
#pragma unroll
    for (int k = 0; k < VEC; k++) {
      float v = io<T>::f(a[k]);
      if (residual) v = bpool_add(v, io<T>::f(b[k]));
      a[k] = io<T>::st(v);
    }
    if (VEC == 1) up[o] = a[0];
    else __stcs((uint4 *)(up + o), *(uint4 *)a);
  }
}

template <typename T>
hx_status launch_unpool(T *up, const T *down, const T *residual, const uint32_t *parent, uint32_t n_rows,
                        uint32_t channels, cudaStream_t s, hx_err *err) {
  constexpr int V = 16 / (int)sizeof(T);
  const bool vec = channels % V == 0 && ((uintptr_t)up & 15u) == 0 && ((uintptr_t)down & 15u) == 0 &&
                   ((uintptr_t)residual & 15u) == 0;
  const size_t total = (size_t)n_rows * (vec ? channels / V : channels);
  const unsigned blocks = (unsigned)((total + 255) / 256 < 16384 ? (total + 255) / 256 + 1 : 16384);
  if (vec) k_unpool<T, V><<<blocks, 256, 0, s>>>(up, down, residual, parent, n_rows, channels);
  else k_unpool<T, 1><<<blocks, 256, 0, s>>>(up, down, residual, parent, n_rows, channels);
  BPOOL_LAUNCHED("unpool");
  return HX_OK;
}

/* ---- v2 ------------------------------------------------------------------------------------------------
 * assign: 128-thread blocks (8 rows per thread), about 27 KB of shared memory, so 8 blocks share an SM
 * (v1: 2); step 3, the only serial part, keeps every new sub-bucket's fill in registers (4-bit fields of
 * one 64-bit word per lane, lane = sub-bucket mod 32, which is also the lane that sees that sub-bucket as a
 * candidate, since a window is at most 64 wide), packs (integer distance, window offset) into one 32-bit
 * key and takes the lexicographic minimum with one __reduce_min_sync: no shared-memory round trip and
 * no shuffle tree on the chain from one leftover to the next. Same steps and result as bpool_assign_cpu.
 * reduce: 16 bytes per thread (4 fp32 or 8 bf16 channels) when rows and pointers allow, else v1's. */
/* Block shape of the k_assign2 family: threads, the most rows of a tile it holds (<= BPOOL_TILE: the
 * tile the algorithm defines stays BPOOL_TILE; a shape with fewer rows leaves larger buckets to a second
 * launch), rows per thread, most sub-buckets (rho >= 2) and the blocks per SM it is built for. */
/* kLanesStep3: step 3 by lanes (step3_lanes) where a tile's new sub-buckets fit one warp (v9), else by
 * leftovers one at a time (v2-v8). */
template <int kThreads, int kRows, int kMinBlocks, bool kLanesStep3 = false> struct Shape {
  static constexpr int kT = kThreads, kTile = kRows, kI = kRows / kThreads, kSl = kRows / 2;
  static constexpr int kBlocks = kMinBlocks;
  static constexpr bool kLanes = kLanesStep3;
  /* v9's shapes also chain their launches programmatically (pool_v9): each block lets the next launch be
   * placed at once and waits for the previous one (a no-op for a plain launch) */
  static constexpr bool kPdl = kLanesStep3;
  static_assert(kRows <= (int)BPOOL_TILE && kI == 8 && kSl % kThreads == 0, "k_assign2 holds 8 rows per thread");
};
using Shape2 = Shape<128, BPOOL_TILE, 8>;     /* v2-v4: any tile, 8 blocks of 4 warps per SM */
using Shape5 = Shape<64, BPOOL_TILE / 2, 16>; /* v5: buckets of <= 512 rows, 16 blocks of 2 warps per SM */
using Shape9 = Shape<64, BPOOL_TILE / 2, 16, true>; /* v9: Shape5 with step 3 by lanes */
using Shape9L = Shape<128, BPOOL_TILE, 8, true>;    /* v9's buckets of more than 512 rows */
constexpr int kT2 = Shape2::kT;

template <typename Sh> struct AssignSmem2 {
  uint32_t q[Sh::kTile]; /* packed quantised coordinates of each tile row */
  union {
    uint32_t lq[Sh::kTile];     /* packed coordinates of each leftover, in L order (steps 1-3) */
    uint16_t memrow[Sh::kTile]; /* tile row of each (sub-bucket, member) slot (outputs; K*rho < m + 8 entries
                                   stay inside lq's larger storage) */
  } u;
  uint32_t cnt[Sh::kSl];   /* rows per slot */
  uint32_t base[Sh::kSl];  /* exclusive scans, packed: slot start | full sub-buckets << 11 | leftovers << 21 */
  uint32_t seedq[Sh::kSl]; /* packed coordinates of each new sub-bucket's seed */
  uint16_t lrow[Sh::kTile], sub[Sh::kTile];
  uint8_t mem[Sh::kTile], seedflag[Sh::kTile];
  uint32_t key[6];
  uint8_t fill[Sh::kLanes ? 32 : 1]; /* step3_lanes: members of each new sub-bucket so far */
};

/* Step 3 of v2, one leftover as one lane sees it: its flag and row, the window start, the lane's first
 * candidate j1 (j1 = lane mod 32) and the keys (distance << 6 | offset in the window) of j1 and j1 + 32,
 * all-ones where the candidate is outside the window. The fill test is applied later, on the chain. */
struct Step3Cand {
  uint32_t seed, t, lo, j1, k1, k2;
};
template <typename Sh>
__device__ __forceinline__ Step3Cand step3_load(const AssignSmem2<Sh> &s, uint32_t l, uint32_t c, uint32_t nn, uint32_t lane) {
  Step3Cand x;
  uint32_t hi;
  x.seed = s.seedflag[l];
  x.t = s.lrow[l];
  const uint32_t xq = s.u.lq[l];
  bpool_window_at(c, nn, &x.lo, &hi);
  x.j1 = x.lo + ((lane - x.lo) & 31u);
  x.k1 = x.j1 < hi ? bpool_qdist2(xq, s.seedq[x.j1]) << 6 | (x.j1 - x.lo) : 0xFFFFFFFFu;
  x.k2 = x.j1 + 32 < hi ? bpool_qdist2(xq, s.seedq[x.j1 + 32]) << 6 | (x.j1 + 32 - x.lo) : 0xFFFFFFFFu;
  return x;
}

/* Step 3 of v9 where a tile has nn <= 32 new sub-buckets (bpool_window then spans all of them: rho 8 at
 * 600k averages ~3), run by warp 0. The serial walk (bpool_assign_cpu, and v2-v8's loop below) spends a
 * warp-wide min-reduction and ~100 instructions on each leftover although it compares only nn candidates;
 * ncu (H100, 600k xor-div, rho 8) put 41% of v5's block time in it. Here each lane takes one leftover of a
 * 32-entry chunk of L, in rounds: an active lane picks the nearest non-full sub-bucket (ties to the lower
 * id) under the fills committed so far, and lanes that picked the same one are ranked in list order
 * (__match_any_sync). A pick with fill + rank < rho is the one the serial walk makes: fills only grow, so
 * the sub-buckets non-full at the lane's turn are a subset of those it chose from, and its pick is among
 * them. Every lane before the first failed pick commits (member slot = fill + rank); the others pick again
 * next round. The first active lane always succeeds (rank 0, non-full), so each round commits at least
 * one leftover; a second round happens only when a sub-bucket fills up inside the chunk. A non-full
 * sub-bucket always exists: nn = ceil(L / rho) gives room for every leftover. Same result as the serial walk. */
template <typename Sh>
__device__ __forceinline__ void step3_lanes(AssignSmem2<Sh> &s, uint32_t L, uint32_t nn, uint32_t A, uint32_t rho,
                                            uint32_t lane) {
  static_assert(Sh::kLanes, "step3_lanes needs the fill array");
  constexpr uint32_t kAll = 0xFFFFFFFFu;
  uint32_t lt;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
  if (lane < nn) s.fill[lane] = 1; /* the seed */
  __syncwarp();
  uint32_t full = 0; /* bit j: new sub-bucket j holds rho members (none yet: rho >= 2) */
  for (uint32_t c0 = 0; c0 < L; c0 += 32) {
    const uint32_t l = c0 + lane;
    bool active = l < L && !s.seedflag[l];
    const uint32_t t = active ? s.lrow[l] : 0u, xq = active ? s.u.lq[l] : 0u;
    while (__any_sync(kAll, active)) {
      uint32_t best = kAll;
      for (uint32_t j = 0; j < nn; j++) /* warp-uniform; the seeds' coordinates are broadcast reads */
        if (!((full >> j) & 1u)) best = min(best, bpool_qdist2(xq, s.seedq[j]) << 6 | j);
      const uint32_t cj = active ? best & 31u : kAll; /* inactive lanes form their own group */
      const uint32_t peers = __match_any_sync(kAll, cj);
      const uint32_t rank = (uint32_t)__popc(peers & lt), f = active ? s.fill[cj] : 0u;
      const uint32_t bad = __ballot_sync(kAll, active && f + rank >= rho);
      const uint32_t before = bad ? (1u << (__ffs((int)bad) - 1)) - 1u : kAll; /* lanes before the first failure */
      const bool commit = active && ((before >> lane) & 1u);
      __syncwarp(); /* every fill read before any is advanced */
      if (commit) {
        s.sub[t] = (uint16_t)(A + cj);
        s.mem[t] = (uint8_t)(f + rank);
        const uint32_t done = peers & before; /* this sub-bucket's committed lanes: the lowest ranks */
        if ((done >> lane) == 1u) s.fill[cj] = (uint8_t)(f + (uint32_t)__popc(done)); /* the last of them */
      }
      active = active && !commit;
      __syncwarp();
      full = __ballot_sync(kAll, lane < nn && s.fill[lane] >= rho);
    }
  }
}

/* One pooled row's VEC channels from q * VEC on: fp32 accumulation over the member rows in member order
 * (BPOOL_NONE skipped), the mean divided once at the end, rounded to T: bpool_reduce_cpu's arithmetic. VEC
 * = 16 / sizeof(T) reads and writes 16 bytes (row and pointers 16-byte aligned), VEC = 1 one element.
 * Shared by the standalone reduction (k_reduce_vec), the fused one (v4's k_assign2 epilogue) and v7's
 * reducers, which load several chunks before combining any (load_chunk, then combine_chunk). */
template <typename T, int RHO, int VEC>
__device__ __forceinline__ void combine_chunk(T *out_row, const T (&v)[RHO][VEC], const uint32_t (&rows)[RHO],
                                              uint32_t q, bpool_op op) {
  float acc[VEC] = {};
  uint32_t size = 0;
#pragma unroll
  for (int k = 0; k < RHO; k++) {
    if (rows[k] == BPOOL_NONE) continue;
#pragma unroll
    for (int c = 0; c < VEC; c++) acc[c] = size == 0 ? io<T>::f(v[k][c]) : bpool_combine(op, acc[c], io<T>::f(v[k][c]));
    size++;
  }
  T o[VEC];
#pragma unroll
  for (int c = 0; c < VEC; c++) o[c] = io<T>::st(op == BPOOL_MEAN && size ? acc[c] / (float)size : acc[c]);
  if (VEC == 1) out_row[q] = o[0];
  else *((uint4 *)out_row + q) = *(uint4 *)o;
}
/* One member row's VEC channels from q * VEC on (nothing for BPOOL_NONE: combine_chunk skips it). */
template <typename T, int VEC>
__device__ __forceinline__ void load_chunk(T (&v)[VEC], const T *in, uint32_t row, uint32_t q, uint32_t channels) {
  if (row == BPOOL_NONE) return;
  if (VEC == 1) v[0] = __ldg(in + (size_t)row * channels + q);
  else *(uint4 *)v = __ldg((const uint4 *)(in + (size_t)row * channels) + q);
}
template <typename T, int RHO, int VEC>
__device__ __forceinline__ void reduce_chunk(T *out_row, const T *in, const uint32_t (&rows)[RHO], uint32_t q,
                                             uint32_t channels, bpool_op op) {
  T v[RHO][VEC];
#pragma unroll
  for (int k = 0; k < RHO; k++) load_chunk<T, VEC>(v[k], in, rows[k], q, channels);
  combine_chunk<T, RHO, VEC>(out_row, v, rows, q, op);
}

/* What k_assign2 does with features after a tile's assignment: nothing (v2, v3), or v4's fused reduction
 * of the tile's sub-buckets while their member rows are still in shared memory. */
struct NoFeat {
  static constexpr bool kOn = false;
};
template <typename T, int VEC> struct Feat {
  static constexpr bool kOn = true;
  T *out;         /* pooled features [n_out, channels] */
  const T *in;    /* features [n_rows, channels] in the rows' order */
  uint32_t channels;
  bpool_op op;
};
template <int RHO, typename T, int VEC>
__device__ __forceinline__ void feat_tile(const Feat<T, VEC> &f, const uint16_t *memrow, uint32_t r0, uint32_t out_base,
                                          uint32_t K, uint32_t tid) {
  const uint32_t per_row = f.channels / VEC;
  for (uint32_t e = tid; e < K * per_row; e += kT2) {
    const uint32_t sb = e / per_row, q = e % per_row;
    uint32_t rows[RHO];
#pragma unroll
    for (int k = 0; k < RHO; k++) {
      const uint32_t t = memrow[sb * RHO + (uint32_t)k];
      rows[k] = t == 0xFFFFu ? BPOOL_NONE : r0 + t;
    }
    reduce_chunk<T, RHO, VEC>(f.out + (size_t)(out_base + sb) * f.channels, f.in, rows, q, f.channels, f.op);
  }
}

/* Pooled coordinates of one sub-bucket: the mean of its member rows (memrow: RHO tile rows, 0xFFFF past its
 * size) added in member order from 0, as bpool_assign_cpu does. Every member's three loads are issued
 * before the first add: a loop that adds as it loads waits for each row in turn, which was ~20% of v5's
 * stall samples (ncu, H100, 600k). */
template <int RHO>
__device__ __forceinline__ void mean_out(float *o, const float *xyz, const uint16_t *memrow, uint32_t r0) {
  float v[RHO][3];
  bool in[RHO];
  uint32_t size = 0;
#pragma unroll
  for (int k = 0; k < RHO; k++) {
    const uint32_t t = memrow[k];
    in[k] = t != 0xFFFFu;
    const float *xr = xyz + 3 * (size_t)(r0 + (in[k] ? t : 0u));
#pragma unroll
    for (int d = 0; d < 3; d++) v[k][d] = in[k] ? xr[d] : 0.0f;
    size += in[k] ? 1u : 0u;
  }
  float sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma unroll
  for (int k = 0; k < RHO; k++)
    if (in[k]) {
      sx = bpool_add(sx, v[k][0]);
      sy = bpool_add(sy, v[k][1]);
      sz = bpool_add(sz, v[k][2]);
    }
  o[0] = sx / (float)size;
  o[1] = sy / (float)size;
  o[2] = sz / (float)size;
}

/* Step 1's order within a slot (rank = rows of the same slot before this one, in row order), v3's way: each
 * of the kW warps takes a contiguous run of 32-row chunks in row order; per chunk, lanes of one slot find
 * each other with __match_any_sync, the lowest of them advances the warp's count of that slot, and the
 * per-slot counts of the warps are turned into prefixes afterwards. No sort: v2's 1024-key radix sort over
 * 20 bits was 58% of its instructions (ncu, H200, 600k xor-div, rho 2) while a bucket averages ~300 rows. */
template <typename Sh> struct WarpCounts {
  uint16_t wc[Sh::kT / 32][Sh::kSl]; /* rows of each slot in each warp's run, then the exclusive prefix over warps */
};

/* The in-kernel plan of v5 (kPlan): every block reads all nbuckets counts (8 KB at 2048 buckets, from L2)
 * and takes its own exclusive prefix of ceil(count / rho), the sum bpool_plan_gpu's CUB scan would give
 * it, so the plan needs no launch of its own; block b stores out_start[b] and out_count[b]. The same
 * pass sums the counts: when they add up to n_rows the buckets (which never overlap and lie inside
 * [0, n_rows), as every bucket table must) cover every row and no parent needs the NONE fill; otherwise (padded layouts) a non-empty bucket also fills the rows
 * from its end to the next non-empty bucket's start (the first one from row 0 too; block 0 every row
 * when no bucket has rows). Those rows lie in no bucket, so no other block writes them.
 * O(nbuckets) reads per block: the host uses it up to kPlanMaxBuckets buckets. */
constexpr uint32_t kPlanMaxBuckets = 4096;

/* Sum (kMin false) or minimum (kMin true) of v over the block's kT threads, in every thread; red holds one
 * word per warp and may be reused by the next call (the first barrier waits for this call's readers). */
template <int kT, bool kMin>
__device__ __forceinline__ uint32_t block_reduce(uint32_t v, uint32_t *red) {
  v = kMin ? __reduce_min_sync(0xFFFFFFFFu, v) : __reduce_add_sync(0xFFFFFFFFu, v);
  __syncthreads(); /* red free (an earlier reduction's readers are done) */
  if ((threadIdx.x & 31u) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  uint32_t t = kMin ? 0xFFFFFFFFu : 0u;
#pragma unroll
  for (int w = 0; w < kT / 32; w++) t = kMin ? min(t, red[w]) : t + red[w];
  return t;
}

/* The parent = NONE fill of the rows between bucket b's end and the next non-empty bucket's start (and
 * from row 0 to the first non-empty bucket; every row when no bucket has rows, by block 0): the rows of
 * a padded layout that lie in no bucket, so no other block writes them. Called only when the counts do
 * not add up to n_rows. O(nbuckets) reads per block. */
template <int kT>
__device__ void fill_gaps(uint32_t *parent, const uint32_t *bucket_start, const uint32_t *bucket_count,
                          uint32_t nbuckets, uint32_t n_rows, uint32_t b, uint32_t count, uint32_t *red) {
  constexpr uint32_t kU = 8;
  const uint32_t start = count ? bucket_start[b] : 0, end = start + count;
  uint32_t first = 0xFFFFFFFFu, next = 0xFFFFFFFFu; /* least non-empty start; least one >= end */
  for (uint32_t k0 = threadIdx.x; k0 < nbuckets; k0 += kU * kT) {
    uint32_t c[kU], sk[kU];
#pragma unroll
    for (uint32_t j = 0; j < kU; j++) {
      const bool in = k0 + j * kT < nbuckets;
      c[j] = in ? __ldg(bucket_count + k0 + j * kT) : 0;
      sk[j] = in ? __ldg(bucket_start + k0 + j * kT) : 0;
    }
#pragma unroll
    for (uint32_t j = 0; j < kU; j++)
      if (c[j]) {
        first = min(first, sk[j]);
        if (count && sk[j] >= end) next = min(next, sk[j]);
      }
  }
  first = min(block_reduce<kT, true>(first, red), n_rows);
  next = min(block_reduce<kT, true>(next, red), n_rows);
  uint32_t lo = 0, hi = 0, lo2 = 0, hi2 = 0;
  if (count) {
    lo = end, hi = next;
    if (start == first) lo2 = 0, hi2 = start;
  } else if (b == 0 && first == n_rows) {
    lo = 0, hi = n_rows;
  }
  for (uint32_t r = lo + threadIdx.x; r < hi; r += kT) parent[r] = BPOOL_NONE;
  for (uint32_t r = lo2 + threadIdx.x; r < hi2; r += kT) parent[r] = BPOOL_NONE;
}

template <int kT>
__device__ uint32_t plan_in_block(uint32_t *out_start, uint32_t *out_count, uint32_t *parent,
                                  const uint32_t *bucket_start, const uint32_t *bucket_count, uint32_t nbuckets,
                                  uint32_t n_rows, uint32_t rho, uint32_t b, uint32_t count, uint32_t *red) {
  /* 8 independent loads per thread in flight (a plain loop waits for each: 32 L2 round trips in series at
   * 2048 buckets and 64 threads, ~10 us, measured on the H100 as v5's first version), 16 bytes each where
   * the array allows, and a shift for ceil(c / rho) (a division was 14% of v5's instructions, ncu) */
  constexpr uint32_t kU = 8;
  const uint32_t sh = 31u - (uint32_t)__clz((int)rho); /* rho is 2, 4 or 8 */
  uint32_t pre = 0, tot = 0, k_vec = 0;
  if (((uintptr_t)bucket_count & 15u) == 0) {
    const uint4 *c4 = (const uint4 *)bucket_count;
    const uint32_t n4 = nbuckets / 4;
    for (uint32_t q0 = threadIdx.x; q0 < n4; q0 += kU * kT) {
      uint4 v[kU];
#pragma unroll
      for (uint32_t j = 0; j < kU; j++) v[j] = q0 + j * kT < n4 ? __ldg(c4 + q0 + j * kT) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (uint32_t j = 0; j < kU; j++) {
        const uint32_t k = 4 * (q0 + j * kT), c[4] = {v[j].x, v[j].y, v[j].z, v[j].w};
#pragma unroll
        for (uint32_t e = 0; e < 4; e++) { /* a zero count past the end adds nothing to either sum */
          tot += c[e];
          if (k + e < b) pre += (c[e] + rho - 1) >> sh;
        }
      }
    }
    k_vec = 4 * n4;
  }
  for (uint32_t k0 = k_vec + threadIdx.x; k0 < nbuckets; k0 += kU * kT) {
    uint32_t c[kU];
#pragma unroll
    for (uint32_t j = 0; j < kU; j++) c[j] = k0 + j * kT < nbuckets ? __ldg(bucket_count + k0 + j * kT) : 0;
#pragma unroll
    for (uint32_t j = 0; j < kU; j++) {
      tot += c[j];
      if (k0 + j * kT < b) pre += (c[j] + rho - 1) >> sh;
    }
  }
  pre = block_reduce<kT, false>(pre, red);
  tot = block_reduce<kT, false>(tot, red);
  if (threadIdx.x == 0) {
    out_start[b] = pre;
    out_count[b] = (count + rho - 1) / rho;
  }
  if (tot != n_rows) fill_gaps<kT>(parent, bucket_start, bucket_count, nbuckets, n_rows, b, count, red); /* block-uniform */
  return pre;
}

/* kPlan: v5's in-kernel plan and parent fill (plan_in_block writes plan_start/plan_count; out_start unread).
 * skip_upto: buckets of at most that many rows are left alone (v5's second launch takes the buckets the
 * 512-row shape cannot hold); a shape with fewer rows than BPOOL_TILE leaves larger buckets alone. */
/* The first output row of a bucket, as assign_bucket asks for it (once per tile, after step 3): known
 * when the block starts (v2-v6), or read from the plan once its block has published it (v7, PlanWait). */
struct KnownStart {
  uint32_t v;
  __device__ __forceinline__ uint32_t operator()() const { return v; }
};

/* One bucket's assignment, tile by tile (and v4's fused reduction of each tile): rows [r_start, r_start +
 * count), output rows from ostart on. Every thread of the block calls it: it synchronises the block, and it
 * ends with a barrier, so a caller may reuse the shared arrays or publish the bucket right after it. */
template <typename Sh, bool kMatch, typename FeatT, typename OStart>
__device__ __forceinline__ void assign_bucket(uint32_t *members, uint32_t *parent, float *xyz_out, const float *xyz,
                                              uint32_t r_start, uint32_t count, const OStart &ostart, uint32_t rho,
                                              const FeatT &feat) {
  constexpr int kT2 = Sh::kT, kI2 = Sh::kI, kSlots = Sh::kSl;
  static_assert(!FeatT::kOn || Sh::kT == Shape2::kT, "feat_tile strides by Shape2's threads");
  typedef cub::BlockRadixSort<uint32_t, kT2, kI2> Sort;
  typedef cub::BlockScan<uint32_t, kT2> Scan;
  constexpr int kS = kSlots / kT2; /* slots per thread in the scan */
  constexpr uint32_t kW = kT2 / 32, kNone = 0xFFFFFFFFu;
  /* v2: the sort's storage, reused by the scan; v3 has no sort, so none of its (~4 KB) storage, which keeps
   * v3 at 8 blocks per SM with WarpCounts */
  struct NoSort {};
  __shared__ union {
    typename std::conditional<kMatch, NoSort, typename Sort::TempStorage>::type sort;
    typename Scan::TempStorage scan;
  } tmp;
  __shared__ AssignSmem2<Sh> s;
  __shared__ WarpCounts<Sh> wcs; /* v3 only (not in tmp: the prefixes outlive the scan) */
  const uint32_t tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  for (uint32_t t0 = 0; t0 < count; t0 += BPOOL_TILE) {
    const uint32_t r0 = r_start + t0;
    const uint32_t m = min(BPOOL_TILE, count - t0);
    const uint32_t K = (m + rho - 1) / rho;
    /* the rows this thread holds: v2 rows tid + i*kT2 (the sort's input); v3 the lane's row of each chunk of
     * its warp's run (cpw <= kI2 chunks of 32 rows) */
    const uint32_t cpw = ((m + 31) / 32 + kW - 1) / kW;
    auto row_of = [&](int i) { return kMatch ? 32 * (warp * cpw + (uint32_t)i) + lane : tid + (uint32_t)i * kT2; };
    auto held = [&](int i) { return (!kMatch || (uint32_t)i < cpw) && row_of(i) < m; };
    /* step 1a: the rows into registers, cubic box by ordered keys */
    float x[kI2][3];
    uint32_t k6[6] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
    if (tid < 6) s.key[tid] = 0xFFFFFFFFu;
#pragma unroll
    for (int i = 0; i < kI2; i++) {
      const uint32_t row = row_of(i);
      const bool h = held(i);
#pragma unroll
      for (int d = 0; d < 3; d++) {
        x[i][d] = h ? xyz[3 * (size_t)(r0 + row) + d] : 0.0f;
        if (h) {
          const uint32_t kk = psh_f2key(x[i][d]);
          k6[d] = min(k6[d], kk);
          k6[3 + d] = min(k6[3 + d], ~kk);
        }
      }
    }
    for (uint32_t k = tid; k < kSlots; k += kT2) s.cnt[k] = 0;
    if (kMatch)
      for (uint32_t k = tid; k < kW * kSlots; k += kT2) (&wcs.wc[0][0])[k] = 0;
    __syncthreads(); /* s.key initialised before the atomics */
#pragma unroll
    for (int d = 0; d < 6; d++) {
      for (int o = 16; o > 0; o >>= 1) k6[d] = min(k6[d], __shfl_xor_sync(0xFFFFFFFFu, k6[d], o));
      if (lane == 0) atomicMin(&s.key[d], k6[d]);
    }
    __syncthreads(); /* box complete */
    float lo[3], ext = 0.0f;
    for (int d = 0; d < 3; d++) {
      lo[d] = psh_key2f(s.key[d]);
      const float e = psh_key2f(~s.key[3 + d]) - lo[d];
      ext = e > ext ? e : ext;
    }
    const float scale = ext > 0.0f ? 1024.0f / ext : 0.0f;
    /* step 1b: packed coordinates and slots; v2: rows ordered by (slot, row) with a block radix sort,
     * v3: each row's rank within its slot directly (WarpCounts) */
    uint32_t keys[kI2]; /* v2: slot << 10 | row, sorted (blocked: sorted positions tid*kI2 ..); v3: slot or kNone */
    uint32_t rk[kI2];   /* v3: rank within the slot among the warp's rows */
#pragma unroll
    for (int i = 0; i < kI2; i++) {
      const uint32_t row = row_of(i);
      keys[i] = kMatch ? kNone : 0xFFFFFu;
      rk[i] = 0;
      if (held(i)) {
        const uint32_t qq = bpool_qpack(x[i], lo, scale);
        s.q[row] = qq;
        keys[i] = kMatch ? bpool_qslot(qq, K) : bpool_qslot(qq, K) << 10 | row;
      }
    }
    if constexpr (kMatch) {
      uint32_t lt;
      asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
#pragma unroll
      for (int i = 0; i < kI2; i++) {
        if ((uint32_t)i >= cpw) break; /* warp-uniform */
        const uint32_t peers = __match_any_sync(0xFFFFFFFFu, keys[i]);
        const uint32_t base = keys[i] != kNone ? wcs.wc[warp][keys[i]] : 0;
        rk[i] = base + (uint32_t)__popc(peers & lt);
        __syncwarp(); /* every lane of the slot has read the count before its lowest lane advances it */
        if (keys[i] != kNone && (peers & lt) == 0) wcs.wc[warp][keys[i]] = (uint16_t)(base + (uint32_t)__popc(peers));
        __syncwarp();
      }
      __syncthreads(); /* every warp's counts complete */
      for (uint32_t k = tid; k < K; k += kT2) {
        uint32_t run = 0;
#pragma unroll
        for (uint32_t w = 0; w < kW; w++) {
          const uint32_t t = wcs.wc[w][k];
          wcs.wc[w][k] = (uint16_t)run;
          run += t;
        }
        s.cnt[k] = run;
      }
    } else {
      Sort(tmp.sort).Sort(keys, 0, 20); /* blocked: thread tid holds sorted positions tid*kI2 .. +kI2-1 */
#pragma unroll
      for (int i = 0; i < kI2; i++)
        if (tid * kI2 + (uint32_t)i < m) atomicAdd(&s.cnt[keys[i] >> 10], 1u);
    }
    __syncthreads(); /* counts complete; the sort's storage is free for the scan */
    /* the three exclusive scans of step 1 as one scan of packed fields (totals 1024, 512, 1024 fit 11/10/11 bits) */
    uint32_t pk[kS], tot;
#pragma unroll
    for (int j = 0; j < kS; j++) {
      const uint32_t sl = tid * kS + (uint32_t)j, c = sl < K ? s.cnt[sl] : 0;
      pk[j] = c | (c / rho) << 11 | (c % rho) << 21;
    }
    Scan(tmp.scan).ExclusiveSum(pk, pk, tot);
#pragma unroll
    for (int j = 0; j < kS; j++) s.base[tid * kS + (uint32_t)j] = pk[j];
    __syncthreads(); /* bases visible */
    const uint32_t A = (tot >> 11) & 1023u, L = tot >> 21, nn = K - A;
#pragma unroll
    for (int i = 0; i < kI2; i++) {
      uint32_t sl, row, rank;
      if (kMatch) {
        if (!held(i)) continue;
        sl = keys[i];
        row = row_of(i);
        rank = rk[i] + wcs.wc[warp][sl];
      } else {
        const uint32_t p = tid * kI2 + (uint32_t)i;
        if (p >= m) continue;
        sl = keys[i] >> 10;
        row = keys[i] & 1023u;
        rank = p - (s.base[sl] & 2047u);
      }
      const uint32_t bs = s.base[sl], F = s.cnt[sl] / rho * rho;
      if (rank < F) {
        s.sub[row] = (uint16_t)(((bs >> 11) & 1023u) + rank / rho);
        s.mem[row] = (uint8_t)(rank % rho);
      } else {
        const uint32_t l = (bs >> 21) + rank - F;
        s.lrow[l] = (uint16_t)row;
        s.u.lq[l] = s.q[row];
        s.seedflag[l] = 0;
      }
    }
    __syncthreads(); /* leftover list complete */
    /* step 2: seeds */
    for (uint32_t j = tid; j < nn; j += kT2) {
      const uint32_t l = bpool_seed_l(j, L, nn), t = s.lrow[l];
      s.sub[t] = (uint16_t)(A + j);
      s.mem[t] = 0;
      s.seedq[j] = s.u.lq[l];
      s.seedflag[l] = 1;
    }
    __syncthreads(); /* seeds visible to warp 0 */
    /* step 3: warp 0 walks the leftovers in order; fill of new sub-bucket j lives in lane j % 32, bits
     * 4*(j/32) .. +3 of fillw (nn <= 512: 16 fields; fill <= rho <= 8) */
    bool by_lanes = false; /* block-uniform */
    if constexpr (Sh::kLanes) {
      by_lanes = nn <= 32;
      if (by_lanes && tid < 32) step3_lanes(s, L, nn, A, rho, lane);
    }
    if (!by_lanes && tid < 32) {
      uint64_t fillw = 0;
      for (uint32_t k = 0; k < 16; k++)
        if (32 * k + lane < nn) fillw |= 1ull << (4 * k);
      /* The candidates' distances do not depend on the fills, so leftover l + 1's loads and distances are
       * issued before leftover l's reduction (software pipelining by one): the chain from one leftover to
       * the next is the fill test, one min, the warp reduction and the owner's field update. The window
       * centre floor(l * nn / L) advances without a division (nn <= L: at most one step per leftover). */
      uint32_t c = 0, num = 0;
      Step3Cand cur = L ? step3_load(s, 0, 0, nn, lane) : Step3Cand{};
      for (uint32_t l = 0; l < L; l++) {
        num += nn;
        if (num >= L) {
          num -= L;
          c++;
        }
        const Step3Cand nxt = l + 1 < L ? step3_load(s, l + 1, c, nn, lane) : cur;
        if (!cur.seed) {
          const uint32_t f1 = (uint32_t)(fillw >> ((4 * (cur.j1 >> 5)) & 63u)) & 15u;
          const uint32_t f2 = (uint32_t)(fillw >> ((4 * ((cur.j1 + 32) >> 5)) & 63u)) & 15u;
          const uint32_t key = min(f1 < rho ? cur.k1 : 0xFFFFFFFFu, f2 < rho ? cur.k2 : 0xFFFFFFFFu);
          const uint32_t best = __reduce_min_sync(0xFFFFFFFFu, key);
          uint32_t jb = best != 0xFFFFFFFFu ? cur.lo + (best & 63u) : 0xFFFFFFFFu;
          for (uint32_t k = 0; k < 16 && jb == 0xFFFFFFFFu; k++) { /* whole window full: first non-full one */
            const unsigned bal = __ballot_sync(0xFFFFFFFFu, 32 * k + lane < nn && ((uint32_t)(fillw >> (4 * k)) & 15u) < rho);
            if (bal) jb = 32 * k + (uint32_t)(__ffs((int)bal) - 1);
          }
          if ((jb & 31u) == lane) {
            const uint32_t sh = 4 * (jb >> 5);
            s.sub[cur.t] = (uint16_t)(A + jb);
            s.mem[cur.t] = (uint8_t)((fillw >> sh) & 15u);
            fillw += 1ull << sh;
          }
        }
        cur = nxt;
      }
    }
    __syncthreads(); /* assignment complete; lq no longer needed (memrow shares its storage) */
    const uint32_t out_base = ostart() + (t0 / BPOOL_TILE) * (BPOOL_TILE / rho);
    for (uint32_t k = tid; k < K * rho; k += kT2) s.u.memrow[k] = 0xFFFFu;
    __syncthreads();
    for (uint32_t row = tid; row < m; row += kT2) {
      s.u.memrow[s.sub[row] * rho + s.mem[row]] = (uint16_t)row;
      parent[r0 + row] = out_base + s.sub[row];
    }
    __syncthreads();
    for (uint32_t k = tid; k < K * rho; k += kT2) {
      const uint32_t t = s.u.memrow[k];
      members[(size_t)out_base * rho + k] = t == 0xFFFFu ? BPOOL_NONE : r0 + t;
    }
    for (uint32_t sb = tid; sb < K; sb += kT2) {
      float *o = xyz_out + 3 * (size_t)(out_base + sb);
      if (rho == 2) mean_out<2>(o, xyz, s.u.memrow + sb * 2, r0);
      else if (rho == 4) mean_out<4>(o, xyz, s.u.memrow + sb * 4, r0);
      else mean_out<8>(o, xyz, s.u.memrow + sb * 8, r0);
    }
    if constexpr (FeatT::kOn) { /* v4: the features of the tile's sub-buckets, members still in s.u.memrow */
      if (rho == 2) feat_tile<2>(feat, s.u.memrow, r0, out_base, K, tid);
      else if (rho == 4) feat_tile<4>(feat, s.u.memrow, r0, out_base, K, tid);
      else feat_tile<8>(feat, s.u.memrow, r0, out_base, K, tid);
    }
    __syncthreads(); /* the next tile reuses the shared arrays */
  }
}

template <typename Sh, bool kMatch, bool kPlan, typename FeatT>
__global__ void __launch_bounds__(Sh::kT, Sh::kBlocks) k_assign2(uint32_t *members, uint32_t *parent, float *xyz_out,
                                                     const float *xyz, const uint32_t *bucket_start,
                                                     const uint32_t *bucket_count, const uint32_t *out_start,
                                                     uint32_t *plan_start, uint32_t *plan_count,
                                                     uint32_t nbuckets, uint32_t n_rows,
                                                     uint32_t skip_upto, uint32_t b_lo, uint32_t rho, FeatT feat) {
  constexpr int kT2 = Sh::kT;
  constexpr uint32_t kW = kT2 / 32;
  if constexpr (Sh::kPdl) { /* v9: the next launch may be placed; the previous one's outputs before any read */
    pdl_trigger();
    hx_pdl_wait();
  }
  const uint32_t b = b_lo + blockIdx.x; /* b_lo: v6's halves */
  const uint32_t count = bucket_count[b];
  uint32_t ostart;
  if constexpr (kPlan) {
    __shared__ uint32_t red[kW];
    ostart = plan_in_block<kT2>(plan_start, plan_count, parent, bucket_start, bucket_count, nbuckets, n_rows, rho, b,
                                count, red);
  } else {
    if (count <= skip_upto) return; /* block-uniform */
    ostart = out_start[b];
  }
  if (Sh::kTile < (int)BPOOL_TILE && count > (uint32_t)Sh::kTile) return; /* left to Shape2 (block-uniform) */
  assign_bucket<Sh, kMatch>(members, parent, xyz_out, xyz, count ? bucket_start[b] : 0u, count, KnownStart{ostart}, rho,
                            feat);
}

/* v2 (kMatch false: block radix sort) and v3 (kMatch true: warp match ranking): the parent fill, then one
 * Shape2 block per bucket. */
template <bool kMatch>
hx_status assign_shape2(uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out, const float *d_xyz_in,
                        uint32_t n_rows, const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                        const uint32_t *d_out_start, uint32_t nbuckets, uint32_t rho, void *stream, hx_err *err) {
  cudaStream_t s = (cudaStream_t)stream;
  HX_TRY(assign_begin(d_parent, n_rows, rho, s, err));
  if (nbuckets) {
    k_assign2<Shape2, kMatch, false><<<nbuckets, kT2, 0, s>>>(d_members, d_parent, d_xyz_out, d_xyz_in, d_bucket_start,
                                                              d_bucket_count, d_out_start, NULL, NULL, nbuckets, n_rows,
                                                              0, 0, rho, NoFeat{});
    BPOOL_LAUNCHED(kMatch ? "assign v3" : "assign v2");
  }
  return HX_OK;
}
constexpr bpool_assign_fn assign_v2 = assign_shape2<false>;
constexpr bpool_assign_fn assign_v3 = assign_shape2<true>;

/* ---- v5 ------------------------------------------------------------------------------------------------
 * v3's algorithm and arithmetic (same outputs bit for bit) in 64-thread blocks that hold buckets of at
 * most 512 rows (Shape5: ~11 KB of shared memory, <= 64 registers, 16 blocks per SM), so the 2048 buckets
 * of a 600k cloud run in ONE wave of 132 x 16 resident blocks instead of v3's two (ncu, H100, 600k:
 * v3's k_assign2 24.5 us is two waves of a block's ~11.4 us latency, the figure of the one-wave 100k
 * case). Larger buckets are left to Shape2 in a second launch whose other blocks exit at once. assign_plan
 * also does the plan and the parent fill inside the first kernel (plan_in_block): v3's plan kernel, CUB
 * scan (two launches) and fill, ~12-14 us of its 42.7 us assignment at 600k in the same ncu run, are gone. */
/* Buckets [b_lo, b_hi) of nbuckets (v6 assigns two halves; v5 all of them). ShS: the shape of buckets of
 * <= 512 rows, ShL: of the larger ones (v5: Shape5 and Shape2; v9: Shape9 and Shape9L). */
template <typename ShS = Shape5, typename ShL = Shape2>
hx_status launch_assign5(bool plan, uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out, const float *d_xyz_in,
                         uint32_t n_rows, const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                         const uint32_t *d_out_start, uint32_t *d_plan_start, uint32_t *d_plan_count, uint32_t nbuckets,
                         uint32_t b_lo, uint32_t b_hi, uint32_t rho, cudaStream_t s, hx_err *err) {
  if (b_hi <= b_lo) return HX_OK;
  const uint32_t nblk = b_hi - b_lo;
  static_assert(ShS::kTile == Shape5::kTile && ShL::kTile == Shape2::kTile, "the small shape takes <= 512 rows");
  if (plan)
    k_assign2<ShS, true, true><<<nblk, ShS::kT, 0, s>>>(d_members, d_parent, d_xyz_out, d_xyz_in,
                                                        d_bucket_start, d_bucket_count, NULL, d_plan_start,
                                                        d_plan_count, nbuckets, n_rows, 0, b_lo, rho, NoFeat{});
  else
    k_assign2<ShS, true, false><<<nblk, ShS::kT, 0, s>>>(d_members, d_parent, d_xyz_out, d_xyz_in,
                                                         d_bucket_start, d_bucket_count, d_out_start, NULL,
                                                         NULL, nbuckets, n_rows, 0, b_lo, rho, NoFeat{});
  BPOOL_LAUNCHED("assign (buckets <= 512 rows)");
  /* buckets of more than 512 rows (their start is in the plan the first launch wrote or was given); v9
   * launches it programmatically: its blocks, which mostly exit at once, take the SM slots the first launch's
   * blocks leave instead of waiting for the whole launch to end and this one to start */
  const uint32_t *os = plan ? d_plan_start : d_out_start;
  if constexpr (ShL::kPdl) {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr;
    HX_TRY(pdl_config(&cfg, &attr, dim3(nblk), dim3(ShL::kT), s, err));
    BPOOL_CUDA(cudaLaunchKernelEx(&cfg, k_assign2<ShL, true, false, NoFeat>, d_members, d_parent, d_xyz_out, d_xyz_in,
                                  d_bucket_start, d_bucket_count, os, (uint32_t *)NULL, (uint32_t *)NULL, nbuckets,
                                  n_rows, (uint32_t)ShS::kTile, b_lo, rho, NoFeat{}));
  } else {
    k_assign2<ShL, true, false><<<nblk, ShL::kT, 0, s>>>(d_members, d_parent, d_xyz_out, d_xyz_in, d_bucket_start,
                                                         d_bucket_count, os, NULL, NULL, nbuckets, n_rows,
                                                         (uint32_t)ShS::kTile, b_lo, rho, NoFeat{});
  }
  BPOOL_LAUNCHED("assign (buckets > 512 rows)");
  return HX_OK;
}

template <typename ShS = Shape5, typename ShL = Shape2>
hx_status assign_pair(uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out, const float *d_xyz_in,
                      uint32_t n_rows, const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                      const uint32_t *d_out_start, uint32_t nbuckets, uint32_t rho, void *stream, hx_err *err) {
  cudaStream_t s = (cudaStream_t)stream;
  HX_TRY(assign_begin(d_parent, n_rows, rho, s, err));
  if (!nbuckets) return HX_OK;
  return launch_assign5<ShS, ShL>(false, d_members, d_parent, d_xyz_out, d_xyz_in, n_rows, d_bucket_start,
                                  d_bucket_count, d_out_start, NULL, NULL, nbuckets, 0, nbuckets, rho, s, err);
}
constexpr bpool_assign_fn assign_v5 = assign_pair<Shape5, Shape2>;
constexpr bpool_assign_fn assign_v9 = assign_pair<Shape9, Shape9L>;

template <typename ShS = Shape5, typename ShL = Shape2>
hx_status assign_plan_pair(void *d_scratch, size_t *scratch_bytes, uint32_t *d_members, uint32_t *d_parent,
                         float *d_xyz_out, const float *d_xyz_in, uint32_t n_rows, const uint32_t *d_bucket_start,
                         const uint32_t *d_bucket_count, uint32_t *d_out_start, uint32_t *d_out_count,
                         uint32_t nbuckets, uint32_t rho, void *stream, hx_err *err) {
  /* the scratch contract is bpool_plan_gpu's, whose path the many-bucket case takes */
  if (!d_scratch || nbuckets > kPlanMaxBuckets) {
    HX_TRY(bpool_plan_gpu(d_scratch, scratch_bytes, d_out_start, d_out_count, d_bucket_count, nbuckets, rho, stream,
                          err));
    if (!d_scratch) return HX_OK;
    return assign_pair<ShS, ShL>(d_members, d_parent, d_xyz_out, d_xyz_in, n_rows, d_bucket_start, d_bucket_count,
                                 d_out_start, nbuckets, rho, stream, err);
  }
  if (rho != 2 && rho != 4 && rho != 8) return hx_errf(err, HX_EINVAL, "bpool: rho = %u (2, 4 or 8)", rho);
  cudaStream_t s = (cudaStream_t)stream;
  if (!nbuckets) return assign_begin(d_parent, n_rows, rho, s, err); /* every row outside every bucket */
  return launch_assign5<ShS, ShL>(true, d_members, d_parent, d_xyz_out, d_xyz_in, n_rows, d_bucket_start,
                                  d_bucket_count, NULL, d_out_start, d_out_count, nbuckets, 0, nbuckets, rho, s, err);
}
constexpr bpool_assign_plan_fn assign_plan_v5 = assign_plan_pair<Shape5, Shape2>;
constexpr bpool_assign_plan_fn assign_plan_v9 = assign_plan_pair<Shape9, Shape9L>;

/* v4: v3's assignment with the reduction fused into it: one launch (after the parent fill) instead of
 * two, no members round trip through L2, and the latency-bound assignment of some blocks overlaps the
 * feature traffic of others on the same SM (8 blocks per SM). */
template <typename T>
hx_status launch_pool4(uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out, void *d_feat_out,
                       const float *d_xyz_in, const void *d_feat_in, uint32_t channels, bpool_op op,
                       const uint32_t *d_bucket_start, const uint32_t *d_bucket_count, const uint32_t *d_out_start,
                       uint32_t nbuckets, uint32_t rho, cudaStream_t s, hx_err *err) {
  constexpr int V = 16 / (int)sizeof(T);
  const bool vec = channels % V == 0 && ((uintptr_t)d_feat_out & 15u) == 0 && ((uintptr_t)d_feat_in & 15u) == 0;
  if (vec)
    k_assign2<Shape2, true, false><<<nbuckets, kT2, 0, s>>>(d_members, d_parent, d_xyz_out, d_xyz_in, d_bucket_start,
                                                            d_bucket_count, d_out_start, NULL, NULL, nbuckets, 0, 0, 0, rho,
                                             Feat<T, V>{(T *)d_feat_out, (const T *)d_feat_in, channels, op});
  else
    k_assign2<Shape2, true, false><<<nbuckets, kT2, 0, s>>>(d_members, d_parent, d_xyz_out, d_xyz_in, d_bucket_start,
                                                            d_bucket_count, d_out_start, NULL, NULL, nbuckets, 0, 0, 0, rho,
                                             Feat<T, 1>{(T *)d_feat_out, (const T *)d_feat_in, channels, op});
  BPOOL_LAUNCHED("pool v4");
  return HX_OK;
}

hx_status pool_v4(void *d_scratch, size_t *scratch_bytes, uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out,
                  void *d_feat_out, const float *d_xyz_in, const void *d_feat_in, uint32_t n_rows, uint32_t channels,
                  psh_dtype dt, bpool_op op, const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                  uint32_t *d_out_start, uint32_t *d_out_count, uint32_t nbuckets, uint32_t rho, uint32_t n_out,
                  const bpool_aux *aux, void *stream, hx_err *err) {
  (void)n_out, (void)aux;
  HX_TRY(bpool_plan_gpu(d_scratch, scratch_bytes, d_out_start, d_out_count, d_bucket_count, nbuckets, rho, stream, err));
  if (!d_scratch) return HX_OK;
  if ((unsigned)op >= BPOOL_OP_COUNT) return hx_errf(err, HX_EINVAL, "bpool: unknown reduction %d", (int)op);
  HX_TRY(bpool_dt_check(dt, err));
  if (channels == 0)
    return assign_v3(d_members, d_parent, d_xyz_out, d_xyz_in, n_rows, d_bucket_start, d_bucket_count, d_out_start,
                     nbuckets, rho, stream, err);
  cudaStream_t s = (cudaStream_t)stream;
  HX_TRY(assign_begin(d_parent, n_rows, rho, s, err));
  if (!nbuckets) return HX_OK;
  if (dt == PSH_F32)
    return launch_pool4<float>(d_members, d_parent, d_xyz_out, d_feat_out, d_xyz_in, d_feat_in, channels, op,
                               d_bucket_start, d_bucket_count, d_out_start, nbuckets, rho, s, err);
  if (dt == PSH_F16)
    return launch_pool4<__half>(d_members, d_parent, d_xyz_out, d_feat_out, d_xyz_in, d_feat_in, channels, op,
                                d_bucket_start, d_bucket_count, d_out_start, nbuckets, rho, s, err);
  return launch_pool4<uint16_t>(d_members, d_parent, d_xyz_out, d_feat_out, d_xyz_in, d_feat_in, channels, op,
                                d_bucket_start, d_bucket_count, d_out_start, nbuckets, rho, s, err);
}

/* 16 bytes of features per thread: VEC channels of one output row, members read once per chunk. */
/* Output rows [lo, hi): lo = 0 and hi = n_out, or, for v6's halves, read on the device from the plan: a bound
 * given as (start, count) pointers is start[0] + count[0], the first row past that bucket's rows. */
struct RowRange {
  const uint32_t *lo_start, *lo_count; /* NULL: lo = 0 */
  const uint32_t *hi_start, *hi_count; /* NULL: hi = n_out */
};
template <typename T, int RHO, int VEC, bool kWait = false>
__global__ void k_reduce_vec(T *out, const T *in, const uint32_t *members, uint32_t n_out, uint32_t channels,
                             bpool_op op, RowRange rr) {
  if (kWait) hx_pdl_wait(); /* v9: launched programmatically behind the assignment */
  const uint32_t per_row = channels / VEC;
  const uint32_t lo = rr.lo_start ? rr.lo_start[0] + rr.lo_count[0] : 0u;
  const uint32_t hi = rr.hi_start ? rr.hi_start[0] + rr.hi_count[0] : n_out;
  const size_t total = (size_t)hi * per_row;
  for (size_t e = (size_t)lo * per_row + blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
       e += (size_t)gridDim.x * blockDim.x) {
    const uint32_t r = (uint32_t)(e / per_row), q = (uint32_t)(e % per_row);
    uint32_t rows[RHO];
#pragma unroll
    for (int k = 0; k < RHO; k++) rows[k] = __ldg(members + (size_t)r * RHO + k);
    reduce_chunk<T, RHO, VEC>(out + (size_t)r * channels, in, rows, q, channels, op);
  }
}

/* n_out: the rows (or, with a device-side range, a bound on them, for the grid only) */
template <typename T>
hx_status launch_reduce_vec(T *out, const T *in, const uint32_t *members, uint32_t n_out, uint32_t rho,
                            uint32_t channels, bpool_op op, cudaStream_t s, hx_err *err, RowRange rr = RowRange{},
                            bool pdl = false) {
  constexpr int V = 16 / (int)sizeof(T);
  const size_t total = (size_t)n_out * (channels / V);
  const unsigned blocks = (unsigned)((total + 255) / 256 < 65536 ? (total + 255) / 256 : 65536);
  if (!blocks) return HX_OK;
  if (pdl) { /* v9: a programmatic launch whose blocks wait for the assignment (k_reduce_vec's kWait) */
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr;
    HX_TRY(pdl_config(&cfg, &attr, dim3(blocks), dim3(256), s, err));
    cudaError_t e = cudaSuccess;
    switch (rho) {
    case 2: e = cudaLaunchKernelEx(&cfg, k_reduce_vec<T, 2, V, true>, out, in, members, n_out, channels, op, rr); break;
    case 4: e = cudaLaunchKernelEx(&cfg, k_reduce_vec<T, 4, V, true>, out, in, members, n_out, channels, op, rr); break;
    default: e = cudaLaunchKernelEx(&cfg, k_reduce_vec<T, 8, V, true>, out, in, members, n_out, channels, op, rr); break;
    }
    if (e != cudaSuccess) return hx_errf(err, HX_ECUDA, "bpool: programmatic launch of the reduction: %s", cudaGetErrorString(e));
    return HX_OK;
  }
  switch (rho) {
  case 2: k_reduce_vec<T, 2, V><<<blocks, 256, 0, s>>>(out, in, members, n_out, channels, op, rr); break;
  case 4: k_reduce_vec<T, 4, V><<<blocks, 256, 0, s>>>(out, in, members, n_out, channels, op, rr); break;
  default: k_reduce_vec<T, 8, V><<<blocks, 256, 0, s>>>(out, in, members, n_out, channels, op, rr); break;
  }
  BPOOL_LAUNCHED("reduce v2");
  return HX_OK;
}

/* The 16-byte reduction takes fp32, fp16 or bf16 rows whose size and pointers are 16-byte multiples. */
bool reduce_vec_ok(psh_dtype dt, uint32_t channels, const void *d_out, const void *d_in) {
  const size_t es = psh_dtype_size(dt);
  return es && channels && channels % (16 / es) == 0 && ((uintptr_t)d_out & 15u) == 0 && ((uintptr_t)d_in & 15u) == 0;
}
hx_status launch_reduce_vec_dt(void *d_out, const void *d_in, const uint32_t *d_members, uint32_t n_out, uint32_t rho,
                               uint32_t channels, psh_dtype dt, bpool_op op, cudaStream_t s, hx_err *err,
                               RowRange rr = RowRange{}, bool pdl = false) {
  if (dt == PSH_F32)
    return launch_reduce_vec<float>((float *)d_out, (const float *)d_in, d_members, n_out, rho, channels, op, s, err, rr,
                                    pdl);
  if (dt == PSH_BF16)
    return launch_reduce_vec<uint16_t>((uint16_t *)d_out, (const uint16_t *)d_in, d_members, n_out, rho, channels, op,
                                       s, err, rr, pdl);
  if (dt == PSH_F16)
    return launch_reduce_vec<__half>((__half *)d_out, (const __half *)d_in, d_members, n_out, rho, channels, op, s, err,
                                     rr, pdl);
  return hx_errf(err, HX_EUNSUPPORTED, "bpool: features must be fp32, fp16 or bf16");
}

hx_status unpool_v1(void *d_up, const void *d_down, const void *d_residual, const uint32_t *d_parent, uint32_t n_rows,
                    uint32_t channels, psh_dtype dt, void *stream, hx_err *err) {
  if (n_rows == 0 || channels == 0) return HX_OK;
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == PSH_F32)
    return launch_unpool<float>((float *)d_up, (const float *)d_down, (const float *)d_residual, d_parent, n_rows,
                                channels, s, err);
  if (dt == PSH_BF16)
    return launch_unpool<uint16_t>((uint16_t *)d_up, (const uint16_t *)d_down, (const uint16_t *)d_residual, d_parent,
                                   n_rows, channels, s, err);
  if (dt == PSH_F16)
    return launch_unpool<__half>((__half *)d_up, (const __half *)d_down, (const __half *)d_residual, d_parent, n_rows,
                                 channels, s, err);
  return hx_errf(err, HX_EUNSUPPORTED, "bpool: features must be fp32, fp16 or bf16");
}

hx_status assign_v1(uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out, const float *d_xyz_in,
                    uint32_t n_rows, const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                    const uint32_t *d_out_start, uint32_t nbuckets, uint32_t rho, void *stream, hx_err *err) {
  cudaStream_t s = (cudaStream_t)stream;
  HX_TRY(assign_begin(d_parent, n_rows, rho, s, err));
  if (nbuckets) {
    BPOOL_CUDA(cudaFuncSetAttribute(k_assign, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sizeof(AssignSmem)));
    k_assign<<<nbuckets, kT, sizeof(AssignSmem), s>>>(d_members, d_parent, d_xyz_out, d_xyz_in, d_bucket_start, d_bucket_count,
                                     d_out_start, rho);
    BPOOL_LAUNCHED("assign");
  }
  return HX_OK;
}

hx_status reduce_v1(void *d_feat_out, const void *d_feat_in, const uint32_t *d_members, uint32_t n_out,
                    uint32_t rho, uint32_t channels, psh_dtype dt, bpool_op op, void *stream, hx_err *err) {
  if (rho != 2 && rho != 4 && rho != 8) return hx_errf(err, HX_EINVAL, "bpool: rho = %u (2, 4 or 8)", rho);
  if ((unsigned)op >= BPOOL_OP_COUNT) return hx_errf(err, HX_EINVAL, "bpool: unknown reduction %d", (int)op);
  if (n_out == 0 || channels == 0) return HX_OK;
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == PSH_F32)
    return launch_reduce<float>((float *)d_feat_out, (const float *)d_feat_in, d_members, n_out, rho, channels, op, s, err);
  if (dt == PSH_BF16)
    return launch_reduce<uint16_t>((uint16_t *)d_feat_out, (const uint16_t *)d_feat_in, d_members, n_out, rho,
                                   channels, op, s, err);
  if (dt == PSH_F16)
    return launch_reduce<__half>((__half *)d_feat_out, (const __half *)d_feat_in, d_members, n_out, rho, channels, op,
                                 s, err);
  return hx_errf(err, HX_EUNSUPPORTED, "bpool: features must be fp32, fp16 or bf16");
}

hx_status reduce_v2(void *d_feat_out, const void *d_feat_in, const uint32_t *d_members, uint32_t n_out,
                    uint32_t rho, uint32_t channels, psh_dtype dt, bpool_op op, void *stream, hx_err *err) {
  if (rho != 2 && rho != 4 && rho != 8) return hx_errf(err, HX_EINVAL, "bpool: rho = %u (2, 4 or 8)", rho);
  if ((unsigned)op >= BPOOL_OP_COUNT) return hx_errf(err, HX_EINVAL, "bpool: unknown reduction %d", (int)op);
  if (n_out == 0 || channels == 0) return HX_OK;
  if (!reduce_vec_ok(dt, channels, d_feat_out, d_feat_in))
    return reduce_v1(d_feat_out, d_feat_in, d_members, n_out, rho, channels, dt, op, stream, err);
  return launch_reduce_vec_dt(d_feat_out, d_feat_in, d_members, n_out, rho, channels, dt, op, (cudaStream_t)stream,
                              err);
}

/* ---- v6 ------------------------------------------------------------------------------------------------
 * v5's plan-and-assign in two halves of the buckets, so that the latency-bound assignment of the second
 * half runs while the bandwidth-bound reduction of the first half streams features: half 1's assignment
 * (main stream), then half 2's assignment on the auxiliary stream (higher priority, so its blocks are
 * placed first while half 1's reduction fills the rest of the SMs), half 1's reduction on the main stream
 * over the output rows [0, first row past bucket split-1) read from the plan on the device, and after
 * the join half 2's rows. Same outputs as v5's assign + reduce, bit for bit. Without an auxiliary stream,
 * with features the 16-byte reduction cannot take, or past v5's in-kernel plan limit, it runs v5's
 * assign_plan and the reduction in sequence.
 * Measured (H100, 2026-11-22, 600k, graph): slower than v5's assign + reduce, 79.8 vs 73.9 us at rho 2 bf16,
 * and 33.6 vs 22.8 at 100k, where each half's assignment costs a whole one's latency: the halves' kernels
 * did not overlap enough to hide the second assignment. Kept as the measured answer to "does a
 * two-stream pipeline pay?". */
hx_status pool_v6(void *d_scratch, size_t *scratch_bytes, uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out,
                  void *d_feat_out, const float *d_xyz_in, const void *d_feat_in, uint32_t n_rows, uint32_t channels,
                  psh_dtype dt, bpool_op op, const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                  uint32_t *d_out_start, uint32_t *d_out_count, uint32_t nbuckets, uint32_t rho, uint32_t n_out,
                  const bpool_aux *aux, void *stream, hx_err *err) {
  if (!d_scratch)
    return bpool_plan_gpu(NULL, scratch_bytes, d_out_start, d_out_count, d_bucket_count, nbuckets, rho, stream, err);
  if ((unsigned)op >= BPOOL_OP_COUNT) return hx_errf(err, HX_EINVAL, "bpool: unknown reduction %d", (int)op);
  HX_TRY(bpool_dt_check(dt, err));
  if (rho != 2 && rho != 4 && rho != 8) return hx_errf(err, HX_EINVAL, "bpool: rho = %u (2, 4 or 8)", rho);
  if (!aux || !aux->stream || !reduce_vec_ok(dt, channels, d_feat_out, d_feat_in) || nbuckets < 2 ||
      nbuckets > kPlanMaxBuckets) {
    HX_TRY(assign_plan_v5(d_scratch, scratch_bytes, d_members, d_parent, d_xyz_out, d_xyz_in, n_rows, d_bucket_start,
                          d_bucket_count, d_out_start, d_out_count, nbuckets, rho, stream, err));
    return reduce_v2(d_feat_out, d_feat_in, d_members, n_out, rho, channels, dt, op, stream, err);
  }
  cudaStream_t s = (cudaStream_t)stream, a = (cudaStream_t)aux->stream;
  cudaEvent_t fork = (cudaEvent_t)aux->ev_fork, join = (cudaEvent_t)aux->ev_join;
  const uint32_t split = nbuckets / 2;
  HX_TRY(launch_assign5(true, d_members, d_parent, d_xyz_out, d_xyz_in, n_rows, d_bucket_start, d_bucket_count, NULL,
                        d_out_start, d_out_count, nbuckets, 0, split, rho, s, err));
  BPOOL_CUDA(cudaEventRecord(fork, s));
  BPOOL_CUDA(cudaStreamWaitEvent(a, fork, 0));
  /* from the fork on, every path joins the auxiliary stream back before returning (an unjoined fork breaks
   * the caller's graph capture and leaves work behind), so errors are collected, not returned at once */
  hx_status st = launch_assign5(true, d_members, d_parent, d_xyz_out, d_xyz_in, n_rows, d_bucket_start,
                                d_bucket_count, NULL, d_out_start, d_out_count, nbuckets, split, nbuckets, rho, a, err);
  const cudaError_t ej = cudaEventRecord(join, a);
  const RowRange first = {NULL, NULL, d_out_start + split - 1, d_out_count + split - 1};
  const RowRange second = {d_out_start + split - 1, d_out_count + split - 1, NULL, NULL};
  const uint32_t grid_rows = n_out / 2 + 1; /* the grid only: each half's rows come from the plan */
  if (st == HX_OK && ej == cudaSuccess)
    st = launch_reduce_vec_dt(d_feat_out, d_feat_in, d_members, grid_rows, rho, channels, dt, op, s, err, first);
  if (ej == cudaSuccess) BPOOL_CUDA(cudaStreamWaitEvent(s, join, 0));
  else if (st == HX_OK) return hx_errf(err, HX_ECUDA, "bpool: join of v6's streams: %s", cudaGetErrorString(ej));
  HX_TRY(st);
  return launch_reduce_vec_dt(d_feat_out, d_feat_in, d_members, n_out, rho, channels, dt, op, s, err, second);
}

/* ---- v7 ------------------------------------------------------------------------------------------------
 * Plan, assignment and reduction in ONE cooperative launch whose blocks overlap the latency-bound
 * assignment with the bandwidth-bound reduction. v4 fused them per block and v6 per half of the buckets;
 * both lost (above) because every block assigns at the same time and reduces at the same time. Here the
 * roles are split inside each SM: of the 8 co-resident 128-thread blocks on an SM, the first
 * `assign_per_sm` to arrive are assigners (v3's k_assign2 body, Shape2, so buckets of any size), the
 * others reducers, and assigners join the reducers when no bucket is left to assign.
 *  - Assigners take buckets in order from a counter, run assign_bucket, and publish ready[b] (release).
 *  - Reducers take buckets in the same order from another counter, wait for ready[b] (acquire) and reduce
 *    the bucket's output rows, each thread with 8 member rows' 16-byte chunks in flight (8 / rho chunks).
 *  - The plan (exclusive scan of ceil(count / rho)) is computed by the first block to arrive, while the
 *    assigners run steps 1-3 of their first buckets; assign_bucket waits for it only before its outputs.
 * Deadlock-free: a cooperative launch makes every block resident, assigners wait only for the plan
 * (computed first by a block that waits for nothing), every bucket is claimed by an assigner before any
 * assigner turns reducer, and a reducer waits only for a claimed bucket. Same outputs as v5's assign_plan
 * followed by the reduction, bit for bit (same assign_bucket, same combine_chunk arithmetic). Falls back to
 * v5 + the 16-byte reduction where it cannot run: no cooperative launch, more than kPlanMaxBuckets buckets,
 * features the 16-byte path cannot take, fewer than 2 blocks per SM. The control words (counters, the
 * plan flag, per-SM arrival counts, ready flags) live in the scratch and are zeroed by one memset per call. */
constexpr uint32_t kCtlSm = 1024; /* per-SM arrival counters, indexed by %smid mod kCtlSm */
enum : uint32_t { kC7Reduce = 0, kC7Assign, kC7Arrive, kC7Plan, kC7Tot, kC7Sm, kC7Ready = kC7Sm + kCtlSm };
constexpr uint32_t kAssignPerSm7 = 4; /* of Shape2's 8 blocks per SM: a constant (edit and rebuild to try others) */

__device__ __forceinline__ uint32_t ld_acquire(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(uint32_t *p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void wait_flag(const uint32_t *p) {
  while (ld_acquire(p) == 0) __nanosleep(64);
}

/* assign_bucket's first output row for v7: the plan, once the planning block has published it (each
 * thread acquires the flag itself; `have` skips that after the block's first bucket). */
struct PlanWait {
  const uint32_t *flag, *plan_start;
  uint32_t b;
  bool have;
  __device__ __forceinline__ uint32_t operator()() const {
    if (!have) wait_flag(flag);
    return __ldcg(plan_start + b);
  }
};

/* Arguments of pooling v7 and v8 (one struct: a cooperative launch takes an argument array). */
struct PoolP {
  uint32_t *members, *parent, *plan_start, *plan_count, *ctl;
  float *xyz_out;
  void *feat_out;
  const float *xyz;
  const void *feat_in;
  const uint32_t *bucket_start, *bucket_count;
  uint32_t nbuckets, n_rows, channels, rho, assign_per_sm; /* assign_per_sm: v7 only */
  bpool_op op;
};

/* The plan by one block: plan_count[b] = ceil(count / rho), plan_start = its exclusive scan (<=
 * kPlanMaxBuckets buckets, kPer consecutive ones per thread), and the sum of the counts (for the gap fill). */
template <int kT>
__device__ void plan7(const PoolP &p, uint32_t *red) {
  constexpr uint32_t kPer = kPlanMaxBuckets / kT;
  const uint32_t sh = 31u - (uint32_t)__clz((int)p.rho), i0 = threadIdx.x * kPer, lane = threadIdx.x & 31u;
  uint32_t sum = 0, tot = 0;
#pragma unroll
  for (uint32_t j = 0; j < kPer; j++) {
    const uint32_t c = i0 + j < p.nbuckets ? __ldg(p.bucket_count + i0 + j) : 0u;
    sum += (c + p.rho - 1) >> sh;
    tot += c;
  }
  uint32_t inc = sum; /* inclusive warp scan, then the warps before this one */
#pragma unroll
  for (uint32_t o = 1; o < 32; o <<= 1) {
    const uint32_t t = __shfl_up_sync(0xFFFFFFFFu, inc, o);
    if (lane >= o) inc += t;
  }
  if (lane == 31) red[threadIdx.x >> 5] = inc;
  __syncthreads();
  uint32_t run = inc - sum;
  for (uint32_t w = 0; w < (threadIdx.x >> 5); w++) run += red[w];
  tot = block_reduce<kT, false>(tot, red); /* its first barrier: every warp has read red */
  for (uint32_t j = 0; j < kPer && i0 + j < p.nbuckets; j++) {
    const uint32_t k = (__ldg(p.bucket_count + i0 + j) + p.rho - 1) >> sh;
    p.plan_start[i0 + j] = run;
    p.plan_count[i0 + j] = k;
    run += k;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    p.ctl[kC7Tot] = tot;
    st_release(p.ctl + kC7Plan, 1u);
  }
}

/* A reducer's share of one bucket (v7, v8): output rows [r_lo, r_lo + nrows), one 16-byte chunk of one row
 * per thread and step, U = 8 / RHO chunks (8 member rows) loaded before any is combined. Members are read
 * through L2 (__ldcg): another SM wrote them while this kernel ran, and a line this SM's L1 holds from a
 * neighbouring bucket may predate them. */
template <typename T, int RHO, int VEC>
__device__ __forceinline__ void reduce_rows(const PoolP &p, uint32_t r_lo, uint32_t nrows) {
  constexpr int U = 8 / RHO;
  T *out = (T *)p.feat_out;
  const T *in = (const T *)p.feat_in;
  const uint32_t per_row = p.channels / VEC, total = nrows * per_row;
  for (uint32_t e0 = threadIdx.x; e0 < total; e0 += U * blockDim.x) {
    uint32_t rows[U][RHO], r[U], q[U];
    T v[U][RHO][VEC];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const uint32_t e = e0 + (uint32_t)u * blockDim.x;
      r[u] = r_lo + e / per_row, q[u] = e % per_row;
#pragma unroll
      for (int k = 0; k < RHO; k++) rows[u][k] = e < total ? __ldcg(p.members + (size_t)r[u] * RHO + k) : BPOOL_NONE;
    }
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
      for (int k = 0; k < RHO; k++) load_chunk<T, VEC>(v[u][k], in, rows[u][k], q[u], p.channels);
#pragma unroll
    for (int u = 0; u < U; u++)
      if (e0 + (uint32_t)u * blockDim.x < total) combine_chunk<T, RHO, VEC>(out + (size_t)r[u] * p.channels, v[u], rows[u], q[u], p.op);
  }
}

template <typename T, int RHO>
__global__ void __launch_bounds__(Shape2::kT, Shape2::kBlocks) k_pool7(PoolP p) {
  constexpr int kT7 = Shape2::kT, VEC = 16 / (int)sizeof(T);
  __shared__ uint32_t red[kT7 / 32];
  __shared__ uint32_t role, item;
  const uint32_t tid = threadIdx.x;
  uint32_t *ready = p.ctl + kC7Ready;
  if (tid == 0) {
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    const uint32_t slot = atomicAdd(p.ctl + kC7Sm + (smid & (kCtlSm - 1)), 1u);
    role = (atomicAdd(p.ctl + kC7Arrive, 1u) == 0 ? 1u : 0u) | (slot < p.assign_per_sm ? 2u : 0u);
  }
  __syncthreads();
  const uint32_t my_role = role;
  if (my_role & 1u) plan7<kT7>(p, red); /* the first block to arrive */
  if (my_role & 2u) { /* assigner until every bucket is claimed */
    bool have = false;
    uint32_t tot = 0;
    for (;;) {
      if (tid == 0) item = atomicAdd(p.ctl + kC7Assign, 1u);
      __syncthreads();
      const uint32_t b = item;
      if (b >= p.nbuckets) break; /* block-uniform */
      const uint32_t count = __ldg(p.bucket_count + b);
      assign_bucket<Shape2, true>(p.members, p.parent, p.xyz_out, p.xyz, count ? __ldg(p.bucket_start + b) : 0u, count,
                                  PlanWait{p.ctl + kC7Plan, p.plan_start, b, have}, p.rho, NoFeat{});
      if (!have) { /* a bucket without rows never asked for the plan */
        wait_flag(p.ctl + kC7Plan);
        tot = __ldcg(p.ctl + kC7Tot);
        have = true;
      }
      if (tot != p.n_rows) fill_gaps<kT7>(p.parent, p.bucket_start, p.bucket_count, p.nbuckets, p.n_rows, b, count, red);
      __threadfence(); /* this thread's members, parents, pooled xyz before the flag */
      __syncthreads();
      if (tid == 0) st_release(ready + b, 1u);
    }
  }
  for (;;) { /* reducer */
    __syncthreads(); /* item free */
    if (tid == 0) {
      const uint32_t b = atomicAdd(p.ctl + kC7Reduce, 1u);
      if (b < p.nbuckets) wait_flag(ready + b);
      item = b;
    }
    __syncthreads();
    const uint32_t b = item;
    if (b >= p.nbuckets) break; /* block-uniform */
    const uint32_t nrows = (__ldg(p.bucket_count + b) + p.rho - 1) / p.rho;
    if (nrows) reduce_rows<T, RHO, VEC>(p, __ldcg(p.plan_start + b), nrows);
  }
}

/* The host prologue of the fused calls v7 and v8: the scratch they need, the larger of the fall-back's plan
 * scratch (v5's assignment) and the variant's ctl_bytes of control words, reported when d_scratch is NULL
 * (*query = 1); else the checks of the arguments and of the scratch size, before anything is launched. */
static hx_status fused_prologue(const char *who, size_t ctl_bytes, void *d_scratch, size_t *scratch_bytes,
                                uint32_t *d_out_start, uint32_t *d_out_count, const uint32_t *d_bucket_count,
                                uint32_t nbuckets, uint32_t rho, psh_dtype dt, bpool_op op, void *stream, int *query,
                                hx_err *err) {
  *query = 0;
  size_t need = 0;
  HX_TRY(bpool_plan_gpu(NULL, &need, d_out_start, d_out_count, d_bucket_count, nbuckets, rho, stream, err));
  need = need > ctl_bytes ? need : ctl_bytes;
  if (!d_scratch) {
    if (!scratch_bytes) return hx_errf(err, HX_EINVAL, "bpool: scratch_bytes is NULL");
    *scratch_bytes = need;
    *query = 1;
    return HX_OK;
  }
  if ((unsigned)op >= BPOOL_OP_COUNT) return hx_errf(err, HX_EINVAL, "bpool: unknown reduction %d", (int)op);
  HX_TRY(bpool_dt_check(dt, err));
  if (rho != 2 && rho != 4 && rho != 8) return hx_errf(err, HX_EINVAL, "bpool: rho = %u (2, 4 or 8)", rho);
  if (scratch_bytes && *scratch_bytes < need)
    return hx_errf(err, HX_EINVAL, "%s: scratch of %zu bytes, %zu needed", who, *scratch_bytes, need);
  return HX_OK;
}

template <typename T>
const void *pool7_kernel(uint32_t rho) {
  return rho == 2 ? (const void *)k_pool7<T, 2> : rho == 4 ? (const void *)k_pool7<T, 4> : (const void *)k_pool7<T, 8>;
}

hx_status pool_v7(void *d_scratch, size_t *scratch_bytes, uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out,
                  void *d_feat_out, const float *d_xyz_in, const void *d_feat_in, uint32_t n_rows, uint32_t channels,
                  psh_dtype dt, bpool_op op, const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                  uint32_t *d_out_start, uint32_t *d_out_count, uint32_t nbuckets, uint32_t rho, uint32_t n_out,
                  const bpool_aux *aux, void *stream, hx_err *err) {
  (void)aux;
  const size_t ctl_bytes = ((size_t)kC7Ready + nbuckets) * 4;
  int query = 0;
  HX_TRY(fused_prologue("bpool v7", ctl_bytes, d_scratch, scratch_bytes, d_out_start, d_out_count, d_bucket_count,
                        nbuckets, rho, dt, op, stream, &query, err));
  if (query) return HX_OK;
  cudaStream_t s = (cudaStream_t)stream;
  const void *kern = dt == PSH_F32   ? pool7_kernel<float>(rho)
                     : dt == PSH_F16 ? pool7_kernel<__half>(rho)
                                     : pool7_kernel<uint16_t>(rho);
  int dev = 0, sms = 0, coop = 0, per_sm = 0;
  BPOOL_CUDA(cudaGetDevice(&dev));
  BPOOL_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  BPOOL_CUDA(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  BPOOL_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, kT2, 0));
  if (!coop || per_sm < 2 || nbuckets == 0 || nbuckets > kPlanMaxBuckets ||
      !reduce_vec_ok(dt, channels, d_feat_out, d_feat_in)) { /* v5's assign_plan, then the reduction */
    HX_TRY(assign_plan_v5(d_scratch, scratch_bytes, d_members, d_parent, d_xyz_out, d_xyz_in, n_rows, d_bucket_start,
                          d_bucket_count, d_out_start, d_out_count, nbuckets, rho, stream, err));
    return reduce_v2(d_feat_out, d_feat_in, d_members, n_out, rho, channels, dt, op, stream, err);
  }
  uint32_t per = kAssignPerSm7;
  if (per >= (uint32_t)per_sm) per = (uint32_t)per_sm / 2;
  PoolP p = {d_members, d_parent, d_out_start, d_out_count, (uint32_t *)d_scratch, d_xyz_out, d_feat_out, d_xyz_in,
          d_feat_in, d_bucket_start, d_bucket_count, nbuckets, n_rows, channels, rho, per, op};
  BPOOL_CUDA(cudaMemsetAsync(d_scratch, 0, ctl_bytes, s));
  void *args[] = {&p};
  BPOOL_CUDA(cudaLaunchCooperativeKernel(kern, dim3((unsigned)(per_sm * sms)), dim3(kT2), args, 0, s));
  return HX_OK;
}

/* ---- v8 ------------------------------------------------------------------------------------------------
 * v5's assignment kernel and the reduction overlapped through programmatic dependent launch (sm_90): v7
 * showed that the assignment needs v5's one wave of 16 blocks per SM (fewer, longer-lived assigners made
 * it proportionally slower), so v8 keeps that wave whole and lets the reduction take over each SM slot
 * as soon as an assignment block leaves it, instead of waiting for the last one (ncu, H100, 600k: v5's
 * kernel averages 33% achieved occupancy against 50% possible, a long tail of finishing blocks).
 *  - k_assign8 (Shape5, one block per bucket, v5's in-kernel plan) lets the next launch start at once
 *    (griddepcontrol.launch_dependents) and publishes flag[b] (release): kF8Done once bucket b is
 *    assigned, kF8Plan for a bucket of more than 512 rows, whose plan only it writes.
 *  - k_reduce8 (one 128-thread block per bucket, launched with the programmatic-serialization attribute,
 *    so its blocks are placed while k_assign8's still run) waits for flag[b] (acquire), assigns a bucket
 *    of more than 512 rows itself with v3's Shape2 body (this is why it has Shape2's shared memory), then
 *    reduces the bucket's output rows (reduce_rows). The last block to finish waits for k_assign8's
 *    completion (griddepcontrol.wait), so the pair completes as one launch would.
 * Deadlock-free: a secondary launch is placed only after every block of the primary has started, so every
 * flag a reducer waits for belongs to a running (or finished) block. Without programmatic launch (sm_80)
 * the two kernels run in turn, flags already set. Same outputs as v5 + the reduction, bit for bit. The
 * flags and the done counter are zeroed by one memset per call. Falls back to v5 + the reduction where the
 * 16-byte reduction cannot take the features or past kPlanMaxBuckets buckets. */
enum : uint32_t { kF8Plan = 1, kF8Done = 2, kC8Done = 0, kC8Flags = 1 };


__global__ void __launch_bounds__(Shape5::kT, Shape5::kBlocks) k_assign8(PoolP p) {
  pdl_trigger(); /* the reduction's blocks may be placed as soon as every block here has started */
  __shared__ uint32_t red[Shape5::kT / 32];
  const uint32_t b = blockIdx.x, count = p.bucket_count[b];
  const uint32_t ostart = plan_in_block<Shape5::kT>(p.plan_start, p.plan_count, p.parent, p.bucket_start,
                                                    p.bucket_count, p.nbuckets, p.n_rows, p.rho, b, count, red);
  const bool mine = count <= (uint32_t)Shape5::kTile; /* block-uniform; larger buckets: k_reduce8 */
  if (mine)
    assign_bucket<Shape5, true>(p.members, p.parent, p.xyz_out, p.xyz, count ? p.bucket_start[b] : 0u, count,
                                KnownStart{ostart}, p.rho, NoFeat{});
  __threadfence(); /* this thread's plan, parents, members and pooled xyz before the flag */
  __syncthreads();
  if (threadIdx.x == 0) st_release(p.ctl + kC8Flags + b, mine ? kF8Done : kF8Plan);
}

template <typename T, int RHO>
__global__ void __launch_bounds__(Shape2::kT, Shape2::kBlocks) k_reduce8(PoolP p) {
  constexpr int VEC = 16 / (int)sizeof(T);
  __shared__ uint32_t last;
  const uint32_t b = blockIdx.x, count = __ldg(p.bucket_count + b);
  if (threadIdx.x == 0) wait_flag(p.ctl + kC8Flags + b);
  __syncthreads();
  const uint32_t ostart = __ldcg(p.plan_start + b);
  if (count > (uint32_t)Shape5::kTile) /* block-uniform: k_assign8 only planned it */
    assign_bucket<Shape2, true>(p.members, p.parent, p.xyz_out, p.xyz, __ldg(p.bucket_start + b), count,
                                KnownStart{ostart}, p.rho, NoFeat{}); /* ends with a barrier: members visible */
  const uint32_t nrows = (count + p.rho - 1) / p.rho;
  if (nrows) reduce_rows<T, RHO, VEC>(p, ostart, nrows);
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(p.ctl + kC8Done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (last) hx_pdl_wait(); /* the launch completes after k_assign8 has (its last blocks only exit by then) */
}

template <typename T>
const void *reduce8_kernel(uint32_t rho) {
  return rho == 2 ? (const void *)k_reduce8<T, 2> : rho == 4 ? (const void *)k_reduce8<T, 4> : (const void *)k_reduce8<T, 8>;
}

hx_status pool_v8(void *d_scratch, size_t *scratch_bytes, uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out,
                  void *d_feat_out, const float *d_xyz_in, const void *d_feat_in, uint32_t n_rows, uint32_t channels,
                  psh_dtype dt, bpool_op op, const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                  uint32_t *d_out_start, uint32_t *d_out_count, uint32_t nbuckets, uint32_t rho, uint32_t n_out,
                  const bpool_aux *aux, void *stream, hx_err *err) {
  (void)aux;
  const size_t ctl_bytes = ((size_t)kC8Flags + nbuckets) * 4;
  int query = 0;
  HX_TRY(fused_prologue("bpool v8", ctl_bytes, d_scratch, scratch_bytes, d_out_start, d_out_count, d_bucket_count,
                        nbuckets, rho, dt, op, stream, &query, err));
  if (query) return HX_OK;
  if (nbuckets == 0 || nbuckets > kPlanMaxBuckets || !reduce_vec_ok(dt, channels, d_feat_out, d_feat_in)) {
    HX_TRY(assign_plan_v5(d_scratch, scratch_bytes, d_members, d_parent, d_xyz_out, d_xyz_in, n_rows, d_bucket_start,
                          d_bucket_count, d_out_start, d_out_count, nbuckets, rho, stream, err));
    return reduce_v2(d_feat_out, d_feat_in, d_members, n_out, rho, channels, dt, op, stream, err);
  }
  cudaStream_t s = (cudaStream_t)stream;
  PoolP p = {d_members, d_parent, d_out_start, d_out_count, (uint32_t *)d_scratch, d_xyz_out, d_feat_out, d_xyz_in,
             d_feat_in, d_bucket_start, d_bucket_count, nbuckets, n_rows, channels, rho, 0, op};
  BPOOL_CUDA(cudaMemsetAsync(d_scratch, 0, ctl_bytes, s));
  k_assign8<<<nbuckets, Shape5::kT, 0, s>>>(p);
  BPOOL_LAUNCHED("pool v8 (assign)");
  cudaLaunchConfig_t cfg; /* programmatic launch: sm_90 on; before it, the kernels run in turn */
  cudaLaunchAttribute attr;
  HX_TRY(pdl_config(&cfg, &attr, dim3(nbuckets), dim3(kT2), s, err));
  void *args[] = {&p};
  const void *kern = dt == PSH_F32   ? reduce8_kernel<float>(rho)
                     : dt == PSH_F16 ? reduce8_kernel<__half>(rho)
                                     : reduce8_kernel<uint16_t>(rho);
  BPOOL_CUDA(cudaLaunchKernelExC(&cfg, kern, args));
  return HX_OK;
}

/* ---- v9 ------------------------------------------------------------------------------------------------
 * Pooling in one call: v9's plan-and-assign (Shape9 blocks with step 3 by lanes, then the Shape9L launch for
 * buckets of more than 512 rows) and the 16-byte reduction, each launch programmatic behind the one before
 * (sm_90): the launch gaps go, and every kernel waits (griddepcontrol.wait) for the previous one's outputs
 * before reading them, so the order of the results is the stream's. Same outputs as assign_plan_v9 + reduce_v2
 * bit for bit. Features the 16-byte reduction cannot take, and more than kPlanMaxBuckets buckets (whose plan
 * is CUB's scan), are reduced by a plain launch. */
hx_status pool_v9(void *d_scratch, size_t *scratch_bytes, uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out,
                  void *d_feat_out, const float *d_xyz_in, const void *d_feat_in, uint32_t n_rows, uint32_t channels,
                  psh_dtype dt, bpool_op op, const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                  uint32_t *d_out_start, uint32_t *d_out_count, uint32_t nbuckets, uint32_t rho, uint32_t n_out,
                  const bpool_aux *aux, void *stream, hx_err *err) {
  (void)aux;
  if (d_scratch) { /* the arguments, before anything is launched */
    if ((unsigned)op >= BPOOL_OP_COUNT) return hx_errf(err, HX_EINVAL, "bpool: unknown reduction %d", (int)op);
    HX_TRY(bpool_dt_check(dt, err));
  }
  HX_TRY(assign_plan_v9(d_scratch, scratch_bytes, d_members, d_parent, d_xyz_out, d_xyz_in, n_rows, d_bucket_start,
                        d_bucket_count, d_out_start, d_out_count, nbuckets, rho, stream, err));
  if (!d_scratch || n_out == 0 || channels == 0) return HX_OK;
  if (nbuckets == 0 || nbuckets > kPlanMaxBuckets || !reduce_vec_ok(dt, channels, d_feat_out, d_feat_in))
    return reduce_v2(d_feat_out, d_feat_in, d_members, n_out, rho, channels, dt, op, stream, err);
  return launch_reduce_vec_dt(d_feat_out, d_feat_in, d_members, n_out, rho, channels, dt, op, (cudaStream_t)stream,
                              err, RowRange{}, true);
}

/* the table from the one list (variants_internal.h), which the CPU-only stub expands too */
#define BPOOL_ROW(id, name, summary, assign, reduce, unpool, pool, assign_plan) \
  {id, name, summary, assign, reduce, unpool, pool, assign_plan},
const bpool_variant bpool_table[] = {BPOOL_VARIANT_LIST(BPOOL_ROW)};
#undef BPOOL_ROW

} // namespace

extern "C" const bpool_variant *bpool_variants(size_t *count) {
  if (count) *count = sizeof bpool_table / sizeof bpool_table[0];
  return bpool_table;
}

extern "C" const bpool_variant *bpool_variant_find(const char *name) {
  for (size_t i = 0; i < sizeof bpool_table / sizeof bpool_table[0]; i++)
    if (name && strcmp(bpool_table[i].name, name) == 0) return &bpool_table[i];
  return NULL;
}

extern "C" const bpool_variant *bpool_variant_best(void) { return bpool_variant_find("v9"); }

extern "C" hx_status bpool_pool(const bpool_variant *v, const bpool_params *p, void *d_scratch, size_t *scratch_bytes,
                                void *stream, hx_err *err) {
  if (!v || !p || !scratch_bytes) return hx_errf(err, HX_EINVAL, "bpool_pool: NULL variant, params or scratch size");
  if (p->rho != 2 && p->rho != 4 && p->rho != 8) return hx_errf(err, HX_EINVAL, "bpool_pool: rho = %u (2, 4 or 8)", p->rho);
  if ((unsigned)p->op > BPOOL_OP_COUNT) return hx_errf(err, HX_EINVAL, "bpool_pool: unknown reduction %d", (int)p->op);
  const bool reduce = p->op < BPOOL_OP_COUNT;
  if (reduce && !bpool_dt_ok(p->dt))
    return hx_errf(err, HX_EINVAL, "bpool_pool: features must be fp32, fp16 or bf16 (dt = %d)", (int)p->dt);
  if (reduce && p->channels == 0) return hx_errf(err, HX_EINVAL, "bpool_pool: a reduction over 0 channels");
  if (d_scratch) { /* the real call: every pointer it writes or reads */
    const struct {
      const void *ptr;
      const char *name;
      bool needed;
    } ptrs[] = {{p->xyz_in, "xyz_in", true},       {p->bucket_start, "bucket_start", true},
                {p->bucket_count, "bucket_count", true}, {p->out_start, "out_start", true},
                {p->out_count, "out_count", true}, {p->members, "members", true},
                {p->parent, "parent", true},       {p->xyz_out, "xyz_out", true},
                {p->feat_in, "feat_in", reduce},   {p->feat_out, "feat_out", reduce}};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
      if (ptrs[i].needed && !ptrs[i].ptr) return hx_errf(err, HX_EINVAL, "bpool_pool: %s is NULL", ptrs[i].name);
  }
  if (v->pool && reduce) /* plan, assignment and reduction in one call */
    return v->pool(d_scratch, scratch_bytes, p->members, p->parent, p->xyz_out, p->feat_out, p->xyz_in, p->feat_in,
                   p->n_rows, p->channels, p->dt, p->op, p->bucket_start, p->bucket_count, p->out_start, p->out_count,
                   p->nbuckets, p->rho, p->n_out, p->aux, stream, err);
  if (v->assign_plan) { /* plan and assignment in one call */
    HX_TRY(v->assign_plan(d_scratch, scratch_bytes, p->members, p->parent, p->xyz_out, p->xyz_in, p->n_rows,
                          p->bucket_start, p->bucket_count, p->out_start, p->out_count, p->nbuckets, p->rho, stream, err));
  } else {
    HX_TRY(bpool_plan_gpu(d_scratch, scratch_bytes, p->out_start, p->out_count, p->bucket_count, p->nbuckets, p->rho,
                          stream, err));
    if (d_scratch)
      HX_TRY(v->assign(p->members, p->parent, p->xyz_out, p->xyz_in, p->n_rows, p->bucket_start, p->bucket_count,
                       p->out_start, p->nbuckets, p->rho, stream, err));
  }
  if (!d_scratch || !reduce) return HX_OK;
  return v->reduce(p->feat_out, p->feat_in, p->members, p->n_out, p->rho, p->channels, p->dt, p->op, stream, err);
}

extern "C" hx_status bpool_plan_gpu(void *d_scratch, size_t *scratch_bytes, uint32_t *d_out_start,
                                    uint32_t *d_out_count, const uint32_t *d_bucket_count, uint32_t nbuckets,
                                    uint32_t rho, void *stream, hx_err *err) {
  if (rho != 2 && rho != 4 && rho != 8) return hx_errf(err, HX_EINVAL, "bpool: rho = %u (2, 4 or 8)", rho);
  size_t need = 0;
  BPOOL_CUDA(cub::DeviceScan::ExclusiveSum(NULL, need, d_out_count, d_out_start, (int)nbuckets));
  if (!d_scratch) {
    if (!scratch_bytes) return hx_errf(err, HX_EINVAL, "bpool: scratch_bytes is NULL");
    *scratch_bytes = need;
    return HX_OK;
  }
  if (nbuckets == 0) return HX_OK;
  cudaStream_t s = (cudaStream_t)stream;
  k_plan<<<(nbuckets + 255) / 256, 256, 0, s>>>(d_out_count, d_bucket_count, nbuckets, rho);
  BPOOL_LAUNCHED("plan");
  BPOOL_CUDA(cub::DeviceScan::ExclusiveSum(d_scratch, need, d_out_count, d_out_start, (int)nbuckets, s));
  return HX_OK;
}
