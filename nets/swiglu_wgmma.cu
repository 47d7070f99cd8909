/*
 * swiglu_wgmma.cu - nl_linear_swiglu_gpu at the wide rows (C >= 128, a multiple of 16; H a multiple of 64): Flash3D's
 * fc1 + SwiGLU as one warp-specialised Hopper GEMM, y [rows, H] = silu(x w1[:H]^T + b1[:H]) (x w1[H:]^T + b1[H:]);
 * sm_90a only. Reference: nl_linear_swiglu_cpu (layers.c); the host entry and its argument checks are mlp.cu's,
 * which calls nl_lsw_wg_launch here.
 *
 * Why (docs/layers.md, "What bounds Flash3D's MLP"): at C = 400 and 784 (flash3d-46m's enc3, dec4, enc4) the whole
 * MLP does not fit one kernel (O would be m64n400 a consumer), and the unfused fc1 writes the 2H-wide
 * pre-activations, a SwiGLU pass reads them and writes H, fc2 reads those: 8H bytes a row more than fc1 with the
 * SwiGLU in its epilogue. mlp.cu's mma.sync kernel for that keeps the reduction in shared memory (C <= 96).
 *
 * Design: a GEMM of 128-row x tiles against 128 hidden columns, both halves: per tile its act rows of w1 [h0, h0 + 128)
 * and its gate rows (H further), so a thread holds the act and gate accumulators of the same outputs and the epilogue
 * is elementwise. Persistent CTAs (one an SM: 197 KB of shared memory) walk tiles t = blockIdx.x + i gridDim.x, column
 * tiles fastest, so the CTAs at work share their x row tiles in L2 (w1, 2.5 MB at C = 400 and 9.8 MB at 784, stays
 * there). Warpgroup 0 (the producer; one thread) streams per tile and 64-column k-block one ring item: the x box
 * [128][64] and the two w1 boxes [128][64], by TMA in the 128-byte swizzle (columns past C, rows past `rows` and hidden
 * rows past H zero-filled), into a ring of 4 slots; "full" completes when the item's bytes land (the producer's
 * expect_tx), "empty" when the 8 consumer warps have retired the wgmmas reading it (one lane each). Warpgroups 1 and 2
 * (the consumers) own 64 rows of the tile each: per item, 4 k16 steps of one m64n256k16 wgmma from shared memory (B:
 * the act box and the gate box, back to back); the item's wgmmas committed as a group, then the previous group waited
 * for (wgmma.wait_group 1) and its slot released, so one item's copies and the next's wgmmas overlap the current. The
 * epilogue adds b1 (the thread's 64 values loaded as the tile starts), takes silu(a) g in fp32 (silu on the hardware
 * tanh, as mlp.cu), rounds once and stores the pairs straight from the accumulators, while the producer already fills
 * the ring for the next tile. Registers a consumer thread: 128 accumulators and 32 bias pairs under setmaxnreg 232.
 * Measured (docs/layers.md, "fc1 + SwiGLU on wgmma"): L2 76% and the tensor pipe 56% busy at C = 400, ~410 TFLOP/s;
 * clusters of two CTAs sharing the w1 boxes by TMA multicast (a third less L2 traffic) ran no faster.
 * Invariant: each y value is the fp32 sum over the k-blocks in increasing order, k16 by k16, + b1, rounded once: runs
 * agree bit for bit.
 */
#include "nets/nets.h"
#include "nets/spconv_device.cuh"
#include "nets/wgmma_device.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace nl_lsw_wg {

constexpr int BM = 128, BN = 128, STAGES = 4, THREADS = 384; /* rows and hidden columns a tile; ring slots */
constexpr int X_BYTES = BM * 128, W_BYTES = BN * 128;     /* a [128][64] box of 2-byte values */
constexpr int STAGE = X_BYTES + 2 * W_BYTES;              /* x, act rows, gate rows: 48 KB */
constexpr size_t SMEM = 1024 + (size_t)STAGES * STAGE + 2u * STAGES * 8u;
static_assert(SMEM <= 227u * 1024u, "the ring fits a CTA's shared memory");

struct Params {
  uint16_t *y;        /* [rows, H] */
  const uint16_t *b1; /* [2H] or NULL */
  uint32_t rows, H, kb, col_tiles, tiles; /* kb: 64-column blocks of C (the last zero-filled past C) */
};

using spc_dev::pack2;
using spc_dev::smem_addr;
using spc_dev::swiglu;
using spc_dev::unpack2;

#if NWG_ON
using namespace nwg;

/* setmaxnreg: 168 registers a thread at entry (65536 / 384); 128 x 40 + 256 x 232 <= 384 x 168 */
constexpr int PREG = 40, CREG = 232;

