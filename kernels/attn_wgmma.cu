/*
 * attn_wgmma.cu - bucket-swin attention variants v6..v11: Hopper warpgroup MMA (wgmma), sm_90a only.
 *
 * Computes exactly what attn.cu's variants compute (kernels.h, battn_ section): for every scope s, query
 * row i of a bucket of s and head h, O[i,h,:] = softmax_j(scale <Q_i, K_j>) V_j over the valid key rows of
 * the buckets of s, and LSE[i,h]. Invariant (battn_validate): scopes partition the non-empty buckets, so
 * each O row of a bucket is written once and rows past a bucket's count never are.
 *
 * Design (FlashAttention-3 style, without a producer warpgroup): one CTA = 2 warpgroups x 64 query rows of
 * one bucket and one head. K/V tiles of BN = 128 keys are found through the scope table (as in attn.cu)
 * and copied by every thread with cp.async (zero fill past a bucket's count) into a STAGES-slot ring laid
 * out in the wgmma swizzled layouts (32/64/128-byte swizzle for D = 16/32/>=64 rows; D = 128 as two
 * 64-column blocks). Per tile j each warpgroup issues S_j = Q K_j^T (A = Q and B = K from shared memory,
 * K-major) and, asynchronously behind it, O += P_{j-1} V_{j-1} (A = P from registers, B = V from shared
 * memory, MN-major), runs the online softmax of S_j while P_{j-1} V_{j-1} is on the tensor cores, then
 * waits, rescales O and packs P_j. fp32 accumulators, exp2 domain with scale*log2(e) folded in one FFMA.
 *
 * v9 (battn_v9_kernel, below v6's): the same tile arithmetic (v6_wg, which both kernels call), warp-
 * specialised: a producer warpgroup fills the K/V ring (cp.async + per-slot full/empty mbarriers,
 * setmaxnreg), two consumer warpgroups ping-pong their wgmmas; no CTA-wide barrier in the loop. 1.4-1.5x
 * v6 at D = 64/128 on the H200 (2026-11-22, af776f7; docs/attention.md).
 *
 * Gating: the wgmma code exists only in the sm_90a image (__CUDA_ARCH_FEAT_SM90_ALL); the sm_80/sm_90
 * images of this file hold empty kernels. The launcher refuses (HX_EUNSUPPORTED) unless the device is
 * compute capability 9.0 and a probe kernel of this file reports that the image the driver loaded was
 * built with the sm_90a feature macro.
 */
#include "kernels/attn_internal.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define V6_WGMMA 1
#else
#define V6_WGMMA 0
#endif

#define V6_CUDA(call)                                                                                  \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess)                                                                             \
      return hx_errf(err, HX_ECUDA, "attention v6: %s: %s (%s:%d)", #call, cudaGetErrorString(e_),     \
                     __FILE__, __LINE__);                                                              \
  } while (0)

/* Tiles: NWG warpgroups of 64 query rows (BM = 64 NWG), BN keys per K/V tile, STAGES ring slots (the slot
 * of tile j-1 is read by P V while tile j is computed, so STAGES - 2 tiles are in flight ahead).
 * Registers per thread: S BN/2 + P BN/4 + O D/2 (+ ~40): D=128: 64 + 32 + 64. Shared memory: Q BM*D*2 +
 * STAGES * 2 * BN*D*2: D=128: 32 KB + 3 x 64 KB. */
template <int W, int N, int S, int F> struct v6_cfg {
  /* FENCE: a warpgroup barrier between the softmax and the P V wait (see the loop) */
  enum { NWG = W, BN = N, STAGES = S, FENCE = F };
};
/* v6 (and v8): 2 warpgroups share each K/V tile (half the L2 -> shared bytes per score); 4 slots (2 tiles
 * in flight ahead), 3 at D=128 (3 x 64 KB + 32 KB of Q fill shared memory). */
template <int D> struct v6_tiles : v6_cfg<2, 128, D == 128 ? 3 : 4, 1> {};
/* v7: the same without the fence: the first measured version (the softmax after P V in the SASS). */
template <int D> struct v7_tiles : v6_cfg<2, 128, D == 128 ? 3 : 4, 0> {};
/* v9 (warp-specialised, see its kernel): NWG consumer warpgroups + 1 producer warpgroup, BN-key tiles,
 * STAGES ring slots (shared memory as v6), setmaxnreg PREG for the producer and CREG for the consumers:
 * 128 x 24 + 256 x 240 = 128 x 40 + 256 x 232 = 384 x 168, the allocation at entry under
 * __launch_bounds__(384, 1), so the consumers' increase is exactly covered by the producer's release.
 * D = 128 needs 240 (v6's kernel: 239); below, the producer gets 40. PING: FA3's ping-pong between the
 * two consumers (v9 on, v11 off). */
template <int D, int PP> struct v9_cfg {
  enum {
    NWG = 2,
    BN = 128,
    STAGES = D == 128 ? 3 : 4,
    PREG = D == 128 ? 24 : 40,
    CREG = D == 128 ? 240 : 232,
    PING = PP
  };
};
template <int D> struct v9_tiles : v9_cfg<D, 1> {};
template <int D> struct v11_tiles : v9_cfg<D, 0> {};

template <typename T> struct v6_pack;
template <> struct v6_pack<__half> {
  static __device__ __forceinline__ uint32_t pack(float a, float b) {
    __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t *>(&h);
  }
};
template <> struct v6_pack<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t pack(float a, float b) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t *>(&h);
  }
};

#if V6_WGMMA
/* ---- sm_90a device code --------------------------------------------------------------------------- */

static __device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
/* cp.async writes are generic-proxy writes; wgmma reads through the async proxy. */
static __device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
static __device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
static __device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> static __device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* Pins a register at this point of the instruction stream: accumulators of an in-flight wgmma must not be
 * read (or moved) by the compiler before the wait that completes it. */
static __device__ __forceinline__ void pin(float &x) { asm volatile("" : "+f"(x)::"memory"); }

/* max of t[0..N) by halving (compile-time indices only: a run-time width put t in local memory) */
template <int N> static __device__ __forceinline__ float tree_max(float *t) {
#pragma unroll
  for (int n = 0; n < N / 2; ++n) t[n] = fmaxf(t[n], t[n + N / 2]);
  return tree_max<N / 2>(t);
}
template <> __device__ __forceinline__ float tree_max<1>(float *t) { return t[0]; }

