/*
 * mlp_wgmma.cu - nl_mlp_gpu and nl_ln_mlp_gpu on the wider rows, hidden 4C: PTv3's GELU MLP at C = 128 and 256,
 * Flash3D's SwiGLU MLP (fc1 8C wide: act | gate) at C = 96, 128, 160 and 192: the whole MLP as one
 * warp-specialised Hopper kernel, the hidden row on chip; sm_90a only. Reference: nl_mlp_cpu and nl_ln_mlp_cpu
 * (layers.c); the host entries and their argument checks are mlp.cu's, which calls nl_mlp_wg_launch here.
 *
 * Why (docs/nets.md, "What bounds PTv3's ratio"; docs/layers.md, "What bounds Flash3D's MLP"): at these widths
 * the unfused path is cuBLASLt's fc1 (+ GELU) and fc2 with the hidden row through DRAM (SwiGLU: fc1's 8C row, a
 * SwiGLU pass, its 4C row), at 46% of the cuBLAS rate over PTv3's 12 blocks; mlp.cu's mma.sync kernel keeps the
 * weights in shared memory, which at C >= 96 (221 KB for SwiGLU at 96, 1 MB for GELU at 256) they do not fit.
 *
 * Design: FlashAttention's back-to-back shape, persistent CTAs (one an SM) walking tiles of 64 NC rows of x (NC
 * consumer warpgroups: 3 at GELU's C = 128, else 2, by the registers), NC + 1 warpgroups; each CTA
 * a contiguous range of tiles, or of (tile, chunk) units where a tile's chunks split between two CTAs (Stream-K,
 * below). Warpgroup 0 (the producer; one thread) streams the weights through a ring of SLOTS slots by TMA, per tile
 * (or segment of one) in the order W1 chunk j (SwiGLU: its act rows, then its gate rows), W2 chunk j, W1 chunk j +
 * 1, ...: W1 chunk j is fc1's hidden rows [64 j, 64 j + 64) (the gate's: H further) ([64][C], ceil(C / 64) boxes of
 * 64 x 64, zero-filled past C), W2 chunk j is fc2's columns [64 j, 64 j + 64) ([C][64], one box), each K-major in
 * the 128-byte swizzle; every tile streams the same weights (1 MB at C = 256), from L2. The consumers (warpgroups
 * 1 .. NC) own 64 rows of each tile each: they copy them into the swizzled x tile by cp.async (with LN, normalise
 * them there: fp32 statistics per row over a warp, the row rounded to the dtype as the unfused path stores it), then
 * per chunk j: S = x W1_j^T (m64n64, A and B from shared memory; SwiGLU a second, S2, of the gate rows), + b1, the
 * activation (GELU's tanh form, cuBLASLt's epilogue's; SwiGLU's silu(S + b1) (S2 + b1'), silu on the hardware tanh
 * as mlp.cu's), rounded to the dtype and repacked in registers as the A operand of O += act W2_j^T (m64nC, A from
 * registers; the accumulator layout of two n8 blocks is the A fragment's). The loop issues S_{j+1} before O_j, then
 * waits for S_{j+1} alone (wgmma.wait_group 1): the activation of chunk j + 1 runs while O_j is on the tensor cores.
 * Once a tile's last S is done, the warpgroup's rows of its next tile are copied into the x tile under the last O
 * and the epilogue, which adds b2 and the residual (y's values, loaded under the last O) and rounds once.
 * Measured (docs/layers.md, "The MLP at C = 128 and 256"): latency-bound, the tensor pipe busy a third of the time;
 * the persistence and the third consumer at C = 128 each took 7% off its time there; Stream-K 11% at C = 256.
 * Ring protocol (as v6's, spconv_wgmma.cu): item i uses slot i % SLOTS for the u = i / SLOTS-th time; "full"
 * completes phase u when the TMA's bytes have landed (one arrival: the producer's expect_tx of the whole boxes),
 * "empty" when all 4 NC consumer warps have retired the wgmmas reading it (one lane each). A consumer releases
 * W1_{j+1}'s slots before W2_j's: every slot has its own barrier, and the producer refills in item order.
 * Registers a consumer thread: O C / 2 (128 at C = 256), S 32 (SwiGLU 64), its A fragments 16, under setmaxnreg
 * (Cfg). Invariant: each y value is (y + the sum over the hidden chunks in increasing j, k16 by k16) + b2 in fp32,
 * rounded once: runs agree bit for bit.
 */
#include "nets/nets.h"
#include "nets/spconv_device.cuh"
#include "nets/wgmma_device.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

