/*
 * mlp.cu - nl_mlp_gpu: a block's MLP y += fc2(act(fc1(x))) for narrow rows in one kernel, the hidden row kept on
 * chip: PTv3's (act = GELU, hidden 4C) and Flash3D's LayerNormMLP after its LayerNorm (act = SwiGLU, fc1 8C wide,
 * hidden 4C). Reference: nl_mlp_cpu (layers.c); checked in tests/nets/test_layers_gpu.c. The wider rows (PTv3's C = 128
 * and 256, Flash3D's C = 96 to 192) go to the wgmma kernel of nets/mlp_wgmma.cu (nl_mlp_wg_launch).
 *
 * Why: at narrow C the unfused path's cuBLASLt Linears write the hidden row ([rows, 4C], and for SwiGLU [rows, 8C]
 * and a SwiGLU pass) and read it back, 11 (27) x 2 x C bytes a row against 3 x 2 x C for x in and y in and out,
 * and their narrow GEMMs run well below the copy bandwidth (docs/layers.md, "The fused MLP").
 *
 * Design: persistent CTAs of 8 warps, each loading fc1's and fc2's weights and biases into shared memory once, then
 * walking 128-row tiles of x (16 rows a warp), the next tile's rows copied by cp.async under the current one's math.
 * A warp moves its 16 rows of x into registers (the A fragments of fc1) and copies its 16 rows of y into the place
 * they leave (cp.async, waited for only at the epilogue: the read of y overlaps the math). Per warp and 16-column
 * chunk of the hidden row: fc1 as C / 16 mma.sync m16n8k16 steps into two fp32 n-tiles (four for SwiGLU: the
 * chunk's activation and gate columns), + b1, the activation, rounded to dtype and repacked in registers as the A
 * fragment of one fc2 k-step (the C fragment of m16n8 is the A fragment's layout, as attention's P), then C / 8
 * mmas into the warp's [16, C] fp32 accumulators. The epilogue adds b2 and y in shared memory and stores the warp's
 * rows as whole 16-byte chunks. FLOPs 4 rows C H (SwiGLU 6 rows C H); bytes 3 x 2 x rows x C.
 *
 * Tiles: rows of a power-of-two count of 16-byte chunks in spc_dev::swz's XOR swizzle; other counts (C = 48, 80:
 * 6 and 10 chunks; their fc2 rows 24 and 40) padded to an odd stride of chunks, which puts the 8 rows of an
 * ldmatrix phase in 8 distinct bank groups as well.
 *
 * Activations: GELU in the tanh form on tanh.approx.f32 (~5 instructions a hidden value), the form of the unfused
 * path's cuBLASLt epilogue; with the exact erf form (erff, ~25 instructions) the kernel was issue-bound at C = 64
 * and slower than the two Linears (H200, 600k points: 0.585 against 0.549 ms at dec0; 61c43de, docs/layers.md).
 * SwiGLU's silu(a) = a / 2 (1 + tanh(a / 2)), one tanh.approx.
 */
#include "nets/nets.h"
#include "nets/spconv_device.cuh"
#include "nets/wgmma_device.cuh" /* nl_mlp_wg_launch: the widths nl_mlp_wg_takes */

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

namespace {

using spc_dev::cp_async_cg;
using spc_dev::cp_async_commit;
using spc_dev::cp_async_wait;
using spc_dev::gelu_tanh;
using spc_dev::ldsm_x4;
using spc_dev::mma;
using spc_dev::pack2;
using spc_dev::smem_addr;
using spc_dev::swz;
using spc_dev::swiglu;
using spc_dev::unpack2;

constexpr int kWarps = 8, kThreads = kWarps * 32, kBM = 16 * kWarps; /* rows per tile */

/* Rows of CPR 16-byte chunks (CPR even): swz's swizzle for a power of two, else rows padded to CPR + 1 chunks. */
template <int CPR> struct lay {
  static_assert(CPR % 2 == 0, "an even count of chunks a row");
  static constexpr bool kPow2 = (CPR & (CPR - 1)) == 0;
  static constexpr int kStride = (kPow2 ? CPR : CPR + 1) * 16; /* bytes a row */
  static __device__ __forceinline__ uint32_t at(int r, int c) {
    return kPow2 ? swz<CPR>(r, c) : (uint32_t)(r * kStride + c * 16);
  }
};

/* Two shuffles summing s[0] and s[1] over the 4 lanes of a quad (rows g and g + 8 of the accumulator layout). */
__device__ __forceinline__ void quad_sum2(float (&s)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    s[h] += __shfl_xor_sync(0xffffffffu, s[h], 1);
    s[h] += __shfl_xor_sync(0xffffffffu, s[h], 2);
  }
}

/* LayerNorm of a warp's 16 rows held as mma A fragments, in place. Per k-step ks a thread holds row g = lane / 4 at
 * columns 16 ks + 2t, + 1 (xa[ks][0]) and + 8, + 9 (xa[ks][2]), row g + 8 in xa[ks][1] and xa[ks][3] (t = lane % 4):
 * a row's C values lie in the 4 lanes of a quad, summed by two shuffles. nl_layernorm_gpu's arithmetic: fp32, the
 * mean, then the mean of the squared deviations, (x - mean) rstd gamma + beta rounded to T, as the unfused path
 * stores the row its Linear reads. Rows of zeros (past the end) give beta. */
template <typename T, int KS>
__device__ __forceinline__ void ln_frag(uint32_t (&xa)[KS][4], const float *sG, const float *sBt, int lane, float eps) {
  constexpr float kC = (float)(16 * KS);
  float v[KS][4][2], s[2] = {0.f, 0.f}, q[2] = {0.f, 0.f};
#pragma unroll
  for (int ks = 0; ks < KS; ++ks)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 f = unpack2<T>(xa[ks][j]);
      v[ks][j][0] = f.x, v[ks][j][1] = f.y;
      s[j & 1] += f.x + f.y;
    }
  float mean[2], rstd[2];
  quad_sum2(s);
#pragma unroll
  for (int h = 0; h < 2; ++h) mean[h] = s[h] / kC;
#pragma unroll
  for (int ks = 0; ks < KS; ++ks)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float d = v[ks][j][e] - mean[j & 1];
        q[j & 1] += d * d;
      }
  quad_sum2(q);
#pragma unroll
  for (int h = 0; h < 2; ++h) rstd[h] = rsqrtf(q[h] / kC + eps);
#pragma unroll
  for (int ks = 0; ks < KS; ++ks)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = ks * 16 + (j >> 1) * 8 + 2 * (lane & 3), h = j & 1;
      xa[ks][j] = pack2((v[ks][j][0] - mean[h]) * rstd[h] * sG[col] + sBt[col],
                        (v[ks][j][1] - mean[h]) * rstd[h] * sG[col + 1] + sBt[col + 1], T());
    }
}

/* Rows [r0, r0 + kBM) of x ([rows, C]) into a tile, with IDX tile row r being x's row ridx[r0 + r] (a gather fused
 * into the copy); rows past `rows` are zero-filled (computed on, never stored). */
