/*
 * attn.cu - GPU variants of bucket-swin attention (the battn_ section of kernels.h).
 *
 * For every scope s, every query row i of a bucket of s and every head h:
 *   O[i,h,:] = sum_j softmax_j(scale * <Q[i,h,:], K[j,h,:]>) V[j,h,:],  LSE[i,h] = log sum_j exp(...)
 * over the valid key rows j of all buckets of s. Invariant (battn_validate): scopes partition the non-empty
 * buckets, so every O row of a bucket is written exactly once and rows past a bucket's count never are.
 *
 * Variants (one line each; the table at the bottom is what tests and the CLI iterate):
 *   v0  unfused reference: gather each scope's rows into a padded buffer, cuBLAS batched GEMM for the
 *       scores (fp32), a softmax kernel writing P in the input dtype, cuBLAS batched GEMM P V, scatter.
 *   v1  fused FlashAttention-2-style kernel, mma.sync m16n8k16 (fp16/bf16 in, fp32 accumulate), one CTA
 *       per (query tile of one bucket, head); K/V tiles are found through the scope table (no copies),
 *       cp.async double-buffered into XOR-swizzled shared memory, ldmatrix fragments, online softmax in
 *       the exp2 domain with scale*log2(e) folded into one FFMA per score, fp32 ex2.approx.
 *   v2  v1 with the probabilities computed by ex2.approx.f16x2 on packed halves and the row sums taken
 *       by the tensor cores (an extra n-tile of ones in P V) instead of FADDs (fp16 only; bf16 runs v1).
 *       On sm_90 the f16x2 form compiles to two MUFU.EX2.F16 (one per half): no gain, kept as evidence.
 *   v3  v1 with 128-key tiles (D <= 64) and lazy rescaling (the reference max moves only when a row of
 *       the warp grows past it by 2^8), removing most alpha exp2s and O/l rescale FMULs.
 *   v4  v1 with lazy rescaling only (ablation of v3).
 *   v5  per head dim the best tiles measured among v1/v3/v4, with 8-warp CTAs at D=64 and D=128.
 *   v6  Hopper wgmma (sm_90a only; kernels/attn_wgmma.cu): 2 warpgroups x 64 query rows, 128-key tiles in
 *       the wgmma swizzled layouts, S = Q K^T and P V asynchronous with the softmax between them
 *       (FlashAttention-3 style) at D=64/128, v5's kernels at D=16/32; HX_EUNSUPPORTED unless the device
 *       runs its sm_90a image.
 *   v7  v6's wgmma kernel without the fence that keeps the softmax above the P V wait, every head dim
 *       (the first measured version; ablation).
 *   v8  v6's wgmma kernel at every head dim (ablation of v6's D=16/32 choice).
 *   v9  warp-specialised wgmma kernel (kernels/attn_wgmma.cu, FlashAttention-3 style): a producer warpgroup
 *       (setmaxnreg down) fills the K/V ring with cp.async and signals per-slot "full" mbarriers, two
 *       consumer warpgroups (setmaxnreg up) compute as v6 and free slots through "empty" mbarriers, with
 *       ping-pong named barriers between them and no CTA-wide barrier in the loop; D=32/64/128, v24's kernel
 *       at D=16 (where the softmax, not the data movement, sets the pace). The recommended variant on
 *       sm_90a (H200, scope 4096 fp16: 255/421/587 TFLOP/s at D=32/64/128, 2026-11-22, af776f7; at D=16 v23's
 *       161-162 at 600k rows, 2026-11-29; docs/attention.md).
 *   v10 v9's kernel at every head dim; v11 v10 without the ping-pong (ablations).
 *   v16 v5 with, at D=16, 4 CTAs per SM (128 registers) and the row sums of P on the tensor cores; v17 v16
 *       without the row sums (ablation); v23 v16 with lazy rescaling at D=16. Ids 12-15 and 18-22 were D=16
 *       experiments (docs/attention.md).
 *   v24 v23 over each scope's rows packed end to end at D=16 where the layout's buckets are under 90% full on
 *       average (only a scope's last tiles partial, not every bucket's: Flash3D-46m's attention at 600k -9%, H200,
 *       2026-12-01); v23's walk elsewhere. v9 runs it at D=16, and it is the fallback where v9 cannot run.
 */
#include "kernels/kernels.h"
#include "kernels/attn_internal.h"
#include "kernels/variants_internal.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <type_traits>

#define BATTN_CUDA(call)                                                                                \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess)                                                                             \
      return hx_errf(err, HX_ECUDA, "attention: %s: %s (%s:%d)", #call, cudaGetErrorString(e_),        \
                     __FILE__, __LINE__);                                                              \
  } while (0)

#define BATTN_LAUNCHED(what)                                                                           \
  do {                                                                                                 \
    cudaError_t e_ = cudaGetLastError();                                                               \
    if (e_ != cudaSuccess)                                                                             \
      return hx_errf(err, HX_ECUDA, "attention: launch of %s: %s", what, cudaGetErrorString(e_));      \
  } while (0)

/* ---- small device helpers ---------------------------------------------------------------------- */

template <typename T> struct dt_ops;
template <> struct dt_ops<__half> {
  static __device__ __forceinline__ uint32_t pack(float a, float b) {
    __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t *>(&h);
  }
  static __device__ __forceinline__ void mma(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
  static __device__ __forceinline__ __half from_f(float x) { return __float2half_rn(x); }
};
template <> struct dt_ops<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t pack(float a, float b) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t *>(&h);
  }
  static __device__ __forceinline__ void mma(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __forceinline__ __nv_bfloat16 from_f(float x) { return __float2bfloat16_rn(x); }
};

