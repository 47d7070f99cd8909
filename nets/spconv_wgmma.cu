/*
 * spconv_wgmma.cu - sparse convolution v6: v3's rows (sorted by neighbour mask) on a warp-specialised Hopper
 * kernel, wgmma with both operands in shared memory; sm_90a only. The CPU reference is spc_conv_cpu
 * (spconv.c); the host entry spc_conv_v6 and its checks are in spconv.cu, which calls spc_v6_launch here.
 *
 * Computes what v1 and v3 compute: y[i] = b + sum over offsets o of x[nbr[i, o]] W_o^T (fp32 sums, one
 * rounding to the dtype), for k = 3 maps (K = 27) and widths in % 32 == 0, out % 32 == 0.
 *
 * Why (docs/spconv.md, "What the counters say"): v3's mma.sync kernel is latency-bound at 16 warps an SM, each
 * warp waiting on its own ldmatrix -> mma chain; the tensor pipe is busy 4-28% of the cycles. Here the tensor
 * work is issued by two consumer warpgroups as wgmma, which read A and B from shared memory themselves (no
 * ldmatrix, no fragments in registers), and the gathers are issued by a third warpgroup, so neither waits on
 * the other except through the ring.
 *
 * Design: one CTA = BM output rows (tile rows in v3's order: tile row t is output row perm[t]) x BN output
 * channels, 3 warpgroups. Warpgroup 0 (the producer, setmaxnreg down) walks the steps s = (active offset o,
 * input chunk of BK channels) and per step copies A[r] = x[nbr[r, o]][chunk] (cp.async, zero fill where a row
 * has no neighbour at o; nothing for a 64-row block that has none at o) and B = W_o[c0 .. c0 + BN)[chunk]
 * (one TMA tile copy, issued by thread 0 after its expect_tx of B's bytes) into ring slot s % STAGES in the
 * wgmma K-major swizzled layout (128-byte swizzle at BK = 64, 64-byte at 32), then arrives on the slot's "full"
 * mbarrier with cp.async.mbarrier.arrive.noinc (128 arrivals, and the expect_tx's: 129). The weights came by
 * cp.async too at first: 16 of a producer thread's 24 copies a step at 256-channel slices, and the forward's
 * convolutions took 1.4 ms longer (docs/spconv.md, "Where v6's time goes"). Warpgroups 1
 * and 2 (the consumers, setmaxnreg up) own MI blocks of 64 rows each; per step they wait on "full", issue
 * m64nBNk16 wgmmas for each of their blocks that has a neighbour at o, commit, and wait for the previous
 * step's group (wgmma.wait_group 1) before one lane per warp arrives on that step's slot's "empty" mbarrier
 * (8 arrivals), so one step's tensor work is always in flight while the next slot fills. The prologue (all
 * threads, the only CTA-wide barriers) reads the tile's map rows into shared memory, the offset mask of each
 * 64-row block and the tile's active offsets (increasing o).
 * Ring protocol (as attention v9's, kernels/attn_wgmma.cu): step s uses slot s % STAGES for the u = s /
 * STAGES-th time; "full" completes phase u when its 128 producer threads' copies and the TMA's bytes have
 * landed (consumers wait for parity u & 1), "empty" completes phase u when both consumers have retired step s
 * (the producer waits for parity (u & 1) ^ 1 before refilling: a fresh mbarrier's "previous" phase counts as
 * complete).
 * Invariant: each output is the sum over its tile's steps in increasing (o, chunk), k16 by k16, in fp32: the
 * schedule never changes the sums, so runs agree bit for bit (the tests assert it); not v3's bits (the
 * tensor core's order inside a k16 step differs between mma.sync and wgmma), within the same tolerance.
 *
 * Tiles (Tiles<BN, BK>): BN = the widest of 256, 128, 64, 32 dividing out; BK = 64 or 32 by in; two CTAs an SM
 * at BN <= 64, one above; MI = 2 only at BN = 128 (MI * BN / 2 <= 128 accumulator registers a thread), else 1, so
 * BM = 128 MI. A stage is BM * BK * 2 + BN * BK * 2 bytes; STAGES the most (up to 8) that fit BUDGET (228 KB / CTAS
 * less 1 KB) with the map rows (BM x 27 x 4).
 *
 * The cp.async copies, the tile swizzle and the output packing are v1's (nets/spconv_device.cuh); the wgmma,
 * mbarrier and TMA wrappers nets' Hopper kernels share (nets/wgmma_device.cuh). Gating: the wgmma code exists
 * only in the sm_90a image (NWG_ON); spc_v6_check refuses (HX_EUNSUPPORTED) unless the device is compute
 * capability 9.0, a probe kernel of this file reports that the loaded image is sm_90a, and the driver has the
 * TMA descriptor encoder (nwg_sm90a_check).
 */