static __device__ __forceinline__ float ex2f(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/* Shared-memory matrix descriptor: start address, leading and stride byte offsets (16-byte units), swizzle
 * mode in bits 62-63 (1 = 128 B, 2 = 64 B, 3 = 32 B). */
static __device__ __forceinline__ uint64_t wg_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo, int mode) {
  return (uint64_t)((saddr & 0x3FFFFu) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFFu) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFFu) << 32) | ((uint64_t)mode << 62);
}

/* Tile layout of ROWS rows x D elements in 16-byte chunks: rows of RB = min(D, 64) * 2 bytes in the
 * swizzle of that width (chunk c of row r at c ^ ((r * RB / 128) % (RB / 16)), i.e. the hardware's XOR of
 * address bits [7, 10) into [4, 7) for 128 B, [7, 9) into [4, 6) for 64 B, bit 7 into bit 4 for 32 B);
 * D = 128 is two such 64-column blocks one after the other. Element offset of chunk c of row r. */
template <int D, int ROWS> static __device__ __forceinline__ int v6_off(int r, int c) {
  constexpr int CB = (D < 64 ? D : 64) / 8; /* chunks per atom row */
  constexpr int RPL = 8 / CB;                /* rows per 128-byte line */
  const int kb = c / CB, cc = c % CB;
  return kb * ROWS * 64 + r * CB * 8 + ((cc ^ ((r / RPL) % CB)) << 3);
}
template <int D> struct v6_sw {
  enum {
    RB = (D < 64 ? D : 64) * 2,              /* bytes per atom row */
    MODE = D >= 64 ? 1 : D == 32 ? 2 : 3,    /* descriptor swizzle mode */
    SBO = 8 * RB                             /* 8-row group stride */
  };
};

/* Copy rows [r0, r0 + rows_valid) (zeros past rows_valid) into a ROWS-row tile at shared address s. */
template <typename T, int D, int ROWS, int NT>
static __device__ __forceinline__ void v6_load(uint32_t s, const T *g, int64_t row_stride, int64_t r0,
                                               int rows_valid, int tid) {
  constexpr int C = D / 8;
  static_assert((ROWS * C) % NT == 0, "every thread copies the same number of chunks");
#pragma unroll
  for (int i = 0; i < ROWS * C / NT; ++i) {
    const int idx = tid + i * NT, r = idx / C, c = idx % C;
    const bool ok = r < rows_valid;
    const T *src = g + (ok ? (r0 + r) * row_stride : 0) + c * 8;
    cp_async16(s + 2u * (uint32_t)v6_off<D, ROWS>(r, c), src, ok ? 16 : 0);
  }
}

template <typename T, int N> __device__ __forceinline__ void wg_ss(float *d, uint64_t da, uint64_t db, int scale_d);
template <typename T, int N>
__device__ __forceinline__ void wg_rs(float *d, const uint32_t *a, uint64_t db, int scale_d);

/* wgmma wrappers, m64nNk16 with fp32 accumulators d (N / 2 per thread): SS (A and B from shared memory,
 * K-major; descriptors da, db) and RS (A from registers a[0..3], B MN-major); scale_d = 0: d = A B, else
 * d += A B. One macro per shape, stamped for fp16 and bf16 (PT: the PTX type, their only difference). */
#define WG_D8(i)                                                                                                      \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]),         \
      "+f"(d[i + 7])
#define WG_D16(i) WG_D8(i), WG_D8(i + 8)
#define WG_D32(i) WG_D16(i), WG_D16(i + 16)
#define WG_D64 WG_D32(0), WG_D32(32)
#define WG_SS_64(TY, PT)                                                                                              \
  template <> __device__ __forceinline__ void wg_ss<TY, 64>(float *d, uint64_t da, uint64_t db, int scale_d) {        \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                         \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." PT "." PT " {"                                         \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                             \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"                     \
                 "}, %32, %33, p, 1, 1, 0, 0;\n}\n"                                                                   \
                 : WG_D32(0)                                                                                          \
                 : "l"(da), "l"(db), "r"(scale_d));                                                                   \
  }
#define WG_SS_128(TY, PT)                                                                                             \
  template <> __device__ __forceinline__ void wg_ss<TY, 128>(float *d, uint64_t da, uint64_t db, int scale_d) {       \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                         \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." PT "." PT " {"                                        \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                             \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                   \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                   \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"                     \
                 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"                                                                   \
                 : WG_D64                                                                                             \
                 : "l"(da), "l"(db), "r"(scale_d));                                                                   \
  }
#define WG_RS_16(TY, PT)                                                                                              \
  template <> __device__ __forceinline__ void wg_rs<TY, 16>(float *d, const uint32_t *a, uint64_t db, int scale_d) {  \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"                                                         \
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32." PT "." PT " {"                                         \
                 "%0, %1, %2, %3, %4, %5, %6, %7"                                                                     \
                 "}, {%8, %9, %10, %11}, %12, p, 1, 1, 1;\n}\n"                                                       \
                 : WG_D8(0)                                                                                           \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));                                \
  }
#define WG_RS_32(TY, PT)                                                                                              \
  template <> __device__ __forceinline__ void wg_rs<TY, 32>(float *d, const uint32_t *a, uint64_t db, int scale_d) {  \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"                                                         \
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32." PT "." PT " {"                                         \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"                               \
                 "}, {%16, %17, %18, %19}, %20, p, 1, 1, 1;\n}\n"                                                     \
                 : WG_D16(0)                                                                                          \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));                                \
  }