static __device__ __forceinline__ float ex2f(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
/* 2^x on two packed halves: one instruction for two probabilities, result already an A fragment half. */
static __device__ __forceinline__ uint32_t ex2h2(float a, float b) {
  __half2 h = __floats2half2_rn(a, b);
  uint32_t x = *reinterpret_cast<uint32_t *>(&h), y;
  asm("ex2.approx.f16x2 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}

static __device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}
/* 16-byte cp.async; src_bytes = 0 fills the destination with zeros (masked rows never read memory). */
static __device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
               "r"(src_bytes));
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
static __device__ __forceinline__ void ldsm_x4(uint32_t *r, const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
static __device__ __forceinline__ void ldsm_x4_t(uint32_t *r, const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}

/* ---- v1 / v2: fused kernel --------------------------------------------------------------------- */

/* Tile sizes per head dim. WARPS warps, each owning MT m16 tiles of query rows (BM = 16*MT*WARPS rows
 * per CTA), BN keys per K/V tile. Registers per thread ~ MT*(BN/2 scores + D/2 outputs + D/4 Q) + 40:
 * D=16: 2*(32+8+4) = 88; D=32: 2*(32+16+8) = 112; D=64: 2*(32+32+16) = 160; D=128 (MT=1): 32+64+32 = 128.
 * Two query tiles per warp halve the shared-memory reads of K and V per score (each warp reads the whole
 * K/V tile once per MT tiles): at D=16 one 64-key tile costs a warp 4 KB of ldmatrix for 2048 scores. */
template <int W, int M, int N, int B, int L = 0, int R = 0> struct fwd_tiles {
  /* LAZY = 1: lazy rescale for this head dim; RSUM = 1: row sums of P on the tensor cores */
  enum { WARPS = W, MT = M, BN = N, MINB = B, LAZY = L, RSUM = R };
};
/* v1, v2, v4: 64-key tiles. */
template <int D> struct v1_tiles;
template <> struct v1_tiles<16> : fwd_tiles<4, 2, 64, 3> {};
template <> struct v1_tiles<32> : fwd_tiles<4, 2, 64, 2> {};
template <> struct v1_tiles<64> : fwd_tiles<4, 2, 64, 1> {};
template <> struct v1_tiles<128> : fwd_tiles<4, 1, 64, 2> {};
/* v3: 128-key tiles where registers allow (S doubles to MT*64 registers): half the per-tile costs
 * (barriers, max shuffles, rescale checks) per score. D=128 keeps 64 keys (O alone is 64 registers). */
template <int D> struct v3_tiles;
template <> struct v3_tiles<16> : fwd_tiles<4, 2, 128, 2> {};
template <> struct v3_tiles<32> : fwd_tiles<4, 2, 128, 2> {};
template <> struct v3_tiles<64> : fwd_tiles<4, 1, 128, 2> {}; /* 4x2x128 spills 140 B, 8x1x128 at 2 CTAs 132 B */
template <> struct v3_tiles<128> : fwd_tiles<4, 1, 64, 2> {};
/* v5: the best measured choice per head dim (H200, 2026-11-21: v1 at D=16, v3 at D=32, v4 at D=64 and
 * D=128), with 8-warp CTAs of 256 (D=64) and 128 (D=128) query rows so each K/V tile fetched serves
 * twice the queries (half the L2->SM bytes and cp.async work per score, same 8 warps per SM). */
template <int D> struct v5_tiles;
template <> struct v5_tiles<16> : fwd_tiles<4, 2, 64, 3, 0> {};
template <> struct v5_tiles<32> : fwd_tiles<4, 2, 128, 2, 1> {};
template <> struct v5_tiles<64> : fwd_tiles<8, 2, 64, 1, 1> {};
template <> struct v5_tiles<128> : fwd_tiles<8, 1, 64, 1, 1> {};
/* v16: v5 with, at D = 16, 4 CTAs per SM (registers capped at 128: 16 warps per SM instead of 12) and the row
 * sums of P on the tensor cores (one mma per 16 keys against a ones fragment instead of an FADD per score). At
 * D = 16 the softmax's dependent chains, not MUFU or the tensor cores, set the pace (ncu, H200, 600k rows: issue
 * slots 57-61% busy, MUFU's pipe 61%, "wait" the largest stall), so more warps per scheduler pay; without the
 * row sums (v17) the 4th CTA costs more than it gives (H200, 600k rows fp16: v5 153.4, v16 157.6, v17 150.0
 * TFLOP/s; docs/attention.md). v17 is the ablation. */
template <int D> struct v16_tiles : v5_tiles<D> {};
template <> struct v16_tiles<16> : fwd_tiles<4, 2, 64, 4, 0, 1> {};
template <int D> struct v17_tiles : v5_tiles<D> {};
template <> struct v17_tiles<16> : fwd_tiles<4, 2, 64, 4, 0, 0> {};
/* v23: v16 with lazy rescaling at D = 16 (the alpha exp2s and the O and l rescale only when a row's max grows
 * past the reference by 2^8): 162.1 against v16's 158.6-159.0 TFLOP/s (H200, 600k rows fp16, one run). With the
 * row sums on the tensor cores l sums the dtype-rounded P that P V multiplies, so O is exact to that P; lazily a
 * row's largest p may reach 2^8, where bf16's rounding (2^-9 relative) can move the LSE by up to ~2e-3 absolute
 * (about 1e-3 relative at a scope's typical LSE of 4-8; the tests' LSE limit). */
template <int D> struct v23_tiles : v5_tiles<D> {};
template <> struct v23_tiles<16> : fwd_tiles<4, 2, 64, 4, 1, 1> {};

/* Shared-memory layout of a [rows][D] tile in 16-byte chunks (C = D/8 per row), XOR-swizzled so that the
 * 8 row addresses of one ldmatrix phase (8 consecutive rows, same logical chunk) hit 8 distinct 16-byte
 * bank groups: with R = max(1, 8/C) rows per 128-byte line and X = min(C, 8), chunk c of row r lives at
 * r*C + (c ^ ((r / R) % X)). */
template <int D> static __device__ __forceinline__ int swz(int r, int c) {
  constexpr int C = D / 8, R = C >= 8 ? 1 : 8 / C, X = C >= 8 ? 8 : C;
  return (r * C + (c ^ ((r / R) % X))) * 8;
}

/* Load `rows_valid` of `ROWS` rows (D elements each) starting at global row r0 into a swizzled tile. The trip
 * count is a compile-time constant (tid < NT): a loop from tid to ROWS * C compiled to a generic unrolled loop with
 * a remainder, ~100 instructions per thread per tile at D = 16 where each thread copies one chunk. */
template <typename T, int D, int ROWS, int NT>
static __device__ __forceinline__ void load_tile(T *s, const T *g, int64_t row_stride, int64_t r0,
                                                 int rows_valid, int tid) {
  constexpr int C = D / 8, TOTAL = ROWS * C, ITERS = (TOTAL + NT - 1) / NT;
#pragma unroll
  for (int i = 0; i < ITERS; ++i) {
    const int idx = tid + i * NT;
    if (TOTAL % NT != 0 && idx >= TOTAL) break;
    int r = idx / C, c = idx % C;
    bool ok = r < rows_valid;
    const T *src = g + (ok ? (r0 + r) * row_stride : 0) + c * 8;
    cp_async16(s + swz<D>(r, c), src, ok ? 16 : 0);
  }
}

/* PACK (v24): a scope's rows as one sequence, its buckets end to end in scope-slot order; packed row v lies in
 * the scope's bucket j with pre[j] <= v < pre[j + 1] (pre: the counts' prefix, an empty slot counting 0), at global
 * row start[j] + v - pre[j] = base[j] + v (mod 2^32: bucket starts are 32-bit). A thread's place in that walk for one
 * of its chunks is the bucket j of its row alone, advanced while its row passes pre[j + 1] (rows only grow from tile to
 * tile): two shared-memory reads, a compare and an add a chunk and tile. Keeping pre[j + 1] and base[j] in registers
 * as well made ptxas spill (sm_90, 12 bytes stored, 28 loaded); j alone spills nothing. */
struct pack_pos {
  int j;
};
static __device__ __forceinline__ uint32_t pack_row(pack_pos &ps, uint32_t v, const uint32_t *pre,
                                                    const uint32_t *base) {
  while (v >= pre[ps.j + 1]) ++ps.j; /* ends at a bucket holding v: the caller keeps v < n = pre[K] */
  return base[ps.j] + v;
}
/* Rows v0 .. v0 + ROWS - 1 of the packed scope (zero-filled at n and past it) into swizzled tiles, from one global
 * tensor (s1 == NULL) or from two sharing the rows (K and V). If rows is non-NULL it receives each row's global row. */
template <typename T, int D, int ROWS, int NT>
static __device__ __forceinline__ void load_tile_packed(T *s0, const T *g0, int64_t stride0, T *s1, const T *g1,
                                                        int64_t stride1, uint32_t v0, uint32_t n, const uint32_t *pre,
                                                        const uint32_t *base,
                                                        pack_pos (&ps)[(ROWS * (D / 8) + NT - 1) / NT], int tid,
                                                        int64_t *rows) {
  constexpr int C = D / 8, TOTAL = ROWS * C, ITERS = (TOTAL + NT - 1) / NT;
#pragma unroll
  for (int i = 0; i < ITERS; ++i) {
    const int idx = tid + i * NT;
    if (TOTAL % NT != 0 && idx >= TOTAL) break;
    const int r = idx / C, c = idx % C;
    const uint32_t v = v0 + (uint32_t)r;
    const bool ok = v < n;
    const int64_t row = ok ? (int64_t)pack_row(ps[i], v, pre, base) : 0;
    if (rows && c == 0) rows[r] = ok ? row : -1;
    cp_async16(s0 + swz<D>(r, c), g0 + row * stride0 + c * 8, ok ? 16 : 0);
    if (s1) cp_async16(s1 + swz<D>(r, c), g1 + row * stride1 + c * 8, ok ? 16 : 0);
  }
}

/* max over the scores of row half hr of a warp's NB S n-tiles, as a tree that pairs n-tile n with n + NB / 2, then
 * n + NB / 4, ...: tree_max<R, S> is the max over the n-tiles n = R mod S. Recursion, not a loop over halving
 * widths: at NB = 16 that loop was not unrolled and put its array in local memory (a 64-byte stack frame). */
template <int R, int S, int NB>
static __device__ __forceinline__ float tree_max(const float (&s)[NB][4], int hr) {
  static_assert(NB >= 1 && (NB & (NB - 1)) == 0, "a power of two of n-tiles");
  if constexpr (S >= NB) return fmaxf(s[R][2 * hr], s[R][2 * hr + 1]);
  else return fmaxf(tree_max<R, 2 * S>(s, hr), tree_max<R + S, 2 * S>(s, hr));
}

/* TR::RSUM: row sums of P on the tensor cores (an extra mma per 16 keys against a ones B fragment, of the
 * fp16/bf16 P that P V uses) instead of one FADD per score. */
/* PACK (v24): a CTA takes BM rows of its scope's packed rows (load_tile_packed) instead of BM rows of one bucket, and
 * the key loop walks the packed rows BN at a time, so only a scope's last query and key tiles are partial, not every
 * bucket's; tiles_per_bucket is then the query tiles of a scope (max_scope_rows / BM) and buckets_per_scope at most
 * PACK_KMAX. The sums are those of the unpacked kernel over the same keys in another order. */
constexpr int PACK_KMAX = 32;
template <typename T, int D, typename TR, bool EXP16, bool LAZY, bool PACK>
__global__ void __launch_bounds__(TR::WARPS * 32, TR::MINB)
    battn_fwd_kernel(const battn_params p, float c_log2, uint32_t tiles_per_bucket) {
  hx_pdl_wait();
  constexpr int WARPS = TR::WARPS, MT = TR::MT, BN = TR::BN;
  constexpr int NT = WARPS * 32, BM = 16 * MT * WARPS, KS = D / 16, NB = BN / 8, ND = D / 8;
  constexpr int KV_ITERS = (BN * ND + NT - 1) / NT, Q_ITERS = (BM * ND + NT - 1) / NT;
  using ops = dt_ops<T>;
  extern __shared__ uint4 smem_raw[];
  T *sQ = reinterpret_cast<T *>(smem_raw);
  T *sK = sQ + BM * D; /* 2 stages of [BN][D] */
  T *sV = sK + 2 * BN * D;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int h = blockIdx.y;
  uint32_t flat = blockIdx.x;
  const uint32_t qtile = flat % tiles_per_bucket;
  flat /= tiles_per_bucket;
  const uint32_t K = p.buckets_per_scope;
  /* PACK: the scope's bucket starts and count prefix (pre[K] = its rows), and each query row's global row */
  __shared__ uint32_t s_pre[PACK ? PACK_KMAX + 1 : 1], s_base[PACK ? PACK_KMAX : 1];
  __shared__ int64_t s_qrow[PACK ? BM : 1];
  uint32_t scope, qcount;
  int64_t qrow0 = 0;
  if constexpr (PACK) {
    scope = flat;
    if (warp == 0) {
      uint32_t c = 0, st = 0;
      if ((uint32_t)lane < K) {
        const uint32_t b = __ldg(p.scope + (size_t)scope * K + lane);
        if (b != BATTN_EMPTY) st = __ldg(p.bucket_start + b), c = __ldg(p.bucket_count + b);
      }
      const uint32_t cnt = c;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, c, o);
        if (lane >= o) c += y;
      }
      if ((uint32_t)lane < K) s_base[lane] = st - (c - cnt), s_pre[lane + 1] = c; /* start - pre, mod 2^32 */
      if (lane == 0) s_pre[0] = 0;
    }
    __syncthreads();
    qcount = s_pre[K];
    if (qtile * BM >= qcount) return; /* uniform over the CTA; no barrier follows for these threads */
  } else {
    const uint32_t qslot = flat % K;
    scope = flat / K;
    const uint32_t qb = __ldg(p.scope + (size_t)scope * K + qslot);
    if (qb == BATTN_EMPTY) return;
    qcount = __ldg(p.bucket_count + qb);
    if (qtile * BM >= qcount) return; /* uniform over the CTA: no barrier has been reached yet */
    qrow0 = (int64_t)__ldg(p.bucket_start + qb) + qtile * BM;
  }
  const int qn = (int)min((uint32_t)BM, qcount - qtile * BM);

  const T *gq = static_cast<const T *>(p.q) + (int64_t)h * p.q_head_stride;
  const T *gk = static_cast<const T *>(p.k) + (int64_t)h * p.k_head_stride;
  const T *gv = static_cast<const T *>(p.v) + (int64_t)h * p.v_head_stride;

  tile_walk cur = {-1, 0, 0, 0};  /* !PACK: the bucket-by-bucket walk */
  uint32_t kt = 0;                 /* PACK: the current key tile, rows kt * BN .. of the packed scope */
  pack_pos kp[KV_ITERS];           /* PACK: this thread's key chunks' places in the packed walk */
  bool have;
  if constexpr (PACK) {
    const pack_pos p0 = {0};
    pack_pos qp[Q_ITERS];
#pragma unroll
    for (int i = 0; i < Q_ITERS; ++i) qp[i] = p0;
#pragma unroll
    for (int i = 0; i < KV_ITERS; ++i) kp[i] = p0;
    load_tile_packed<T, D, BM, NT>(sQ, gq, p.q_row_stride, (T *)NULL, gq, 0, qtile * BM, qcount, s_pre, s_base, qp,
                                   tid, s_qrow);
    cp_async_commit();
    have = true; /* qcount > qtile * BM >= 0 */
    load_tile_packed<T, D, BN, NT>(sK, gk, p.k_row_stride, sV, gv, p.v_row_stride, 0, qcount, s_pre, s_base, kp, tid,
                                   NULL);
  } else {
    load_tile<T, D, BM, NT>(sQ, gq, p.q_row_stride, qrow0, qn, tid);
    cp_async_commit();
    have = walk_next<BN>(p, scope, cur); /* always true: the query bucket is in its own scope */
    if (have) {
      int nv = walk_rows<BN>(cur);
      load_tile<T, D, BN, NT>(sK, gk, p.k_row_stride, (int64_t)cur.start + cur.off, nv, tid);
      load_tile<T, D, BN, NT>(sV, gv, p.v_row_stride, (int64_t)cur.start + cur.off, nv, tid);
    }
  }
  cp_async_commit();
  cp_async_wait<1>();
  __syncthreads();

  /* Q fragments stay in registers for the whole key loop. */
  uint32_t qf[MT][KS][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      int r = warp * 16 * MT + mt * 16 + (lane & 15);
      ldsm_x4(qf[mt][ks], sQ + swz<D>(r, ks * 2 + (lane >> 4)));
    }

  float o[MT][ND][4];
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int n = 0; n < ND; ++n) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.f;
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.f;
  }
  constexpr bool RSUM = EXP16 || TR::RSUM != 0; /* row sums on the tensor cores */
  /* (1, 1) in T: B fragment of the row-sum n-tile */
  const uint32_t ones = RSUM ? (std::is_same<T, __half>::value ? 0x3C003C00u : 0x3F803F80u) : 0u;

  int stage = 0;
  while (have) {
    tile_walk nxt = cur;
    bool have_next;
    if constexpr (PACK) {
      have_next = (kt + 1) * BN < qcount;
      if (have_next) {
        const uint32_t v0 = (kt + 1) * BN;
        load_tile_packed<T, D, BN, NT>(sK + (stage ^ 1) * BN * D, gk, p.k_row_stride, sV + (stage ^ 1) * BN * D, gv,
                                       p.v_row_stride, v0, qcount, s_pre, s_base, kp, tid, NULL);
      }
    } else {
      have_next = walk_next<BN>(p, scope, nxt);
      if (have_next) {
        int nv = (int)min((uint32_t)BN, nxt.count - nxt.off);
        load_tile<T, D, BN, NT>(sK + (stage ^ 1) * BN * D, gk, p.k_row_stride, (int64_t)nxt.start + nxt.off,
                                nv, tid);
        load_tile<T, D, BN, NT>(sV + (stage ^ 1) * BN * D, gv, p.v_row_stride, (int64_t)nxt.start + nxt.off,
                                nv, tid);
      }
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();

    const T *tK = sK + stage * BN * D, *tV = sV + stage * BN * D;
    const int nvalid = PACK ? (int)min((uint32_t)BN, qcount - kt * BN) : walk_rows<BN>(cur);

    float s[MT][NB][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int n = 0; n < NB; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.f;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
      for (int np = 0; np < NB / 2; ++np) {
        uint32_t b[4];
        int r = np * 16 + (lane & 7) + ((lane >> 4) << 3);
        ldsm_x4(b, tK + swz<D>(r, ks * 2 + ((lane >> 3) & 1)));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          ops::mma(s[mt][2 * np], qf[mt][ks], b[0], b[1]);
          ops::mma(s[mt][2 * np + 1], qf[mt][ks], b[2], b[3]);
        }
      }
    if (nvalid < BN) { /* partial tile at a bucket's (PACK: the scope's) end: masked keys */
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < NB; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (n * 8 + 2 * (lane & 3) + (e & 1) >= nvalid) s[mt][n][e] = -INFINITY;
    }

    /* online softmax, exp2 domain: p = 2^(s*c - m), m the running reference max of s*c. LAZY keeps
     * the old reference while no row of the warp has grown past it by more than 2^8 (p <= 256 stays
     * exact enough in fp16/bf16 and fp32 sums), skipping the alpha exp2 and the O and l rescale, which
     * at D=64 cost as many FMULs per tile as there are scores. The final O / l and LSE are unchanged. */
    float mx[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        /* a tree, not a chain: log2(NB) + 1 dependent FMNMX instead of 2 NB (fmaxf is exact in any order) */
        float x = tree_max<0, 1>(s[mt], hr);
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
        mx[mt][hr] = x * c_log2;
      }
    bool rescale = true;
    if (LAZY) {
      bool need = false;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) need |= (mx[mt][0] > m[mt][0] + 8.f) | (mx[mt][1] > m[mt][1] + 8.f);
      rescale = __any_sync(0xffffffffu, need);
    }
    if (rescale) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          float mnew = fmaxf(m[mt][hr], mx[mt][hr]);
          float alpha = ex2f(m[mt][hr] - mnew);
          m[mt][hr] = mnew;
          l[mt][hr] *= alpha;
#pragma unroll
          for (int n = 0; n < ND; ++n) {
            o[mt][n][2 * hr] *= alpha;
            o[mt][n][2 * hr + 1] *= alpha;
          }
        }
    }
    uint32_t pa[MT][NB][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const float nm = -m[mt][hr];
        if (EXP16) {
#pragma unroll
          for (int n = 0; n < NB; ++n)
            pa[mt][n][hr] = ex2h2(fmaf(s[mt][n][2 * hr], c_log2, nm), fmaf(s[mt][n][2 * hr + 1], c_log2, nm));
        } else {
          float sum = 0.f;
#pragma unroll
          for (int n = 0; n < NB; ++n) {
            const float p0 = ex2f(fmaf(s[mt][n][2 * hr], c_log2, nm));
            const float p1 = ex2f(fmaf(s[mt][n][2 * hr + 1], c_log2, nm));
            if (!RSUM) sum += p0 + p1;
            pa[mt][n][hr] = ops::pack(p0, p1);
          }
          if (!RSUM) l[mt][hr] += sum;
        }
      }

    /* O += P V: P's C fragments become A fragments without leaving registers */
    float rs[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) rs[mt][0] = rs[mt][1] = rs[mt][2] = rs[mt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        a[mt][0] = pa[mt][2 * kk][0];
        a[mt][1] = pa[mt][2 * kk][1];
        a[mt][2] = pa[mt][2 * kk + 1][0];
        a[mt][3] = pa[mt][2 * kk + 1][1];
      }
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t b[4];
        int r = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
        ldsm_x4_t(b, tV + swz<D>(r, dp * 2 + (lane >> 4)));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          ops::mma(o[mt][2 * dp], a[mt], b[0], b[1]);
          ops::mma(o[mt][2 * dp + 1], a[mt], b[2], b[3]);
        }
      }
      if (RSUM) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) ops::mma(rs[mt], a[mt], ones, ones);
      }
    }
    if (RSUM) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        /* every column of the ones tile holds the row sum; the quad sums again below, so take 1/4 */
        l[mt][0] += rs[mt][0] * 0.25f;
        l[mt][1] += rs[mt][2] * 0.25f;
      }
    }
    __syncthreads(); /* the next prefetch overwrites this stage */
    stage ^= 1;
    cur = nxt;
    ++kt;
    have = have_next;
  }

  /* finish: row sums across the quad, normalise, write O and LSE for valid rows */
  T *go = static_cast<T *>(p.o) + (int64_t)h * p.o_head_stride;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float sum = l[mt][hr];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      float inv = 1.f / sum;
      int r = warp * 16 * MT + mt * 16 + (lane >> 2) + hr * 8;
      if (r < qn) {
        const int64_t grow = PACK ? s_qrow[r] : qrow0 + r;
        T *orow = go + grow * p.o_row_stride;
#pragma unroll
        for (int n = 0; n < ND; ++n) {
          uint32_t v = ops::pack(o[mt][n][2 * hr] * inv, o[mt][n][2 * hr + 1] * inv);
          *reinterpret_cast<uint32_t *>(orow + n * 8 + 2 * (lane & 3)) = v;
        }
        if (p.lse && (lane & 3) == 0)
          p.lse[grow * p.heads + h] = (m[mt][hr] + __log2f(sum)) * 0.69314718055994531f;
      }
    }
}