#include "nets/nets.h"
#include "nets/spconv_internal.h"
#include "nets/spconv_device.cuh"
#include "nets/wgmma_device.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>


/* a named namespace: nvcc warns of unused members of templates with internal linkage in the images without
 * the kernel body */
namespace spc_v6 {

constexpr uint32_t kK = 27;          /* k = 3 maps only */
constexpr int kSmemMax = 227 * 1024, kSmemSM = 228 * 1024; /* sm_90: per CTA (dynamic), per SM */

struct Params {
  void *y;               /* [n, out] dtype */
  const void *x;         /* [n, in] dtype */
  const void *w;         /* [K][out][in] dtype: W_o row-major [out, in], K-major B */
  const float *b;        /* [out] fp32 or NULL */
  const int32_t *nbr;    /* [n, K]: input row or -1; entries outside [0, n) read as -1 */
  const uint32_t *perm;  /* tile row t is output row perm[t] (a permutation of [0, n)) */
  const uint32_t *tiles; /* NULL (last-first), or the tiles in launch order (spc_mask_tiles_gpu, BM rows each) */
  uint32_t n, in, out, slices;
};

template <int BN_, int BK_> struct Tiles {
  static constexpr int BN = BN_, BK = BK_;
  /* CTAS resident an SM: two at output slices of <= 64 channels (one CTA's prologue, epilogue and ring
   * latency under the other's tensor work), one above, where the accumulators need the registers */
  static constexpr int CTAS = BN <= 64 ? 2 : 1;
  static constexpr int MI = CTAS == 2 || BN == 256 ? 1 : 2, BM = 128 * MI, BLOCKS = BM / 64;
  /* setmaxnreg: the allocation at entry under __launch_bounds__(384, CTAS) is 168 (one CTA) or 80 (two)
   * a thread; the producer's release covers the consumers' increase: 128 x 40 + 256 x 232 = 384 x 168,
   * 128 x 40 + 256 x 96 <= 384 x 80 */
  static constexpr int PREG = 40, CREG = CTAS == 2 ? 96 : 232;
  static constexpr int RB = BK * 2;                 /* bytes per swizzle atom row */
  static constexpr int MODE = BK == 64 ? 1 : 2;     /* descriptor swizzle: 128 B or 64 B */
  static constexpr int CPR = BK / 8;                /* 16-byte chunks per row */
  static constexpr int A_BYTES = BM * RB, B_BYTES = BN * RB, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int MAP_BYTES = BM * (int)kK * 4;
  static constexpr int TAIL = MAP_BYTES + 48 + 32 + 16 + 8 + 2 * 8 * 8; /* map, masks, offsets, count, bars */
  static constexpr int BUDGET = kSmemSM / CTAS - 1024; /* per CTA, less the 1 KB the system reserves */
  static constexpr int FIT = (BUDGET - 1024 - TAIL) / STAGE_BYTES;
  static constexpr int STAGES = FIT > 8 ? 8 : FIT;
  static constexpr size_t SMEM = 1024 + (size_t)STAGES * STAGE_BYTES + TAIL;
  static_assert(STAGES >= 3, "a slot for each of two steps in flight and one filling");
  static_assert(STAGE_BYTES % 1024 == 0 && A_BYTES % 1024 == 0, "slots and B tiles on swizzle-atom bounds");
  static_assert(MI * BN / 2 <= 128, "accumulators within the consumers' registers");
  static_assert(SMEM <= (size_t)kSmemMax, "within a CTA's shared memory");
  static_assert(3 * BLOCKS * 4 <= 48 && STAGES <= 8, "TAIL's room for the masks and the mbarriers");
};

using spc_dev::cp_async_cg;
using spc_dev::pack2;
using spc_dev::smem_addr;
using spc_dev::swz;

#if NWG_ON
/* ---- sm_90a device code --------------------------------------------------------------------------- */

using nwg::cp_async_arrive_noinc;
using nwg::fence_proxy_async;
using nwg::mbar_arrive;
using nwg::mbar_expect_tx;
using nwg::mbar_init;
using nwg::mbar_init_fence;
using nwg::mbar_wait;
using nwg::pin;
using nwg::setmaxnreg_dec;
using nwg::setmaxnreg_inc;
using nwg::tma_2d;
using nwg::wg_commit;
using nwg::wg_desc;
using nwg::wg_fence;
using nwg::wg_ss;
using nwg::wg_wait;

template <typename T, int BN, int BK>
__global__ void __launch_bounds__(384, Tiles<BN, BK>::CTAS)
    conv_wg_kernel(const Params p, const __grid_constant__ CUtensorMap tm_w) {
  hx_pdl_wait();
  using Tr = Tiles<BN, BK>;
  constexpr int BM = Tr::BM, MI = Tr::MI, BLOCKS = Tr::BLOCKS, ST = Tr::STAGES, CPR = Tr::CPR;
  constexpr int NACC = BN / 2;
  extern __shared__ uint4 smem_raw[];
  const uint32_t s0 = (smem_addr(smem_raw) + 1023u) & ~1023u;
  unsigned char *g0 = reinterpret_cast<unsigned char *>(smem_raw) + (s0 - smem_addr(smem_raw));
  int32_t *nbr_s = reinterpret_cast<int32_t *>(g0 + ST * Tr::STAGE_BYTES);
  uint32_t *wmask = reinterpret_cast<uint32_t *>(nbr_s + BM * kK); /* per 32-row warp of the tile, then */
  uint32_t *bmask = wmask + 2 * BLOCKS;                              /* per 64-row block */
  uint8_t *act = reinterpret_cast<uint8_t *>(bmask + BLOCKS);
  int *nact = reinterpret_cast<int *>(act + 32);
  const uint32_t sBar = (smem_addr(nact + 4) + 7u) & ~7u, sFull = sBar, sEmpty = sBar + 8u * ST;

  const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = tid >> 7;
  /* Heaviest tiles first, so that the block scheduler, which hands out CTAs in launch order, leaves the
   * lightest for the last wave: the map's tile order (most active offsets first), or else last-first (in the
   * ascending mask order the tiles near the end name more offsets: the higher bits set). Last-first against the
   * tiles in order, PTv3's 600k forward (H200): xCPE -0.3 ms, most at one CTA an SM (C >= 128), where a
   * level's 260-560 tiles are 2-5 waves of 132. Each tile's sums are unchanged (bit for bit). */
  const uint32_t q = blockIdx.x / p.slices, slice = blockIdx.x - q * p.slices;
  const uint32_t tile = p.tiles ? __ldg(p.tiles + q) : gridDim.x / p.slices - 1u - q;
  const uint32_t t0 = tile * (uint32_t)BM, c0 = slice * (uint32_t)BN; /* first tile row, output column */
  const uint32_t rows = p.n - t0 < (uint32_t)BM ? p.n - t0 : (uint32_t)BM;

  /* prologue: mbarriers, the tile's map rows, each 64-row block's offset mask, the tile's active offsets.
   * The map rows in two rounds of loads (every thread's perm entries, then its map entries), not one
   * dependent pair per entry: the prologue runs before any tensor work of the CTA. */
  if (tid == 0) {
#pragma unroll
    for (int i = 0; i < ST; ++i) {
      /* one cp.async arrival per producer thread (the rows) and thread 0's expect_tx (the weights' TMA) */
      mbar_init(sFull + 8u * i, 129);
      mbar_init(sEmpty + 8u * i, 8);  /* one arrival per consumer warp */
    }
    mbar_init_fence();
  }
  {
    constexpr int PER = (BM * (int)kK + 383) / 384;
    uint32_t src[PER];
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const uint32_t t = (uint32_t)(tid + i * 384);
      src[i] = t < (uint32_t)BM * kK && t / kK < rows ? __ldg(p.perm + t0 + t / kK) : ~0u;
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const uint32_t t = (uint32_t)(tid + i * 384);
      int32_t j = -1;
      if (src[i] != ~0u) j = __ldg(p.nbr + (size_t)src[i] * kK + t % kK);
      if ((uint32_t)j >= p.n) j = -1;
      if (t < (uint32_t)BM * kK) nbr_s[t] = j;
    }
  }
  __syncthreads();
  if (tid < BM) { /* row tid's mask (27 is odd: the lanes' reads hit distinct banks), OR-ed over its warp */
    uint32_t m = 0;
#pragma unroll
    for (uint32_t o = 0; o < kK; ++o) m |= (nbr_s[tid * (int)kK + (int)o] >= 0 ? 1u : 0u) << o;
    m = __reduce_or_sync(0xFFFFFFFFu, m);
    if (lane == 0) wmask[warp] = m;
  }
  __syncthreads();
  if (warp == 0) {
    uint32_t any = 0;
#pragma unroll
    for (int g = 0; g < BLOCKS; ++g) {
      const uint32_t b = wmask[2 * g] | wmask[2 * g + 1];
      if (lane == 0) bmask[g] = b;
      any |= b;
    }
    const bool on = (any >> lane) & 1u;
    if (on) act[__popc(any & ((1u << lane) - 1u))] = (uint8_t)lane;
    if (lane == 0) *nact = __popc(any);
  }
  /* the inits and the tables visible to every thread (and the mbarriers to the async arrivals): the last
   * CTA-wide barrier */
  __syncthreads();
  const int KC = (int)(p.in / (uint32_t)BK), S = *nact * KC;