template <int C, bool IDX = false>
__device__ __forceinline__ void load_x(uint32_t sx, const uint16_t *x, const uint32_t *ridx, size_t r0, size_t rows,
                                       int tid) {
  constexpr int CPR = C / 8, TOTAL = kBM * CPR;
  static_assert(TOTAL % kThreads == 0, "whole copies per thread");
#pragma unroll
  for (int i = 0; i < TOTAL / kThreads; ++i) {
    const int idx = tid + i * kThreads, r = idx / CPR, c = idx % CPR;
    const bool ok = r0 + (size_t)r < rows;
    const size_t src = IDX && ok ? (size_t)ridx[r0 + r] : r0 + r;
    cp_async_cg(sx + lay<CPR>::at(r, c), x + (ok ? src * C + c * 8 : 0), ok ? 16u : 0u);
  }
}

/* The persistent kernels' step: tile `next`'s rows copied into the other stage of the two x tiles at sX, then this
 * tile's (copied one step earlier) waited for by the whole CTA; returns this tile's stage. The caller's
 * __syncthreads() at the end of its step keeps the next prefetch off a stage still being read. */
template <int C, bool IDX = false>
__device__ __forceinline__ uint32_t tile_ready(uint32_t sX, const uint16_t *x, const uint32_t *ridx, size_t next,
                                               size_t tiles, size_t rows, int stage, int tid) {
  constexpr uint32_t kStage = kBM * lay<C / 8>::kStride;
  if (next < tiles) load_x<C, IDX>(sX + (stage ^ 1) * kStage, x, ridx, next * kBM, rows, tid);
  cp_async_commit();
  cp_async_wait<1>();
  __syncthreads();
  return sX + stage * kStage;
}

/* A warp's 16 rows of a tile (rows of C channels at tx) as the A fragments of C / 16 m16n8k16 k-steps. */
template <int C>
__device__ __forceinline__ void warp_a(uint32_t (&xa)[C / 16][4], uint32_t tx, int warp, int lane) {
#pragma unroll
  for (int ks = 0; ks < C / 16; ++ks)
    ldsm_x4(xa[ks][0], xa[ks][1], xa[ks][2], xa[ks][3], tx + lay<C / 8>::at(warp * 16 + (lane & 15), ks * 2 + (lane >> 4)));
}

/* y's rows [r0, r0 + 16) ([rows, C]) into the warp's 16 rows of the tile by cp.async (zeros past `rows`). */
template <int C>
__device__ __forceinline__ void warp_rows_in(uint32_t tx, const uint16_t *y, size_t r0, size_t rows, int warp, int lane) {
  constexpr int CPR = C / 8;
#pragma unroll
  for (int i = 0; i < 16 * CPR / 32; ++i) {
    const int idx = lane + i * 32, r = idx / CPR, c = idx % CPR;
    const bool ok = r0 + (size_t)r < rows;
    cp_async_cg(tx + lay<CPR>::at(warp * 16 + r, c), y + (ok ? (r0 + r) * C + c * 8 : 0), ok ? 16u : 0u);
  }
}

/* The warp's 16 rows of the tile at ty (C channels) stored as whole 16-byte chunks at columns [col0, col0 + C) of
 * y's rows [r0, r0 + 16) (rows of ld values; none past `rows`). */
template <int C>
__device__ __forceinline__ void warp_rows_out(uint16_t *y, size_t ld, size_t col0, const uint8_t *ty, size_t r0,
                                              size_t rows, int warp, int lane) {
  constexpr int CPR = C / 8;
#pragma unroll
  for (int i = 0; i < 16 * CPR / 32; ++i) {
    const int idx = lane + i * 32, r = idx / CPR, c = idx % CPR;
    if (r0 + (size_t)r < rows)
      *reinterpret_cast<uint4 *>(y + (r0 + r) * ld + col0 + c * 8) =
          *reinterpret_cast<const uint4 *>(ty + lay<CPR>::at(warp * 16 + r, c));
  }
}

/* acc[16 rows, C] = the warp's A fragments (C / 16 k-steps) times rows [row0, row0 + C) of W at sW ([*, C] in
 * lay<C / 8>'s layout, Linear's [out, in]) transposed: per k-step C / 16 ldmatrix.x4 B loads and C / 8 mmas. */
template <typename T, int C>
__device__ __forceinline__ void warp_linear(float (&acc)[C / 8][4], const uint32_t (&xa)[C / 16][4], uint32_t sW,
                                            int row0, int lane) {
  const int bn = (lane & 7) + ((lane >> 4) << 3), bk = (lane >> 3) & 1;
#pragma unroll
  for (int n = 0; n < C / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
#pragma unroll
  for (int ks = 0; ks < C / 16; ++ks)
#pragma unroll
    for (int np = 0; np < C / 16; ++np) {
      uint32_t bf[4];
      ldsm_x4(bf[0], bf[1], bf[2], bf[3], sW + lay<C / 8>::at(row0 + np * 16 + bn, ks * 2 + bk));
      mma(acc[2 * np], xa[ks], bf[0], bf[1], T());
      mma(acc[2 * np + 1], xa[ks], bf[2], bf[3], T());
    }
}

/* Each value of the warp's 16 rows of the tile at ty (C channels) replaced by f(n, hr, col, old) rounded to T, in
 * the mma accumulator layout: the lane's row (lane / 4) + 8 hr, columns col and col + 1 = 8 n + 2 (lane % 4); each
 * value read and written by the same thread. */
template <typename T, int C, typename F>
__device__ __forceinline__ void warp_tile_update(uint8_t *ty, int warp, int lane, F f) {
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int r = warp * 16 + (lane >> 2) + hr * 8;
#pragma unroll
    for (int n = 0; n < C / 8; ++n) {
      const int col = n * 8 + 2 * (lane & 3);
      uint32_t *p = reinterpret_cast<uint32_t *>(ty + lay<C / 8>::at(r, n) + (col % 8) * 2);
      const float2 v = f(n, hr, col, unpack2<T>(*p));
      *p = pack2(v.x, v.y, T());
    }
  }
}

/* LN: y += MLP(LN(y)) (nl_ln_mlp_gpu): the tile is y's rows, the LayerNorm is applied to the A fragments (ln_frag)
 * and the tile itself is the residual, so no second copy of y; x is unused. */