template <typename T>
__global__ void __launch_bounds__(THREADS, 1)
    lsw_wg_kernel(const Params p, const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap ta,
                  const __grid_constant__ CUtensorMap tg) {
  hx_pdl_wait();
  extern __shared__ uint4 smem_raw[];
  const uint32_t s0 = (smem_addr(smem_raw) + 1023u) & ~1023u; /* the 128-byte swizzle's boxes: 1024-byte aligned */
  const uint32_t sFull = s0 + (uint32_t)(STAGES * STAGE), sEmpty = sFull + 8u * STAGES;
  const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = tid >> 7;
  if (tid == 0) {
#pragma unroll
    for (int i = 0; i < STAGES; ++i) {
      mbar_init(sFull + 8u * i, 1);  /* the producer's expect_tx */
      mbar_init(sEmpty + 8u * i, 8); /* one arrival per consumer warp */
    }
    mbar_init_fence();
  }
  __syncthreads(); /* the only CTA-wide barrier */

  if (wg == 0) {
    setmaxnreg_dec<PREG>();
    if (tid == 0) {
      uint32_t it = 0;
#pragma unroll 1
      for (uint32_t t = blockIdx.x; t < p.tiles; t += gridDim.x) {
        const int row = (int)((t / p.col_tiles) * BM), col = (int)((t % p.col_tiles) * BN);
#pragma unroll 1
        for (uint32_t k = 0; k < p.kb; ++k, ++it) {
          const uint32_t slot = it % STAGES, dst = s0 + slot * (uint32_t)STAGE, full = sFull + 8u * slot;
          mbar_wait(sEmpty + 8u * slot, ((it / STAGES) & 1u) ^ 1u);
          mbar_expect_tx(full, (uint32_t)STAGE); /* zero-filled parts of a box count their bytes too */
          tma_2d(dst, &tx, (int)k * 64, row, full);
          tma_2d(dst + (uint32_t)X_BYTES, &ta, (int)k * 64, col, full);
          tma_2d(dst + (uint32_t)(X_BYTES + W_BYTES), &tg, (int)k * 64, col, full);
        }
      }
    }
    return; /* the CTA outlives the last copies: the consumers wait on every item's full barrier */
  }

  setmaxnreg_inc<CREG>();
  const int cw = wg - 1, wq = warp & 3;
  float d[128]; /* [0, 64): the act accumulators, [64, 128): the gate's of the same outputs */
  uint32_t it = 0;
#pragma unroll 1
  for (uint32_t t = blockIdx.x; t < p.tiles; t += gridDim.x) {
    /* the thread's biases, act and gate pairs of its columns 8 nb + 2 (lane % 4) + {0, 1}, loaded before the
     * mainloop, which hides their latency (in the epilogue they were its first stall) */
    const uint32_t r0 = (t / p.col_tiles) * BM + (uint32_t)(cw * 64 + wq * 16 + (lane >> 2));
    const uint32_t c0 = (t % p.col_tiles) * BN + (uint32_t)(2 * (lane & 3));
    uint32_t bia[16], big[16];
#pragma unroll
    for (int nb = 0; nb < 16; ++nb) {
      const uint32_t col = c0 + (uint32_t)(nb * 8);
      const bool ok = p.b1 && col < p.H;
      bia[nb] = ok ? __ldg(reinterpret_cast<const uint32_t *>(p.b1 + col)) : 0u;
      big[nb] = ok ? __ldg(reinterpret_cast<const uint32_t *>(p.b1 + p.H + col)) : 0u;
    }
#pragma unroll
    for (int e = 0; e < 128; ++e) pin(d[e]);
    wg_fence();
#pragma unroll 1
    for (uint32_t k = 0; k < p.kb; ++k, ++it) {
      const uint32_t slot = it % STAGES, base = s0 + slot * (uint32_t)STAGE;
      mbar_wait(sFull + 8u * slot, (it / STAGES) & 1u);
      /* the act box and the gate box lie back to back: one B of 256 rows, so one m64n256 wgmma gives both halves
       * (two m64n128 from the one A read A twice: 12 KB of shared memory a k16 step against 10) */
      const uint32_t xa = base + (uint32_t)(cw * 64 * 128), wa = base + (uint32_t)X_BYTES;
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        wg_ss<T, 256>(d, wg_desc(xa + (uint32_t)kk * 32u, 16, 1024, 1), wg_desc(wa + (uint32_t)kk * 32u, 16, 1024, 1),
                      k > 0 || kk > 0);
      wg_commit();
      if (k > 0) {
        wg_wait<1>(); /* the previous item's wgmmas done: its slot back to the producer */
        if (lane == 0) mbar_arrive(sEmpty + 8u * ((it - 1u) % STAGES));
      }
    }
    wg_wait<0>();
#pragma unroll
    for (int e = 0; e < 128; ++e) pin(d[e]);
    if (lane == 0) mbar_arrive(sEmpty + 8u * ((it - 1u) % STAGES));

    /* epilogue: the thread's columns 8 nb + 2 (lane % 4) + {0, 1} of rows lane / 4 and + 8 of its warp's 16 */
#pragma unroll
    for (int nb = 0; nb < 16; ++nb) {
      const uint32_t col = c0 + (uint32_t)(nb * 8);
      if (col >= p.H) continue; /* the last column tile's half past H (H a multiple of 64) */
      const float2 ba = unpack2<T>(bia[nb]), bg = unpack2<T>(big[nb]);
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const uint32_t r = r0 + (uint32_t)(hr * 8);
        if (r >= p.rows) continue;
        const float *a = d + nb * 4 + 2 * hr, *g = a + 64;
        const uint32_t v = pack2(swiglu(a[0] + ba.x, g[0] + bg.x), swiglu(a[1] + ba.y, g[1] + bg.y), T());
        *reinterpret_cast<uint32_t *>(p.y + (size_t)r * p.H + col) = v;
      }
    }
  }
}