  if (wg == 0) {
    /* ---- producer ---- */
    setmaxnreg_dec<Tr::PREG>();
    /* Fixed over the steps: a thread copies chunk c of rows r0 + i RS (i < NI), and their swizzled places are
     * its first one's plus i RS rows, since RS is a multiple of the swizzle's 8-row period; block (i RS) / 64
     * is known for each unrolled i. Every instruction here is on the critical path: the copies set v6's time
     * (docs/spconv.md, "Where v6's time goes"); a build choosing the copy instruction at run time, three uniform
     * branches a copy more, ran PTv3's 600k forward 0.9 ms slower. */
    constexpr int RS = 128 / CPR, NI = BM / RS;
    static_assert(RS % 8 == 0 && 64 % RS == 0, "a thread's rows share the swizzle phase and stay in a block");
    const int r0 = tid / CPR, c = tid % CPR;
    const uint32_t dst0 = swz<CPR>(r0, c);
    const int32_t *nb0 = nbr_s + r0 * (int)kK;
    const unsigned char *xb = static_cast<const unsigned char *>(p.x);
    const size_t rowb = (size_t)p.in * 2u;
    uint32_t bm[BLOCKS];
#pragma unroll
    for (int g = 0; g < BLOCKS; ++g) bm[g] = bmask[g];
    int slot = 0;
    uint32_t ph = 0;
#pragma unroll 1
    for (int s = 0; s < S; ++s) {
      const int oi = s / KC, kc = s - oi * KC, o = act[oi];
      mbar_wait(sEmpty + 8u * (uint32_t)slot, ph ^ 1u);
      const uint32_t aA = s0 + (uint32_t)(slot * Tr::STAGE_BYTES), aB = aA + (uint32_t)Tr::A_BYTES;
      const uint32_t full = sFull + 8u * (uint32_t)slot;
      if (tid == 0) { /* the weight slice: one TMA tile of BN x BK, swizzled by the copy engine */
        mbar_expect_tx(full, (uint32_t)Tr::B_BYTES);
        tma_2d(aB, &tm_w, kc * BK, (int)(o * p.out + c0), full);
      }
      /* the rows: nothing for a 64-row block without a neighbour at o (no consumer reads it), zeros for a row
       * without one */
      const unsigned char *xc = xb + ((size_t)kc * BK + (size_t)c * 8u) * 2u;
#pragma unroll
      for (int i = 0; i < NI; ++i) {
        if (!((bm[i * RS / 64] >> o) & 1u)) continue;
        const int32_t j = nb0[i * RS * (int)kK + o];
        cp_async_cg(aA + dst0 + (uint32_t)(i * RS * Tr::RB), j >= 0 ? xc + (size_t)j * rowb : xb, j >= 0 ? 16u : 0u);
      }
      cp_async_arrive_noinc(full);
      if (++slot == ST) slot = 0, ph ^= 1u;
    }
    /* no cp.async of this thread in flight at exit; thread 0's last TMA copies may be, and the CTA outlives
     * them: both consumer warpgroups wait on every step's full barrier before they exit */
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    return;
  }