template <typename T, int C, int H, bool SWI, bool LN = false>
__global__ void __launch_bounds__(kThreads, C <= 32 && !SWI ? 4 : 2)
    mlp_kernel(uint16_t *__restrict__ y, const uint16_t *__restrict__ x, const uint16_t *__restrict__ w1,
               const uint16_t *__restrict__ b1, const uint16_t *__restrict__ w2, const uint16_t *__restrict__ b2,
               size_t rows, size_t tiles, const float *__restrict__ lg, const float *__restrict__ lb, float eps) {
  hx_pdl_wait();
  constexpr int CPR1 = C / 8, CPR2 = H / 8, KS1 = C / 16, NT2 = C / 8, H1 = SWI ? 2 * H : H;
  using L1 = lay<CPR1>;
  using L2 = lay<CPR2>;
  constexpr int kStage = kBM * L1::kStride; /* bytes of one x tile */
  extern __shared__ uint4 smem_raw[];
  uint8_t *base = reinterpret_cast<uint8_t *>(smem_raw);
  const uint32_t sW1 = smem_addr(base);         /* [H1][C] */
  const uint32_t sW2 = sW1 + H1 * L1::kStride;  /* [C][H] */
  const uint32_t sX = sW2 + C * L2::kStride;    /* 2 x [kBM][C] */
  float *sB1 = reinterpret_cast<float *>(base + H1 * L1::kStride + C * L2::kStride + 2 * kStage); /* [H1] */
  float *sB2 = sB1 + H1;                                                                         /* [C] */
  float *sG = sB2 + C, *sBt = sG + C; /* LN: gamma, beta [C] */
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const uint16_t *src = LN ? y : x;

  for (int idx = tid; idx < H1 * CPR1; idx += kThreads)
    cp_async_cg(sW1 + L1::at(idx / CPR1, idx % CPR1), w1 + (size_t)idx * 8);
  for (int idx = tid; idx < C * CPR2; idx += kThreads)
    cp_async_cg(sW2 + L2::at(idx / CPR2, idx % CPR2), w2 + (size_t)idx * 8);
  for (int i = tid; i < H1; i += kThreads) sB1[i] = unpack2<T>(b1 ? (uint32_t)b1[i] : 0u).x;
  for (int i = tid; i < C; i += kThreads) sB2[i] = unpack2<T>(b2 ? (uint32_t)b2[i] : 0u).x;
  if constexpr (LN)
    for (int i = tid; i < C; i += kThreads) sG[i] = lg[i], sBt[i] = lb[i];
  size_t tile = blockIdx.x;
  int stage = 0;
  if (tile < tiles) load_x<C>(sX, src, nullptr, tile * kBM, rows, tid);
  cp_async_commit();

  for (; tile < tiles; tile += gridDim.x) {
    const uint32_t tx = tile_ready<C>(sX, src, nullptr, tile + gridDim.x, tiles, rows, stage, tid);

    uint32_t xa[KS1][4];
    warp_a<C>(xa, tx, warp, lane);
    const size_t r0 = tile * kBM + warp * 16;
    if constexpr (LN) {
      ln_frag<T, KS1>(xa, sG, sBt, lane, eps); /* the tile keeps y's rows: the residual */
    } else {
      /* the warp's 16 rows of x are in registers: its 16 rows of y go where they were (zeros past `rows`) */
      __syncwarp();
      warp_rows_in<C>(tx, y, r0, rows, warp, lane);
    }
    cp_async_commit();

    float acc[NT2][4];
#pragma unroll
    for (int n = 0; n < NT2; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;

    /* ldmatrix rows of the B operands: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) */
    const int bn = (lane & 7) + ((lane >> 4) << 3), bk = (lane >> 3) & 1;
#pragma unroll 4
    for (int hc = 0; hc < H / 16; ++hc) {
      constexpr int NH = SWI ? 4 : 2; /* n-tiles of fc1: the chunk's columns (and for SwiGLU its gates, H further) */
      float h[NH][4];
#pragma unroll
      for (int j = 0; j < NH; ++j) h[j][0] = h[j][1] = h[j][2] = h[j][3] = 0.f;
#pragma unroll
      for (int ks = 0; ks < KS1; ++ks) {
#pragma unroll
        for (int half = 0; half < NH / 2; ++half) {
          uint32_t b[4];
          ldsm_x4(b[0], b[1], b[2], b[3], sW1 + L1::at(half * H + hc * 16 + bn, ks * 2 + bk));
          mma(h[2 * half], xa[ks], b[0], b[1], T());
          mma(h[2 * half + 1], xa[ks], b[2], b[3], T());
        }
      }
      uint32_t a[4];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int col = hc * 16 + j * 8 + 2 * (lane & 3);
        const float c0 = sB1[col], c1 = sB1[col + 1];
        if constexpr (SWI) {
          const float g0 = sB1[H + col], g1 = sB1[H + col + 1];
          a[2 * j] = pack2(swiglu(h[j][0] + c0, h[j + 2][0] + g0), swiglu(h[j][1] + c1, h[j + 2][1] + g1), T());
          a[2 * j + 1] = pack2(swiglu(h[j][2] + c0, h[j + 2][2] + g0), swiglu(h[j][3] + c1, h[j + 2][3] + g1), T());
        } else {
          a[2 * j] = pack2(gelu_tanh(h[j][0] + c0), gelu_tanh(h[j][1] + c1), T());     /* row g */
          a[2 * j + 1] = pack2(gelu_tanh(h[j][2] + c0), gelu_tanh(h[j][3] + c1), T()); /* row g + 8 */
        }
      }
      /* a is fc2's A fragment: (row g, k 0-7), (row g + 8, k 0-7), (row g, k 8-15), (row g + 8, k 8-15) */
#pragma unroll
      for (int np = 0; np < NT2 / 2; ++np) {
        uint32_t b[4];
        ldsm_x4(b[0], b[1], b[2], b[3], sW2 + L2::at(np * 16 + bn, hc * 2 + bk));
        mma(acc[2 * np], a, b[0], b[1], T());
        mma(acc[2 * np + 1], a, b[2], b[3], T());
      }
    }

    /* y + acc + b2 in place in the tile (each value read and written by the same thread), then the warp's rows
     * stored as whole chunks */
    cp_async_wait<0>();
    __syncwarp();
    uint8_t *ty = base + (tx - sW1);
    warp_tile_update<T, C>(ty, warp, lane, [&](int n, int hr, int col, float2 old) {
      return make_float2(old.x + acc[n][2 * hr] + sB2[col], old.y + acc[n][2 * hr + 1] + sB2[col + 1]);
    });
    __syncwarp();
    warp_rows_out<C>(y, C, 0, ty, r0, rows, warp, lane);
    __syncthreads(); /* the next iteration's prefetch overwrites this stage */
    stage ^= 1;
  }
}

template <int C, int H, bool SWI, bool LN = false> constexpr size_t smem_bytes() {
  return (size_t)(SWI ? 2 * H : H) * lay<C / 8>::kStride + (size_t)C * lay<H / 8>::kStride +
         (size_t)2 * kBM * lay<C / 8>::kStride + (size_t)((SWI ? 2 * H : H) + C + (LN ? 2 * C : 0)) * 4;
}

/* The CTAs of kern (kThreads threads, smem bytes of dynamic shared memory, granted here) the device holds at once;
 * HX_EUNSUPPORTED where a CTA's smem exceeds what the device grants one (sm_80's 163 KB: the C = 80 SwiGLU MLP),
 * so that the caller runs the unfused path. */
hx_status resident_ctas(const void *kern, size_t smem, const char *who, size_t *most, hx_err *err) {
  int dev = 0, sms = 0, per_sm = 0, optin = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e == cudaSuccess && smem > (size_t)optin)
    return hx_errf(err, HX_EUNSUPPORTED, "%s: %zu bytes of shared memory a CTA, the device grants %d", who, smem, optin);
  if (e == cudaSuccess) e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, kThreads, smem);
  if (e != cudaSuccess) return hx_errf(err, HX_ECUDA, "%s: %s", who, cudaGetErrorString(e));
  if (per_sm < 1) return hx_errf(err, HX_EUNSUPPORTED, "%s: %zu bytes of shared memory do not fit", who, smem);
  *most = (size_t)sms * (size_t)per_sm;
  return HX_OK;
}

/* The persistent kernels' 1-D grid over the 128-row tiles of `rows`: as many CTAs as the device holds at once
 * (resident_ctas, which also grants kern its shared memory), at most one a tile. */
hx_status tile_grid(const void *kern, size_t smem, const char *who, size_t rows, size_t *tiles, size_t *grid,
                    hx_err *err) {
  size_t most = 0;
  HX_TRY(resident_ctas(kern, smem, who, &most, err));
  *tiles = (rows + kBM - 1) / kBM;
  *grid = *tiles < most ? *tiles : most;
  return HX_OK;
}