#define WG_RS_64(TY, PT)                                                                                              \
  template <> __device__ __forceinline__ void wg_rs<TY, 64>(float *d, const uint32_t *a, uint64_t db, int scale_d) {  \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                                         \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." PT "." PT " {"                                         \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                             \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"                     \
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"                                                     \
                 : WG_D32(0)                                                                                          \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));                                \
  }
#define WG_RS_128(TY, PT)                                                                                             \
  template <> __device__ __forceinline__ void wg_rs<TY, 128>(float *d, const uint32_t *a, uint64_t db, int scale_d) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                                         \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." PT "." PT " {"                                        \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                             \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                   \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                   \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"                     \
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"                                                     \
                 : WG_D64                                                                                             \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));                                \
  }
WG_SS_64(__half, "f16")
WG_SS_128(__half, "f16")
WG_RS_16(__half, "f16")
WG_RS_32(__half, "f16")
WG_RS_64(__half, "f16")
WG_RS_128(__half, "f16")
WG_SS_64(__nv_bfloat16, "bf16")
WG_SS_128(__nv_bfloat16, "bf16")
WG_RS_16(__nv_bfloat16, "bf16")
WG_RS_32(__nv_bfloat16, "bf16")
WG_RS_64(__nv_bfloat16, "bf16")
WG_RS_128(__nv_bfloat16, "bf16")
#undef WG_SS_64
#undef WG_SS_128
#undef WG_RS_16
#undef WG_RS_32
#undef WG_RS_64
#undef WG_RS_128
#undef WG_D64
#undef WG_D32
#undef WG_D16
#undef WG_D8

/* ---- one consumer warpgroup's tile arithmetic (v6 and v9) ---------------------------------------------
 * The register state of a thread of a 64-query-row warpgroup and the steps both kernels run on it, in the
 * same order; each kernel keeps only its own control around them (v6: the cp.async ring and __syncthreads;
 * v9: the "full"/"empty" mbarriers and the ping-pong). A thread holds two rows of the m64 accumulators
 * (lane / 4 and lane / 4 + 8 of its warp's 16) and per row a running max m (exp2 domain, scale folded in)
 * and a row sum l over its own columns (the quad's four are added at the end). Tile j: issue_next (S_j and
 * P_{j-1} V_{j-1}, two commit groups), softmax_next (waits for S_j only: the softmax runs while P V is on
 * the tensor cores), the kernel's fence, wait_pv, rescale_pack; tile 0 has no P V (issue_first,
 * finish_first) and the last P V follows the loop (issue_last, wait_pv).
 * The arrays are the kernel's locals, held here by reference as the kernels' lambdas once captured them:
 * arrays owned by a struct compile to the same instructions, but the phis of the loop are numbered in
 * another order, and the PTX is kept identical to the measured one. Only compile-time indices reach them,
 * so once inlined they live in registers. */
template <typename T, int D, int BM, int BN> struct v6_wg {
  static constexpr int KS = D / 16, NB = BN / 8, ND = D / 8;
  static constexpr uint32_t TBYTES = BN * D * 2; /* one K or V tile; ring slot i: K at sKV + 2 i TBYTES, V after */
  using sw = v6_sw<D>;
  float (&o)[ND][4];          /* O accumulator (m64nD) */
  float (&m)[2], (&l)[2];
  float (&s)[NB][4];          /* S, then P, of the current tile (m64nBN) */
  uint32_t (&pa)[BN / 16][4]; /* P of the previous tile as A fragments (m64k16 per 16 keys) */

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int n = 0; n < ND; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.f;
  }
  /* S = Q K^T of the tile in ring slot `slot` (qbase: this warpgroup's 64 Q rows; K-major k-steps of 16
   * elements = 32 bytes inside an atom row; the second 64-column block of D = 128 lies ROWS * 128 bytes
   * further) */
  __device__ __forceinline__ void issue_s(uint32_t qbase, uint32_t sKV, int slot) {
    const uint32_t kbase = sKV + 2u * (uint32_t)slot * TBYTES;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      const uint32_t koff = (uint32_t)(ks & 3) * 32u, kblk = (uint32_t)(ks >> 2) * 128u;
      const uint64_t da = wg_desc(qbase + kblk * BM + koff, 16, sw::SBO, sw::MODE);
      const uint64_t db = wg_desc(kbase + kblk * BN + koff, 16, sw::SBO, sw::MODE);
      wg_ss<T, BN>(&s[0][0], da, db, ks > 0);
    }
  }
  /* O += P V of the tile in `slot` (V MN-major: 16 keys = 16 atom rows per k-step; the 64-column blocks
   * of D = 128 BN * 128 bytes apart) */
  __device__ __forceinline__ void issue_pv(uint32_t sKV, int slot) {
    const uint32_t vbase = sKV + 2u * (uint32_t)slot * TBYTES + TBYTES;
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      const uint64_t db = wg_desc(vbase + (uint32_t)kk * 16u * sw::RB, BN * 128, sw::SBO, sw::MODE);
      wg_rs<T, D>(&o[0][0], pa[kk], db, 1);
    }
  }
  __device__ __forceinline__ void pin_s() {
#pragma unroll
    for (int n = 0; n < NB; ++n) pin(s[n][0]), pin(s[n][1]), pin(s[n][2]), pin(s[n][3]);
  }
  __device__ __forceinline__ void pin_o() {
#pragma unroll
    for (int n = 0; n < ND; ++n) pin(o[n][0]), pin(o[n][1]), pin(o[n][2]), pin(o[n][3]);
  }
  /* mask, online softmax in the exp2 domain (p overwrites s), new running max m and row sum l */
  __device__ __forceinline__ void softmax(int nvalid, float c_log2, int lane, float *alpha) {
    if (nvalid < BN) { /* partial tile at a bucket's end: masked keys (their K/V rows are zero-filled) */
#pragma unroll
      for (int n = 0; n < NB; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (n * 8 + 2 * (lane & 3) + (e & 1) >= nvalid) s[n][e] = -INFINITY;
    }
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      /* tree reductions: with 2 warps per scheduler a 2*NB-long dependent chain is not hidden */
      float t[NB];
#pragma unroll
      for (int n = 0; n < NB; ++n) t[n] = fmaxf(s[n][2 * hr], s[n][2 * hr + 1]);
      float x = tree_max<NB>(t);
      x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
      x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
      const float mnew = fmaxf(m[hr], x * c_log2);
      alpha[hr] = ex2f(m[hr] - mnew);
      m[hr] = mnew;
      const float nm = -mnew;
      float ps[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int n = 0; n < NB; ++n) {
        s[n][2 * hr] = ex2f(fmaf(s[n][2 * hr], c_log2, nm));
        s[n][2 * hr + 1] = ex2f(fmaf(s[n][2 * hr + 1], c_log2, nm));
        ps[n & 3] += s[n][2 * hr] + s[n][2 * hr + 1];
      }
      l[hr] = l[hr] * alpha[hr] + ((ps[0] + ps[1]) + (ps[2] + ps[3]));
    }
  }
  /* P as A fragments: the m64 accumulator rows of a thread are exactly its A-fragment rows */
  __device__ __forceinline__ void pack_p() {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      pa[kk][0] = v6_pack<T>::pack(s[2 * kk][0], s[2 * kk][1]);
      pa[kk][1] = v6_pack<T>::pack(s[2 * kk][2], s[2 * kk][3]);
      pa[kk][2] = v6_pack<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pa[kk][3] = v6_pack<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
    }
  }

  /* tile 0: S only (O is still zero: no P V, no rescale) */
  __device__ __forceinline__ void issue_first(uint32_t qbase, uint32_t sKV, int slot) {
    pin_s();
    wg_fence();
    issue_s(qbase, sKV, slot);
    wg_commit();
  }
  __device__ __forceinline__ void finish_first(const tile_walk &w, float c_log2, int lane, float *alpha) {
    wg_wait<0>();
    pin_s();
    softmax(walk_rows<BN>(w), c_log2, lane, alpha);
    pack_p();
  }
  /* tile j >= 1: S_j and P_{j-1} V_{j-1} issued together (one commit group each) */
  __device__ __forceinline__ void issue_next(uint32_t qbase, uint32_t sKV, int slot, int prev_slot) {
    pin_s();
    pin_o();
    wg_fence();
    issue_s(qbase, sKV, slot);
    wg_commit();
    issue_pv(sKV, prev_slot);
    wg_commit();
  }
  /* the wait for S_j only, and its softmax while P_{j-1} V_{j-1} runs (FA3's intra-warpgroup overlap);
   * w: the walk at tile j (the nvalid argument is read after the wait, as the PTX was measured) */
  __device__ __forceinline__ void softmax_next(const tile_walk &w, float c_log2, int lane, float *alpha) {
    wg_wait<1>();
    pin_s();
    softmax(walk_rows<BN>(w), c_log2, lane, alpha);
  }
  /* The row-sum fence, first half (the kernel adds the barrier of this warpgroup's 128 threads): ptxas
   * schedules a wgmma wait as early as it may (in the SASS of the plain loop it lands after the first max
   * shuffle, before every exp2) and sinks arithmetic below barriers. A shared store of the row sums (which
   * depend on every exp2 of the tile) to `addr` (a word of this thread's own), then the barrier, pins the
   * softmax above the P V wait, so it runs under P V. */
  __device__ __forceinline__ void fence_store(uint32_t addr) {
    asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(addr), "f"(l[0] + l[1]) : "memory");
  }
  /* the wait for every wgmma of this warpgroup (P V the last) */
  __device__ __forceinline__ void wait_pv() {
    wg_wait<0>();
    pin_o();
  }
  __device__ __forceinline__ void rescale_pack(const float *alpha) {
#pragma unroll
    for (int n = 0; n < ND; ++n) {
      o[n][0] *= alpha[0];
      o[n][1] *= alpha[0];
      o[n][2] *= alpha[1];
      o[n][3] *= alpha[1];
    }
    pack_p();
  }
  /* the last tile's P V (wait_pv follows) */
  __device__ __forceinline__ void issue_last(uint32_t sKV, int slot) {
    pin_o();
    wg_fence();
    issue_pv(sKV, slot);
    wg_commit();
  }
  /* finish: row sums across the quad, normalise, write O and LSE for the valid rows (qn from row0; w: the
   * warpgroup, wq: the warp in it) */
  __device__ __forceinline__ void store(const battn_params &p, int h, int64_t row0, int qn, int w, int wq,
                                        int lane) const {
    T *go = static_cast<T *>(p.o) + (int64_t)h * p.o_head_stride;
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float sum = l[hr];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = 1.f / sum;
      const int r = w * 64 + wq * 16 + (lane >> 2) + hr * 8;
      if (r < qn) {
        T *orow = go + (row0 + r) * p.o_row_stride;
#pragma unroll
        for (int n = 0; n < ND; ++n) {
          const uint32_t v = v6_pack<T>::pack(o[n][2 * hr] * inv, o[n][2 * hr + 1] * inv);
          *reinterpret_cast<uint32_t *>(orow + n * 8 + 2 * (lane & 3)) = v;
        }
        if (p.lse && (lane & 3) == 0)
          p.lse[(row0 + r) * p.heads + h] = (m[hr] + __log2f(sum)) * 0.69314718055994531f;
      }
    }
  }
};