template <typename T, int D, typename TR, bool EXP16, bool LAZY, bool PACK>
static hx_status launch_fused_t(const battn_params *p, cudaStream_t stream, hx_err *err) {
  constexpr int WARPS = TR::WARPS, MT = TR::MT, BN = TR::BN;
  constexpr int BM = 16 * MT * WARPS;
  if constexpr (PACK) {
    /* The packing saves the padding of every bucket's last tiles, which buckets that are nearly full do not have, and
     * costs its own walk (H200, 2026-12-01, flash3d-46m against v23 by `net --attn`: buckets 57% and 76% full on
     * average, attention -8% and -4%; 95% full +0.8%, full 512-row windows +2%, PTv3's padded patches +2.5%). So the
     * bucket-by-bucket kernel takes layouts whose buckets are on average kPackFillMax full or more, one bucket a scope
     * (nothing to pack) and scopes past the packed walk's tables. */
    constexpr double kPackFillMax = 0.9;
    const double cap = (double)p->num_buckets * p->max_bucket_rows;
    if (p->buckets_per_scope < 2 || p->buckets_per_scope > (uint32_t)PACK_KMAX || !(cap > 0) ||
        (double)p->rows >= kPackFillMax * cap)
      return launch_fused_t<T, D, TR, EXP16, LAZY, false>(p, stream, err);
  }
  const size_t smem = (size_t)(BM * D + 4 * BN * D) * sizeof(T);
  /* query tiles per bucket, or (PACK) per scope */
  uint32_t tpb = ((PACK ? p->max_scope_rows : p->max_bucket_rows) + BM - 1) / BM;
  uint64_t nx = (uint64_t)p->num_scopes * (PACK ? 1u : p->buckets_per_scope) * tpb;
  if (nx == 0) return HX_OK;
  if (nx > 0x7FFFFFFFull) return hx_errf(err, HX_EINVAL, "attention: grid of %llu tiles too large",
                                         (unsigned long long)nx);
  auto kern = battn_fwd_kernel<T, D, TR, EXP16, LAZY || TR::LAZY != 0, PACK>;
  BATTN_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  float c = p->scale * 1.4426950408889634f;
  hx_launch(kern, dim3((unsigned)nx, (unsigned)p->heads), WARPS * 32, smem, stream, *p, c, tpb);
  BATTN_LAUNCHED("battn_fwd_kernel");
  return HX_OK;
}