  /* ---- consumers: warpgroup c owns 64-row blocks c * MI .. c * MI + MI - 1 ---- */
  setmaxnreg_inc<Tr::CREG>();
  const int cwg = wg - 1, wq = warp & 3;
  float acc[MI][NACC];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int e = 0; e < NACC; ++e) acc[mi][e] = 0.0f;
  uint32_t my_mask[MI];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) my_mask[mi] = bmask[cwg * MI + mi];

  int slot = 0, prev = -1;
  uint32_t ph = 0;
#pragma unroll 1
  for (int s = 0; s < S; ++s) {
    const int o = act[s / KC];
    mbar_wait(sFull + 8u * (uint32_t)slot, ph);
    fence_proxy_async();
    const uint32_t aA = s0 + (uint32_t)(slot * Tr::STAGE_BYTES), aB = aA + (uint32_t)Tr::A_BYTES;
    /* no access to the accumulators but the wgmmas' own until the final wait: a register access here (a pin)
     * would make ptxas wait for the previous step's wgmmas first. The fence after each block's branch (before
     * it, ptxas injected its own after the branch: info C7519) */
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      /* uniform over the warpgroup; lane 0's copy, so that ptxas sees a uniform branch (a branch on the
       * shared-memory value itself made it serialise every wgmma of the loop: warning C7520) */
      if (!__shfl_sync(0xFFFFFFFFu, (my_mask[mi] >> o) & 1u, 0)) continue;
      wg_fence();
      const uint32_t ablk = aA + (uint32_t)((cwg * MI + mi) * 64 * Tr::RB);
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        const uint64_t da = wg_desc(ablk + (uint32_t)ks * 32u, 16, 8 * Tr::RB, Tr::MODE);
        const uint64_t db = wg_desc(aB + (uint32_t)ks * 32u, 16, 8 * Tr::RB, Tr::MODE);
        wg_ss<T, BN>(acc[mi], da, db);
      }
    }
    wg_commit();
    wg_wait<1>(); /* the previous step's wgmmas are done: its slot may be refilled */
    if (prev >= 0 && lane == 0) mbar_arrive(sEmpty + 8u * (uint32_t)prev);
    prev = slot;
    if (++slot == ST) slot = 0, ph ^= 1u;
  }
  wg_wait<0>();
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int e = 0; e < NACC; ++e) pin(acc[mi][e]);

  /* epilogue: + bias (fp32), one rounding, one store per value pair; a thread holds rows lane / 4 and
   * lane / 4 + 8 of its warp's 16 in each block, columns 8 nb + 2 (lane % 4) + {0, 1} */
  uint32_t *y = static_cast<uint32_t *>(p.y);
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const uint32_t r = (uint32_t)((cwg * MI + mi) * 64 + wq * 16 + (lane >> 2) + hr * 8);
      if (r >= rows) continue;
      const size_t orow = (size_t)__ldg(p.perm + t0 + r) * p.out;