template <typename T, int D, typename TR>
__global__ void __launch_bounds__(TR::NWG * 128, 1)
    battn_v6_kernel(const battn_params p, float c_log2, uint32_t tiles_per_bucket) {
  hx_pdl_wait();
  constexpr int NWG = TR::NWG, BN = TR::BN, ST = TR::STAGES;
  constexpr int NT = NWG * 128, BM = 64 * NWG;
  constexpr uint32_t QBYTES = BM * D * 2, TBYTES = BN * D * 2;
  using sw = v6_sw<D>;
  /* slots held back from the loads: tile j-1 (its P V runs while tile j is computed) and tile j */
  constexpr int LAG = 2;
  static_assert(ST >= LAG + 1, "at least one tile in flight");
  extern __shared__ uint4 smem_raw[];
  /* swizzle atoms repeat every 1024 bytes of address: align the tiles to that */
  const uint32_t s0 = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sQ = s0, sKV = s0 + QBYTES; /* slot i: K at sKV + 2 i TBYTES, V after it */
  const uint32_t sFence = sKV + 2u * ST * TBYTES; /* NT floats, written only to order the schedule */

  const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
  const int h = blockIdx.y;
  uint32_t flat = blockIdx.x;
  const uint32_t qtile = flat % tiles_per_bucket;
  flat /= tiles_per_bucket;
  const uint32_t K = p.buckets_per_scope;
  const uint32_t qslot = flat % K, scope = flat / K;
  const uint32_t qb = __ldg(p.scope + (size_t)scope * K + qslot);
  if (qb == BATTN_EMPTY) return;
  const uint32_t qcount = __ldg(p.bucket_count + qb);
  if (qtile * BM >= qcount) return; /* uniform over the CTA, before any barrier */
  const int64_t qrow0 = (int64_t)__ldg(p.bucket_start + qb) + qtile * BM;
  const int qn = (int)min((uint32_t)BM, qcount - qtile * BM);

  const T *gq = static_cast<const T *>(p.q) + (int64_t)h * p.q_head_stride;
  const T *gk = static_cast<const T *>(p.k) + (int64_t)h * p.k_head_stride;
  const T *gv = static_cast<const T *>(p.v) + (int64_t)h * p.v_head_stride;

  /* prologue: Q and tiles 0 .. ST-LAG-1 (one commit group per tile; Q rides in the first) */
  v6_load<T, D, BM, NT>(sQ, gq, p.q_row_stride, qrow0, qn, tid);
  tile_walk lw = {-1, 0, 0, 0}, cw;
  bool lhave = walk_next<BN>(p, scope, lw); /* true: the query bucket is in its own scope */
  cw = lw;
#pragma unroll
  for (int i = 0; i < ST - LAG; ++i) {
    if (lhave) {
      const int nv = walk_rows<BN>(lw);
      const uint32_t sk = sKV + 2u * i * TBYTES;
      v6_load<T, D, BN, NT>(sk, gk, p.k_row_stride, (int64_t)lw.start + lw.off, nv, tid);
      v6_load<T, D, BN, NT>(sk + TBYTES, gv, p.v_row_stride, (int64_t)lw.start + lw.off, nv, tid);
      lhave = walk_next<BN>(p, scope, lw);
    }
    cp_async_commit();
  }

  using wgs = v6_wg<T, D, BM, BN>;
  float o[wgs::ND][4], m[2], l[2], s[wgs::NB][4];
  uint32_t pa[BN / 16][4];
  wgs a = {o, m, l, s, pa};
  a.init();
  const uint32_t qbase = sQ + (uint32_t)wg * 64u * sw::RB;

  /* Top of tile j: its copies landed (own cp.async, proxy fence, barrier: everyone's), and everyone has
   * waited for the P V of tile j-LAG; so that tile's slot is free for tile j + ST - LAG. */
  auto tile_start = [&](int jj) {
    cp_async_wait<ST - LAG - 1>();
    fence_proxy_async();
    __syncthreads();
    if (lhave) {
      const int nv = walk_rows<BN>(lw);
      const uint32_t sk = sKV + 2u * (uint32_t)((jj + ST - LAG) % ST) * TBYTES;
      v6_load<T, D, BN, NT>(sk, gk, p.k_row_stride, (int64_t)lw.start + lw.off, nv, tid);
      v6_load<T, D, BN, NT>(sk + TBYTES, gv, p.v_row_stride, (int64_t)lw.start + lw.off, nv, tid);
      lhave = walk_next<BN>(p, scope, lw);
    }
    cp_async_commit();
  };

  /* tile 0: S, softmax, P */
  float alpha[2];
  tile_start(0);
  a.issue_first(qbase, sKV, 0);
  a.finish_first(cw, c_log2, lane, alpha);
  int prev_slot = 0;
  /* Tiles 1, 2, ...: S_j and P_{j-1} V_{j-1} issued together, the wait for S_j only, the softmax under
   * P V (FA3's intra-warpgroup overlap, kept in the SASS by the fence below), the wait for P V, the O
   * rescale and P_j. */
  for (int j = 1; walk_next<BN>(p, scope, cw); ++j) {
    tile_start(j);
    const int slot = j % ST;
    a.issue_next(qbase, sKV, slot, prev_slot);
    a.softmax_next(cw, c_log2, lane, alpha);
    if (TR::FENCE) { /* the row-sum fence (v6_wg::fence_store): named barrier 1 + wg */
      a.fence_store(sFence + 4u * (uint32_t)tid);
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
    }
    a.wait_pv();
    a.rescale_pack(alpha);
    prev_slot = slot;
  }
  /* the last tile's P V (its slot is not overwritten: no loads are left) */
  a.issue_last(sKV, prev_slot);
  a.wait_pv();
  a.store(p, h, qrow0, qn, wg, wq, lane);
}