/* One fused variant: its tile table, whether fp16 uses packed-half exp2, whether the rescale is lazy, whether a
 * scope's rows are packed at D = 16 (v24; at D = 32 v23's 128-key tiles with the packed walk spill 76 bytes, ptxas
 * sm_90, so the other head dims run unpacked). */
template <template <int> class TILES, bool EXP16, bool LAZY, bool PACK = false>
static hx_status fused_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                          hx_err *err) {
  HX_TRY(battn_validate(p, NULL, err));
  if (!d_scratch && scratch_bytes) {
    *scratch_bytes = 0;
    return HX_OK;
  }
  cudaStream_t st = (cudaStream_t)stream;
  typedef __half H;
  typedef __nv_bfloat16 B;
  bool f16 = p->dtype == BATTN_F16;
  switch (p->head_dim) {
  case 16: return f16 ? launch_fused_t<H, 16, TILES<16>, EXP16, LAZY, PACK>(p, st, err)
                 : launch_fused_t<B, 16, TILES<16>, false, LAZY, PACK>(p, st, err);
  case 32: return f16 ? launch_fused_t<H, 32, TILES<32>, EXP16, LAZY, false>(p, st, err)
                 : launch_fused_t<B, 32, TILES<32>, false, LAZY, false>(p, st, err);
  case 64: return f16 ? launch_fused_t<H, 64, TILES<64>, EXP16, LAZY, false>(p, st, err)
                 : launch_fused_t<B, 64, TILES<64>, false, LAZY, false>(p, st, err);
  default: return f16 ? launch_fused_t<H, 128, TILES<128>, EXP16, LAZY, false>(p, st, err)
                 : launch_fused_t<B, 128, TILES<128>, false, LAZY, false>(p, st, err);
  }
}