#pragma unroll
      for (int nb = 0; nb < BN / 8; ++nb) {
        const uint32_t col = c0 + (uint32_t)(nb * 8 + 2 * (lane & 3));
        const float b0 = p.b ? __ldg(p.b + col) : 0.0f, b1 = p.b ? __ldg(p.b + col + 1u) : 0.0f;
        y[(orow + col) / 2u] = pack2(acc[mi][nb * 4 + 2 * hr] + b0, acc[mi][nb * 4 + 2 * hr + 1] + b1, T{});
      }
    }
}

#else /* not sm_90a: the kernel exists (the launcher is compiled for every image) but does nothing */

template <typename T, int BN, int BK>
__global__ void __launch_bounds__(384, Tiles<BN, BK>::CTAS)
    conv_wg_kernel(const Params p, const __grid_constant__ CUtensorMap tm_w) {
  hx_pdl_wait();
  (void)p, (void)tm_w;
}

#endif /* NWG_ON */

/* Writes 1 when the image running it was compiled for sm_90a (the feature macro), else 0. */
__global__ void sm90a_probe(int *out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

template <typename T, int BN, int BK> hx_status launch(const Params &p, cudaStream_t stream, hx_err *err) {
  using Tr = Tiles<BN, BK>;
  auto kern = conv_wg_kernel<T, BN, BK>;
  HX_CUDA(err, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Tr::SMEM));
  /* the descriptor travels by value as a kernel parameter, so a captured graph keeps its own */
  CUtensorMap tm_w;
  HX_TRY(nwg::tensor_map(&tm_w, p.w, (uint64_t)kK * p.out, p.in, (uint32_t)BN, (uint32_t)BK, "spc v6", err));
  if (p.tiles && spc_v6_tile_rows(p.out) != (uint32_t)Tr::BM)
    return hx_errf(err, HX_EINVAL, "spc v6: a tile order of %u-row tiles for %d-row tiles", spc_v6_tile_rows(p.out),
                   Tr::BM);
  const size_t ctas = ((size_t)p.n + Tr::BM - 1u) / Tr::BM * p.slices;
  hx_launch(kern, (unsigned)ctas, 384, Tr::SMEM, stream, p, tm_w);
  HX_LAUNCHED(err, "spc v6 conv_wg_kernel");
  return HX_OK;
}
template <typename T, int BN> hx_status by_bk(const Params &p, cudaStream_t stream, hx_err *err) {
  return p.in % 64u == 0 ? launch<T, BN, 64>(p, stream, err) : launch<T, BN, 32>(p, stream, err);
}
template <typename T> hx_status by_bn(Params p, cudaStream_t stream, hx_err *err) {
  const uint32_t bn = spc_v6_slice(p.out);
  p.slices = p.out / bn;
  switch (bn) {
  case 256: return by_bk<T, 256>(p, stream, err);
  case 128: return by_bk<T, 128>(p, stream, err);
  case 64: return by_bk<T, 64>(p, stream, err);
  default: return by_bk<T, 32>(p, stream, err);
  }
}

} // namespace spc_v6