namespace nl_mlp_wg {

constexpr int kSmemMax = 227 * 1024; /* sm_90: a CTA's dynamic shared memory */

template <int C_, bool SW_> struct Cfg {
  /* NC consumer warpgroups of 64 rows: three at GELU's C = 128, where a consumer needs ~150 registers, else two
   * (SwiGLU's two S spilled 156-200 bytes at C = 96 under three consumers' 160; ptxas) */
  static constexpr bool SW = SW_;
  static constexpr int NC = !SW && C_ == 128 ? 3 : 2, THREADS = 128 * (NC + 1);
  static constexpr int C = C_, H = 4 * C, NJ = H / 64, KB = (C + 63) / 64, BM = 64 * NC;
  /* ring items a hidden chunk: W1's rows of it (SwiGLU: its act rows, then its gate rows H further), then W2's */
  static constexpr int NI = SW ? 3 : 2;
  static constexpr int X_BYTES = BM * KB * 128;    /* KB blocks of [BM][128 B], past C unused */
  static constexpr int W1_BYTES = 64 * KB * 128;   /* a W1 item [64][KB 64], past C zero-filled by the TMA */
  static constexpr int W2_BYTES = C * 128;         /* a W2 item [C][64] */
  static constexpr int SLOT = W1_BYTES;            /* >= W2_BYTES */
  static constexpr int NB1 = SW ? 2 * H : H;       /* b1's values */
  static constexpr int TAIL = (NB1 + 3 * C) * 4 + 2 * 8 * 8; /* b1, b2, gamma, beta (fp32); the mbarriers */
  static constexpr int FIT = (kSmemMax - 1024 - X_BYTES - TAIL) / SLOT;
  static constexpr int SLOTS = FIT > 8 ? 8 : FIT;
  static constexpr size_t SMEM = 1024 + (size_t)X_BYTES + (size_t)SLOTS * SLOT + TAIL;
  /* setmaxnreg: the allocation at entry under __launch_bounds__(THREADS, 1) is 65536 / THREADS (168 at 384 threads,
   * 128 at 512); the producer's release covers the consumers' increase: 128 x 24 + 256 x 240 = 384 x 168, 128 x 24 +
   * 384 x 160 = 512 x 126 (< 128) */
  static constexpr int PREG = 24, CREG = NC == 3 ? 160 : 240;
  static_assert(C % 16 == 0 && C <= 256, "O is m64nC: C / 2 accumulators a thread, N <= 256; whole 16-byte chunk pairs");
  static_assert(SLOTS >= 2 && SLOTS <= 8, "W1_{j+1} and W2_j in the ring at once; TAIL's room for 8 slots");
  static_assert(SMEM <= (size_t)kSmemMax, "within a CTA's shared memory");
};

struct Params {
  uint16_t *y;         /* [rows, C]: the residual, updated in place */
  const uint16_t *x;   /* [rows, C]: the MLP's input (y itself with LN) */
  const uint16_t *b1;  /* [H] or NULL */
  const uint16_t *b2;  /* [C] or NULL */
  const float *g, *bt; /* LN's gamma and beta [C] (LN only) */
  float eps;
  uint32_t rows;
  float4 *part;    /* [grid][NC][C / 8][128]: the fp32 O of a tile's first chunks (split tiles only) */
  uint32_t *ready; /* [grid][NC]: 1 once that CTA's consumer has stored its part (zeroed before the launch) */
  uint32_t split;  /* 1: ranges of chunk pairs (Stream-K); 0: of whole tiles */
};

/* Stream-K over (tile, chunk) units: the units, tile-major, are cut into gridDim contiguous ranges of whole chunk
 * pairs, so every CTA does the same work to within a pair (tiles alone, ceil(tiles / SMs) rounds of them, left
 * 26% of the SMs idle at C = 256 on 52k rows: 405 tiles on 132 SMs run as 4 rounds). A segment costs about two
 * chunks beyond its chunks (the LayerNorm, the first S, the epilogue), so the split is taken only where the last
 * round of whole tiles would be at most half full (plan_of); else the ranges are of whole tiles. With tiles >=
 * gridDim every range holds at least a tile's chunks, so a range splits at most its first tile (whose first
 * chunks end the previous range) and its last. A CTA walks its range as segments: the last tile's first chunks
 * first (PUBLISH: O stored to part[cta], ready[cta] set), then its whole tiles, then the first tile's remaining
 * chunks (FINISH: O starts from part[cta - 1], waited for on ready[cta - 1], and the epilogue runs). The
 * accumulation order is the unsplit one (chunks in increasing j into one fp32 O), so every split gives the same
 * bits. A FINISH waits only on the previous CTA's first segment, which waits on nothing: the waits form no cycle,
 * and they end as long as CTA b - 1 starts no later than CTA b (the hardware starts a grid's CTAs in index order;
 * CUDA does not promise it). */
enum { SEG_FULL = 0, SEG_PUBLISH = 1, SEG_FINISH = 2 };
struct Seg {
  uint32_t tile;
  int j0, j1, kind; /* chunks [j0, j1) of the tile, an even count >= 2 */
};
struct Range {
  uint32_t t_first, t_last; /* the tiles of the range's first and last units; t_last's first k_last chunks */
  int k_first, k_last, nseg;
};
__host__ __device__ inline Range range_of(uint32_t cta, uint32_t grid, uint32_t tiles, int nj, bool split) {
  const uint64_t g = split ? 2u : (uint64_t)nj, units = (uint64_t)tiles * (uint64_t)nj / g; /* pairs or tiles */
  const uint64_t u0 = g * (cta * units / grid), u1 = g * ((cta + 1u) * units / grid);
  Range r;
  r.t_first = (uint32_t)(u0 / (uint64_t)nj), r.k_first = (int)(u0 % (uint64_t)nj);
  r.t_last = (uint32_t)(u1 / (uint64_t)nj), r.k_last = (int)(u1 % (uint64_t)nj);
  const uint32_t whole0 = r.t_first + (r.k_first > 0 ? 1u : 0u);
  r.nseg = (r.k_last > 0) + (int)(r.t_last - whole0) + (r.k_first > 0);
  return r;
}
__host__ __device__ inline Seg seg_of(const Range &r, int s, int nj) {
  if (r.k_last > 0) {
    if (s == 0) return Seg{r.t_last, 0, r.k_last, SEG_PUBLISH};
    --s;
  }
  const uint32_t whole0 = r.t_first + (r.k_first > 0 ? 1u : 0u);
  if ((uint32_t)s < r.t_last - whole0) return Seg{whole0 + (uint32_t)s, 0, nj, SEG_FULL};
  return Seg{r.t_first, r.k_first, nj, SEG_FINISH};
}

using spc_dev::cp_async_cg;
using spc_dev::cp_async_commit;
using spc_dev::cp_async_wait;
using spc_dev::gelu_tanh;
using spc_dev::pack2;
using spc_dev::smem_addr;
using spc_dev::swiglu;
using spc_dev::swz;
using spc_dev::unpack2;

#if NWG_ON
using namespace nwg;

/* GELU's tanh form of the pair (a, b) rounded to half2 once, in half2 arithmetic, 0.5 x (1 + tanh(x (0.79788456 +
 * 0.035677408 x^2))) on tanh.approx.f16x2, in two parts: gelu_h2_parts gives hx = 0.5 x and th = tanh(...),
 * gelu_h2_join hx th + hx. The join is the A fragment's definition after O_j is done: a plain copy there, ptxas
 * made the fragment and the GELU's result one register and serialised every wgmma (C7513). The rounding saturates
 * (|x| <= 65504: an infinite x would give inf - inf at -inf), and |x| >= 256 overflows x^2 to inf, which gives
 * tanh = +-1: x or 0; NaN only from NaN. */
__device__ __forceinline__ void gelu_h2_parts(float a, float b, uint32_t &hx, uint32_t &th) {
  uint32_t xb; /* (a, b) as (low, high): cvt's first source is the high half */
  asm("cvt.rn.satfinite.f16x2.f32 %0, %1, %2;\n" : "=r"(xb) : "f"(b), "f"(a));
  const __half2 x = *reinterpret_cast<const __half2 *>(&xb);
  const __half2 t =
      __hfma2(__hmul2(x, x), __float2half2_rn(0.0356774081363001f), __float2half2_rn(0.7978845608028654f));
  const __half2 u = __hmul2(x, t), h = __hmul2(x, __float2half2_rn(0.5f));
  asm("tanh.approx.f16x2 %0, %1;\n" : "=r"(th) : "r"(*reinterpret_cast<const uint32_t *>(&u)));
  hx = *reinterpret_cast<const uint32_t *>(&h);
}
__device__ __forceinline__ uint32_t gelu_h2_join(uint32_t hx, uint32_t th) {
  const __half2 h = *reinterpret_cast<const __half2 *>(&hx), t = *reinterpret_cast<const __half2 *>(&th);
  const __half2 r = __hfma2(h, t, h);
  return *reinterpret_cast<const uint32_t *>(&r);
}

__device__ __forceinline__ void wg_bar(int id) { asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory"); }
__device__ __forceinline__ uint32_t ld_acquire(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
/* ready = 1, ordered after every write that happens-before it (fence.acq_rel.gpu, then a relaxed add: CUTLASS's
 * generic barrier's form) */
__device__ __forceinline__ void red_release(uint32_t *p) {
  asm volatile("fence.acq_rel.gpu;\nred.relaxed.gpu.global.add.u32 [%0], 1;\n" ::"l"(p) : "memory");
}

/* Byte offset in the x tile of row r's 16-byte chunk ch: 64-value block ch / 8 (BM rows of 128 bytes each), inside
 * it swz<8>'s place, the 128-byte swizzle wgmma reads. */
template <class Cf> __device__ __forceinline__ uint32_t x_at(int r, int ch) {
  return (uint32_t)((ch / 8) * Cf::BM * 128) + swz<8>(r, ch % 8);
}

/* cp.async of a warp's 16 rows of a tile (tile rows r0 .. r0 + 15, tile row 0 = x's row t0) into the x tile at sX;
 * rows past `rows` zero-filled (computed on, never stored). */
template <class Cf>
__device__ __forceinline__ void rows_async(uint32_t sX, const uint16_t *x, uint32_t rows, uint32_t t0, int r0,
                                           int lane) {
  constexpr int C = Cf::C, CPR = C / 8;
#pragma unroll
  for (int i = 0; i < 16 * CPR / 32; ++i) {
    const int idx = lane + i * 32, r = r0 + idx / CPR, ch = idx % CPR;
    const uint32_t gr = t0 + (uint32_t)r;
    const bool ok = gr < rows;
    cp_async_cg(sX + x_at<Cf>(r, ch), x + (ok ? (size_t)gr * C + ch * 8 : 0), ok ? 16u : 0u);
  }
}

/* LayerNorm of a warp's 16 rows of the x tile in place (rows of zeros give beta), by groups of 8 lanes: a pass
 * normalises 4 rows, lane group g (lanes 8 g .. 8 g + 7) row r0 + 4 pass + g, a lane its 16-byte chunks sub + 8 k
 * below C / 8 (k < KB: one swizzled 128-byte row of a 64-value block for the 8 lanes, no bank conflict; at C = 96
 * and 160 the last block's chunks 0-3 only, so lanes 4-7 of a group hold one chunk fewer), so a row's sums take
 * 3 shuffles where a whole warp a row took 5, and the four passes are independent for ptxas to interleave (a warp a
 * row spent ~17% of the kernel's stall samples at C = 256 in its chains of shuffles; Nsight Compute, H200).
 * nl_layernorm_gpu's arithmetic in fp32: the mean, then the mean of the squared deviations, (x - mean) rstd gamma +
 * beta rounded to T, as the unfused path stores the row (the sums' order differs). */
template <typename T, class Cf>
__device__ __forceinline__ void ln_rows(uint32_t sX, int r0, int lane, const float *sG, const float *sBt, float eps) {
  constexpr int C = Cf::C, CPR = C / 8, CH = Cf::KB, EPL = 8 * CH; /* chunks a row; chunks and values a lane */
  const int sub = lane & 7, grp = lane >> 3;
  /* whether the lane's chunk k is a chunk of the row (a compile-time 1 where C is a multiple of 64) */
  auto has = [&](int k) { return CPR % 8 == 0 || sub + 8 * k < CPR; };
  uint4 v[4][CH];
#pragma unroll
  for (int ps = 0; ps < 4; ++ps)
#pragma unroll
    for (int k = 0; k < CH; ++k) {
      v[ps][k] = make_uint4(0u, 0u, 0u, 0u); /* zeros: a missing chunk adds nothing to the sum */
      if (!has(k)) continue;
      const uint32_t a = sX + x_at<Cf>(r0 + 4 * ps + grp, sub + 8 * k);
      asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(v[ps][k].x), "=r"(v[ps][k].y), "=r"(v[ps][k].z), "=r"(v[ps][k].w)
                   : "r"(a));
    }
#pragma unroll
  for (int ps = 0; ps < 4; ++ps) {
    float f[EPL], sum = 0.f, q = 0.f;
#pragma unroll
    for (int k = 0; k < CH; ++k) {
      const uint32_t w[4] = {v[ps][k].x, v[ps][k].y, v[ps][k].z, v[ps][k].w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 u = unpack2<T>(w[e]);
        f[8 * k + 2 * e] = u.x, f[8 * k + 2 * e + 1] = u.y;
        sum += u.x + u.y;
      }
    }
#pragma unroll
    for (int o = 4; o >= 1; o >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
    const float mean = sum / (float)C;
#pragma unroll
    for (int e = 0; e < EPL; ++e) q += has(e / 8) ? (f[e] - mean) * (f[e] - mean) : 0.f;
#pragma unroll
    for (int o = 4; o >= 1; o >>= 1) q += __shfl_xor_sync(0xFFFFFFFFu, q, o);
    const float rstd = rsqrtf(q / (float)C + eps);
#pragma unroll
    for (int k = 0; k < CH; ++k) {
      if (!has(k)) continue;
      const int col = (sub + 8 * k) * 8; /* gamma and beta as float4: sG and sBt are 16-byte aligned */
      const float4 g0 = *reinterpret_cast<const float4 *>(sG + col);
      const float4 g1 = *reinterpret_cast<const float4 *>(sG + col + 4);
      const float4 b0 = *reinterpret_cast<const float4 *>(sBt + col);
      const float4 b1 = *reinterpret_cast<const float4 *>(sBt + col + 4);
      const float gg[8] = {g0.x, g0.y, g0.z, g0.w, g1.x, g1.y, g1.z, g1.w};
      const float bb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
      uint32_t w[4];
#pragma unroll
      for (int e = 0; e < 4; ++e)
        w[e] = pack2((f[8 * k + 2 * e] - mean) * rstd * gg[2 * e] + bb[2 * e],
                     (f[8 * k + 2 * e + 1] - mean) * rstd * gg[2 * e + 1] + bb[2 * e + 1], T());
      const uint32_t a = sX + x_at<Cf>(r0 + 4 * ps + grp, sub + 8 * k);
      asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
                   : "memory");
    }
  }
}

template <typename T, int C, bool LN, bool SW>
__global__ void __launch_bounds__(Cfg<C, SW>::THREADS, 1)
    mlp_wg_kernel(const Params p, const __grid_constant__ CUtensorMap tm1, const __grid_constant__ CUtensorMap tm2) {
  hx_pdl_wait();
  using Cf = Cfg<C, SW>;
  constexpr int H = Cf::H, NJ = Cf::NJ, KB = Cf::KB, BM = Cf::BM, SL = Cf::SLOTS, NI = Cf::NI;
  extern __shared__ uint4 smem_raw[];
  const uint32_t s0 = (smem_addr(smem_raw) + 1023u) & ~1023u;
  unsigned char *g0 = reinterpret_cast<unsigned char *>(smem_raw) + (s0 - smem_addr(smem_raw));
  const uint32_t sX = s0, sW = s0 + (uint32_t)Cf::X_BYTES;
  float *sB1 = reinterpret_cast<float *>(g0 + Cf::X_BYTES + SL * Cf::SLOT);
  float *sB2 = sB1 + Cf::NB1, *sG = sB2 + C, *sBt = sG + C;
  const uint32_t sFull = smem_addr(sBt + C), sEmpty = sFull + 8u * SL; /* 8-byte aligned: (NB1 + 3C) * 4 % 8 == 0 */
  const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = tid >> 7;
  const uint32_t tiles = (p.rows + (uint32_t)BM - 1u) / (uint32_t)BM;
  const Range rg = range_of(blockIdx.x, gridDim.x, tiles, NJ, p.split != 0u);

  if (tid == 0) {
#pragma unroll
    for (int i = 0; i < SL; ++i) {
      mbar_init(sFull + 8u * i, 1);  /* the producer's expect_tx */
      mbar_init(sEmpty + 8u * i, 4 * Cf::NC); /* one arrival per consumer warp */
    }
    mbar_init_fence();
  }
  for (int i = tid; i < Cf::NB1; i += Cf::THREADS) sB1[i] = unpack2<T>(p.b1 ? (uint32_t)__ldg(p.b1 + i) : 0u).x;
  for (int i = tid; i < C; i += Cf::THREADS) {
    sB2[i] = unpack2<T>(p.b2 ? (uint32_t)__ldg(p.b2 + i) : 0u).x;
    if constexpr (LN) sG[i] = __ldg(p.g + i), sBt[i] = __ldg(p.bt + i);
  }
  __syncthreads(); /* the only CTA-wide barrier */

  if (wg == 0) {
    /* ---- producer: one thread streams W1_j (SwiGLU: its act, then its gate rows) and W2_j for every chunk j of
     * the CTA's segments, in their order ---- */
    setmaxnreg_dec<Cf::PREG>();
    if (tid == 0) {
      uint32_t it = 0; /* item count over the CTA's segments */
#pragma unroll 1
      for (int sg_i = 0; sg_i < rg.nseg; ++sg_i) {
        const Seg sg = seg_of(rg, sg_i, NJ);
#pragma unroll 1
        for (int i = NI * sg.j0; i < NI * sg.j1; ++i, ++it) {
          const uint32_t slot = it % SL, j = (uint32_t)(i / NI), w = (uint32_t)(i % NI);
          const uint32_t full = sFull + 8u * slot, dst = sW + slot * (uint32_t)Cf::SLOT;
          mbar_wait(sEmpty + 8u * slot, ((it / SL) & 1u) ^ 1u);
          if (w + 1u < (uint32_t)NI) {
            /* a box's bytes count whole, its columns past C zero-filled included */
            mbar_expect_tx(full, (uint32_t)Cf::W1_BYTES);
            const int row = (int)(w * (uint32_t)H + j * 64u);
#pragma unroll
            for (int kb = 0; kb < KB; ++kb) tma_2d(dst + (uint32_t)(kb * 64 * 128), &tm1, kb * 64, row, full);
          } else {
            mbar_expect_tx(full, (uint32_t)Cf::W2_BYTES);
            tma_2d(dst, &tm2, (int)j * 64, 0, full);
          }
        }
      }
    }
    /* the CTA outlives the last copies: the consumers wait on every item's full barrier */
    return;
  }

  /* ---- consumers: warpgroup cw owns tile rows [64 cw, 64 cw + 64), warp wq of it 16 of them ---- */
  setmaxnreg_inc<Cf::CREG>();
  const int cw = wg - 1, wq = warp & 3, r0 = cw * 64 + wq * 16;
  float o[C / 2], s[32], s2[SW ? 32 : 1]; /* s2: SwiGLU's gate half of S */
  uint32_t pa[4][4]; /* fc2's A fragments of the chunk */
  uint32_t base = 0;  /* the item of the segment's first W1 chunk */
  int jb = 0;         /* the segment's first chunk: local chunk j below is the tile's chunk jb + j */
  uint32_t *y = reinterpret_cast<uint32_t *>(p.y);
  uint32_t yo[2][C / 8]; /* the epilogue's residual: y's values of the thread's accumulators (rows g and g + 8) */
  uint32_t y_t0 = 0;     /* the segment's tile's first row; y_want: its epilogue runs (not a PUBLISH) */
  bool y_want = false;
  const uint32_t xa = sX + (uint32_t)(cw * 64 * 128);
  /* S = x W1_j^T from item NI j's slot (SwiGLU: s2 from item NI j + 1's): C / 16 k-steps, 4 inside each 128-byte
   * swizzle row, then the next k-block (the x tile's and the slot's columns past C are never read) */
  auto issue_s = [&](int j) {
    const uint32_t wb = sW + ((base + (uint32_t)(NI * j)) % SL) * (uint32_t)Cf::SLOT;
    const uint32_t wg2 = sW + ((base + (uint32_t)(NI * j) + 1u) % SL) * (uint32_t)Cf::SLOT;
#pragma unroll
    for (int ks = 0; ks < C / 16; ++ks) {
      const uint32_t ko = (uint32_t)(ks & 3) * 32u, kb = (uint32_t)(ks >> 2);
      const uint64_t da = wg_desc(xa + kb * (uint32_t)(BM * 128) + ko, 16, 1024, 1);
      wg_ss<T, 64>(s, da, wg_desc(wb + kb * 64u * 128u + ko, 16, 1024, 1), ks > 0);
      if constexpr (SW) wg_ss<T, 64>(s2, da, wg_desc(wg2 + kb * 64u * 128u + ko, 16, 1024, 1), ks > 0);
    }
  };
  /* O += act(S_j) W2_j^T from item NI j + NI - 1's slot: the 64 hidden values in 4 k-steps */
  auto issue_o = [&](int j) {
    const uint32_t wb = sW + ((base + (uint32_t)(NI * j + NI - 1)) % SL) * (uint32_t)Cf::SLOT;
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wg_rs<T, C>(o, pa[kk], wg_desc(wb + (uint32_t)kk * 32u, 16, 1024, 1));
  };
  auto full_wait = [&](int i) {
    const uint32_t it = base + (uint32_t)i;
    mbar_wait(sFull + 8u * (it % SL), (it / SL) & 1u);
  };
  auto release = [&](int i) {
    if (lane == 0) mbar_arrive(sEmpty + 8u * ((base + (uint32_t)i) % SL));
  };
  /* GELU(S_j + b1) in place: the thread's columns 8 nb + 2 (lane % 4) + {0, 1} of rows g and g + 8. fp16: S + b1 in
   * fp32, then the pair rounded once and GELU'd in half2 arithmetic (hh, ht: gelu_h2_parts; pack() joins them; the
   * fp32 form spent ~15 instructions a pair, a third of the kernel's); bf16: fp32 throughout, packed by pack(). */
  constexpr bool H2 = !SW && std::is_same<T, __half>::value;
  uint32_t hh[16], ht[16];
  auto act = [&](int j) {
#pragma unroll
    for (int nb = 0; nb < 8; ++nb) {
      const int col = (jb + j) * 64 + nb * 8 + 2 * (lane & 3);
      const float2 cb = *reinterpret_cast<const float2 *>(sB1 + col); /* one 8-byte load: col is even */
      const float c0 = cb.x, c1 = cb.y;
      if constexpr (SW) { /* silu(a + b1[col]) (g + b1[H + col]) in fp32, the unfused SwiGLU's arithmetic */
        const float2 gb = *reinterpret_cast<const float2 *>(sB1 + H + col);
        s[nb * 4 + 0] = swiglu(s[nb * 4 + 0] + c0, s2[nb * 4 + 0] + gb.x);
        s[nb * 4 + 1] = swiglu(s[nb * 4 + 1] + c1, s2[nb * 4 + 1] + gb.y);
        s[nb * 4 + 2] = swiglu(s[nb * 4 + 2] + c0, s2[nb * 4 + 2] + gb.x);
        s[nb * 4 + 3] = swiglu(s[nb * 4 + 3] + c1, s2[nb * 4 + 3] + gb.y);
      } else if constexpr (H2) {
        gelu_h2_parts(s[nb * 4 + 0] + c0, s[nb * 4 + 1] + c1, hh[nb * 2 + 0], ht[nb * 2 + 0]);
        gelu_h2_parts(s[nb * 4 + 2] + c0, s[nb * 4 + 3] + c1, hh[nb * 2 + 1], ht[nb * 2 + 1]);
      } else {
        s[nb * 4 + 0] = gelu_tanh(s[nb * 4 + 0] + c0), s[nb * 4 + 1] = gelu_tanh(s[nb * 4 + 1] + c1);
        s[nb * 4 + 2] = gelu_tanh(s[nb * 4 + 2] + c0), s[nb * 4 + 3] = gelu_tanh(s[nb * 4 + 3] + c1);
      }
    }
  };
  /* the hidden values rounded to T as fc2's A fragments: k-step kk is n8 blocks 2 kk and 2 kk + 1 */
  auto pack = [&]() {
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      if constexpr (H2) {
#pragma unroll
        for (int e = 0; e < 4; ++e) pa[kk][e] = gelu_h2_join(hh[4 * kk + e], ht[4 * kk + e]);
      } else {
        pa[kk][0] = pack2(s[8 * kk + 0], s[8 * kk + 1], T());
        pa[kk][1] = pack2(s[8 * kk + 2], s[8 * kk + 3], T());
        pa[kk][2] = pack2(s[8 * kk + 4], s[8 * kk + 5], T());
        pa[kk][3] = pack2(s[8 * kk + 6], s[8 * kk + 7], T());
      }
    }
  };
  /* y's values for the epilogue, loaded while the last O runs (their latency was the epilogue's largest stall) */
  auto load_y = [&]() {
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const uint32_t gr = y_t0 + (uint32_t)(r0 + (lane >> 2) + hr * 8);
      const bool ok = y_want && gr < p.rows;
      const uint32_t *yr = y + (size_t)(ok ? gr : 0u) * (C / 2) + (lane & 3);
#pragma unroll
      for (int nb = 0; nb < C / 8; ++nb) yo[hr][nb] = ok ? yr[nb * 4] : 0u;
    }
  };
  auto pin_o = [&]() {
#pragma unroll
    for (int e = 0; e < C / 2; ++e) pin(o[e]);
  };
  auto pin_s = [&]() {
#pragma unroll
    for (int e = 0; e < 32; ++e) pin(s[e]);
    if constexpr (SW) {
#pragma unroll
      for (int e = 0; e < 32; ++e) pin(s2[e]);
    }
  };
  /* chunk j: S_{j+1} issued first, then O_j; GELU(S_{j+1}) while O_j runs; its A fragments once O_j is done.
   * MORE (no S_{j+1} for the last chunk) is a compile-time flag: a run-time one made ptxas serialise every wgmma
   * of the kernel (C7514). Once S_{j+1} is the tile's last S (PRE), no wgmma of this warpgroup reads the x tile
   * again: its rows of the next tile (`next`) are copied in under O_j, O_{j+1} and the epilogue. */
  auto step = [&](int j, auto more, auto pre, uint32_t next) {
    pin_s();
    pin_o();
    wg_fence();
    if constexpr (decltype(more)::value) {
      full_wait(NI * j + NI);
      if constexpr (SW) full_wait(NI * j + NI + 1);
      issue_s(j + 1);
      wg_commit();
    }
    full_wait(NI * j + NI - 1);
    issue_o(j);
    wg_commit();
    if constexpr (!decltype(more)::value) load_y();
    if constexpr (decltype(more)::value) {
      wg_wait<1>(); /* S_{j+1} done; O_j still on the tensor cores, reading pa */
      pin_s();
      release(NI * j + NI);
      if constexpr (SW) release(NI * j + NI + 1);
      if constexpr (decltype(pre)::value) {
        /* every warp's view of the warpgroup's S wgmmas complete before any of its rows is overwritten (the PTX
         * model does not say that one warp's wait covers the warpgroup's reads of the others' rows) */
        wg_bar(1 + cw);
        if (next < tiles) {
          fence_proxy_async(); /* the x tile's async-proxy reads (complete) before these generic writes */
          rows_async<Cf>(sX, p.x, p.rows, next * (uint32_t)BM, r0, lane);
        }
        cp_async_commit();
      }
      act(j + 1);
    }
    wg_wait<0>();
    pin_o();
    release(NI * j + NI - 1);
    if constexpr (decltype(more)::value) pack();
  };
  using yes = std::true_type;
  using no = std::false_type;