/* v5 by name, for v6 (attn_wgmma.cu) at the head dims where it runs v5's kernels. */
extern "C" hx_status battn_v5_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                                 hx_err *err) {
  return fused_fn<v5_tiles, false, false>(p, d_scratch, scratch_bytes, stream, err);
}
/* v23 by name (the variant table's). */
static hx_status battn_v23_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                              hx_err *err) {
  return fused_fn<v23_tiles, false, false>(p, d_scratch, scratch_bytes, stream, err);
}
/* v24 by name: v23 over each scope's packed rows at D = 16, v23 elsewhere. */
extern "C" hx_status battn_v24_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                                  hx_err *err) {
  return fused_fn<v23_tiles, false, false, true>(p, d_scratch, scratch_bytes, stream, err);
}

/* ---- v0: unfused cuBLAS reference ---------------------------------------------------------------- */

/* Row map of a chunk of scopes: rowmap[s][i] = the i-th valid row of scope s0+s, -1 past its end;
 * len[s] = its number of rows. One block per scope. */
static __global__ void v0_rowmap_kernel(const battn_params p, uint32_t s0, uint32_t L, int32_t *rowmap,
                                        int32_t *len) {
  hx_pdl_wait();
  uint32_t s = blockIdx.x, sc = s0 + s;
  int32_t *rm = rowmap + (size_t)s * L;
  uint32_t off = 0;
  for (uint32_t j = 0; j < p.buckets_per_scope; ++j) {
    uint32_t b = p.scope[(size_t)sc * p.buckets_per_scope + j];
    if (b == BATTN_EMPTY) continue;
    uint32_t st = p.bucket_start[b], c = p.bucket_count[b];
    for (uint32_t i = threadIdx.x; i < c; i += blockDim.x) rm[off + i] = (int32_t)(st + i);
    off += c;
  }
  for (uint32_t i = off + threadIdx.x; i < L; i += blockDim.x) rm[i] = -1;
  if (threadIdx.x == 0) len[s] = (int32_t)off;
}