#else /* !NWG_ON */

template <typename T>
__global__ void __launch_bounds__(THREADS, 1)
    lsw_wg_kernel(const Params p, const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap ta,
                  const __grid_constant__ CUtensorMap tg) {
  hx_pdl_wait();
  (void)p, (void)tx, (void)ta, (void)tg;
  __trap(); /* never launched (nwg_sm90a_check): y left as it was would be silent garbage */
}

#endif /* NWG_ON */

template <typename T>
hx_status launch(const void *x, const void *w1, Params p, size_t C, cudaStream_t stream, const char *who,
                 hx_err *err) {
  auto kern = lsw_wg_kernel<T>;
  int sms = 0;
  HX_TRY(nwg::sm_count(&sms, err));
  HX_CUDA(err, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));
  /* the descriptors travel by value as kernel parameters, so a captured graph keeps its own */
  CUtensorMap tx, ta, tg;
  const uint64_t H = p.H;
  HX_TRY(nwg::tensor_map(&tx, x, (uint64_t)p.rows, (uint64_t)C, (uint32_t)BM, 64u, who, err));
  HX_TRY(nwg::tensor_map(&ta, w1, H, (uint64_t)C, (uint32_t)BN, 64u, who, err));
  HX_TRY(nwg::tensor_map(&tg, static_cast<const uint16_t *>(w1) + H * C, H, (uint64_t)C, (uint32_t)BN, 64u, who, err));
  const uint32_t grid = p.tiles < (uint32_t)sms ? p.tiles : (uint32_t)sms;
  hx_launch(kern, grid, THREADS, SMEM, stream, p, tx, ta, tg);
  HX_LAUNCHED(err, who);
  return HX_OK;
}

} // namespace nl_lsw_wg

extern "C" hx_status nl_lsw_wg_launch(void *d_y, const void *d_x, const void *d_w1, const void *d_b1, size_t rows,
                                      size_t C, size_t H, net_dtype dt, struct CUstream_st *stream, hx_err *err) {
  const char *who = "nl_linear_swiglu_gpu";
  HX_TRY(nwg_sm90a_check(who, err)); /* first: HX_EUNSUPPORTED sends the caller to the unfused path */
  if (!nl_lsw_wg_takes(C, H))
    return hx_errf(err, HX_EINVAL, "%s: the wgmma kernel does not take C = %zu, H = %zu", who, C, H);
  /* tile arithmetic in 32 bits: row tiles x column tiles, and TMA's coordinates, below 2^31 */
  const uint64_t row_tiles = (rows + nl_lsw_wg::BM - 1) / nl_lsw_wg::BM;
  const uint64_t col_tiles = (H + nl_lsw_wg::BN - 1) / nl_lsw_wg::BN;
  if (rows > 0x7FFFFF00u || H > 0x7FFFFF00u || row_tiles * col_tiles > 0x7FFFFFFFu)
    return hx_errf(err, HX_EINVAL, "%s: %zu rows of %zu hidden values (at most 2^31 - 256 rows, 2^31 tiles)", who,
                   rows, H);
  const nl_lsw_wg::Params p{static_cast<uint16_t *>(d_y), static_cast<const uint16_t *>(d_b1), (uint32_t)rows,
                            (uint32_t)H,  (uint32_t)((C + 63) / 64),             (uint32_t)col_tiles,
                            (uint32_t)(row_tiles * col_tiles)};
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == NET_BF16) return nl_lsw_wg::launch<__nv_bfloat16>(d_x, d_w1, p, C, s, who, err);
  return nl_lsw_wg::launch<__half>(d_x, d_w1, p, C, s, who, err);
}