  constexpr uint32_t kNone = 0xFFFFFFFFu;
  rows_async<Cf>(sX, p.x, p.rows, seg_of(rg, 0, NJ).tile * (uint32_t)BM, r0, lane);
  cp_async_commit();
  const int t128 = tid & 127; /* the thread within its warpgroup: its O fragments' place in part */
  /* CTA cta's part and ready flag for this consumer: part[cta][cw][q][t128] is O[4 q .. 4 q + 3] */
  auto part_at = [&](uint32_t cta) { return ((size_t)cta * Cf::NC + (size_t)cw) * (C / 8) * 128 + (size_t)t128; };
  auto ready_at = [&](uint32_t cta) { return p.ready + cta * (uint32_t)Cf::NC + (uint32_t)cw; };
#pragma unroll 1
  for (int sg_i = 0; sg_i < rg.nseg; ++sg_i) {
    const Seg sg = seg_of(rg, sg_i, NJ);
    const uint32_t t0 = sg.tile * (uint32_t)BM, next = sg_i + 1 < rg.nseg ? seg_of(rg, sg_i + 1, NJ).tile : kNone;
    const int nj = sg.j1 - sg.j0;
    jb = sg.j0, y_t0 = t0, y_want = sg.kind != SEG_PUBLISH;
    cp_async_wait<0>();
    __syncwarp(); /* the warp's rows, copied by all its lanes */
    if constexpr (LN) ln_rows<T, Cf>(sX, r0, lane, sG, sBt, p.eps);
    fence_proxy_async(); /* the generic-proxy writes visible to wgmma, then to the whole warpgroup */
    wg_bar(1 + cw);
    full_wait(0);
    if constexpr (SW) full_wait(1);
    wg_fence();
    issue_s(0);
    wg_commit();
    wg_wait<0>();
    pin_s();
    release(0);
    if constexpr (SW) release(1);
    act(0);
    pack();
    /* FINISH: O starts from the previous CTA's chunks [0, jb) of this tile (its PUBLISH, stored before its other
     * work); else from 0. Here, not at the segment's start: O's registers live through the LayerNorm and the first
     * S made ptxas spill 20-56 bytes (C = 128 and 256 with LN). */
    const bool fin = sg.kind == SEG_FINISH;
    if (fin) {
      if (t128 == 0)
        while (ld_acquire(ready_at(blockIdx.x - 1u)) == 0u) __nanosleep(64);
      wg_bar(1 + cw);
    }
    {
      const size_t src = part_at(blockIdx.x - 1u);
#pragma unroll
      for (int q = 0; q < C / 8; ++q) {
        const float4 v = fin ? __ldcg(p.part + src + q * 128) : make_float4(0.f, 0.f, 0.f, 0.f);
        o[4 * q] = v.x, o[4 * q + 1] = v.y, o[4 * q + 2] = v.z, o[4 * q + 3] = v.w;
      }
    }
#pragma unroll 1
    for (int j = 0; j < nj - 2; ++j) step(j, yes{}, no{}, next);
    step(nj - 2, yes{}, yes{}, next);
    step(nj - 1, no{}, no{}, next);
    base += (uint32_t)(NI * nj);

    if (sg.kind == SEG_PUBLISH) {
      /* the tile's first chunks for the next CTA's FINISH: fp32 O in fragment order, one float4 a thread a step */
      float4 *dst = p.part + part_at(blockIdx.x);
#pragma unroll
      for (int q = 0; q < C / 8; ++q) dst[q * 128] = make_float4(o[4 * q], o[4 * q + 1], o[4 * q + 2], o[4 * q + 3]);
      wg_bar(1 + cw); /* the warpgroup's stores before its flag (the release below is cumulative over them) */
      if (t128 == 0) red_release(ready_at(blockIdx.x));
      continue;
    }

    /* epilogue: y + O + b2 rounded once, one 32-bit store per value pair; rows lane / 4 and + 8 of the warp's 16,
     * columns 8 nb + 2 (lane % 4) + {0, 1}; y's values in yo since the last O */
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const uint32_t gr = t0 + (uint32_t)(r0 + (lane >> 2) + hr * 8);
      if (gr >= p.rows) continue;
      uint32_t *yr = y + (size_t)gr * (C / 2);
#pragma unroll
      for (int nb = 0; nb < C / 8; ++nb) {
        const int col = nb * 8 + 2 * (lane & 3);
        const float2 u = unpack2<T>(yo[hr][nb]), cb = *reinterpret_cast<const float2 *>(sB2 + col);
        yr[nb * 4 + (lane & 3)] = pack2(u.x + o[nb * 4 + 2 * hr] + cb.x, u.y + o[nb * 4 + 2 * hr + 1] + cb.y, T());
      }
    }
  }
}