/* The launch just made, as a status: HX_ECUDA naming who. */
hx_status launched(const char *who, hx_err *err) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return hx_errf(err, HX_ECUDA, "%s: launch: %s", who, cudaGetErrorString(e));
  return HX_OK;
}

/* The MLP's LayerNorm (nl_ln_mlp_gpu): gamma, beta, eps; g == NULL: none (nl_mlp_gpu). */
struct ln_args {
  const float *g, *b;
  float eps;
};

template <typename T, int C, int H, bool SWI, bool LN>
hx_status mlp_launch(void *y, const void *x, const void *w1, const void *b1, const void *w2, const void *b2,
                     size_t rows, ln_args ln, cudaStream_t s, hx_err *err) {
  constexpr size_t smem = smem_bytes<C, H, SWI, LN>();
  static_assert(smem <= 227 * 1024, "the weights and tiles fit one SM's shared memory");
  auto kern = mlp_kernel<T, C, H, SWI, LN>;
  const char *who = LN ? "nl_ln_mlp_gpu" : "nl_mlp_gpu";
  size_t tiles = 0, grid = 0;
  HX_TRY(tile_grid(reinterpret_cast<const void *>(kern), smem, who, rows, &tiles, &grid, err));
  hx_launch(kern, (unsigned)grid, kThreads, smem, s, static_cast<uint16_t *>(y), static_cast<const uint16_t *>(x),
            static_cast<const uint16_t *>(w1), static_cast<const uint16_t *>(b1), static_cast<const uint16_t *>(w2),
            static_cast<const uint16_t *>(b2), rows, tiles, ln.g, ln.b, ln.eps);
  return launched(who, err);
}

template <typename T, bool LN>
hx_status mlp_dispatch(void *y, const void *x, const void *w1, const void *b1, const void *w2, const void *b2,
                       size_t rows, size_t C, nl_mlp_kind kind, ln_args ln, cudaStream_t s, hx_err *err) {
  if (kind == NL_MLP_GELU)
    return C == 32 ? mlp_launch<T, 32, 128, false, LN>(y, x, w1, b1, w2, b2, rows, ln, s, err)
                   : mlp_launch<T, 64, 256, false, LN>(y, x, w1, b1, w2, b2, rows, ln, s, err);
  switch (C) {
  case 32: return mlp_launch<T, 32, 128, true, LN>(y, x, w1, b1, w2, b2, rows, ln, s, err);
  case 48: return mlp_launch<T, 48, 192, true, LN>(y, x, w1, b1, w2, b2, rows, ln, s, err);
  case 64: return mlp_launch<T, 64, 256, true, LN>(y, x, w1, b1, w2, b2, rows, ln, s, err);
  default: return mlp_launch<T, 80, 320, true, LN>(y, x, w1, b1, w2, b2, rows, ln, s, err);
  }
}

/* ---- LayerNorm + Linear (nl_ln_linear_gpu) ------------------------------------------------------------ */

/*
 * y[r, NQ C] = LN(x[ridx[r]]) W^T + b for narrow rows (a block's norm.1 + qkv, NQ = 3: PTv3's at C = 32 and 64 on
 * its patch slots, IDX; Flash3D's at C = 48 and 96 on its rows in order, ridx unused). The mlp kernel's frame:
 * persistent CTAs of 8 warps, W ([NQ C, C]), its bias and the LayerNorm's gamma and beta in shared memory once,
 * 128-row tiles of x (gathered through ridx with IDX) by cp.async (the next tile's under the current one's math),
 * a warp's 16 rows moved into A fragments and normalised there (ln_frag). Then per C-wide slice q of the output:
 * C / 16 x C / 16 ldmatrix.x4 B loads and twice as many m16n8k16 mmas into [16, C] fp32 accumulators, + b, rounded
 * into the warp's 16 rows of the tile (free: their A fragments are in registers) and stored as whole 16-byte
 * chunks. Bytes: x's rows read once (C values), y written once (NQ C), against the unfused path's LN row written
 * and read back (2 C more) and cuBLASLt's GEMM at K = 32 or 64 (docs/layers.md, "LayerNorm inside the kernels").
 */
template <int C, int NQ> constexpr size_t lnl_smem() {
  return (size_t)(NQ * C) * lay<C / 8>::kStride + (size_t)2 * kBM * lay<C / 8>::kStride + (size_t)(NQ * C + 2 * C) * 4;
}

/* The frame lnl_kernel and lla_kernel share: W [N][C] (N = NQ C), two stages of 128-row x tiles, the bias (fp32
 * [N]), gamma and beta ([C] each), in that order (lnl_smem<C, NQ>() bytes); W, b, gamma and beta loaded once, and
 * the CTA's first tile of x (rows by ridx when IDX) in flight in stage 0 as one commit group. */
template <int C, int N> struct ln_frame {
  uint32_t sW, sX;
  float *sB, *sG, *sBt;
};
template <typename T, int C, int N, bool IDX>
__device__ __forceinline__ ln_frame<C, N> ln_frame_load(uint8_t *base, const uint16_t *w, const uint16_t *b,
                                                        const float *lg, const float *lb, const uint16_t *x,
                                                        const uint32_t *ridx, size_t rows, size_t tile, size_t tiles,
                                                        int tid) {
  constexpr int CPR = C / 8;
  using L = lay<CPR>;
  ln_frame<C, N> f;
  f.sW = smem_addr(base);
  f.sX = f.sW + N * L::kStride;
  f.sB = reinterpret_cast<float *>(base + N * L::kStride + 2 * kBM * L::kStride);
  f.sG = f.sB + N, f.sBt = f.sG + C;
  for (int i = tid; i < N * CPR; i += kThreads) cp_async_cg(f.sW + L::at(i / CPR, i % CPR), w + (size_t)i * 8);
  for (int i = tid; i < N; i += kThreads) f.sB[i] = unpack2<T>(b ? (uint32_t)b[i] : 0u).x;
  for (int i = tid; i < C; i += kThreads) f.sG[i] = lg[i], f.sBt[i] = lb[i];
  if (tile < tiles) load_x<C, IDX>(f.sX, x, ridx, tile * kBM, rows, tid);
  cp_async_commit();
  return f;
}

template <typename T, int C, int NQ, bool IDX>
__global__ void __launch_bounds__(kThreads, C <= 32 ? 4 : 2)
    lnl_kernel(uint16_t *__restrict__ y, const uint16_t *__restrict__ x, const uint32_t *__restrict__ ridx,
               const float *__restrict__ lg, const float *__restrict__ lb, float eps, const uint16_t *__restrict__ w,
               const uint16_t *__restrict__ b, size_t rows, size_t tiles) {
  hx_pdl_wait();
  constexpr int KS = C / 16, N = NQ * C;
  extern __shared__ uint4 smem_raw[];
  uint8_t *base = reinterpret_cast<uint8_t *>(smem_raw);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  size_t tile = blockIdx.x;
  const ln_frame<C, N> f = ln_frame_load<T, C, N, IDX>(base, w, b, lg, lb, x, ridx, rows, tile, tiles, tid);
  const uint32_t sW = f.sW, sX = f.sX;
  const float *sB = f.sB, *sG = f.sG, *sBt = f.sBt;
  int stage = 0;

  for (; tile < tiles; tile += gridDim.x) {
    const uint32_t tx = tile_ready<C, IDX>(sX, x, ridx, tile + gridDim.x, tiles, rows, stage, tid);
    uint32_t xa[KS][4];
    warp_a<C>(xa, tx, warp, lane);
    ln_frag<T, KS>(xa, sG, sBt, lane, eps);
    __syncwarp(); /* every lane's fragments loaded: the warp's rows of the tile take its outputs now */
    const size_t r0 = tile * kBM + warp * 16;
    uint8_t *ty = base + (tx - sW);
#pragma unroll 1
    for (int q = 0; q < NQ; ++q) {
      float acc[C / 8][4];
      warp_linear<T, C>(acc, xa, sW, q * C, lane);
      warp_tile_update<T, C>(ty, warp, lane, [&](int n, int hr, int col, float2) {
        return make_float2(acc[n][2 * hr] + sB[q * C + col], acc[n][2 * hr + 1] + sB[q * C + col + 1]);
      });
      __syncwarp();
      warp_rows_out<C>(y, N, (size_t)q * C, ty, r0, rows, warp, lane);
      __syncwarp(); /* the next slice overwrites these rows */
    }
    __syncthreads(); /* the next iteration's prefetch overwrites this stage */
    stage ^= 1;
  }
}