/* The producer's copy of rows [0, rows_valid) of a ROWS-row tile (zeros past rows_valid) from g (row 0)
 * into shared address s, by 128 threads. Same layout as v6_load, but each thread keeps one chunk column c
 * and steps by RSTEP rows: both the global address (RSTEP row strides) and the swizzled shared offset
 * (RSTEP rows: the XOR term depends on r / RPL mod CB, unchanged by the step) advance by constants, so a
 * copy costs a 64-bit add and a compare instead of v6_load's index arithmetic, which at setmaxnreg 24
 * spilled (ptxas hoists the per-chunk row offsets out of the tile loop). NSRC = 2: K (g0) and V (g1)
 * tiles in one loop, sharing the row tests, the V tile TB bytes after the K tile. */
template <typename T, int D, int ROWS, int NSRC>
static __device__ __forceinline__ void v9_load(uint32_t s, const T *g0, int64_t stride0, const T *g1,
                                               int64_t stride1, int rows_valid, int tid) {
  constexpr int C = D / 8, RSTEP = 128 / C, CB = (D < 64 ? D : 64) / 8, RPL = 8 / CB;
  constexpr uint32_t TB = ROWS * D * 2; /* the second tile (V) right after the first (K) */
  static_assert(ROWS % RSTEP == 0 && (RSTEP / RPL) % CB == 0, "the swizzle is invariant under the row step");
  const int r0 = tid / C, c = tid % C;
  const int lim = rows_valid - r0; /* row r0 + i RSTEP is valid iff i RSTEP < lim: an immediate compare */
  const uint32_t d0 = s + 2u * (uint32_t)v6_off<D, ROWS>(r0, c);
  const T *src0 = g0 + r0 * stride0 + c * 8;
  const T *src1 = NSRC > 1 ? g1 + r0 * stride1 + c * 8 : g0;
#pragma unroll
  for (int i = 0; i < ROWS / RSTEP; ++i) {
    const bool ok = i * RSTEP < lim;
    const uint32_t d = d0 + (uint32_t)(i * RSTEP * CB * 16);
    cp_async16(d, ok ? (const void *)src0 : (const void *)g0, ok ? 16 : 0);
    src0 += RSTEP * stride0;
    if (NSRC > 1) {
      cp_async16(d + TB, ok ? (const void *)src1 : (const void *)g1, ok ? 16 : 0);
      src1 += RSTEP * stride1;
    }
  }
}