#else /* not sm_90a: the kernel exists (the launcher is compiled for every image) but traps */

template <typename T, int C, bool LN, bool SW>
__global__ void __launch_bounds__(Cfg<C, SW>::THREADS, 1)
    mlp_wg_kernel(const Params p, const __grid_constant__ CUtensorMap tm1, const __grid_constant__ CUtensorMap tm2) {
  hx_pdl_wait();
  (void)p, (void)tm1, (void)tm2;
  __trap(); /* never launched (nwg_sm90a_check): y left as it was would be silent garbage */
}

#endif /* NWG_ON */

/* The grid (one CTA an SM, at most one a tile), whether it splits tiles (Stream-K: more tiles than CTAs and the last
 * round of whole tiles at most half full) and the scratch that needs: the ready flags (a 256-byte block) and one
 * part per CTA and consumer; none for whole tiles. */
struct Plan {
  uint32_t grid, split;
  size_t flags_bytes, bytes;
};
template <int C, bool SW> Plan plan_of(uint32_t rows, int sms) {
  using Cf = Cfg<C, SW>;
  const uint32_t tiles = (rows + Cf::BM - 1u) / Cf::BM;
  Plan pl{tiles < (uint32_t)sms ? tiles : (uint32_t)sms, 0, 0, 0};
  /* measured (H200, PTv3 600k): C = 256, 405 tiles (last round 9 of 132): 139 -> 123 us split; C = 128, 747 tiles
   * (last round 87 of 132): 0.110 -> 0.115 ms a block split, so whole tiles there */
  const uint32_t last = pl.grid ? tiles % pl.grid : 0u;
  if (tiles > pl.grid && last != 0u && last <= pl.grid / 2u) {
    pl.split = 1;
    pl.flags_bytes = ((size_t)pl.grid * Cf::NC * 4u + 255u) & ~(size_t)255u;
    pl.bytes = pl.flags_bytes + (size_t)pl.grid * Cf::NC * (C / 8) * 128 * sizeof(float4);
  }
  return pl;
}