template <typename T, int C, int NQ, bool IDX>
hx_status lnl_launch(void *y, const void *x, const uint32_t *ridx, const float *g, const float *beta, float eps,
                     const void *w, const void *b, size_t rows, cudaStream_t s, hx_err *err) {
  constexpr size_t smem = lnl_smem<C, NQ>();
  static_assert(smem <= 227 * 1024, "the weights and tiles fit one SM's shared memory");
  auto kern = lnl_kernel<T, C, NQ, IDX>;
  size_t tiles = 0, grid = 0;
  HX_TRY(tile_grid(reinterpret_cast<const void *>(kern), smem, "nl_ln_linear_gpu", rows, &tiles, &grid, err));
  hx_launch(kern, (unsigned)grid, kThreads, smem, s, static_cast<uint16_t *>(y), static_cast<const uint16_t *>(x), ridx,
            g, beta, eps, static_cast<const uint16_t *>(w), static_cast<const uint16_t *>(b), rows, tiles);
  return launched("nl_ln_linear_gpu", err);
}

/* nl_ln_linear_gpu's widths (nl_ln_linear_gpu_takes), N = 3C, rows by ridx or (NULL) in order. */
template <typename T>
hx_status lnl_dispatch(void *y, const void *x, const uint32_t *ridx, const float *g, const float *beta, float eps,
                       const void *w, const void *b, size_t rows, size_t C, cudaStream_t s, hx_err *err) {
#define LNL_(CC)                                                                                                \
  return ridx ? lnl_launch<T, CC, 3, true>(y, x, ridx, g, beta, eps, w, b, rows, s, err)                       \
              : lnl_launch<T, CC, 3, false>(y, x, ridx, g, beta, eps, w, b, rows, s, err)
  switch (C) {
  case 32: LNL_(32);
  case 48: LNL_(48);
  case 64: LNL_(64);
  default: LNL_(96);
  }
#undef LNL_
}

/* ---- Linear + LayerNorm + residual (nl_linear_ln_add_gpu) ------------------------------------------------ */

/*
 * y += LN(x W^T + b) for narrow rows (the end of PTv3's xCPE at C = 32 and 64, after the convolution). The lnl kernel's
 * frame (ln_frame_load) with one C-wide output slice: W ([C, C]), b, gamma and beta in shared memory once, 128-row
 * tiles of x by cp.async (the next tile's under the current one's math), a warp's 16 rows into A fragments, then its 16
 * rows of y copied into the rows x leaves (waited for at the epilogue). The accumulators + b are rounded to dtype (the
 * unfused Linear's stored row) and normalised where they lie: a row's C values in the 4 lanes of a quad, as ln_frag's;
 * y + LN rounded once (nl_layernorm_add_gpu's arithmetic). Bytes: x read, y read and written, against the Linear's row
 * written and read back by the LayerNorm (2 C more a row).
 */
template <int C> constexpr size_t lla_smem() { return lnl_smem<C, 1>(); }

template <typename T, int C>
__global__ void __launch_bounds__(kThreads, C <= 32 ? 4 : 2)
    lla_kernel(uint16_t *__restrict__ y, const uint16_t *__restrict__ x, const uint16_t *__restrict__ w,
               const uint16_t *__restrict__ b, const float *__restrict__ lg, const float *__restrict__ lb, float eps,
               size_t rows, size_t tiles) {
  hx_pdl_wait();
  constexpr int KS = C / 16, NT = C / 8;
  extern __shared__ uint4 smem_raw[];
  uint8_t *base = reinterpret_cast<uint8_t *>(smem_raw);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  size_t tile = blockIdx.x;
  const ln_frame<C, C> f = ln_frame_load<T, C, C, false>(base, w, b, lg, lb, x, nullptr, rows, tile, tiles, tid);
  const uint32_t sW = f.sW, sX = f.sX;
  const float *sB = f.sB, *sG = f.sG, *sBt = f.sBt;
  int stage = 0;

  for (; tile < tiles; tile += gridDim.x) {
    const uint32_t tx = tile_ready<C>(sX, x, nullptr, tile + gridDim.x, tiles, rows, stage, tid);
    uint32_t xa[KS][4];
    warp_a<C>(xa, tx, warp, lane);
    /* the warp's 16 rows of x are in registers: its 16 rows of y go where they were (zeros past `rows`) */
    __syncwarp();
    const size_t r0 = tile * kBM + warp * 16;
    warp_rows_in<C>(tx, y, r0, rows, warp, lane);
    cp_async_commit();

    float acc[NT][4];
    warp_linear<T, C>(acc, xa, sW, 0, lane);
    /* the Linear's row as the unfused path stores it (+ b, rounded to T), then its LayerNorm: fp32, the mean, then
     * the mean of the squared deviations (row g in acc[n][0..1], row g + 8 in acc[n][2..3]) */
    float s[2] = {0.f, 0.f}, q[2] = {0.f, 0.f};
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      const int col = n * 8 + 2 * (lane & 3);
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const float2 v = unpack2<T>(pack2(acc[n][2 * hr] + sB[col], acc[n][2 * hr + 1] + sB[col + 1], T()));
        acc[n][2 * hr] = v.x, acc[n][2 * hr + 1] = v.y;
        s[hr] += v.x + v.y;
      }
    }
    float mean[2], rstd[2];
    quad_sum2(s);
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) mean[hr] = s[hr] / (float)C;
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float d = acc[n][e] - mean[e >> 1];
        q[e >> 1] += d * d;
      }
    quad_sum2(q);
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) rstd[hr] = rsqrtf(q[hr] / (float)C + eps);
    /* y + LN in place in the tile (each value read and written by the same thread), then the warp's rows stored */
    cp_async_wait<0>();
    __syncwarp();
    uint8_t *ty = base + (tx - sW);
    warp_tile_update<T, C>(ty, warp, lane, [&](int n, int hr, int col, float2 old) {
      return make_float2(old.x + (acc[n][2 * hr] - mean[hr]) * rstd[hr] * sG[col] + sBt[col],
                         old.y + (acc[n][2 * hr + 1] - mean[hr]) * rstd[hr] * sG[col + 1] + sBt[col + 1]);
    });
    __syncwarp();
    warp_rows_out<C>(y, C, 0, ty, r0, rows, warp, lane);
    __syncthreads(); /* the next iteration's prefetch overwrites this stage */
    stage ^= 1;
  }
}