/* ---- v9: warp-specialised (FlashAttention-3 style) ---------------------------------------------------
 * 3 warpgroups: warpgroup 0 is the producer (setmaxnreg down), warpgroups 1 and 2 the consumers (64 query
 * rows each, setmaxnreg up). The producer copies Q and the K/V tiles with cp.async (zero fill past a
 * bucket's count, the swizzled layouts of v6) and hands each slot over with cp.async.mbarrier.arrive.noinc
 * on the slot's "full" mbarrier (128 arrivals: one per producer thread, each firing once all of that
 * thread's earlier copies have landed). Consumers wait on "full", compute as v6 does, and after the wgmma
 * wait that retires the slot's last reader (P V of that tile) one lane per consumer warp arrives on the
 * slot's "empty" mbarrier (8 arrivals); the producer waits on "empty" before refilling. There is no
 * CTA-wide barrier after the set-up, so the two consumer warpgroups may drift apart by up to the ring.
 * PP: FA3's ping-pong. Named barrier 3 + w means "consumer w may issue its wgmmas"; each consumer waits on
 * its own before issuing and arrives on the other's after, so the tensor work of one runs under the
 * other's softmax.
 *
 * Ring protocol (tile t in slot t % ST, use u = t / ST of that slot): "full" completes phase u when the
 * 128 copies of tile t have landed, so the consumer waits for parity u & 1. "empty" completes phase u when
 * both consumers have retired tile t; the producer fills tile t after waiting for parity (u & 1) ^ 1, i.e.
 * for the phase of tile t - ST (for u = 0 the parity-1 wait returns at once: the "previous" phase of a
 * fresh mbarrier counts as complete). The producer and consumers walk the same tile list (walk_next on the
 * same scope), so every tile is filled once and consumed once by each consumer. */

static __device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
/* Blocks until the phase of parity `parity` of the mbarrier has completed (acquire, CTA scope). */
static __device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile("{\n.reg .pred P1;\nV9_WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
               "@P1 bra V9_DONE;\nbra V9_WAIT;\nV9_DONE:\n}\n" ::"r"(bar),
               "r"(parity)
               : "memory");
}
static __device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/* one arrival on `bar` once every earlier cp.async of this thread has completed (counted in the init) */
static __device__ __forceinline__ void cp_async_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
static __device__ __forceinline__ void named_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
static __device__ __forceinline__ void named_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
template <int N> static __device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> static __device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <typename T, int D, typename TR>
__global__ void __launch_bounds__((TR::NWG + 1) * 128, 1)
    battn_v9_kernel(const battn_params p, float c_log2, uint32_t tiles_per_bucket) {
  hx_pdl_wait();
  constexpr int NWG = TR::NWG, BN = TR::BN, ST = TR::STAGES;
  constexpr int NC = NWG * 128, BM = 64 * NWG;
  constexpr uint32_t QBYTES = BM * D * 2, TBYTES = BN * D * 2;
  using sw = v6_sw<D>;
  static_assert(ST >= 3, "consumers hold two slots (tiles j-1 and j); at least one more for the producer");
  extern __shared__ uint4 smem_raw[];
  const uint32_t s0 = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sQ = s0, sKV = s0 + QBYTES;
  const uint32_t sFence = sKV + 2u * ST * TBYTES; /* NC floats */
  const uint32_t sFull = sFence + 4u * NC, sEmpty = sFull + 8u * ST; /* ST mbarriers each */

  const int tid = threadIdx.x, wg = tid >> 7;
  const int h = blockIdx.y;
  uint32_t flat = blockIdx.x;
  const uint32_t qtile = flat % tiles_per_bucket;
  flat /= tiles_per_bucket;
  const uint32_t K = p.buckets_per_scope;
  const uint32_t qslot = flat % K, scope = flat / K;
  const uint32_t qb = __ldg(p.scope + (size_t)scope * K + qslot);
  if (qb == BATTN_EMPTY) return;
  const uint32_t qcount = __ldg(p.bucket_count + qb);
  if (qtile * BM >= qcount) return; /* uniform over the CTA, before any barrier */
  const int64_t qrow0 = (int64_t)__ldg(p.bucket_start + qb) + qtile * BM;
  const int qn = (int)min((uint32_t)BM, qcount - qtile * BM);

  if (tid == 0) {
#pragma unroll
    for (int i = 0; i < ST; ++i) {
      mbar_init(sFull + 8u * i, 128);        /* one cp.async arrival per producer thread */
      mbar_init(sEmpty + 8u * i, NWG * 4);   /* one arrival per consumer warp */
    }
  }
  /* the inits visible to every thread (and to the async arrivals) before anyone uses the mbarriers; the
   * last CTA-wide barrier of the kernel */
  __syncthreads();

  if (wg == 0) {
    /* ---- producer warpgroup ---- */
    setmaxnreg_dec<TR::PREG>();
    const T *gq = static_cast<const T *>(p.q) + (int64_t)h * p.q_head_stride;
    const T *gk = static_cast<const T *>(p.k) + (int64_t)h * p.k_head_stride;
    const T *gv = static_cast<const T *>(p.v) + (int64_t)h * p.v_head_stride;
    /* Q rides with tile 0: the first "full" arrival of each thread also covers its Q copies */
    v9_load<T, D, BM, 1>(sQ, gq + qrow0 * p.q_row_stride, p.q_row_stride, gq, 0, qn, tid);
    tile_walk lw = {-1, 0, 0, 0};
    int slot = 0;
    uint32_t ph = 0; /* parity of the current use of `slot` */
#pragma unroll 1 /* one copy of the body: at setmaxnreg 24 (D = 128) an unrolled ring spilled */
    for (bool have = walk_next<BN>(p, scope, lw); have; have = walk_next<BN>(p, scope, lw)) {
      mbar_wait(sEmpty + 8u * slot, ph ^ 1u); /* consumers have retired the slot's previous tile */
      const int nv = walk_rows<BN>(lw);
      const uint32_t sk = sKV + 2u * (uint32_t)slot * TBYTES;
      const int64_t r = (int64_t)lw.start + lw.off;
      v9_load<T, D, BN, 2>(sk, gk + r * p.k_row_stride, p.k_row_stride, gv + r * p.v_row_stride, p.v_row_stride,
                           nv, tid);
      cp_async_arrive_noinc(sFull + 8u * slot);
      if (++slot == ST) slot = 0, ph ^= 1u;
    }
    /* leave no copy of this thread in flight when it exits (the consumers still wait on their "full") */
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    return;
  }

  /* ---- consumer warpgroups 1 .. NWG ---- */
  setmaxnreg_inc<TR::CREG>();
  const int cwg = wg - 1, ctid = tid - 128, lane = tid & 31, wq = (tid >> 5) & 3;
  const int pp_own = 3 + cwg, pp_other = 3 + (cwg ^ 1);


  using wgs = v6_wg<T, D, BM, BN>;
  float o[wgs::ND][4], m[2], l[2], s[wgs::NB][4];
  uint32_t pa[BN / 16][4];
  wgs a = {o, m, l, s, pa};
  a.init();
  const uint32_t qbase = sQ + (uint32_t)cwg * 64u * sw::RB;

  /* tile landed: its "full" phase; then the proxy fence (cp.async writes are generic-proxy writes, wgmma
   * reads through the async proxy) */
  auto wait_full = [&](int slot_, uint32_t ph_) {
    mbar_wait(sFull + 8u * (uint32_t)slot_, ph_);
    fence_proxy_async();
  };
  /* the slot's last reader (this warpgroup's P V of it) has completed: one arrival per warp */
  auto release = [&](int slot_) {
    if (lane == 0) mbar_arrive(sEmpty + 8u * (uint32_t)slot_);
  };
  /* ping-pong: wait for our turn to issue wgmmas; after issuing, hand the turn to the other consumer.
   * Consumer 1 grants consumer 0 the first turn. Both issue the same number of times (tile 0, tiles 1..n-1,
   * the final P V); consumer 1 skips its last grant so that no arrival is left pending at exit. */
  if (TR::PING && cwg == 1) named_arrive(pp_other, 2 * 128); /* consumer 0's first turn */

  tile_walk cw = {-1, 0, 0, 0};
  walk_next<BN>(p, scope, cw); /* true: the query bucket is in its own scope */
  int slot = 0;
  uint32_t ph = 0;
  float alpha[2];
  /* tile 0: S, softmax, P */
  wait_full(slot, ph);
  if (TR::PING) named_sync(pp_own, 2 * 128);
  a.issue_first(qbase, sKV, slot);
  if (TR::PING) named_arrive(pp_other, 2 * 128);
  a.finish_first(cw, c_log2, lane, alpha);
  int prev_slot = slot;
  if (++slot == ST) slot = 0, ph ^= 1u;
  while (walk_next<BN>(p, scope, cw)) {
    wait_full(slot, ph);
    if (TR::PING) named_sync(pp_own, 2 * 128);
    a.issue_next(qbase, sKV, slot, prev_slot);
    if (TR::PING) named_arrive(pp_other, 2 * 128);
    a.softmax_next(cw, c_log2, lane, alpha);
    /* v6's row-sum fence (v6_wg::fence_store): named barrier 1 + consumer */
    a.fence_store(sFence + 4u * (uint32_t)ctid);
    named_sync(1 + cwg, 128);
    a.wait_pv();
    release(prev_slot); /* S of this tile and P V of the previous one are done: the previous slot is free */
    a.rescale_pack(alpha);
    prev_slot = slot;
    if (++slot == ST) slot = 0, ph ^= 1u;
  }
  /* the last tile's P V; its slot is not released: the producer has nothing left to load */
  if (TR::PING) named_sync(pp_own, 2 * 128);
  a.issue_last(sKV, prev_slot);
  if (TR::PING && cwg == 0) named_arrive(pp_other, 2 * 128);
  a.wait_pv();
  a.store(p, h, qrow0, qn, cwg, wq, lane);
}