/* Gather Q, K, V rows of a chunk into [s][h][L][D] (zeros for padding), 8 elements per thread. */
template <typename T>
static __global__ void v0_gather_kernel(const battn_params p, uint32_t ns, uint32_t L, const int32_t *rowmap,
                                        T *q, T *k, T *v) {
  hx_pdl_wait();
  const int D = p.head_dim, H = p.heads, C = D / 8;
  uint64_t total = (uint64_t)ns * H * L * C;
  for (uint64_t idx = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; idx < total;
       idx += (uint64_t)gridDim.x * blockDim.x) {
    int c = (int)(idx % C);
    uint64_t t = idx / C;
    uint32_t i = (uint32_t)(t % L);
    t /= L;
    int h = (int)(t % H);
    uint32_t s = (uint32_t)(t / H);
    int32_t r = rowmap[(size_t)s * L + i];
    size_t dst = (((size_t)s * H + h) * L + i) * D + c * 8;
    uint4 zq = make_uint4(0, 0, 0, 0), zk = zq, zv = zq;
    if (r >= 0) {
      zq = *reinterpret_cast<const uint4 *>(static_cast<const T *>(p.q) + r * p.q_row_stride + h * p.q_head_stride + c * 8);
      zk = *reinterpret_cast<const uint4 *>(static_cast<const T *>(p.k) + r * p.k_row_stride + h * p.k_head_stride + c * 8);
      zv = *reinterpret_cast<const uint4 *>(static_cast<const T *>(p.v) + r * p.v_row_stride + h * p.v_head_stride + c * 8);
    }
    *reinterpret_cast<uint4 *>(q + dst) = zq;
    *reinterpret_cast<uint4 *>(k + dst) = zk;
    *reinterpret_cast<uint4 *>(v + dst) = zv;
  }
}