template <typename T, int C, bool LN, bool SW>
hx_status launch(Params p, const void *w1, const void *w2, void *scratch, size_t scratch_bytes, cudaStream_t stream,
                 const char *who, hx_err *err) {
  using Cf = Cfg<C, SW>;
  auto kern = mlp_wg_kernel<T, C, LN, SW>;
  int sms = 0;
  HX_TRY(nwg::sm_count(&sms, err));
  const Plan pl = plan_of<C, SW>(p.rows, sms);
  if (scratch_bytes < pl.bytes)
    return hx_errf(err, HX_EINVAL, "%s: scratch of %zu bytes, %zu needed", who, scratch_bytes, pl.bytes);
  if (pl.bytes && (uintptr_t)scratch % 16u)
    return hx_errf(err, HX_EINVAL, "%s: scratch must be 16-byte aligned", who);
  p.split = pl.split;
  if (pl.bytes) {
    p.ready = static_cast<uint32_t *>(scratch);
    p.part = reinterpret_cast<float4 *>(static_cast<char *>(scratch) + pl.flags_bytes);
    HX_CUDA(err, cudaMemsetAsync(p.ready, 0, (size_t)pl.grid * Cf::NC * 4u, stream));
  }
  HX_CUDA(err, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Cf::SMEM));
  /* the descriptors travel by value as kernel parameters, so a captured graph keeps its own */
  CUtensorMap tm1, tm2;
  HX_TRY(nwg::tensor_map(&tm1, w1, (uint64_t)(SW ? 2 * Cf::H : Cf::H), (uint64_t)C, 64u, 64u, who, err));
  HX_TRY(nwg::tensor_map(&tm2, w2, (uint64_t)C, (uint64_t)Cf::H, (uint32_t)C, 64u, who, err));
  hx_launch(kern, pl.grid, Cf::THREADS, Cf::SMEM, stream, p, tm1, tm2);
  HX_LAUNCHED(err, who);
  return HX_OK;
}