#else /* not sm_90a: the kernel exists (the launcher is compiled for every image) but does nothing */

template <typename T, int D, typename TR>
__global__ void __launch_bounds__(TR::NWG * 128, 1)
    battn_v6_kernel(const battn_params p, float c_log2, uint32_t tiles_per_bucket) {
  hx_pdl_wait();
  (void)p, (void)c_log2, (void)tiles_per_bucket;
}

template <typename T, int D, typename TR>
__global__ void __launch_bounds__((TR::NWG + 1) * 128, 1)
    battn_v9_kernel(const battn_params p, float c_log2, uint32_t tiles_per_bucket) {
  hx_pdl_wait();
  (void)p, (void)c_log2, (void)tiles_per_bucket;
}

#endif /* V6_WGMMA */

/* ---- host side ------------------------------------------------------------------------------------- */

/* Writes 1 when the image running it was compiled for sm_90a (the feature macro), else 0. */
static __global__ void battn_v6_probe(int *out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

/* Whether this device runs v6's sm_90a image: compute capability 9.0 and the probe says so. The one
 * mutable state of this file, and why: the probe is a launch plus a synchronous copy; run per call it
 * would serialise every timed launch on the host. The answer is fixed per device and process, so it is
 * cached per thread and device (0 = not probed, 1 = yes, 2 = no), like v0's cuBLAS handle in attn.cu. */
static hx_status v6_supported(hx_err *err) {
  static thread_local signed char cache[64];
  int dev = 0;
  V6_CUDA(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64) return hx_errf(err, HX_EUNSUPPORTED, "attention v6: device %d out of range", dev);
  if (!cache[dev]) {
    int major = 0, minor = 0;
    V6_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    V6_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    int ok = 0;
    if (major == 9 && minor == 0) {
      int *d_flag = NULL;
      V6_CUDA(cudaMalloc((void **)&d_flag, sizeof(int)));
      battn_v6_probe<<<1, 1>>>(d_flag);
      cudaError_t e = cudaGetLastError();
      if (e == cudaSuccess) e = cudaMemcpy(&ok, d_flag, sizeof ok, cudaMemcpyDeviceToHost);
      cudaFree(d_flag);
      if (e != cudaSuccess)
        return hx_errf(err, HX_ECUDA, "attention v6: sm_90a probe: %s", cudaGetErrorString(e));
    }
    cache[dev] = ok == 1 ? 1 : 2;
    if (ok != 1)
      return hx_errf(err, HX_EUNSUPPORTED,
                     "attention v6: needs an sm_90a image on a compute capability 9.0 device (this is %d.%d%s)",
                     major, minor, major == 9 && minor == 0 ? ", but the loaded image is not sm_90a" : "");
  }
  if (cache[dev] != 1)
    return hx_errf(err, HX_EUNSUPPORTED, "attention v6: needs an sm_90a image on a compute capability 9.0 device");
  return HX_OK;
}

/* One launcher for both kernels. WS = 0: v6's kernel, NWG warpgroups; shared memory: 1 KB of alignment
 * slack, Q, the K/V ring and the fence floats. WS = 1: v9's, (NWG + 1) warpgroups; shared memory as v6's
 * plus 2 x STAGES mbarriers (D = 128: 231472 of the 232448 bytes a block may have). */
template <typename T, int D, typename TR, bool WS>
static hx_status wg_launch(const battn_params *p, cudaStream_t stream, hx_err *err) {
  constexpr int BM = 64 * TR::NWG;
  const char *name = WS ? "attention v9" : "attention v6";
  const size_t smem = 1024 + (size_t)BM * D * 2 + (size_t)TR::STAGES * 2 * TR::BN * D * 2 +
                      (size_t)TR::NWG * 128 * 4 + (WS ? (size_t)TR::STAGES * 2 * 8 : 0);
  const uint32_t tpb = (p->max_bucket_rows + BM - 1) / BM;
  const uint64_t nx = (uint64_t)p->num_scopes * p->buckets_per_scope * tpb;
  if (nx == 0) return HX_OK;
  if (nx > 0x7FFFFFFFull)
    return hx_errf(err, HX_EINVAL, "%s: grid of %llu tiles too large", name, (unsigned long long)nx);
  void (*kern)(const battn_params, float, uint32_t);
  if constexpr (WS)
    kern = battn_v9_kernel<T, D, TR>;
  else
    kern = battn_v6_kernel<T, D, TR>;
  V6_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  const float c = p->scale * 1.4426950408889634f;
  hx_launch(kern, dim3((unsigned)nx, (unsigned)p->heads), (TR::NWG + (WS ? 1 : 0)) * 128, smem, stream, *p, c, tpb);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return hx_errf(err, HX_ECUDA, "%s: launch: %s", name, cudaGetErrorString(e));
  return HX_OK;
}

template <template <int> class TILES, bool WS>
static hx_status wg_run(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream, hx_err *err) {
  HX_TRY(battn_validate(p, NULL, err));
  HX_TRY(v6_supported(err));
  if (!d_scratch && scratch_bytes) {
    *scratch_bytes = 0;
    return HX_OK;
  }
  cudaStream_t st = (cudaStream_t)stream;
  typedef __half H;
  typedef __nv_bfloat16 B;
  const bool f16 = p->dtype == BATTN_F16;
  switch (p->head_dim) {
  case 16: return f16 ? wg_launch<H, 16, TILES<16>, WS>(p, st, err) : wg_launch<B, 16, TILES<16>, WS>(p, st, err);
  case 32: return f16 ? wg_launch<H, 32, TILES<32>, WS>(p, st, err) : wg_launch<B, 32, TILES<32>, WS>(p, st, err);
  case 64: return f16 ? wg_launch<H, 64, TILES<64>, WS>(p, st, err) : wg_launch<B, 64, TILES<64>, WS>(p, st, err);
  default:
    return f16 ? wg_launch<H, 128, TILES<128>, WS>(p, st, err) : wg_launch<B, 128, TILES<128>, WS>(p, st, err);
  }
}

/* v6: the wgmma kernel where it wins (D = 64, 128); v5's mma.sync kernels at D = 16 and 32, where the
 * softmax, not the tensor cores, sets the pace and v5's 12 warps/SM beat 8 (docs/attention.md). */
extern "C" hx_status battn_v6_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                                 hx_err *err) {
  if (p && p->head_dim <= 32) {
    HX_TRY(v6_supported(err)); /* one contract for the whole variant: sm_90a or nothing */
    return battn_v5_fn(p, d_scratch, scratch_bytes, stream, err);
  }
  return wg_run<v6_tiles, false>(p, d_scratch, scratch_bytes, stream, err);
}
extern "C" hx_status battn_v7_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                                 hx_err *err) {
  return wg_run<v7_tiles, false>(p, d_scratch, scratch_bytes, stream, err);
}
extern "C" hx_status battn_v8_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                                 hx_err *err) {
  return wg_run<v6_tiles, false>(p, d_scratch, scratch_bytes, stream, err);
}
/* v9: the warp-specialised kernel (producer warpgroup, mbarrier ring, ping-pong) at D = 32, 64, 128; v24's
 * mma.sync kernel at D = 16, where 16 warps of mma.sync per SM keep more exponentials in flight than the two
 * consumer warpgroups do (H200, 2026-11-22, scope 4096 fp16: D = 16 v5 142 vs v10 128 TFLOP/s; D = 32
 * v5 207 vs v10 255; v23 at D = 16 2026-11-29: 162.1 against v5's 154.7). */
extern "C" hx_status battn_v9_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                                 hx_err *err) {
  if (p && p->head_dim <= 16) {
    HX_TRY(v6_supported(err));
    return battn_v24_fn(p, d_scratch, scratch_bytes, stream, err);
  }
  return wg_run<v9_tiles, true>(p, d_scratch, scratch_bytes, stream, err);
}
/* v10: v9's kernel at every head dim; v11: v9's kernel without the ping-pong, every head dim (ablations) */
extern "C" hx_status battn_v10_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                                  hx_err *err) {
  return wg_run<v9_tiles, true>(p, d_scratch, scratch_bytes, stream, err);
}
extern "C" hx_status battn_v11_fn(const battn_params *p, void *d_scratch, size_t *scratch_bytes, void *stream,
                                  hx_err *err) {
  return wg_run<v11_tiles, true>(p, d_scratch, scratch_bytes, stream, err);
}