/* One block per score row: P = softmax(scale * S) over the scope's valid columns, in the dtype; LSE. */
template <typename T>
static __global__ void v0_softmax_kernel(const float *S, T *P, float *lse, const int32_t *len, uint32_t L,
                                         int H, float scale) {
  hx_pdl_wait();
  size_t row = blockIdx.x; /* (s*H + h)*L + i */
  uint32_t i = (uint32_t)(row % L);
  uint32_t s = (uint32_t)(row / L / (uint32_t)H);
  int n = len[s];
  const float *srow = S + row * L;
  T *prow = P + row * L;
  __shared__ float red[32];
  if ((int)i >= n) {
    for (uint32_t j = threadIdx.x; j < L; j += blockDim.x) prow[j] = dt_ops<T>::from_f(0.f);
    return;
  }
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, srow[j] * scale);
  for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
  __syncthreads();
  mx = red[0];
  for (int w = 1; w < (int)(blockDim.x >> 5); ++w) mx = fmaxf(mx, red[w]);
  __syncthreads();
  float sum = 0.f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) sum += expf(srow[j] * scale - mx);
  for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = sum;
  __syncthreads();
  sum = 0.f;
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w) sum += red[w];
  float inv = 1.f / sum;
  for (uint32_t j = threadIdx.x; j < L; j += blockDim.x)
    prow[j] = dt_ops<T>::from_f((int)j < n ? expf(srow[j] * scale - mx) * inv : 0.f);
  if (threadIdx.x == 0) lse[row] = mx + logf(sum);
}

template <typename T>
static __global__ void v0_scatter_kernel(const battn_params p, uint32_t ns, uint32_t L, const int32_t *rowmap,
                                         const float *og, const float *lse_g) {
  hx_pdl_wait();
  const int D = p.head_dim, H = p.heads;
  uint64_t total = (uint64_t)ns * H * L * D;
  for (uint64_t idx = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; idx < total;
       idx += (uint64_t)gridDim.x * blockDim.x) {
    int d = (int)(idx % D);
    uint64_t t = idx / D; /* (s*H + h)*L + i */
    uint32_t i = (uint32_t)(t % L);
    int h = (int)((t / L) % H);
    uint32_t s = (uint32_t)(t / L / H);
    int32_t r = rowmap[(size_t)s * L + i];
    if (r < 0) continue;
    static_cast<T *>(p.o)[r * p.o_row_stride + h * p.o_head_stride + d] = dt_ops<T>::from_f(og[idx]);
    if (d == 0 && p.lse) p.lse[(int64_t)r * H + h] = lse_g[t];
  }
}

/* Scopes per chunk: the fp32 scores plus the P copy of one chunk stay under 1 GiB. */
static uint32_t v0_chunk(const battn_params *p, uint32_t L) {
  uint64_t per = (uint64_t)p->heads * L * L * 6 + 1;
  uint64_t n = (1ull << 30) / per;
  if (n < 1) n = 1;
  if (n > p->num_scopes) n = p->num_scopes;
  return (uint32_t)(n ? n : 1);
}

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

/* The one mutable state of this file, and why: creating a cuBLAS handle allocates its workspace and can
 * synchronise the device, so a v0 that created one per call would time cuBLAS's set-up, not its GEMMs
 * (a strawman library baseline), and would break stream-held timing. cuBLAS's own advice is one handle
 * per thread and device, created once: a thread-local table indexed by device, never destroyed (the
 * process exit releases it). */
static cublasHandle_t v0_handle(void) {
  static thread_local cublasHandle_t handles[64];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return NULL;
  if (!handles[dev] && cublasCreate(&handles[dev]) != CUBLAS_STATUS_SUCCESS) handles[dev] = NULL;
  return handles[dev];
}