template <typename T, int C>
hx_status lla_launch(void *y, const void *x, const void *w, const void *b, const float *g, const float *beta, float eps,
                     size_t rows, cudaStream_t s, hx_err *err) {
  constexpr size_t smem = lla_smem<C>();
  static_assert(smem <= 227 * 1024, "the weights and tiles fit one SM's shared memory");
  auto kern = lla_kernel<T, C>;
  size_t tiles = 0, grid = 0;
  HX_TRY(tile_grid(reinterpret_cast<const void *>(kern), smem, "nl_linear_ln_add_gpu", rows, &tiles, &grid, err));
  hx_launch(kern, (unsigned)grid, kThreads, smem, s, static_cast<uint16_t *>(y), static_cast<const uint16_t *>(x),
            static_cast<const uint16_t *>(w), static_cast<const uint16_t *>(b), g, beta, eps, rows, tiles);
  return launched("nl_linear_ln_add_gpu", err);
}

/* ---- fc1 + SwiGLU as one GEMM (nl_linear_swiglu_gpu) -------------------------------------------------- */

/*
 * A CTA owns 64 hidden columns (blockIdx.x): their 64 act and 64 gate rows of w1 stay in shared memory while it
 * walks 128-row tiles of x (blockIdx.y, then every gridDim.y-th), the next tile's rows copied by cp.async under the
 * current one's math (the whole reduction, C <= 96, in one tile). Per warp a [32, 32] tile of both halves on
 * mma.sync (warps 4 x 2 over rows x hidden; per k16 step 2 A and 4 B ldmatrix.x4 for 16 mmas), the act and gate
 * accumulators of one output in the same thread, so the epilogue is elementwise. Bytes: x once from DRAM (H / 64
 * times from L2), y once (H values a row, against fc1's 2H written, the SwiGLU pass's 2H read and H written);
 * FLOPs 4 rows C H.
 */
/* Bytes of shared memory a CTA of lsw_kernel takes: W tile, two x tiles, 128 fp32 biases. Two CTAs an SM (and 128
 * registers a thread) where two fit, else one. The widths it is built for (C <= 96) take two; at one CTA an SM
 * (C = 160, 192; 0a89dc1) it ran slower than cuBLASLt's fc1 and the SwiGLU pass (H200: 129m's enc1 MLP 2.50
 * against 1.62 ms, 46m's enc2 1.04 against 1.01). */
template <int C> constexpr size_t lsw_smem() { return (size_t)3 * kBM * lay<C / 8>::kStride + 2 * 64 * sizeof(float); }
template <int C> constexpr int lsw_ctas() { return lsw_smem<C>() <= 113 * 1024 ? 2 : 1; }

template <typename T, int C>
__global__ void __launch_bounds__(kThreads, lsw_ctas<C>())
    lsw_kernel(uint16_t *__restrict__ y, const uint16_t *__restrict__ x, const uint16_t *__restrict__ w1,
               const uint16_t *__restrict__ b1, size_t rows, size_t tiles, int H) {
  hx_pdl_wait();
  constexpr int CPR = C / 8, KS = C / 16, BH = 64; /* hidden columns a CTA */
  using L = lay<CPR>;
  constexpr int kStage = kBM * L::kStride;
  extern __shared__ uint4 smem_raw[];
  uint8_t *base = reinterpret_cast<uint8_t *>(smem_raw);
  const uint32_t sW = smem_addr(base), sX = sW + kStage; /* W: 64 act rows, 64 gate rows; X: 2 stages */
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp & 3, wn = warp >> 2;
  const int h0 = (int)blockIdx.x * BH;
#pragma unroll
  for (int i = 0; i < kBM * CPR / kThreads; ++i) {
    const int idx = tid + i * kThreads, r = idx / CPR, c = idx % CPR;
    const int wr = r < BH ? h0 + r : H + h0 + (r - BH);
    cp_async_cg(sW + L::at(r, c), w1 + (size_t)wr * C + c * 8);
  }
  /* the CTA's 64 act and 64 gate biases, fp32, after the x stages */
  float *sB = reinterpret_cast<float *>(base + 3 * kStage);
  if (tid < 2 * BH) {
    const int col = tid < BH ? h0 + tid : H + h0 + (tid - BH);
    sB[tid] = b1 ? unpack2<T>((uint32_t)b1[col]).x : 0.f;
  }
  const int g = lane >> 2, t = lane & 3;
  size_t tile = blockIdx.y;
  int stage = 0;
  if (tile < tiles) load_x<C>(sX, x, nullptr, tile * kBM, rows, tid);
  cp_async_commit();
  const int bn = (lane & 7) + ((lane >> 4) << 3), bk = (lane >> 3) & 1;

  for (; tile < tiles; tile += gridDim.y) {
    const uint32_t tx = tile_ready<C>(sX, x, nullptr, tile + gridDim.y, tiles, rows, stage, tid);

    float acc[2][2][4][4]; /* [act, gate][m16 tile][n8 tile] */
#pragma unroll
    for (int q = 0; q < 2; ++q)
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
          acc[q][mt][nt][0] = acc[q][mt][nt][1] = acc[q][mt][nt][2] = acc[q][mt][nt][3] = 0.f;
#pragma unroll 2
    for (int ks = 0; ks < KS; ++ks) {
      uint32_t a[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
        ldsm_x4(a[mt][0], a[mt][1], a[mt][2], a[mt][3],
                tx + L::at(wm * 32 + mt * 16 + (lane & 15), ks * 2 + (lane >> 4)));
#pragma unroll
      for (int q = 0; q < 2; ++q)
#pragma unroll
        for (int p = 0; p < 2; ++p) {
          uint32_t b[4];
          ldsm_x4(b[0], b[1], b[2], b[3], sW + L::at(q * BH + wn * 32 + p * 16 + bn, ks * 2 + bk));
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
            mma(acc[q][mt][2 * p], a[mt], b[0], b[1], T());
            mma(acc[q][mt][2 * p + 1], a[mt], b[2], b[3], T());
          }
        }
    }

#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const size_t r = tile * kBM + (size_t)(wm * 32 + mt * 16 + g + hr * 8);
        if (r < rows) {
          uint16_t *yr = y + r * (size_t)H + h0 + wn * 32 + 2 * t;
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            const float *ba = sB + wn * 32 + nt * 8 + 2 * t, *bg = ba + BH;
            *reinterpret_cast<uint32_t *>(yr + nt * 8) =
                pack2(swiglu(acc[0][mt][nt][2 * hr] + ba[0], acc[1][mt][nt][2 * hr] + bg[0]),
                      swiglu(acc[0][mt][nt][2 * hr + 1] + ba[1], acc[1][mt][nt][2 * hr + 1] + bg[1]), T());
          }
        }
      }
    __syncthreads(); /* the next iteration's prefetch overwrites this stage */
    stage ^= 1;
  }
}

template <typename T, int C>
hx_status lsw_launch(void *y, const void *x, const void *w1, const void *b1, size_t rows, size_t H, cudaStream_t s,
                     hx_err *err) {
  constexpr size_t smem = lsw_smem<C>();
  static_assert(smem <= 227 * 1024, "the weights and two x tiles fit one SM's shared memory");
  auto kern = lsw_kernel<T, C>;
  size_t most = 0;
  HX_TRY(resident_ctas(reinterpret_cast<const void *>(kern), smem, "nl_linear_swiglu_gpu", &most, err));
  const size_t tiles = (rows + kBM - 1) / kBM, cols = H / 64, want = (most + cols - 1) / cols;
  const size_t ry = tiles < want ? tiles : want < 65535u ? want : 65535u; /* row groups a column tile */
  hx_launch(kern, dim3((unsigned)cols, (unsigned)ry), kThreads, smem, s, static_cast<uint16_t *>(y),
            static_cast<const uint16_t *>(x), static_cast<const uint16_t *>(w1), static_cast<const uint16_t *>(b1),
            rows, tiles, (int)H);
  return launched("nl_linear_swiglu_gpu", err);
}