/* f(Cfg<C, SW>{}) for the (C, kind) the kernel is built at, which the callers have checked with nl_mlp_wg_takes:
 * the one list of instances that the launch and the scratch query share */
template <class F> auto by_cfg(size_t C, nl_mlp_kind kind, F &&f) {
  if (kind == NL_MLP_GELU) return C == 128 ? f(Cfg<128, false>{}) : f(Cfg<256, false>{});
  if (C == 96) return f(Cfg<96, true>{});
  if (C == 128) return f(Cfg<128, true>{});
  return C == 160 ? f(Cfg<160, true>{}) : f(Cfg<192, true>{});
}

template <typename T, bool LN>
hx_status by_c(const Params &p, const void *w1, const void *w2, size_t C, nl_mlp_kind kind, void *scratch,
               size_t scratch_bytes, cudaStream_t stream, const char *who, hx_err *err) {
  if (!nl_mlp_wg_takes(C, kind))
    return hx_errf(err, HX_EINVAL, "%s: the wgmma kernel takes GELU at C = 128, 256 and SwiGLU at 96, 128, 160, 192, "
                   "not kind %d at %zu", who, (int)kind, C);
  return by_cfg(C, kind, [&](auto cf) {
    using Cf = decltype(cf);
    return launch<T, Cf::C, LN, Cf::SW>(p, w1, w2, scratch, scratch_bytes, stream, who, err);
  });
}

} // namespace nl_mlp_wg