template <typename T>
static hx_status v0_run(const battn_params *p, void *d_scratch, size_t *scratch_bytes, cudaStream_t stream,
                        hx_err *err) {
  const uint32_t L = (p->max_scope_rows + 7u) & ~7u;
  const uint32_t NS = v0_chunk(p, L ? L : 8);
  const int H = p->heads, D = p->head_dim;
  size_t b_rowmap = align256((size_t)NS * L * 4), b_len = align256((size_t)NS * 4);
  size_t b_qkv = align256((size_t)NS * H * L * D * sizeof(T));
  size_t b_s = align256((size_t)NS * H * L * L * 4), b_p = align256((size_t)NS * H * L * L * sizeof(T));
  size_t b_o = align256((size_t)NS * H * L * D * 4), b_l = align256((size_t)NS * H * L * 4);
  size_t need = b_rowmap + b_len + 3 * b_qkv + b_s + b_p + b_o + b_l;
  if (!d_scratch) {
    if (scratch_bytes) *scratch_bytes = need;
    return HX_OK;
  }
  if (scratch_bytes && *scratch_bytes < need)
    return hx_errf(err, HX_EINVAL, "attention v0: scratch of %zu bytes, needs %zu", *scratch_bytes, need);
  if (p->num_scopes == 0 || L == 0) return HX_OK;
  char *base = static_cast<char *>(d_scratch);
  int32_t *rowmap = reinterpret_cast<int32_t *>(base);
  base += b_rowmap;
  int32_t *len = reinterpret_cast<int32_t *>(base);
  base += b_len;
  T *qg = reinterpret_cast<T *>(base);
  base += b_qkv;
  T *kg = reinterpret_cast<T *>(base);
  base += b_qkv;
  T *vg = reinterpret_cast<T *>(base);
  base += b_qkv;
  float *S = reinterpret_cast<float *>(base);
  base += b_s;
  T *P = reinterpret_cast<T *>(base);
  base += b_p;
  float *og = reinterpret_cast<float *>(base);
  base += b_o;
  float *lg = reinterpret_cast<float *>(base);

  cublasHandle_t hnd = v0_handle();
  if (!hnd) return hx_errf(err, HX_ECUDA, "attention v0: cublasCreate failed");
  if (cublasSetStream(hnd, stream) != CUBLAS_STATUS_SUCCESS)
    return hx_errf(err, HX_ECUDA, "attention v0: cublasSetStream failed");
  const cudaDataType_t ct = p->dtype == BATTN_F16 ? CUDA_R_16F : CUDA_R_16BF;
  hx_status st = HX_OK;
  for (uint32_t s0 = 0; s0 < p->num_scopes && st == HX_OK; s0 += NS) {
    uint32_t ns = p->num_scopes - s0 < NS ? p->num_scopes - s0 : NS;
    hx_launch(v0_rowmap_kernel, ns, 256, 0, stream, *p, s0, L, rowmap, len);
    uint64_t tot = (uint64_t)ns * H * L * (D / 8);
    unsigned g = (unsigned)((tot + 255) / 256 < 65535 * 8 ? (tot + 255) / 256 : 65535 * 8);
    hx_launch(v0_gather_kernel<T>, g, 256, 0, stream, *p, ns, L, rowmap, qg, kg, vg);
    float one = 1.f, zero = 0.f;
    int batch = (int)(ns * (uint32_t)H);
    /* row-major S[i][j] = <q_i, k_j> is column-major S^T = K Q^T: op(A) = K (A = Kg^T col-major, T) */
    cublasStatus_t cs = cublasGemmStridedBatchedEx(
        hnd, CUBLAS_OP_T, CUBLAS_OP_N, (int)L, (int)L, D, &one, kg, ct, D, (long long)L * D, qg, ct, D,
        (long long)L * D, &zero, S, CUDA_R_32F, (int)L, (long long)L * L, batch, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT);
    if (cs != CUBLAS_STATUS_SUCCESS) {
      st = hx_errf(err, HX_ECUDA, "attention v0: score GEMM failed (%d)", (int)cs);
      break;
    }
    hx_launch(v0_softmax_kernel<T>, (unsigned)((size_t)batch * L), 256, 0, stream, S, P, lg, len, L, H, p->scale);
    /* row-major O = P V is column-major O^T = V^T P^T: both operands as stored, no transposes */
    cs = cublasGemmStridedBatchedEx(hnd, CUBLAS_OP_N, CUBLAS_OP_N, D, (int)L, (int)L, &one, vg, ct, D,
                                    (long long)L * D, P, ct, (int)L, (long long)L * L, &zero, og, CUDA_R_32F,
                                    D, (long long)L * D, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (cs != CUBLAS_STATUS_SUCCESS) {
      st = hx_errf(err, HX_ECUDA, "attention v0: output GEMM failed (%d)", (int)cs);
      break;
    }
    uint64_t tot2 = (uint64_t)ns * H * L * D;
    unsigned g2 = (unsigned)((tot2 + 255) / 256 < 65535 * 8 ? (tot2 + 255) / 256 : 65535 * 8);
    hx_launch(v0_scatter_kernel<T>, g2, 256, 0, stream, *p, ns, L, rowmap, og, lg);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) st = hx_errf(err, HX_ECUDA, "attention v0: launch: %s", cudaGetErrorString(e));
  }
  return st;
}

static hx_status v0_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                       hx_err *err) {
  HX_TRY(battn_validate(p, NULL, err));
  cudaStream_t st = (cudaStream_t)stream;
  return p->dtype == BATTN_F16 ? v0_run<__half>(p, d_scratch, scratch_bytes, st, err)
                               : v0_run<__nv_bfloat16>(p, d_scratch, scratch_bytes, st, err);
}

/* ---- variant table ------------------------------------------------------------------------------- */

/* the table from the one list (variants_internal.h), which the CPU-only stub expands too */
#define BATTN_ROW(id, name, summary, fn) {id, name, summary, fn},
static const battn_variant battn_table[] = {BATTN_VARIANT_LIST(BATTN_ROW)};
#undef BATTN_ROW

extern "C" const battn_variant *battn_variants(size_t *count) {
  if (count) *count = sizeof battn_table / sizeof battn_table[0];
  return battn_table;
}