template <typename T>
hx_status lsw_dispatch(void *y, const void *x, const void *w1, const void *b1, size_t rows, size_t C, size_t H,
                       cudaStream_t s, hx_err *err) {
  switch (C) {
  case 32: return lsw_launch<T, 32>(y, x, w1, b1, rows, H, s, err);
  case 64: return lsw_launch<T, 64>(y, x, w1, b1, rows, H, s, err);
  default: return lsw_launch<T, 96>(y, x, w1, b1, rows, H, s, err);
  }
}

} // namespace

hx_status nl_linear_swiglu_gpu(void *d_y, const void *d_x, const void *d_w1, const void *d_b1, size_t rows, size_t C,
                               size_t H, net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  if (dt != NET_F16 && dt != NET_BF16) return hx_errf(err, HX_EINVAL, "nl_linear_swiglu_gpu: unknown dtype %d", (int)dt);
  if (!nl_linear_swiglu_gpu_takes(C, H))
    return hx_errf(err, HX_EUNSUPPORTED,
                   "nl_linear_swiglu_gpu: C = %zu, H = %zu (the kernels take C = 32, 64, 96 and the multiples of 16 from "
                   "128, H a multiple of 64)",
                   C, H);
  if (rows == 0) return HX_OK;
  if (!d_y || !d_x || !d_w1) return hx_errf(err, HX_EINVAL, "nl_linear_swiglu_gpu: NULL y, x or w1");
  const uintptr_t ax = (uintptr_t)d_x, ay = (uintptr_t)d_y, a1 = (uintptr_t)d_w1;
  if ((ax | ay | a1) % 16) return hx_errf(err, HX_EUNSUPPORTED, "nl_linear_swiglu_gpu: x, y and w1 must be 16-byte aligned");
  if (ax < ay + rows * H * 2 && ay < ax + rows * C * 2) return hx_errf(err, HX_EINVAL, "nl_linear_swiglu_gpu: x and y overlap");
  if (nl_lsw_wg_takes(C, H)) return nl_lsw_wg_launch(d_y, d_x, d_w1, d_b1, rows, C, H, dt, stream, err);
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == NET_F16) return lsw_dispatch<__half>(d_y, d_x, d_w1, d_b1, rows, C, H, s, err);
  return lsw_dispatch<__nv_bfloat16>(d_y, d_x, d_w1, d_b1, rows, C, H, s, err);
}

int nl_linear_swiglu_gpu_runs(size_t C, size_t H) {
  if (!nl_linear_swiglu_gpu_takes(C, H)) return 0;
  hx_err e = {HX_OK, ""};
  return nl_lsw_wg_takes(C, H) ? nwg_sm90a_check("nl_linear_swiglu_gpu_runs", &e) == HX_OK : 1;
}

namespace {
template <int C, int H, bool SWI> size_t mlp_smem(int ln) {
  return ln ? smem_bytes<C, H, SWI, true>() : smem_bytes<C, H, SWI, false>();
}
} // namespace

/* nl_mlp_gpu_takes' widths, for the refusals of both entries */
static const char kTakes[] = "GELU H = 4C at C = 32, 64, 128, 256, SwiGLU H = 4C at C = 32, 48, 64, 80, 96, 128, 160, 192";

int nl_mlp_gpu_runs(size_t C, size_t H, nl_mlp_kind kind, int ln) {
  if (!nl_mlp_gpu_takes(C, H, kind)) return 0;
  hx_err e = {HX_OK, ""};
  if (nl_mlp_wg_takes(C, kind)) return nwg_sm90a_check("nl_mlp_gpu_runs", &e) == HX_OK;
  size_t smem = 0; /* mlp_dispatch's kernel for (C, kind) */
  if (kind == NL_MLP_GELU) smem = C == 32 ? mlp_smem<32, 128, false>(ln) : mlp_smem<64, 256, false>(ln);
  else if (C == 32) smem = mlp_smem<32, 128, true>(ln);
  else if (C == 48) smem = mlp_smem<48, 192, true>(ln);
  else if (C == 64) smem = mlp_smem<64, 256, true>(ln);
  else smem = mlp_smem<80, 320, true>(ln);
  int dev = 0, optin = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return smem <= (size_t)optin;
}

hx_status nl_mlp_gpu(void *d_y, const void *d_x, const void *d_w1, const void *d_b1, const void *d_w2, const void *d_b2,
                     size_t rows, size_t C, size_t H, nl_mlp_kind kind, void *d_scratch, size_t *scratch_bytes,
                     net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  if (dt != NET_F16 && dt != NET_BF16) return hx_errf(err, HX_EINVAL, "nl_mlp_gpu: unknown dtype %d", (int)dt);
  if (kind != NL_MLP_GELU && kind != NL_MLP_SWIGLU) return hx_errf(err, HX_EINVAL, "nl_mlp_gpu: unknown kind %d", (int)kind);
  if (!nl_mlp_gpu_takes(C, H, kind))
    return hx_errf(err, HX_EUNSUPPORTED, "nl_mlp_gpu: C = %zu, H = %zu (the kernels take %s)", C, H, kTakes);
  if (!scratch_bytes) return hx_errf(err, HX_EINVAL, "nl_mlp_gpu: NULL scratch size");
  if (!d_scratch)
    return nl_mlp_wg_takes(C, kind) ? nl_mlp_wg_scratch(rows, C, kind, scratch_bytes, err) : (*scratch_bytes = 0, HX_OK);
  if (rows == 0) return HX_OK;
  if (!d_y || !d_x || !d_w1 || !d_w2) return hx_errf(err, HX_EINVAL, "nl_mlp_gpu: NULL y, x, w1 or w2");
  const uintptr_t ax = (uintptr_t)d_x, ay = (uintptr_t)d_y, a1 = (uintptr_t)d_w1, a2 = (uintptr_t)d_w2;
  if ((ax | ay | a1 | a2) % 16)
    return hx_errf(err, HX_EUNSUPPORTED, "nl_mlp_gpu: x, y, w1 and w2 must be 16-byte aligned");
  const size_t bytes = rows * C * 2;
  if (ax < ay + bytes && ay < ax + bytes) return hx_errf(err, HX_EINVAL, "nl_mlp_gpu: x and y overlap");
  if (nl_mlp_wg_takes(C, kind))
    return nl_mlp_wg_launch(d_y, d_x, d_w1, d_b1, d_w2, d_b2, rows, C, kind, NULL, NULL, 0.f, d_scratch, *scratch_bytes,
                            dt, stream, err);
  cudaStream_t s = (cudaStream_t)stream;
  const ln_args none = {NULL, NULL, 0.f};
  if (dt == NET_F16) return mlp_dispatch<__half, false>(d_y, d_x, d_w1, d_b1, d_w2, d_b2, rows, C, kind, none, s, err);
  return mlp_dispatch<__nv_bfloat16, false>(d_y, d_x, d_w1, d_b1, d_w2, d_b2, rows, C, kind, none, s, err);
}