/* The probe's answer is fixed per device and process; run per call it would serialise every timed launch on
 * the host (a launch and a synchronous copy), so it is cached per thread and device (0 = not probed, 1 = yes,
 * 2 = no), as attention v6 does. The probe is this file's, compiled with the same sm_90a target as mlp_wgmma.cu. */
extern "C" hx_status nwg_sm90a_check(const char *who, hx_err *err) {
  static thread_local signed char cache[64];
  int dev = 0;
  HX_CUDA(err, cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64) return hx_errf(err, HX_EUNSUPPORTED, "%s: device %d out of range", who, dev);
  if (!cache[dev]) {
    int major = 0, minor = 0, ok = 0;
    HX_CUDA(err, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    HX_CUDA(err, cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major == 9 && minor == 0) {
      /* a failed probe counts as "no" and is cached too: the choices made on it (spc_variant_main, the MLP's
       * kernel) never flip within a process (their sums differ in the last bits) */
      int *d_flag = NULL;
      cudaError_t e = cudaMalloc((void **)&d_flag, sizeof(int));
      if (e == cudaSuccess) {
        /* the launchers' TMA descriptor encoder must exist too: a driver without it is refused here, where the
         * callers fall back to their mma.sync kernels, not at launch */
        const bool enc = nwg::encoder() != nullptr;
        spc_v6::sm90a_probe<<<1, 1>>>(d_flag);
        e = cudaGetLastError();
        if (e == cudaSuccess) e = cudaMemcpy(&ok, d_flag, sizeof ok, cudaMemcpyDeviceToHost);
        cudaFree(d_flag);
        if (!enc) ok = 0;
      }
      if (e != cudaSuccess) {
        cache[dev] = 2;
        return hx_errf(err, HX_EUNSUPPORTED, "%s: the sm_90a probe failed (%s)", who, cudaGetErrorString(e));
      }
    }
    cache[dev] = ok == 1 ? 1 : 2;
  }
  if (cache[dev] != 1)
    return hx_errf(err, HX_EUNSUPPORTED, "%s: needs an sm_90a image on a compute capability 9.0 device and a "
                   "driver with cuTensorMapEncodeTiled", who);
  return HX_OK;
}

extern "C" hx_status spc_v6_check(size_t in, size_t out, hx_err *err) {
  if (!spc_v6_takes(in, out))
    return hx_errf(err, HX_EUNSUPPORTED, "spc v6: %zu -> %zu channels: both must be multiples of 32 (v3 takes "
                   "multiples of 16)", in, out);
  return nwg_sm90a_check("spc v6", err);
}

extern "C" hx_status spc_v6_launch(void *d_y, const void *d_x, const void *d_w, const float *d_b, const int32_t *d_nbr,
                                   const uint32_t *d_perm, const uint32_t *d_tiles, uint32_t tile_rows, uint32_t n,
                                   uint32_t in, uint32_t out, net_dtype dt, cudaStream_t stream, hx_err *err) {
  /* spc_v6_tile_rows (spconv.c) states Tiles' BM for the slice by_bn picks; a map ordered for other tiles is
   * taken last-first */
  const uint32_t *tiles = d_tiles && tile_rows == spc_v6_tile_rows(out) ? d_tiles : nullptr;
  const spc_v6::Params p{d_y, d_x, d_w, d_b, d_nbr, d_perm, tiles, n, in, out, 1u};
  return dt == NET_BF16 ? spc_v6::by_bn<__nv_bfloat16>(p, stream, err) : spc_v6::by_bn<__half>(p, stream, err);
}