extern "C" hx_status nl_mlp_wg_scratch(size_t rows, size_t C, nl_mlp_kind kind, size_t *bytes, hx_err *err) {
  *bytes = 0;
  if (rows == 0 || rows > 0xFFFFFFFFu - 256u || !nl_mlp_wg_takes(C, kind)) return HX_OK; /* the launch refuses these */
  hx_err probe = {HX_OK, ""};
  if (nwg_sm90a_check("nl_mlp_gpu", &probe) != HX_OK) return HX_OK; /* the launch is HX_EUNSUPPORTED there */
  int sms = 0;
  HX_TRY(nwg::sm_count(&sms, err));
  const uint32_t r = (uint32_t)rows;
  *bytes = nl_mlp_wg::by_cfg(C, kind, [&](auto cf) {
    using Cf = decltype(cf);
    return nl_mlp_wg::plan_of<Cf::C, Cf::SW>(r, sms).bytes;
  });
  return HX_OK;
}

extern "C" hx_status nl_mlp_wg_launch(void *d_y, const void *d_x, const void *d_w1, const void *d_b1, const void *d_w2,
                                      const void *d_b2, size_t rows, size_t C, nl_mlp_kind kind, const float *d_g,
                                      const float *d_beta, float eps, void *d_scratch, size_t scratch_bytes,
                                      net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  const int ln = d_g != NULL;
  const char *who = ln ? "nl_ln_mlp_gpu" : "nl_mlp_gpu";
  HX_TRY(nwg_sm90a_check(who, err)); /* first: HX_EUNSUPPORTED sends the caller to the unfused path */
  /* tile arithmetic in 32 bits: rows + BM - 1 (BM <= 192) must not wrap */
  if (rows > 0xFFFFFFFFu - 256u) return hx_errf(err, HX_EINVAL, "%s: %zu rows (at most 2^32 - 257)", who, rows);
  const nl_mlp_wg::Params p{static_cast<uint16_t *>(d_y),
                            static_cast<const uint16_t *>(ln ? d_y : d_x),
                            static_cast<const uint16_t *>(d_b1),
                            static_cast<const uint16_t *>(d_b2),
                            d_g,
                            d_beta,
                            eps,
                            (uint32_t)rows,
                            nullptr,
                            nullptr,
                            0u};
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == NET_BF16)
    return ln ? nl_mlp_wg::by_c<__nv_bfloat16, true>(p, d_w1, d_w2, C, kind, d_scratch, scratch_bytes, s, who, err)
              : nl_mlp_wg::by_c<__nv_bfloat16, false>(p, d_w1, d_w2, C, kind, d_scratch, scratch_bytes, s, who, err);
  return ln ? nl_mlp_wg::by_c<__half, true>(p, d_w1, d_w2, C, kind, d_scratch, scratch_bytes, s, who, err)
            : nl_mlp_wg::by_c<__half, false>(p, d_w1, d_w2, C, kind, d_scratch, scratch_bytes, s, who, err);
}