hx_status nl_ln_mlp_gpu(void *d_y, const float *d_g, const float *d_beta, float eps, const void *d_w1, const void *d_b1,
                        const void *d_w2, const void *d_b2, size_t rows, size_t C, size_t H, nl_mlp_kind kind,
                        void *d_scratch, size_t *scratch_bytes, net_dtype dt, struct CUstream_st *stream,
                        hx_err *err) {
  if (dt != NET_F16 && dt != NET_BF16) return hx_errf(err, HX_EINVAL, "nl_ln_mlp_gpu: unknown dtype %d", (int)dt);
  if (!(eps >= 0.0f) || isinf(eps))
    return hx_errf(err, HX_EINVAL, "nl_ln_mlp_gpu: eps = %g (must be finite, >= 0)", (double)eps);
  if (kind != NL_MLP_GELU && kind != NL_MLP_SWIGLU) return hx_errf(err, HX_EINVAL, "nl_ln_mlp_gpu: unknown kind %d", (int)kind);
  if (!nl_mlp_gpu_takes(C, H, kind))
    return hx_errf(err, HX_EUNSUPPORTED, "nl_ln_mlp_gpu: C = %zu, H = %zu (the kernels take %s)", C, H, kTakes);
  if (!scratch_bytes) return hx_errf(err, HX_EINVAL, "nl_ln_mlp_gpu: NULL scratch size");
  if (!d_scratch)
    return nl_mlp_wg_takes(C, kind) ? nl_mlp_wg_scratch(rows, C, kind, scratch_bytes, err) : (*scratch_bytes = 0, HX_OK);
  if (rows == 0) return HX_OK;
  if (!d_y || !d_g || !d_beta || !d_w1 || !d_w2)
    return hx_errf(err, HX_EINVAL, "nl_ln_mlp_gpu: NULL y, gamma, beta, w1 or w2");
  if (((uintptr_t)d_y | (uintptr_t)d_w1 | (uintptr_t)d_w2) % 16)
    return hx_errf(err, HX_EUNSUPPORTED, "nl_ln_mlp_gpu: y, w1 and w2 must be 16-byte aligned");
  if (nl_mlp_wg_takes(C, kind))
    return nl_mlp_wg_launch(d_y, NULL, d_w1, d_b1, d_w2, d_b2, rows, C, kind, d_g, d_beta, eps, d_scratch,
                            *scratch_bytes, dt, stream, err);
  cudaStream_t s = (cudaStream_t)stream;
  const ln_args ln = {d_g, d_beta, eps};
  if (dt == NET_F16) return mlp_dispatch<__half, true>(d_y, NULL, d_w1, d_b1, d_w2, d_b2, rows, C, kind, ln, s, err);
  return mlp_dispatch<__nv_bfloat16, true>(d_y, NULL, d_w1, d_b1, d_w2, d_b2, rows, C, kind, ln, s, err);
}

hx_status nl_ln_linear_gpu(void *d_y, const void *d_x, const uint32_t *d_idx, size_t x_rows, const float *d_g,
                           const float *d_beta, float eps, const void *d_w, const void *d_b, size_t rows, size_t C,
                           size_t N, net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  if (dt != NET_F16 && dt != NET_BF16) return hx_errf(err, HX_EINVAL, "nl_ln_linear_gpu: unknown dtype %d", (int)dt);
  if (!(eps >= 0.0f) || isinf(eps))
    return hx_errf(err, HX_EINVAL, "nl_ln_linear_gpu: eps = %g (must be finite, >= 0)", (double)eps);
  if (!nl_ln_linear_gpu_takes(C, N))
    return hx_errf(err, HX_EUNSUPPORTED,
                   "nl_ln_linear_gpu: C = %zu, N = %zu (the kernel takes C = 32, 48, 64 and 96, N = 3C)", C, N);
  if (rows == 0) return HX_OK;
  if (!d_y || !d_x || !d_g || !d_beta || !d_w)
    return hx_errf(err, HX_EINVAL, "nl_ln_linear_gpu: NULL y, x, gamma, beta or w");
  if (!d_idx && x_rows < rows)
    return hx_errf(err, HX_EINVAL, "nl_ln_linear_gpu: %zu rows in order from x's %zu", rows, x_rows);
  const uintptr_t ax = (uintptr_t)d_x, ay = (uintptr_t)d_y;
  if ((ax | ay | (uintptr_t)d_w) % 16)
    return hx_errf(err, HX_EUNSUPPORTED, "nl_ln_linear_gpu: x, y and w must be 16-byte aligned");
  if (ax < ay + rows * N * 2 && ay < ax + x_rows * C * 2) return hx_errf(err, HX_EINVAL, "nl_ln_linear_gpu: x and y overlap");
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == NET_F16) return lnl_dispatch<__half>(d_y, d_x, d_idx, d_g, d_beta, eps, d_w, d_b, rows, C, s, err);
  return lnl_dispatch<__nv_bfloat16>(d_y, d_x, d_idx, d_g, d_beta, eps, d_w, d_b, rows, C, s, err);
}

hx_status nl_linear_ln_add_gpu(void *d_y, const void *d_x, const void *d_w, const void *d_b, const float *d_g,
                               const float *d_beta, float eps, size_t rows, size_t C, net_dtype dt,
                               struct CUstream_st *stream, hx_err *err) {
  if (dt != NET_F16 && dt != NET_BF16) return hx_errf(err, HX_EINVAL, "nl_linear_ln_add_gpu: unknown dtype %d", (int)dt);
  if (!(eps >= 0.0f) || isinf(eps))
    return hx_errf(err, HX_EINVAL, "nl_linear_ln_add_gpu: eps = %g (must be finite, >= 0)", (double)eps);
  if (!nl_linear_ln_add_gpu_takes(C))
    return hx_errf(err, HX_EUNSUPPORTED, "nl_linear_ln_add_gpu: C = %zu (the kernel takes C = 32 and 64)", C);
  if (rows == 0) return HX_OK;
  if (!d_y || !d_x || !d_w || !d_g || !d_beta)
    return hx_errf(err, HX_EINVAL, "nl_linear_ln_add_gpu: NULL y, x, w, gamma or beta");
  const uintptr_t ax = (uintptr_t)d_x, ay = (uintptr_t)d_y;
  if ((ax | ay | (uintptr_t)d_w) % 16)
    return hx_errf(err, HX_EUNSUPPORTED, "nl_linear_ln_add_gpu: x, y and w must be 16-byte aligned");
  const size_t bytes = rows * C * 2;
  if (ax < ay + bytes && ay < ax + bytes) return hx_errf(err, HX_EINVAL, "nl_linear_ln_add_gpu: x and y overlap");
  cudaStream_t s = (cudaStream_t)stream;
  const bool f16 = dt == NET_F16;
  if (C == 32)
    return f16 ? lla_launch<__half, 32>(d_y, d_x, d_w, d_b, d_g, d_beta, eps, rows, s, err)
               : lla_launch<__nv_bfloat16, 32>(d_y, d_x, d_w, d_b, d_g, d_beta, eps, rows, s, err);
  return f16 ? lla_launch<__half, 64>(d_y, d_x, d_w, d_b, d_g, d_beta, eps, rows, s, err)
             : lla_launch<__nv_bfloat16, 64>(d_y, d_x, d_w, d_b, d_g, d_beta, eps, rows, s, err);
}
