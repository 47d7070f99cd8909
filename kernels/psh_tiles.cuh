/*
 * psh_tiles.cuh - what the tiled PSH variants share: v4 (psh_v4.cu, four launches), v5/v6 (psh_v5.cu, one
 * cooperative launch) and v7 (psh_v7.cu, v6 reworked). A tile is the points of one cloud inside one chunk
 * of `tile` points; a block serves one tile and its cloud's frame. Here: the sizes, the kernel parameter
 * struct Prm (v5 and v7 derive theirs and only append fields), the device helpers (Frame, Tile, tile_of,
 * cloud_of, frame_from_keys, frame_load, voxel3, probe_bucket_fast, block_min6, lanemask_lt), the run-state
 * zeroing of v4's K1 and phase A, the scratch layout and parameter set-up of the launchers, and for the
 * one-launch variants (v5-v9; v8/v9 in psh_v8.cu) their shared-memory struct, grid barrier (grid_sync) and
 * phase stamp (gtimer), phases A and B of v5/v6/v7 (phases_ab), the thread-per-point probe phase (phase C,
 * also v4's K3), the cloud's scans (cloud_scans: v4's K4, phase D of v5/v6/v7), the one-wave tiling and
 * launch plan (coop_plan) and the host launcher of v5/v6 and v7 (coop_run). Each variant file keeps what is
 * its own.
 * Constraint: these variants were measured and checked on an H200, so code moved here must leave each
 * file's PTX as it was (nvcc -ptx before and after), or be timed against the old code in one run on a GPU
 * before it is kept (phases_ab: the same instructions, one commutative or.b64 per Z-order code placed
 * differently; phase_probe_nt and cloud_scans: timed the same on an H200, 84a7161). v4's K2 against phase B still
 * reads the same and stays apart.
 * Private to kernels/; include it after <cuda_runtime.h> (cooperative_groups and the device intrinsics
 * below need it).
 */
#ifndef F3D_PSH_TILES_CUH
#define F3D_PSH_TILES_CUH

#include <cooperative_groups.h>
#include <cub/block/block_scan.cuh>
#include <stdint.h>
#include <string.h>

#include "kernels/psh_internal.cuh"
#include "kernels/psh_internal.h"

namespace psh_tiles {

constexpr int kT = 512;                 /* threads of a tile block (v4's K1, K2, K4; every v5/v7 block) */
constexpr int kWarps = kT / 32;
constexpr int kMaxIpt = 8;              /* points per thread at most: tiles of <= 4096 points */
constexpr uint32_t kDense = 4096;       /* largest nb served by the dense shared counters */
constexpr int kPer = (int)kDense / kT;  /* counters per thread in the commit and the scans */
constexpr uint32_t kSnapBits = 16384;   /* the probe phase keeps a shared "full" bit per bucket up to this many */
constexpr uint32_t kSnapMinList = 2048; /* ... when at least this many points overflowed */
constexpr uint32_t kReachAt = 2;        /* probes before phase C asks xor_reach_full (1 and 3 no better, 9cf0719); its
                                         * queue holds 2 NT points (v4's K3, v5/v7's Smem, v8/v9's Arr8::Ev) */
constexpr uint32_t kSolo = 2;       /* probes after kReachAt in the block's second pass; the rest go to the grid's
                                    * queue (kGridQ, phase_probe_nt) */
constexpr uint32_t kQueueMaxG = 16; /* lanes per point of the grid's queue at most (queue_pass) */
constexpr uint32_t kSpreadLog = 5;  /* phase C's spread counters (pc_at): 32 words, a counter per 128-byte line */
constexpr uint32_t kQueueSetup = 3; /* a queued point's set-up (its loads, the reach proof) in probes of time */
constexpr uint32_t kCellBits = 32768;   /* Z-order-div's cell tables: C^3 bits a cloud, at most this many a batch */
constexpr uint32_t kCellWords = 2u * kCellBits / 32u; /* the "full" cells, then the full 2 x 2 x 2 blocks */
constexpr uint32_t kNone = 0xFFFFFFFFu;
/* run counters in scratch: first, probe, overflow (psh_out order), overflow-list length */
enum { C_FIRST = 0, C_PROBE = 1, C_OVER = 2, C_NOVF = 3, C_GQ = 4, C_WORDS = 8 }; /* C_GQ: phase C's grid queue */
constexpr int kFrameWords = 8;          /* lo[3] (float bits), bits, step, shift[3] */

typedef cub::BlockScan<uint32_t, kT> Scan;

/* The kernel parameters of every tiled variant, passed by value. v5 and v7 derive their structs from it and
 * only append fields, so these offsets are the same in all of them. */
struct Prm {
  const float *xyz;
  const uint32_t *off;
  uint32_t nclouds, n, nb, cap, nprobe, hash, tile, ipt;
  float voxel;
  union {         /* the output alignment, as each variant's launcher encodes it: */
    int xyz_pair; /* v4: 1 = xyz_out 8-byte aligned (scatter: a float2 + a float); v5/v6: the same, or 2 = 16
                     bytes and perm too (v6's gather) */
    int vec16;    /* v7: xyz_out and perm 16-byte aligned: the gather's stores are float4 / uint4 */
  };
  uint64_t seed;
  int8_t probe[PSH_NPROBE_BASE][3];
  /* outputs */
  uint32_t *bucket, *offset, *count_out, *start, *slot, *perm, *counters_out;
  float *xyz_out;
  /* scratch */
  uint32_t *part;  /* [tiles * 6] per-tile bbox keys: min key of x,y,z, then min of ~key (= ~max) */
  uint32_t *frame; /* [nclouds * kFrameWords] */
  uint32_t *cnt;   /* [nclouds * nb] counters during the run */
  uint32_t *resid; /* [nclouds] leftover tickets */
  uint32_t *ctr;   /* [C_WORDS] */
  uint32_t *ovf;   /* [n] overflow list */
  uint32_t *pcnt;  /* phase C's counters in the one-launch variants (pc_at): word g << pshift; p.cnt, 0 if none */
  uint32_t pshift;
};

/* How a kernel reads what other blocks wrote (frame_load's Ld): LdPrev for data of an earlier launch (plain
 * loads: v4), LdL2 for data of another block of the same launch, read after a grid barrier: ld.global.cg (L2,
 * since the SM's L1 is not coherent; v5/v6, v7). */
struct LdPrev {
  template <class T> static __device__ __forceinline__ T ld(const T *a) { return *a; }
};
struct LdL2 {
  template <class T> static __device__ __forceinline__ T ld(const T *a) { return __ldcg(a); }
};

struct Frame {
  float lo[3];
  uint32_t bits, step, shift[3];
};

struct Tile {
  uint32_t c, k, lo, hi, k0, k1; /* cloud, chunk, points [lo, hi), the cloud's chunks k0..k1 */
};

/* Cloud c's frame, stored by the count phase (v4's K2, phase B: the cloud's first tile) for the probe phase. */
template <class Ld> __device__ __forceinline__ Frame frame_load(const uint32_t *frame, uint32_t c) {
  const uint32_t *w = frame + (size_t)c * kFrameWords;
  Frame f;
  for (int d = 0; d < 3; d++) f.lo[d] = __uint_as_float(Ld::ld(w + d));
  f.bits = Ld::ld(w + 3);
  f.step = Ld::ld(w + 4);
  for (int d = 0; d < 3; d++) f.shift[d] = Ld::ld(w + 5 + d);
  return f;
}

__device__ __forceinline__ uint32_t lanemask_lt() {
  uint32_t m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

/* The tile of this block (block-uniform). false: the id matches no tile (the block must exit). */
template <class P> __device__ __forceinline__ bool tile_of(const P &p, Tile &t) {
  const uint32_t id = blockIdx.x, T = p.tile;
  uint32_t lo = 0, hi = p.nclouds; /* last c with c + off[c]/T <= id (true for c = 0) */
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) >> 1;
    if (mid + __ldg(p.off + mid) / T <= id) lo = mid;
    else hi = mid;
  }
  const uint32_t a = __ldg(p.off + lo), b = __ldg(p.off + lo + 1);
  t.c = lo;
  t.k = id - lo;
  const uint64_t k0p = (uint64_t)t.k * T, k1p = k0p + T;
  t.lo = (uint32_t)(k0p > a ? (k0p < b ? k0p : b) : a);
  t.hi = (uint32_t)(k1p < b ? k1p : b);
  t.k0 = a / T;
  t.k1 = b > a ? (b - 1) / T : t.k0;
  return t.lo < t.hi;
}

__device__ __forceinline__ uint32_t cloud_of(const uint32_t *off, uint32_t nclouds, uint32_t i) {
  uint32_t lo = 0, hi = nclouds; /* last c with off[c] <= i */
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) >> 1;
    if (__ldg(off + mid) <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

template <class P> __device__ __forceinline__ Frame frame_from_keys(const P &p, const uint32_t key[6]) {
  Frame f;
  float hi[3];
  for (int d = 0; d < 3; d++) {
    f.lo[d] = psh_key2f(key[d]);
    hi[d] = psh_key2f(~key[3 + d]);
  }
  f.bits = psh_frame_bits(f.lo, hi, p.voxel);
  f.step = psh_probe_step((psh_hash)p.hash, f.bits, p.nb);
  psh_frame_shift((psh_hash)p.hash, f.lo, hi, p.voxel, f.bits, f.shift);
  return f;
}

template <class P>
__device__ __forceinline__ void voxel3(const P &p, const Frame &f, float x, float y, float z, uint32_t v[3]) {
  v[0] = psh_vox1(x, f.lo[0], p.voxel) << f.shift[0];
  v[1] = psh_vox1(y, f.lo[1], p.voxel) << f.shift[1];
  v[2] = psh_vox1(z, f.lo[2], p.voxel) << f.shift[2];
}

/* psh_probe_bucket (psh_internal.h) with 32-bit arithmetic: the jitter operand is < 2^21 and the step
 * < 2^21, so x % step is the same in 32 bits (a mask when step is a power of two, as for Z-order-div)
 * instead of three 64-bit remainders, and |v + probe*step + jitter| < 2^24 fits an int32 whose low
 * `bits` bits are the same two's-complement wrap. Same bucket for every input. */
/* The perturbed voxel w of probe `probe` given its random word r = hx_rng_u64(seed, point, probe index). */
__device__ __forceinline__ void probe_voxel(const uint32_t v[3], const int8_t probe[3], uint32_t step, uint32_t bits,
                                            uint64_t r, uint32_t w[3]) {
  const uint32_t mask = bits >= 32u ? 0xFFFFFFFFu : ((1u << bits) - 1u);
  const bool pow2 = (step & (step - 1u)) == 0u;
  for (int d = 0; d < 3; d++) {
    const uint32_t x = (uint32_t)(r >> (21 * d)) & 0x1FFFFFu;
    const int32_t jit = (int32_t)(pow2 ? (x & (step - 1u)) : x % step) - (int32_t)(step / 2u);
    const int32_t t = (int32_t)v[d] + (int32_t)probe[d] * (int32_t)step + jit;
    w[d] = (uint32_t)t & mask;
  }
}
/* r = hx_rng_u64(seed, point, probe index); the callers pass hx_mix64(hx_rng_base(seed, point) + k) with the
 * base computed once per point, which saves two of the three 64-bit mixes per probe. */
__device__ __forceinline__ uint32_t probe_bucket_fast(psh_hash h, const uint32_t v[3], const int8_t probe[3],
                                                      uint32_t step, uint32_t bits, uint32_t nb, uint64_t r) {
  uint32_t w[3];
  probe_voxel(v, probe, step, bits, r, w);
  return psh_hash3(h, w[0], w[1], w[2], bits, nb);
}

/* Bits a..b of a shared bitmap all set. */
__device__ __forceinline__ bool bits_all_set(const volatile uint32_t *bm, uint32_t a, uint32_t b) {
  for (uint32_t w = a >> 5; w <= b >> 5; w++) {
    const uint32_t lo = w == a >> 5 ? a & 31u : 0u, hi = w == b >> 5 ? b & 31u : 31u;
    const uint32_t m = (0xFFFFFFFFu >> (31u - hi)) & (0xFFFFFFFFu << lo);
    if ((bm[w] & m) != m) return false;
  }
  return true;
}

/* True when every bucket that a probe of voxel (v0, v1, v2) can reach under an XOR hash (the <= 8 code
 * blocks of psh_xor_reach_blocks) has its bit set in the shared "full" bitmap (bit gb + local bucket): then
 * no probe can place the point. A bit is only ever set for a counter that reached S, which stays there, so
 * the answer holds for the rest of the phase. Any nb and width; first the byte form (psh_xor_reach_bytes), which
 * a lidar cloud's points take (600k: ~170k calls). Out of line: the probe loop that calls it is at the
 * register cap in v9, and inlined it raised v9's spills (c1fb0e7). */
static __device__ __noinline__ bool xor_reach_full(const uint32_t *full, uint32_t c, psh_hash h, uint32_t v0,
                                                   uint32_t v1, uint32_t v2, uint32_t step, uint32_t bits, uint32_t nb) {
  const uint32_t v[3] = {v0, v1, v2};
  uint32_t grp[8];
  if (psh_xor_reach_bytes(h, v, step, bits, nb, grp)) { /* 8 groups of 8 buckets: byte-aligned, nb % 8 = 0 */
    const volatile uint8_t *by = (const volatile uint8_t *)full + c * (nb / 8u);
    uint32_t all = 0xFFu;
#pragma unroll
    for (int q = 0; q < 8; q++) all &= by[grp[q]]; /* eight independent loads, no branch */
    return all == 0xFFu;
  }
  const uint32_t gb = c * nb;
  uint32_t a[3][2];
  const uint32_t u = psh_xor_reach_blocks(v, step, bits, a);
  const volatile uint32_t *bm = full;
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
      for (int k = 0; k < 2; k++) {
        if ((i && a[0][1] == a[0][0]) || (j && a[1][1] == a[1][0]) || (k && a[2][1] == a[2][0])) continue;
        uint32_t r[4];
        const uint32_t nr = psh_xor_block_buckets(h, a[0][i] ^ a[1][j] ^ a[2][k], u, bits, nb, r);
        if (!bits_all_set(bm, gb + r[0], gb + r[1])) return false;
        if (nr > 1 && !bits_all_set(bm, gb + r[2], gb + r[3])) return false;
      }
  return true;
}

/* Block min of 6 keys per thread; the result is valid in thread 0 only. Ends with a barrier-free
 * read by thread 0 after the one barrier that separates the warp leaders' writes from it. */
template <int WARPS> __device__ __forceinline__ void block_min6(uint32_t k[6], uint32_t (*s_red)[WARPS]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int e = 0; e < 6; e++) {
    for (int o = 16; o > 0; o >>= 1) k[e] = min(k[e], __shfl_xor_sync(0xFFFFFFFFu, k[e], o));
    if (lane == 0) s_red[e][warp] = k[e];
  }
  __syncthreads(); /* s_red writes -> thread 0's reads */
  if (threadIdx.x == 0)
    for (int e = 0; e < 6; e++)
      for (int w = 1; w < WARPS; w++) k[e] = min(k[e], s_red[e][w]);
}

/* ---- device code of every variant ---- */

/* Zero the run state (counters, tickets, run counters) and write the default bucket tables over the grid
 * (v4's K1, phase A); no block reads them before the next launch or grid barrier. */
template <class P> __device__ __forceinline__ void init_run_state(const P &p) {
  const uint32_t gt = blockIdx.x * kT + threadIdx.x, gs = gridDim.x * kT;
  const uint32_t nbt = p.nclouds * p.nb;
  for (uint32_t g = gt; g < nbt; g += gs) {
    p.cnt[g] = 0;
    p.count_out[g] = 0;
    p.start[g] = __ldg(p.off + g / p.nb); /* kept by empty clouds; the scan phase rewrites the others */
  }
  for (uint32_t c = gt; c < p.nclouds; c += gs) p.resid[c] = 0;
  if (gt < C_WORDS) p.ctr[gt] = 0;
}

/* ---- host side: scratch layout and parameters ---- */

/* Scratch layout of the tiled variants (tiles bounded with the smallest tile, kT points): part, frame, cnt,
 * resid, ctr, ovf, then nx more arrays of xwords[k] words at *xslots[k] (v5's phase stamps, v7's records),
 * each 256-byte aligned. base NULL: pointers untouched. Returns the total size. */
static inline size_t tiles_layout(Prm *q, void *base, uint32_t nclouds, uint32_t nb, uint32_t n, int nx,
                                  uint32_t **const *xslots, const size_t *xwords) {
  char *b = (char *)base;
  size_t off = 0;
  uint32_t **slots[] = {&q->part, &q->frame, &q->cnt, &q->resid, &q->ctr, &q->ovf};
  const size_t tiles = (size_t)nclouds + ((size_t)n + kT - 1) / kT;
  const size_t words[] = {tiles * 6, (size_t)nclouds * kFrameWords, (size_t)nclouds * nb, nclouds, C_WORDS,
                          2 * (size_t)n + 1}; /* ovf: the list, then phase C's grid queue from ovf + n + 1 */
  for (int k = 0; k < 6 + nx; k++) {
    if (b) *(k < 6 ? slots[k] : xslots[k - 6]) = (uint32_t *)(b + off);
    off += psh_align256((k < 6 ? words[k] : xwords[k - 6]) * sizeof(uint32_t));
  }
  if (b) { /* phase C on p.cnt itself unless the variant's layout gives the spread copy (spread_set) */
    q->pcnt = q->cnt;
    q->pshift = 0;
  }
  return off;
}

/* Phase C's counters spread one per 128-byte line (pc_at), for the one-launch variants: the words of that copy for
 * a batch (a layout's last extra array), nclouds nb <= kSnapBits buckets (<= 2 MB), else none; spread_set points
 * pcnt at it after the layout. */
static inline size_t spread_words(uint32_t nclouds, uint32_t nb) {
  const size_t nbt = (size_t)nclouds * nb;
  return nbt <= kSnapBits ? nbt << kSpreadLog : 0u;
}
static inline void spread_set(Prm *q, uint32_t *pw, uint32_t nclouds, uint32_t nb) {
  if (!pw || spread_words(nclouds, nb) == 0) return; /* sizing only, or no room: p.cnt */
  q->pcnt = pw;
  q->pshift = kSpreadLog;
}

/* What every tiled launcher sets from the call (psh_kparams_fill) and its tiling (ipt points per thread). */
template <class P>
static inline void tiles_params_fill(P *p, const psh_out *out, const psh_in *in, const psh_params *prm, uint32_t ipt) {
  p->ipt = ipt;
  p->tile = kT * p->ipt;
  psh_kparams_fill(p, out, in, prm);
  p->off = in->cloud_offset;
  p->count_out = out->bucket_count;
}

/* ---- the one-launch variants (v5/v6, v7) ---- */

constexpr uint32_t kOffBits = 20;            /* a placement in one word: local bucket (< 4096) << 20 | offset */
constexpr uint32_t kOffMask = (1u << kOffBits) - 1u;
constexpr uint32_t kMaxCap = 1u << kOffBits; /* larger S runs v4 */
/* trace slots: 0 start (block 0), 1-3 after grid barriers 1-3 (3 = 2 without probing), 4 end of block 0's
 * phase D, 5 after the gather's barrier (v6, v7; 0 in v5), 6 the last block's end (atomicMax) */
enum { kTrace = 8 };

/* The grid barrier of the cooperative launches and the %globaltimer stamp of their phase traces (v5-v9). */
__device__ __forceinline__ void grid_sync() { cooperative_groups::this_grid().sync(); }
/* The same barrier in two halves (cooperative groups' barrier_arrive / barrier_wait; grid_wait does the
 * waiting): work between them overlaps the barrier's latency, and must not be read by other blocks after
 * it. v9/v10's barrier 2 (psh_v8.cu). */
__device__ __forceinline__ unsigned int grid_arrive() { return cooperative_groups::this_grid().barrier_arrive(); }
__device__ __forceinline__ void grid_wait(unsigned int tok) {
  cooperative_groups::this_grid().barrier_wait(static_cast<unsigned int &&>(tok));
}
__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* Shared memory of one block: the phases reuse one union (a grid barrier separates them). */
struct Smem {
  union {
    uint32_t cnt[kDense];                    /* B: dense per-bucket ranks, then rebased bases */
    struct {
      uint32_t F[kDense + 1];                /* D: free-slot scan (with leftovers) */
      uint32_t start[kDense];                /* D: first packed row of each local bucket */
    } d;
    struct {
      uint32_t full[kSnapBits / 32];         /* C: bit g = counter g reached S */
      uint32_t defer[2 * kT];                /* C: the block's queue for its second pass */
      uint32_t ptab[PSH_NPROBE_MAX];         /* C: the probe table of solo_probes and queue_pass */
      uint32_t cells[kCellWords];            /* C: Z-order-div's cell tables (probe_point_z) */
    } c;
  } u;
  Scan::TempStorage scan;
  uint32_t red[6][kWarps];
  uint32_t frame[kFrameWords];
  uint32_t first, tally[3];
};

/* What probe_point did with a point. */
enum { kPlaced = 0, kLeft = 1, kDeferred = 2 };

/* The probe offsets packed one word per probe (one signed byte per axis) into shared memory, by a block of NT
 * threads: p.probe lives in the kernel's parameter (constant) bank, whose cache serves one address per warp
 * instruction, so lanes at different probes would serialise there (psh_v8.cu, v9's probe table). */
template <int NT, class P> __device__ __forceinline__ void probe_table(const P &p, uint32_t *ptab) {
  for (uint32_t k = threadIdx.x; k < p.nprobe; k += NT)
    ptab[k] = (uint32_t)(uint8_t)p.probe[k][0] | (uint32_t)(uint8_t)p.probe[k][1] << 8 | (uint32_t)(uint8_t)p.probe[k][2] << 16;
}

/* Phase C's counter of bucket g. kSp (phase_probe_nt's kGridQ: the one-launch variants): word g << pshift of pcnt
 * where the layout made room (spread_set: one counter per 128-byte line), else p.cnt itself (pshift 0). Why: the L2
 * serves the atomics and reads of one line one after another, and phase C's attempts land on the few lines of a
 * few hundred counters (lab/kernels/probe_l2_atomics.cu, H200: 256 counters packed 2.3k read+atomic attempts per
 * us, one per line 16.9k; 2048 counters 8.3k and 42k). phase_probe_nt copies p.cnt into it at its start, behind one
 * grid barrier; v5/v7 get the counts back into p.cnt behind another, v8/v9 read them with pc_final. Filling each
 * word at its first touch instead (a CAS from a mark stored in phase 1) saved the barrier but its phase-1 stores
 * cost xor-mod's short path 0.7-1 us hot. H200, v9, same call (43fb629): 100k xor-div -14%, zorder-div -31%,
 * zorder-mod -37 to -43%; 600k xor-div -5 to -6%, zorder-mod -29 to -34%, zorder-div -3 to +1%; but 300k xor-div
 * +7 to +8% (its list is mostly points the reach proof settles without an attempt: the barrier is all cost). */
template <bool kSp, class P> __device__ __forceinline__ uint32_t *pc_at(const P &p, uint32_t g) {
  return kSp ? p.pcnt + (g << p.pshift) : p.cnt + g;
}
/* Bucket g's count after phase C, after the grid barrier that ends it, for callers of phase_probe_nt with kBack
 * false (v8/v9). */
template <class P> __device__ __forceinline__ uint32_t pc_final(const P &p, uint32_t g) {
  return __ldcg(pc_at<true>(p, g));
}

/* One attempt of point i on counter g (snap: the shared "full" bitmap is on): skipped when known full, else a
 * slot taken by an optimistic increment, rolled back on overflow. True: bucket/offset stored. */
template <bool kSp, class P>
__device__ __forceinline__ bool take_slot(const P &p, uint32_t *full_w, bool snap, uint32_t i, uint32_t g) {
  const volatile uint32_t *full = full_w;
  if (snap && (full[g >> 5] >> (g & 31u) & 1u)) return false; /* known full: no L2 read */
  uint32_t *const cg = pc_at<kSp>(p, g);
  if (__ldcg(cg) >= p.cap) { /* full for good (see psh_v4.cu) */
    if (snap) atomicOr(&full_w[g >> 5], 1u << (g & 31u));
    return false;
  }
  const uint32_t o = atomicAdd(cg, 1u);
  if (o < p.cap) {
    p.bucket[i] = g;
    p.offset[i] = o;
    return true;
  }
  atomicSub(cg, 1u); /* roll back; o >= S means S points are placed there for good */
  if (snap) atomicOr(&full_w[g >> 5], 1u << (g & 31u));
  return false;
}

/* Probes k0.. of listed point i (cloud c, frame f, voxel v, home bucket home) on the live counters; returns
 * kPlaced (bucket/offset stored), kLeft (no probe can place it) or, with mayDefer, kDeferred once kReachAt
 * probes have failed and the XOR reach is not known full (the caller queues it for its block's second
 * pass). reach: the XOR reach applies (snapshot on, XOR hash). */
template <bool kPow2, bool kSp, class P>
__device__ __forceinline__ int probe_point(const P &p, uint32_t *full_w, bool snap, bool reach, uint32_t i, uint32_t c,
                                           const Frame &f, const uint32_t v[3], uint32_t home, uint32_t k0,
                                           bool mayDefer) {
  /* kPow2 and an XOR hash with nb a power of two (the default hash's case): psh_probe_bucket_pow2, about half
   * the instructions per probe of probe_bucket_fast. A uniform branch, so that the loop exists once (two
   * copies raised v9's spills); kPow2 = false keeps the one-pass loop, which the Z-order hashes take, as it
   * was (with the branch there v4's K3 lost 12-25% on Z-order-div, a643943). */
  const bool xp = kPow2 && psh_probe_pow2((psh_hash)p.hash, f.step, f.bits, p.nb);
  const uint64_t rb = hx_rng_base(p.seed, i); /* hx_rng_u64(seed, i, k) = hx_mix64(rb + k) */
  for (uint32_t k = k0; k < p.nprobe; k++) {
    if (reach && k == kReachAt) {
      if (xor_reach_full(full_w, c, (psh_hash)p.hash, v[0], v[1], v[2], f.step, f.bits, p.nb))
        return kLeft; /* every bucket a probe can reach is full for good */
      if (mayDefer) return kDeferred;
    }
    const uint32_t h = xp ? psh_probe_bucket_pow2((psh_hash)p.hash, v, p.probe[k], f.step, f.bits, p.nb, hx_mix64(rb + k))
                          : probe_bucket_fast((psh_hash)p.hash, v, p.probe[k], f.step, f.bits, p.nb, hx_mix64(rb + k));
    if (h == home) continue;
    const uint32_t g = c * p.nb + h;
    if (take_slot<kSp>(p, full_w, snap, i, g)) return kPlaced;
  }
  return kLeft;
}

/* probe_point's one-pass loop for Z-order-mod where psh_probe_zmod holds (phase_probe_nt): the same probes, buckets
 * and attempts, each bucket from psh_probe_bucket_zmod (no random word, 32-bit Morton bits) instead of
 * probe_bucket_fast. Why: Z-order-mod has no cheap proof that a point cannot be placed (its probes reach up to 343
 * buckets), so the few points that no probe places (441 of the 600k lidar points of `f3dbench gen --voxel 0.05`, CPU,
 * seed 3407) each run all 128 probes one after another in one lane, ~200 instructions a probe, while the rest of the
 * block waits. H200, same call: Z-order-mod -12 to -22% at 100k, -35 to -51% at 300k, -42 to -56% at 600k, -59% at
 * 4M; the XOR hashes within 2% but for v8 (-2 to -6%: its spills fell from 152 to 60 bytes). */
template <bool kSp, class P>
__device__ __forceinline__ int probe_point_zm(const P &p, uint32_t *full_w, bool snap, uint32_t i, uint32_t c,
                                              const Frame &f, const uint32_t v[3], uint32_t home) {
  for (uint32_t k = 0; k < p.nprobe; k++) {
    const uint32_t h = psh_probe_bucket_zmod(v, p.probe[k], f.bits, p.nb);
    if (h == home) continue;
    if (take_slot<kSp>(p, full_w, snap, i, c * p.nb + h)) return kPlaced;
  }
  return kLeft;
}

/* Z-order-div's cell tables (psh_zcell_geom, psh_internal.h; docs/psh.md), kCellWords shared words:
 * cf, bit (cloud c, cell): every code of the cell lies in a bucket whose "full" bit is set; bf, the same bit
 * index for the 2 x 2 x 2 block of cells whose lowest corner it is (per axis modulo C): all 8 cells in cf. A
 * probe whose block is in bf cannot place its point (test_zcell_probe), so probe_point_z skips it before the
 * random word and the Morton code, about 90 of its ~100 instructions. Why: on the 600k lidar cloud ~560k of
 * 600k points overflow their Z-order-div bucket and 350k of them try all 128 probes; 99.6% of the 53M probe
 * evaluations end on a full bucket, and 99.5% of them lie in a block of full cells once the buckets have
 * filled (CPU, this cloud). The bits follow this block's own "full" bitmap: zc_build from the snapshot, then
 * zc_mark for each bucket the block finds full. Bits are only ever set, each for cells whose counters reached S
 * for good. Two threads marking neighbour cells at once may each miss the other's cell and leave a block's bf
 * bit unset: a probe evaluated that could have been skipped, never a wrong skip. */
struct ZCell {
  uint32_t m, lg; /* cells per axis 2^m (the same for every cloud), log2 nb */
};
/* Cloud frame f's s and r (psh_zcell_geom); false where the cloud's table stays empty. */
__device__ __forceinline__ bool zc_frame(const ZCell &z, const Frame &f, uint32_t &s, uint32_t &r) {
  const uint32_t k = 3u * f.bits;
  if (f.bits == 0u || k < z.lg) return false;
  s = (uint32_t)__ffs((int)f.step) - 1u;
  r = k - z.lg - 3u * s;
  return true;
}
/* Row (x, y) of a cloud's table (base: the cloud's first bit): the C = 2^m bits of cells (x, y, 0..C-1), one
 * word or part of one (C <= 32 as m <= 5, kCellBits). */
__device__ __forceinline__ uint32_t zc_row(const volatile uint32_t *t, uint32_t base, uint32_t x, uint32_t y, uint32_t m) {
  const uint32_t b = base + psh_zcell_index(x, y, 0u, m), c = 1u << m;
  return (t[b >> 5] >> (b & 31u)) & (c == 32u ? 0xFFFFFFFFu : (1u << c) - 1u);
}
/* Row (x, y) of bf as cf gives it: bit z set when the 8 cells (x..x+1, y..y+1, z..z+1), modulo C, are in cf. */
__device__ __forceinline__ uint32_t zc_block_row(const volatile uint32_t *cf, uint32_t base, uint32_t x, uint32_t y,
                                                 uint32_t m) {
  const uint32_t cm = (1u << m) - 1u, x1 = (x + 1u) & cm, y1 = (y + 1u) & cm;
  const uint32_t a = zc_row(cf, base, x, y, m) & zc_row(cf, base, x1, y, m) & zc_row(cf, base, x, y1, m) &
                     zc_row(cf, base, x1, y1, m);
  return a & (a >> 1 | (a & 1u) << cm); /* and cell z + 1 modulo C */
}
/* Builds cf and bf from the block's "full" bitmap (block-uniform; two barriers, the last one after bf). */
template <int NT, class Ld, class P>
__device__ __forceinline__ void zc_build(const P &p, const uint32_t *full_w, uint32_t *cw, const ZCell &z) {
  const uint32_t lc = 3u * z.m, cm = (1u << z.m) - 1u, words = (p.nclouds << lc) / 32u;
  uint32_t *cf = cw, *bf = cw + kCellBits / 32u;
  for (uint32_t w = threadIdx.x; w < words; w += NT) {
    const uint32_t c = (w << 5) >> lc;
    uint32_t s, r, word = 0;
    if (zc_frame(z, frame_load<Ld>(p.frame, c), s, r))
      for (uint32_t b = 0; b < 32u; b++) {
        const uint32_t q = ((w << 5) + b) & ((1u << lc) - 1u);
        const uint32_t g = c * p.nb + psh_zcell_bucket(q >> 2u * z.m, q >> z.m & cm, q & cm, r);
        word |= (full_w[g >> 5] >> (g & 31u) & 1u) << b;
      }
    cf[w] = word;
  }
  __syncthreads(); /* cf -> bf */
  for (uint32_t w = threadIdx.x; w < words; w += NT) {
    uint32_t word = 0;
    for (uint32_t b = 0; b < 32u; b += 1u << z.m) { /* the rows in word w */
      const uint32_t q = (w << 5) + b, base = q & ~((1u << lc) - 1u), cell = q & ((1u << lc) - 1u);
      word |= zc_block_row(cf, base, cell >> 2u * z.m, cell >> z.m & cm, z.m) << b;
    }
    bf[w] = word;
  }
  __syncthreads(); /* bf -> the probes */
}
/* Local bucket h of cloud c (frame bits, step) found full by this block: its 2^r cells into cf, then the bf rows
 * of the blocks that hold one of them, whole rows at a time (any bit zc_block_row sets is a block whose 8 cells
 * are in cf). Out of line: a rare path (a bucket is found full once per block), kept off the probe loop's
 * registers. Rows rather than cells: the first form, 64 single-bit reads per cell, made Z-order-div at 100k
 * 10-45% slower on the H100 (f54cd9e), as a lane's call stalls its warp and each block finds most buckets
 * full itself. */
static __device__ __noinline__ void zc_mark(uint32_t *cw, ZCell z, uint32_t c, uint32_t h, uint32_t bits, uint32_t step) {
  Frame f;
  f.bits = bits;
  f.step = step;
  uint32_t s, r;
  if (!zc_frame(z, f, s, r)) return;
  const uint32_t cm = (1u << z.m) - 1u, base = c << (3u * z.m);
  volatile uint32_t *cf = cw, *bf = cw + kCellBits / 32u;
  for (uint32_t j = 0; j < (1u << r); j++) { /* the bucket's cells: Morton codes (h << r) + j */
    const uint32_t q = (h << r) + j;
    uint32_t x = 0, y = 0, zz = 0;
    for (uint32_t i = 0; i < z.m; i++) { /* psh_morton's order: x is the high bit of each triple */
      x |= (q >> (3u * i + 2u) & 1u) << i;
      y |= (q >> (3u * i + 1u) & 1u) << i;
      zz |= (q >> (3u * i) & 1u) << i;
    }
    const uint32_t t = base + psh_zcell_index(x, y, zz, z.m);
    atomicOr((uint32_t *)&cf[t >> 5], 1u << (t & 31u));
    for (uint32_t e = 0; e < 4u; e++) { /* rows whose blocks hold (x, y, .): corners x - 0/1, y - 0/1 */
      const uint32_t bx = (x - (e & 1u)) & cm, by = (y - (e >> 1)) & cm;
      const uint32_t row = zc_block_row(cf, base, bx, by, z.m), b = base + psh_zcell_index(bx, by, 0u, z.m);
      if (row) atomicOr((uint32_t *)&bf[b >> 5], row << (b & 31u));
    }
  }
}
/* The counter attempt of a Z-order-div probe of point i (cloud c) on local bucket h, after the cell tests: skipped
 * when the block's "full" bitmap has it; else the lanes here now that want the same bucket (at the same probe index
 * in probe_point_z, whose loop keeps the warp together; at any in probe_warp_z) make one read and one atomic for
 * all of them, take the slots in lane order and roll back those past S; a group that fills the bucket marks it in
 * the bitmap and, where this block is the first to know, in the cell tables (zc_mark). True: bucket/offset
 * stored. */
template <bool kSp, class P>
__device__ __forceinline__ bool zc_attempt(const P &p, uint32_t *full_w, uint32_t *cw, const ZCell &z, uint32_t i,
                                           uint32_t c, uint32_t h, const Frame &f) {
  const volatile uint32_t *full = full_w;
  const uint32_t g = c * p.nb + h;
  if (full[g >> 5] >> (g & 31u) & 1u) return false; /* known full: no L2 read */
  const uint32_t act = __activemask(), peers = __match_any_sync(act, g);
  const int lane = (int)(threadIdx.x & 31u), leader = __ffs((int)peers) - 1;
  const uint32_t n = (uint32_t)__popc(peers);
  uint32_t o = p.cap;
  uint32_t *const cg = pc_at<kSp>(p, g);
  if (lane == leader && __ldcg(cg) < p.cap) {
    o = atomicAdd(cg, n);
    if (o + n > p.cap) atomicSub(cg, o >= p.cap ? n : o + n - p.cap); /* o >= S: S placed for good */
  }
  o = __shfl_sync(act, o, leader);
  const uint32_t slot = o + (uint32_t)__popc(peers & lanemask_lt());
  if (slot < p.cap) {
    p.bucket[i] = g;
    p.offset[i] = slot;
    return true;
  }
  /* full for good (see psh_v4.cu): the bitmap, and the cells where this block is the first to know */
  if (o + n >= p.cap && !(atomicOr(&full_w[g >> 5], 1u << (g & 31u)) >> (g & 31u) & 1u))
    zc_mark(cw, z, c, h, f.bits, f.step);
  return false;
}
#ifdef PSH_ZC_VERIFY /* check builds (psh-ab.sh FLAGS=-DPSH_ZC_VERIFY): a probe skipped as full had no room */
template <bool kSp, class P>
__device__ void zc_verify_skip(const P &p, const uint32_t v[3], const int8_t pr[3], const Frame &f, uint64_t rw,
                               uint32_t home, uint32_t c, uint32_t i, uint32_t k, const char *how) {
  const uint32_t hv = probe_bucket_fast(PSH_ZORDER_DIV, v, pr, f.step, f.bits, p.nb, rw);
  if (hv != home && __ldcg(pc_at<kSp>(p, c * p.nb + hv)) < p.cap)
    printf("psh_zc_verify: FAIL point %u probe %u %s, bucket %u has room\n", i, k, how, hv);
  else if (k == 64u && i % 256u == 0u) /* a sample, to show that the skips run */
    printf("psh_zc_verify: ok point %u probe %u %s, bucket %u full\n", i, k, how, hv);
}
#endif
/* Whether bf (the cell tables' block words) holds the 2 x 2 x 2 block of cells that probe row pr can reach from
 * base cell (b0, b1, b2) of the cloud whose cells start at cbase (m bits a side, cm = 2^m - 1): then no voxel of that
 * probe has room. The test of probe_point_z and probe_warp_z's walk (its mask loop writes it out). */
__device__ __forceinline__ bool zc_block_full(const volatile uint32_t *bf, uint32_t m, uint32_t cm, uint32_t cbase,
                                              uint32_t b0, uint32_t b1, uint32_t b2, const int8_t pr[3]) {
  const uint32_t t = cbase + psh_zcell_index((b0 + (uint32_t)(int32_t)pr[0]) & cm, (b1 + (uint32_t)(int32_t)pr[1]) & cm,
                                             (b2 + (uint32_t)(int32_t)pr[2]) & cm, m);
  return bf[t >> 5] >> (t & 31u) & 1u;
}
/* probe_point's one-pass loop for Z-order-div with the cell tables (phase_probe_nt): the same probes in the
 * same order with the same outcome. A probe is first looked up in bf (its 8 possible cells full: skipped before
 * the random word); else its voxel's cell, from the random word, in cf (its bucket known full: skipped, as the
 * "full" bitmap would); else its bucket is the cell's (psh_zcell_bucket: a 32-bit spread of m-bit cell
 * coordinates instead of three 64-bit spreads of 21-bit voxels and a 64-bit high product). Every bucket this
 * block finds full also goes through zc_mark.
 * The counter attempt is aggregated over the lanes that reach it together and want the same bucket
 * (__activemask, __match_any_sync): one of them reads the counter and takes the group's slots with one atomic,
 * rolling back those past S, and the lanes take the slots in lane order; the same outcome as one attempt each in
 * that order, for any grouping (groups of one included). Why: a warp's points are neighbours in
 * list order and its lanes step through the same probe order, so at one probe index they often want the same
 * bucket, and the counters' L2 traffic set this phase's length (ncu, H100, 2026-11-26: at 100k 35% of the stall
 * samples on the counter read and the atomic; without the read, so with more atomics, 20-66% slower). H100,
 * same call: 100k -30 to -44%, 600k -6 to -23%, 4M +2%; v8 pays 2-4% on the XOR hashes (spills 60 -> 152 bytes).
 * A warp-synchronous form (every lane stepping the probes together, two votes a step) won as much at 100k but
 * lost 10-15% at 600k and 28% at 4M. A group whose attempt overflows the bucket marks it full; one that takes
 * exactly its last slot leaves the mark to the next attempt's read (zc_attempt). */
template <bool kSp, class P>
__device__ __forceinline__ int probe_point_z(const P &p, uint32_t *full_w, uint32_t *cw, const ZCell &z, uint32_t i,
                                             uint32_t c, const Frame &f, const uint32_t v[3], uint32_t home) {
  const uint32_t cbase = c << (3u * z.m);
  const volatile uint32_t *cf = cw, *bf = cw + kCellBits / 32u;
  uint32_t s, r;
  const bool on = zc_frame(z, f, s, r);
  const uint32_t cm = (1u << z.m) - 1u;
  const uint32_t b0 = on ? psh_zcell_base(v[0], f.bits, s) : 0u, b1 = on ? psh_zcell_base(v[1], f.bits, s) : 0u,
                 b2 = on ? psh_zcell_base(v[2], f.bits, s) : 0u;
  const uint64_t rb = hx_rng_base(p.seed, i); /* hx_rng_u64(seed, i, k) = hx_mix64(rb + k) */
  for (uint32_t k = 0; k < p.nprobe; k++) {
    uint32_t h;
    if (on) {
      if (zc_block_full(bf, z.m, cm, cbase, b0, b1, b2, p.probe[k])) {
        /* its 8 cells are full: no random word, no hash */
#ifdef PSH_ZC_VERIFY
        zc_verify_skip<kSp>(p, v, p.probe[k], f, hx_mix64(rb + k), home, c, i, k, "skipped");
#endif
        continue;
      }
      /* the same tail as probe_warp_z's walk (they must attempt the same buckets in the same order); one helper
       * for both doubled v9/v10's spills (f9bab7b) */
      uint32_t w[3];
      probe_voxel(v, p.probe[k], f.step, f.bits, hx_mix64(rb + k), w);
      const uint32_t x = w[0] >> s, y = w[1] >> s, zz = w[2] >> s, u = cbase + psh_zcell_index(x, y, zz, z.m);
      h = psh_zcell_bucket(x, y, zz, r);
#ifdef PSH_ZC_VERIFY
      const uint32_t hv = probe_bucket_fast(PSH_ZORDER_DIV, v, p.probe[k], f.step, f.bits, p.nb, hx_mix64(rb + k));
      if (hv != h) printf("psh_zc_verify: FAIL point %u probe %u: cell bucket %u, hash %u\n", i, k, h, hv);
#endif
      if (cf[u >> 5] >> (u & 31u) & 1u) continue; /* its cell's bucket is known full */
    } else {
      h = probe_bucket_fast(PSH_ZORDER_DIV, v, p.probe[k], f.step, f.bits, p.nb, hx_mix64(rb + k));
    }
    if (h == home) continue;
    if (zc_attempt<kSp>(p, full_w, cw, z, i, c, h, f)) return kPlaced;
  }
  return kLeft;
}

/* probe_point_z for a whole warp (every lane calls it; act: the lane has listed point i) with the probes that bf
 * skips found once per base cell instead of once per point and probe. The bf test of probe k depends only on the
 * point's cloud and base cell (b0, b1, b2), so the warp takes each distinct (cloud, cell) of its lanes in turn and
 * its 32 lanes test probes lane, lane + 32, ... at once: four ballots give that cell's candidate mask. Each lane
 * then visits only its mask's probes, in order, through probe_point_z's other tests (bf again, as it may have
 * grown; cf; the "full" bitmap; the grouped attempt). bf only gains bits, so a probe outside the mask would have
 * been skipped by probe_point_z at its turn: the same probes are attempted in the same order, with the same
 * outcome. Why: at 600k ~350k of ~560k listed Z-order-div points are leftovers that step through all 128 probes,
 * almost all skipped by bf, and a warp's points (neighbours in list order) mostly share one or two cells of
 * 2^(bits - m) voxels a side. ptab: the probe table (probe_table). Lanes whose cloud has no table (zc_frame false)
 * take probe_point_z. H100, psh_bench, old and new in one call, seeds sweep and 1 (860f9f0): Z-order-div at 600k
 * v9 -16 / -17%, v8 -15%, v5 -8 / -9%; 300k v8 -9%, v9 -6% / +5% (one noisy round), v5 -3%; 100k v8/v9 -2 to -5%,
 * v5 +8 to +10%; the XOR hashes within noise, though v9's spills grew from 28/20 to 72/140 bytes. v4's K3 too
 * (kWarpZ, with a probe table of its own; af0da13, H200, same call): Z-order-div 600k -6 to -10%, 4M -18%,
 * 100k +7 to +12% (v9 is the variant there), the XOR hashes within 2%. */
template <bool kSp, class P>
__device__ __forceinline__ int probe_warp_z(const P &p, uint32_t *full_w, uint32_t *cw, const uint32_t *ptab,
                                            const ZCell &z, bool act, uint32_t i, uint32_t c, const Frame &f,
                                            const uint32_t v[3], uint32_t home) {
  const int lane = (int)(threadIdx.x & 31u);
  const volatile uint32_t *cf = cw, *bf = cw + kCellBits / 32u;
  uint32_t s = 0, r = 0;
  const bool on = act && zc_frame(z, f, s, r);
  const uint32_t cm = (1u << z.m) - 1u, cbase = c << (3u * z.m);
  const uint32_t b0 = on ? psh_zcell_base(v[0], f.bits, s) : 0u, b1 = on ? psh_zcell_base(v[1], f.bits, s) : 0u,
                 b2 = on ? psh_zcell_base(v[2], f.bits, s) : 0u;
  const uint32_t key = on ? cbase + psh_zcell_index(b0, b1, b2, z.m) : kNone;
  uint32_t mk[4] = {0u, 0u, 0u, 0u}; /* probes 32 j + l not skipped by bf: bit l of mk[j] */
  for (uint32_t todo = __ballot_sync(0xFFFFFFFFu, on); todo;) { /* warp-uniform */
    const int src = __ffs((int)todo) - 1;
    const uint32_t kk = __shfl_sync(0xFFFFFFFFu, key, src), x0 = __shfl_sync(0xFFFFFFFFu, b0, src),
                   y0 = __shfl_sync(0xFFFFFFFFu, b1, src), z0 = __shfl_sync(0xFFFFFFFFu, b2, src),
                   cb = __shfl_sync(0xFFFFFFFFu, cbase, src);
#pragma unroll
    for (uint32_t j = 0; j < 4u; j++) {
      const uint32_t k = 32u * j + (uint32_t)lane;
      bool cand = false;
      if (k < p.nprobe) {
        const uint32_t pw = ptab[k]; /* zc_block_full's test, written out: through it (a row unpacked from pw)
                                       * the PTX of every variant changed (5641217) */
        const uint32_t t = cb + psh_zcell_index((x0 + (uint32_t)(int32_t)(int8_t)pw) & cm,
                                                (y0 + (uint32_t)(int32_t)(int8_t)(pw >> 8)) & cm,
                                                (z0 + (uint32_t)(int32_t)(int8_t)(pw >> 16)) & cm, z.m);
        cand = !(bf[t >> 5] >> (t & 31u) & 1u);
      }
      const uint32_t w = __ballot_sync(0xFFFFFFFFu, cand);
      if (key == kk) mk[j] = w;
    }
    todo &= ~__ballot_sync(0xFFFFFFFFu, key == kk);
  }
  if (!act) return kLeft; /* the caller ignores it */
  if (!on) return probe_point_z<kSp>(p, full_w, cw, z, i, c, f, v, home);
  const uint64_t rb = hx_rng_base(p.seed, i); /* hx_rng_u64(seed, i, k) = hx_mix64(rb + k) */
#ifdef PSH_ZC_VERIFY /* check builds: every probe outside the mask had no room */
  for (uint32_t k = 0; k < p.nprobe; k++)
    if (!(mk[k >> 5] >> (k & 31u) & 1u))
      zc_verify_skip<kSp>(p, v, p.probe[k], f, hx_mix64(rb + k), home, c, i, k, "outside the mask");
#endif
  for (uint32_t j = 0; j < 4u; j++)
    for (uint32_t wm = mk[j]; wm; wm &= wm - 1u) {
      const uint32_t k = 32u * j + (uint32_t)(__ffs((int)wm) - 1);
      const uint32_t pw = ptab[k];
      const int8_t pr[3] = {(int8_t)pw, (int8_t)(pw >> 8), (int8_t)(pw >> 16)};
      if (zc_block_full(bf, z.m, cm, cbase, b0, b1, b2, pr)) { /* bf has grown since the mask */
#ifdef PSH_ZC_VERIFY
        zc_verify_skip<kSp>(p, v, pr, f, hx_mix64(rb + k), home, c, i, k, "skipped in the walk");
#endif
        continue;
      }
      uint32_t w[3]; /* probe_point_z's tail, written out here too (see there) */
      probe_voxel(v, pr, f.step, f.bits, hx_mix64(rb + k), w);
      const uint32_t x = w[0] >> s, y = w[1] >> s, zz = w[2] >> s, u = cbase + psh_zcell_index(x, y, zz, z.m);
      const uint32_t h = psh_zcell_bucket(x, y, zz, r);
#ifdef PSH_ZC_VERIFY
      const uint32_t hv = probe_bucket_fast(PSH_ZORDER_DIV, v, pr, f.step, f.bits, p.nb, hx_mix64(rb + k));
      if (hv != h) printf("psh_zc_verify: FAIL point %u probe %u: cell bucket %u, hash %u\n", i, k, h, hv);
#endif
      if (cf[u >> 5] >> (u & 31u) & 1u) continue; /* its cell's bucket is known full */
      if (h == home) continue;
      if (zc_attempt<kSp>(p, full_w, cw, z, i, c, h, f)) return kPlaced;
    }
  return kLeft;
}

/* Listed point i's cloud, voxel and home bucket. */
template <class Ld, class P>
__device__ __forceinline__ void listed_point(const P &p, uint32_t i, uint32_t &c, Frame &f, uint32_t v[3],
                                             uint32_t &home) {
  c = cloud_of(p.off, p.nclouds, i);
  f = frame_load<Ld>(p.frame, c);
  voxel3(p, f, __ldg(p.xyz + 3 * (size_t)i), __ldg(p.xyz + 3 * (size_t)i + 1), __ldg(p.xyz + 3 * (size_t)i + 2), v);
  home = psh_hash3((psh_hash)p.hash, v[0], v[1], v[2], f.bits, p.nb);
}

/* Leftover tickets of a warp's points with `left` set: one atomic per cloud per warp. Warp-uniform call. */
template <class P>
__device__ __forceinline__ void leftover_tickets(const P &p, bool left, uint32_t i, uint32_t c, int lane, uint32_t &nl) {
  const uint32_t lm = __ballot_sync(0xFFFFFFFFu, left);
  if (left) {
    const uint32_t peers = __match_any_sync(lm, c);
    const int leader = __ffs(peers) - 1;
    uint32_t base = 0;
    if (lane == leader) base = atomicAdd(p.resid + c, (uint32_t)__popc(peers));
    base = __shfl_sync(lm, base, leader);
    p.bucket[i] = PSH_RESID_FLAG | c;
    p.offset[i] = base + (uint32_t)__popc(peers & lanemask_lt());
    nl++;
  }
}

/* The queue pass of the grid's queue (phase_probe_nt with kGridQ) over one chunk, defer[0, nd): probes
 * kReachAt + kSolo.. of each queued point (the block's second pass tried the ones before), split over G lanes,
 * G a power of two <= kQueueMaxG chosen for the shortest chain (block-uniform; each group of G lanes takes every
 * (NT / G)-th point). Why: a queued point that no probe places runs all its ~124 probes, and with one lane per
 * point that lane's chain of dependent hash arithmetic set the pass's length (~37 us of v9's 124 at 600k
 * xor-div, H100, a643943) while most of the block's lanes idled. Lane j of a group runs probes
 * kReachAt + kSolo + j, + j + G, ... of the group's points on its own, as probe_point does with all of them; the
 * lanes of a point race, so the point takes the first probe with room in one lane's share rather than in the
 * whole order (the assignment was already order-dependent: other points race for the same counters). Lockstep
 * rounds, where the group tried its candidates in probe order, coupled the groups of a warp at every L2 access
 * and lost (a356b24, docs/psh.md). The queue entry is the point's state, written only by atomics and read
 * with volatile loads (as the "full" bitmap): kClaimMark set by the lane that makes the counter attempt (the
 * others retry that probe) and cleared if the attempt overflows; kPlacedMark added on success, after which the
 * entry never equals the bare index again, so no later claim succeeds. The claim makes lanes of one warp wait on each other, so
 * it is cheap only when claims are rare: hence the hard points only (phase_probe_nt); waiting on the state
 * word in a tight loop instead was 87% slower on a seed with many claims, as lanes starved the holder
 * (4574d68). queue_drain draws the leftover tickets from the entries without kPlacedMark, in one pass, as the groups
 * finish at different times and a ticket atomic each on the cloud's one counter would queue at that address. */
/* The bucket of probe k of point i from the shared probe table (ptab[k]: the three offsets as bytes); xp: the
 * power-of-two probe arithmetic applies (psh_probe_pow2), rb = hx_rng_base(seed, i). */
template <class P>
__device__ __forceinline__ uint32_t ptab_bucket(const P &p, const Frame &f, const uint32_t v[3], uint32_t pk, bool xp,
                                                uint64_t rb, uint32_t k) {
  const int8_t pr[3] = {(int8_t)(pk & 0xFFu), (int8_t)(pk >> 8 & 0xFFu), (int8_t)(pk >> 16 & 0xFFu)};
  return xp ? psh_probe_bucket_pow2((psh_hash)p.hash, v, pr, f.step, f.bits, p.nb, hx_mix64(rb + k))
            : probe_bucket_fast((psh_hash)p.hash, v, pr, f.step, f.bits, p.nb, hx_mix64(rb + k));
}

/* The block's second pass over a queued point with the grid's queue (kGridQ): kLeft when its XOR reach is full
 * for good, else probes kReachAt .. kReachAt + kSolo - 1 by this lane alone (kPlaced), else kDeferred (the grid's
 * queue takes the rest), or kLeft when no probes remain (nprobe <= kReachAt + kSolo). What probe_point does from k0 = kReachAt, stopped early; a copy of its loop, with the
 * probe table read from shared memory, because the second instance of probe_point's loop raised v9's spills
 * from 16 to 88 bytes (ptxas, sm_90) and cost it 3-5% on xor-mod (4574d68). */
template <class P>
__device__ __forceinline__ int solo_probes(const P &p, uint32_t *full_w, const uint32_t *ptab, uint32_t i, uint32_t c,
                                           const Frame &f, const uint32_t v[3], uint32_t home) {
  if (xor_reach_full(full_w, c, (psh_hash)p.hash, v[0], v[1], v[2], f.step, f.bits, p.nb)) return kLeft;
  const bool xp = psh_probe_pow2((psh_hash)p.hash, f.step, f.bits, p.nb);
  const uint64_t rb = hx_rng_base(p.seed, i);
  const uint32_t k1 = min(p.nprobe, kReachAt + kSolo);
  for (uint32_t k = kReachAt; k < k1; k++) {
    const uint32_t h = ptab_bucket(p, f, v, ptab[k], xp, rb, k);
    if (h == home) continue;
    const uint32_t g = c * p.nb + h;
    if (take_slot<true>(p, full_w, true, i, g)) return kPlaced; /* kGridQ only */
  }
  return k1 < p.nprobe ? kDeferred : kLeft;
}
constexpr uint32_t kPlacedMark = 0x80000000u, kClaimMark = 0x40000000u; /* above every point index (< 2^30) */
template <int NT, class Ld, class P>
__device__ __forceinline__ void queue_pass(const P &p, uint32_t *full_w, const uint32_t *ptab, uint32_t *defer, uint32_t nd,
                                           uint32_t &np) {
  volatile uint32_t *full = full_w, *st = defer;
  /* G: the shortest chain, (points per group) x (kQueueSetup + probes per lane); block-uniform */
  const uint32_t kS = min(p.nprobe, kReachAt + kSolo); /* the block-local pass tried kReachAt .. kS - 1 */
  const uint32_t nk = p.nprobe > kS ? p.nprobe - kS : 0u;
  uint32_t lg = 0, best = 0xFFFFFFFFu;
  for (uint32_t l = 0; (1u << l) <= kQueueMaxG; l++) {
    const uint32_t cost = ((nd << l) + NT - 1u) / NT * (kQueueSetup + ((nk + (1u << l) - 1u) >> l));
    if (cost < best) best = cost, lg = l;
  }
  const uint32_t G = 1u << lg, gl = threadIdx.x & (G - 1u);
  for (uint32_t e = threadIdx.x >> lg; e < nd; e += (uint32_t)NT >> lg) {
    const uint32_t i = st[e] & ~(kPlacedMark | kClaimMark);
    uint32_t c, home, v[3];
    Frame f;
    listed_point<Ld>(p, i, c, f, v, home);
    if (xor_reach_full(full_w, c, (psh_hash)p.hash, v[0], v[1], v[2], f.step, f.bits, p.nb)) continue; /* left */
    const bool xp = psh_probe_pow2((psh_hash)p.hash, f.step, f.bits, p.nb);
    const uint64_t rb = hx_rng_base(p.seed, i); /* hx_rng_u64(seed, i, k) = hx_mix64(rb + k) */
    for (uint32_t k = kS + gl; k < p.nprobe; k += G) {
      /* ptab in shared memory: the lanes are at different probes (p.probe's constant bank would serialise) */
      const uint32_t h = ptab_bucket(p, f, v, ptab[k], xp, rb, k);
      const uint32_t s0 = st[e];
      if (s0 & kPlacedMark) break; /* another lane placed it */
      if (h == home) continue;
      const uint32_t g = c * p.nb + h;
      if (full[g >> 5] >> (g & 31u) & 1u) continue; /* known full: no L2 read */
      uint32_t *const cg = pc_at<true>(p, g); /* kGridQ only */
      if (__ldcg(cg) >= p.cap) { /* full for good (see psh_v4.cu) */
        atomicOr(&full_w[g >> 5], 1u << (g & 31u));
        continue;
      }
      const uint32_t s1 = atomicCAS(&defer[e], i, i | kClaimMark);
      if (s1 & kPlacedMark) break;
      if (s1 != i) { /* another lane's attempt is in flight: this probe again */
        k -= G;
        continue;
      }
      const uint32_t o = atomicAdd(cg, 1u);
      if (o < p.cap) {
        p.bucket[i] = g;
        p.offset[i] = o;
        atomicOr(&defer[e], kPlacedMark); /* atomics for every write of the state, volatile reads (as full) */
        np++;
        break;
      }
      atomicSub(cg, 1u); /* roll back; o >= S means S points are placed there for good */
      atomicOr(&full_w[g >> 5], 1u << (g & 31u));
      atomicAnd(&defer[e], ~kClaimMark); /* released */
    }
  }
}

/* The queue pass over defer[0, nd) and the leftover tickets of its unplaced points (block-uniform call; ends
 * with a barrier, after which defer may be refilled). */
template <int NT, class Ld, class P>
__device__ __forceinline__ void queue_drain(const P &p, uint32_t *full_w, const uint32_t *ptab, uint32_t *defer,
                                            uint32_t nd, int lane, uint32_t &np, uint32_t &nl) {
  queue_pass<NT, Ld>(p, full_w, ptab, defer, nd, np);
  __syncthreads(); /* its marks -> the leftover tickets, one pass */
  for (uint32_t e0 = 0; e0 < nd; e0 += NT) {
    const uint32_t e = e0 + threadIdx.x, w = e < nd ? defer[e] : kPlacedMark;
    const bool left = !(w & kPlacedMark);
    const uint32_t i = w & ~(kPlacedMark | kClaimMark), c = left ? cloud_of(p.off, p.nclouds, i) : 0u;
    leftover_tickets(p, left, i, c, lane, nl);
  }
  __syncthreads(); /* the queue's reads -> the next pushes */
}

/* Phase C: the overflow list races over the probes, one thread per point, in blocks of NT threads
 * (psh_v4.cu's header has the reasoning: the "full" snapshot, 32-bit probe arithmetic, warp-aggregated
 * leftover tickets, one tally atomic per block). Ld reads the list, the frames and the snapshot's counters:
 * LdPrev in v4's K3 (K2, an earlier launch, wrote them), LdL2 in the one-launch variants. The live check of a
 * counter that other blocks are changing always goes to L2 (ld.global.cg). full: kSnapBits / 32 shared
 * words, tally: 3 shared words, defer: 2 NT shared words. v4's K3 runs it with NT = kProbeT, v5/v7
 * through phase_probe (NT = kT), v8 with its 1024-thread blocks.
 * XOR hashes with the snapshot (c1fb0e7, docs/psh.md): a point that kReachAt probes did not place either has
 * its whole probe reach full (xor_reach_full: it is a leftover at once, instead of trying the other 126
 * probes) or is queued in shared memory for a second pass of the block over its queued points, run whenever
 * the queue holds NT (so it never holds more than 2 NT) and after the block's last round. One thread per
 * point in grid-stride rounds put each hopeless or slow point's 128 probes on a warp of points that were
 * done after one; on the 600k lidar cloud 89% of the ~140k hopeless points are proven so, and the second
 * pass gives the rest dense warps (xor-div: v9 -47%, v4 at 4M -59%, H100). The Z-order hashes keep the
 * one-pass loop (their reach is a box of up to 512 buckets: no cheap proof for the whole point); with cells
 * (kCellWords shared words, or nullptr) Z-order-div proves it per probe instead (probe_point_z; with kWarpZ per
 * base cell and warp, probe_warp_z).
 * kGridQ (the cooperative variants v5-v9; d6da59e): the block's second pass tries only probes kReachAt
 * .. kReachAt + kSolo - 1 of its queued points, one thread each, and pushes the points still unplaced (and not
 * proven hopeless) to one grid-wide queue (ovf + n + 1, one atomic per warp); after a grid barrier every block
 * takes an equal share of that queue through queue_pass (G lanes per point). Why both steps:
 * - The blocks' list shares are contiguous in list order, so the clusters of hard points land in a few blocks'
 *   queues, and the slowest block's thread-per-point pass (~40-50 us at 600k xor-div, H100) set the phase's end.
 * - Many queued points are easy: for some PSH seeds (the sweep's among them) their probes kReachAt.. have room
 *   at once. Sent straight to the grid's queue (d0f16b2), up to 88k of them at 600k (against 12-20k for other
 *   seeds) raced their G lanes for the same claim, and the seed decided between -20% and +20% (H100,
 *   8 seeds, 4574d68). Two probes per point in the block first leave the grid's queue to the hard points.
 * H100, v9 xor-div, 6 seeds, same calls: 100k -5 to -13%, 600k -2 to -21% (the sweep's seed: -11%, -21%).
 * v4's K3 (kGridQ = false: separate launches, no grid barrier) keeps its per-block queue and the
 * thread-per-point second pass over every remaining probe (the lane split alone cost it 3-7%). kWarpZ: Z-order-div
 * through probe_warp_z (the default in v5-v9; v4's K3 sets it too). ptab: the probe table in shared memory for
 * solo_probes and queue_pass (kGridQ) and probe_warp_z (kWarpZ), 128 words. */
template <int NT, class Ld = LdL2, bool kShare = true, bool kGridQ = true, bool kBack = true, bool kWarpZ = kGridQ,
          bool kDeal = false, class P>
__device__ __forceinline__ void phase_probe_nt(const P &p, uint32_t *full_w, uint32_t *ptab, uint32_t *tally,
                                               uint32_t *defer, uint32_t n_ovf, uint32_t *cells) {
  const int lane = (int)(threadIdx.x & 31u);
  const uint32_t nbt = p.nclouds * p.nb;
  const bool snap = nbt <= kSnapBits && n_ovf >= kSnapMinList;
  const bool reach = snap && !psh_is_zorder((psh_hash)p.hash); /* xor_reach_full applies */
  if (threadIdx.x == 0) tally[0] = tally[1] = tally[2] = 0;
  /* kGridQ with the spread copy (pc_at): the counts into it, ordered before any attempt by the grid barrier below.
   * The snapshot reads p.cnt, which no attempt changes. */
  const bool spread = kGridQ && p.pshift != 0u; /* grid-uniform */
  if (spread)
    for (uint32_t g = blockIdx.x * NT + threadIdx.x; g < nbt; g += gridDim.x * NT) p.pcnt[g << p.pshift] = Ld::ld(p.cnt + g);
  if (snap)
    for (uint32_t w = threadIdx.x; w < (nbt + 31u) / 32u; w += NT) {
      const uint32_t g0 = w * 32u; /* p.cnt is 256-byte aligned, so cnt + g0 is 16-byte aligned */
      uint32_t word = 0;
      if (g0 + 32u <= nbt) {
        const uint4 *q = (const uint4 *)(p.cnt + g0);
        uint4 a[8];
#pragma unroll
        for (int k = 0; k < 8; k++) a[k] = Ld::ld(q + k); /* 8 independent loads in flight */
#pragma unroll
        for (int k = 0; k < 8; k++)
          word |= (uint32_t)(a[k].x >= p.cap) << (4 * k) | (uint32_t)(a[k].y >= p.cap) << (4 * k + 1) |
                  (uint32_t)(a[k].z >= p.cap) << (4 * k + 2) | (uint32_t)(a[k].w >= p.cap) << (4 * k + 3);
      } else {
        for (uint32_t b = 0; g0 + b < nbt; b++) word |= (uint32_t)(Ld::ld(p.cnt + g0 + b) >= p.cap) << b;
      }
      full_w[w] = word;
    }
  /* Z-order-div with the snapshot: the cell tables (probe_point_z), where the batch's fit in kCellBits */
  ZCell zc = {0u, 0u};
  bool zon = false;
  if (cells && snap && p.hash == PSH_ZORDER_DIV && p.nb >= 16u && !(p.nb & (p.nb - 1u))) {
    zc.lg = (uint32_t)__ffs((int)p.nb) - 1u;
    zc.m = (zc.lg + 2u) / 3u;
    zon = (p.nclouds << (3u * zc.m)) <= kCellBits; /* snap: nclouds nb <= kSnapBits, so no overflow */
  }
  if ((kGridQ && reach) || (kWarpZ && zon)) probe_table<NT>(p, ptab); /* solo_probes and queue_pass; probe_warp_z */
  const bool zm = psh_probe_zmod((psh_hash)p.hash, 0u, p.nb); /* and each cloud's bits <= PSH_VOX_BITS, below */
  if (spread) grid_sync(); /* every block's share of the copy, and this block's tally, snapshot, probe table -> uses */
  else __syncthreads();     /* tally zeroed, snapshot and probe table built -> uses below */
  if (zon) zc_build<NT, Ld>(p, full_w, cells, zc);
  uint32_t np = 0, nl = 0;
  /* The block's list entries [first, end) in rounds of NT: with kShare an equal contiguous share per block,
   * else chunks of NT in grid-stride rounds (first = blockIdx.x NT, step = grid NT). Chunks of NT leave the
   * last (or only) round to the blocks that reach the list's end while the other SMs idle (ncu on v4's K3,
   * Z-order-div 100k, whose 93k entries fill 363 of 528 blocks: the busiest SM +35%, the idlest -80% of the mean
   * active cycles); equal shares keep every block busy, and each block's entries stay neighbours in list
   * order (warps append their tile's overflowing points together).
   * 4e0a2eb, H100, same call: v9 xor-div 100k -9% / 600k -2%, zorder-div -9%, v7 xor-div 100k -7%; v4's K3
   * (four 256-thread blocks per SM) lost at 4M (xor-mod +9%), so it keeps the grid-stride chunks (kShare =
   * false). */
  /* kDeal (v9/v10's Z-order-div instances, psh_v8.cu): the list in chunks of 32 entries dealt round-robin over
   * the grid's warps (chunk ch to block ch % G, then to the block's warps in turn) instead of equal contiguous
   * shares; first, end and step then count this warp's chunks. A warp's 32 entries stay neighbours in list order
   * (probe_warp_z shares their cells), while every block samples the whole list, so the blocks holding the
   * clusters of hard points no longer end the phase (they ended it between 150 and 240 us at 600k, H100, 2026-11-27).
   * It applies where probe_warp_z does (zon: Z-order-div with its cell tables); otherwise the shares stay.
   * H100, psh_bench, old and new in one call, two seeds (cfb7c9d): v9 and v10 zorder-div -4 to -11%
   * at 100k, -12 to -14% at 300k and 600k; v5 and v7 within +-2% with it, and a form that also dealt
   * Z-order-mod's one-pass loop gained nothing there (+1%), so neither takes it. The three loop words are reused,
   * not added (a form with three more spilled twice as much); still, in the one kernel of v9/v10 the deal's
   * code cost xor-mod and xor-div 1-3%, so it is a template flag and those hashes run an instance without it. */
  const bool deal = kDeal && kShare && kWarpZ && zon; /* grid-uniform */
  uint32_t first = blockIdx.x * NT, end = n_ovf;
  if (deal) {
    first = blockIdx.x + gridDim.x * (threadIdx.x >> 5);
    end = n_ovf / 32u + ((n_ovf & 31u) != 0u); /* chunks, <= 2^27, so t0 < end keeps t0 * 32 + 31 < 2^32 */
  } else if (kShare) {
    psh_list_share(n_ovf, gridDim.x, blockIdx.x, &first, &end);
  }
  const uint32_t step = deal ? gridDim.x * (uint32_t)(NT / 32) : kShare ? NT : gridDim.x * NT;
  if (kWarpZ && zon) { /* t0 is block-uniform (warp-uniform with the deal), so whole warps call probe_warp_z */
    for (uint32_t t0 = first; t0 < end; t0 += step) {
      const uint32_t t = deal ? t0 * 32u + (uint32_t)lane : t0 + threadIdx.x, tend = deal ? n_ovf : end;
      uint32_t i = 0, c = 0, v[3] = {0u, 0u, 0u}, home = 0;
      Frame f = {};
      if (t < tend) {
        i = Ld::ld(p.ovf + t);
        listed_point<Ld>(p, i, c, f, v, home);
      }
      const int r = probe_warp_z<kGridQ>(p, full_w, cells, ptab, zc, t < tend, i, c, f, v, home);
      np += t < tend && r == kPlaced;
      leftover_tickets(p, t < tend && r == kLeft, i, c, lane, nl);
    }
  } else if (!reach) { /* the one-pass loop of before c1fb0e7 (sharing the two-pass loop's code cost Z-order 2-3%) */
    for (uint32_t t0 = first; t0 < end; t0 += step) {
      const uint32_t t = t0 + threadIdx.x;
      bool left = false;
      uint32_t i = 0, c = 0;
      if (t < end) {
        i = Ld::ld(p.ovf + t);
        Frame f;
        uint32_t v[3], home;
        listed_point<Ld>(p, i, c, f, v, home);
        const int r = zon                           ? probe_point_z<kGridQ>(p, full_w, cells, zc, i, c, f, v, home)
                      : zm && f.bits <= PSH_VOX_BITS ? probe_point_zm<kGridQ>(p, full_w, snap, i, c, f, v, home)
                                                     : probe_point<false, kGridQ>(p, full_w, snap, false, i, c, f, v, home, 0, false);
        np += r == kPlaced;
        left = r == kLeft;
      }
      leftover_tickets(p, left, i, c, lane, nl);
    }
  } else /* t0 is block-uniform, so whole warps stay in the loop together for the warp intrinsics */
  for (uint32_t t0 = first; t0 < end; t0 += step) {
    const uint32_t t = t0 + threadIdx.x;
    bool left = false;
    uint32_t i = 0, c = 0;
    if (t < end) {
      i = Ld::ld(p.ovf + t);
      Frame f;
      uint32_t v[3], home;
      listed_point<Ld>(p, i, c, f, v, home);
      const int r = probe_point<true, kGridQ>(p, full_w, snap, reach, i, c, f, v, home, 0, true);
      if (r == kDeferred) defer[atomicAdd(&tally[2], 1u)] = i; /* < 2 NT: the queue is drained from NT on */
      np += r == kPlaced;
      left = r == kLeft;
    }
    leftover_tickets(p, left, i, c, lane, nl);
    __syncthreads(); /* the round's pushes -> the count */
    const uint32_t nd = tally[2];
    __syncthreads(); /* every thread has the count -> the reset and the next round's pushes */
    if (nd < NT && t0 + step < end) continue; /* block-uniform */
    if (threadIdx.x == 0) tally[2] = 0; /* read again only after the next round's pushes and barriers */
    for (uint32_t e0 = 0; e0 < nd; e0 += NT) { /* the second pass over the queue */
      const uint32_t e = e0 + threadIdx.x;
      bool left2 = false, dfr2 = false;
      uint32_t i2 = 0, c2 = 0;
      if (e < nd) {
        i2 = defer[e];
        Frame f;
        uint32_t v[3], home;
        listed_point<Ld>(p, i2, c2, f, v, home);
        const int r = kGridQ ? solo_probes(p, full_w, ptab, i2, c2, f, v, home)
                             : probe_point<true, kGridQ>(p, full_w, snap, reach, i2, c2, f, v, home, kReachAt, false);
        np += r == kPlaced;
        left2 = r == kLeft;
        dfr2 = r == kDeferred; /* kGridQ: kSolo probes here, the rest in the grid's queue */
      }
      leftover_tickets(p, left2, i2, c2, lane, nl);
      if (kGridQ) { /* the grid's queue, one atomic per warp */
        const uint32_t dm = __ballot_sync(0xFFFFFFFFu, dfr2);
        if (dm) {
          const int leader = __ffs(dm) - 1;
          uint32_t base = 0;
          if (lane == leader) base = atomicAdd(p.ctr + C_GQ, (uint32_t)__popc(dm));
          base = __shfl_sync(0xFFFFFFFFu, base, leader);
          if (dfr2) p.ovf[p.n + 1u + base + (uint32_t)__popc(dm & lanemask_lt())] = i2;
        }
      }
    }
    __syncthreads(); /* the second pass's queue reads -> the next round's pushes */
  }
  if (kGridQ && reach) { /* the grid's queue in equal shares, after every block's pushes */
    grid_sync();
    const uint32_t nq = __ldcg(p.ctr + C_GQ);
    uint32_t q0 = 0, q1 = 0;
    psh_list_share(nq, gridDim.x, blockIdx.x, &q0, &q1);
    for (uint32_t c0 = q0; c0 < q1; c0 += 2u * NT) { /* the shared queue holds 2 NT */
      const uint32_t nd = min(2u * NT, q1 - c0);
      for (uint32_t e = threadIdx.x; e < nd; e += NT) defer[e] = __ldcg(p.ovf + p.n + 1u + c0 + e);
      __syncthreads(); /* the chunk -> the pass */
      queue_drain<NT, Ld>(p, full_w, ptab, defer, nd, lane, np, nl);
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    np += __shfl_xor_sync(0xFFFFFFFFu, np, o);
    nl += __shfl_xor_sync(0xFFFFFFFFu, nl, o);
  }
  if (lane == 0) {
    if (np) atomicAdd(&tally[0], np);
    if (nl) atomicAdd(&tally[1], nl);
  }
  __syncthreads(); /* tally complete -> thread 0 */
  if (threadIdx.x == 0) {
    if (tally[0]) atomicAdd(p.ctr + C_PROBE, tally[0]);
    if (tally[1]) atomicAdd(p.ctr + C_OVER, tally[1]);
  }
  if (spread && kBack) { /* the counts back into p.cnt, for callers that read it after their grid barrier (v5, v7;
                          * v8 reads them with pc_final instead) */
    grid_sync(); /* every attempt -> the copy back */
    for (uint32_t g = blockIdx.x * NT + threadIdx.x; g < nbt; g += gridDim.x * NT) p.cnt[g] = __ldcg(p.pcnt + (g << p.pshift));
  }
}
template <class P> __device__ __forceinline__ void phase_probe(const P &p, Smem &sm, uint32_t n_ovf) {
  phase_probe_nt<kT>(p, sm.u.c.full, sm.u.c.ptab, sm.tally, sm.u.c.defer, n_ovf, sm.u.c.cells);
}

/* The cloud's scans before a tile's rows (v4's K4, phase D of v5/v6 and v7): thread tid owns the cloud's
 * buckets [j0, j1), j0 = tid * ceil(nb / kT), at most PER of them. gcnt: the cloud's counters after probing
 * (all <= S), read with Ld. With leftovers (R > 0, block-uniform) the free-slot scan F[j] (F[nb] = total) and
 * the final counts (psh_final_count); then start[sp(j)] = base[0] + exclusive scan of the final counts, the
 * first packed row of bucket j. The cloud's first tile (writer) also publishes the starts and final counts
 * to g_start[j] / g_count[j]. A thread's counts stay in registers, or with kBig (PER past kPer: v4's dynamic
 * shared memory) in its own start entries until they become the starts; sp pads those entries against bank
 * conflicts (psh_v4.cu's K4). F keeps the plain index: psh_resid_place searches it. Ends without a barrier:
 * the caller's __syncthreads orders start and F before their reads. */
template <int PER, bool kBig, class Ld, class Sp>
__device__ __forceinline__ void cloud_scans(const uint32_t *gcnt, uint32_t nb, uint32_t S, uint32_t R,
                                            const uint32_t *base, bool writer, uint32_t *g_start,
                                            uint32_t *g_count, uint32_t *F, uint32_t *start, Sp sp,
                                            Scan::TempStorage &tmp) {
  const uint32_t tid = threadIdx.x;
  const uint32_t per = (nb + kT - 1) / kT;
  const uint32_t j0 = min(nb, tid * per), j1 = min(nb, j0 + per);
  /* kBig: a runtime trip count (per = nb / kT is below PER = 32 up to nb 8192; guarded iterations to PER cost
   * 2% at 4M points, H200) and less unrolling (32 counters' loads hoisted at once spill 424 bytes) */
  constexpr int kU = kBig ? 8 : PER;
  const int nq = kBig ? (int)(j1 - j0) : PER;
  auto has = [&](int q) { return kBig || j0 + (uint32_t)q < j1; };
  uint32_t cj[kBig ? 1 : PER]; /* counts after probing, replaced in place by the final counts */
  auto cnt = [&](int q) -> uint32_t & {
    if constexpr (kBig) return start[sp(j0 + (uint32_t)q)];
    else return cj[q];
  };
#pragma unroll(kU)
  for (int q = 0; q < nq; q++)
    cnt(q) = has(q) ? Ld::ld(gcnt + j0 + q) : 0u;
  if (R > 0) { /* block-uniform: free-slot scan F and final counts with the leftovers */
    uint32_t fsum = 0, pre = 0, total = 0;
#pragma unroll(kU)
    for (int q = 0; q < nq; q++)
      if (has(q)) fsum += S - cnt(q);
    Scan(tmp).ExclusiveSum(fsum, pre, total);
    uint32_t run = pre;
#pragma unroll(kU)
    for (int q = 0; q < nq; q++) {
      if (has(q)) {
        const uint32_t j = j0 + (uint32_t)q, freej = S - cnt(q);
        F[j] = run;
        cnt(q) = psh_final_count(cnt(q), run, freej, total, R, j, nb);
        run += freej;
      }
    }
    if (tid == 0) F[nb] = total;
    __syncthreads(); /* tmp reuse by the second scan; F complete before the rows */
  } /* without leftovers the final counts are the counts */
  uint32_t csum = 0, pre2 = 0;
#pragma unroll(kU)
  for (int q = 0; q < nq; q++)
    if (has(q)) csum += cnt(q);
  Scan(tmp).ExclusiveSum(csum, pre2);
  uint32_t run = __ldg(base) + pre2;
#pragma unroll(kU)
  for (int q = 0; q < nq; q++) {
    if (has(q)) {
      const uint32_t j = j0 + (uint32_t)q, fc = cnt(q);
      start[sp(j)] = run;
      if (writer) {
        g_start[j] = run;
        g_count[j] = fc;
      }
      run += fc;
    }
  }
}

/* Phases A and B of the one-launch variants v5/v6 (psh_v5.cu) and v7 (psh_v7.cu): one body, as they differ in
 * two places only. A: run state zeroed, the tile's xyz into registers, its bbox keys; grid barrier 1. B: the
 * cloud's frame from the tiles' keys, voxel + hash from the registers, each point ranked in the tile's dense
 * shared counters (kMatchRank: v5's __match_any_sync groups, one shared atomic per group; else v7's one
 * shared atomicAdd per point, whose old value is the rank), one returning atomicAdd per non-empty bucket,
 * roll back past S, rebase; the placements stay in pl (kNone: listed for phase C, or no item) and
 * overflowing points go to the overflow list (kStoreFirst: v7 also stores the first-hash bucket/offset
 * here). Ends before grid barrier 2, which the kernel takes. lane: threadIdx.x & 31 (the caller's, so that the
 * kernels compile as they did before this body was shared); tr: this thread stamps trace[0] and [1]. */
template <bool kMatchRank, bool kStoreFirst, class P>
__device__ __forceinline__ void phases_ab(const P &p, Smem &sm, const int lane, const bool tr, Tile &t, bool &has,
                                          uint32_t (&pl)[kMaxIpt]) {
  const uint32_t tid = threadIdx.x;
  /* ---- A: run state, defaults, the tile's xyz, tile bbox keys ---- */
  if (tr) {
    p.trace[0] = gtimer();
    p.trace[5] = p.trace[6] = 0; /* every block's atomicMax on [6] comes after barrier 1 */
  }
  init_run_state(p);
  has = tile_of(p, t); /* block-uniform */
  float x[kMaxIpt][3];
  if (has) {
    /* the loads of all items first (the read-only path: phases B and D read the same lines again) */
#pragma unroll
    for (int it = 0; it < kMaxIpt; it++) {
      const uint32_t i = t.lo + (uint32_t)it * kT + tid;
      const bool v = (uint32_t)it < p.ipt && i < t.hi;
      for (int d = 0; d < 3; d++) x[it][d] = v ? __ldg(p.xyz + 3 * (size_t)i + d) : 0.0f;
    }
    uint32_t k[6] = {kNone, kNone, kNone, kNone, kNone, kNone};
#pragma unroll
    for (int it = 0; it < kMaxIpt; it++) {
      const uint32_t i = t.lo + (uint32_t)it * kT + tid;
      if ((uint32_t)it < p.ipt && i < t.hi)
        for (int d = 0; d < 3; d++) {
          const uint32_t key = psh_f2key(x[it][d]);
          k[d] = min(k[d], key);
          k[3 + d] = min(k[3 + d], ~key);
        }
    }
    block_min6(k, sm.red);
    if (tid == 0)
      for (int e = 0; e < 6; e++) p.part[(size_t)blockIdx.x * 6 + e] = k[e];
  }
  grid_sync(); /* zeroed state, defaults, tile keys -> phase B */
  if (tr) p.trace[1] = gtimer();
  /* ---- B: frame, hash, rank, bulk commit; placements stay in registers ---- */
  const uint32_t nb = p.nb, c = t.c;
  /* placement of each item: local bucket << kOffBits | offset; kNone: probed in phase C (or no item) */
#pragma unroll
  for (int it = 0; it < kMaxIpt; it++) pl[it] = kNone;
  if (has) {
    for (uint32_t j = tid; j < nb; j += kT) sm.u.cnt[j] = 0;
    if (tid == 0) sm.first = 0;
    uint32_t k[6] = {kNone, kNone, kNone, kNone, kNone, kNone};
    const uint32_t pbase = c + t.k0, m = t.k1 - t.k0 + 1;
    for (uint32_t j = tid; j < m; j += kT)
      for (int e = 0; e < 6; e++) k[e] = min(k[e], __ldcg(p.part + (size_t)(pbase + j) * 6 + e));
    /* xyz again, issued before the reduction's barriers so the loads overlap them */
#pragma unroll
    for (int it = 0; it < kMaxIpt; it++) {
      const uint32_t i = t.lo + (uint32_t)it * kT + tid;
      const bool v = (uint32_t)it < p.ipt && i < t.hi;
      for (int d = 0; d < 3; d++) x[it][d] = v ? __ldg(p.xyz + 3 * (size_t)i + d) : 0.0f;
    }
    block_min6(k, sm.red); /* contains a barrier: also orders the cnt / first zeroing above */
    if (tid == 0) {
      const Frame f = frame_from_keys(p, k);
      uint32_t w[kFrameWords] = {__float_as_uint(f.lo[0]), __float_as_uint(f.lo[1]), __float_as_uint(f.lo[2]),
                                 f.bits, f.step, f.shift[0], f.shift[1], f.shift[2]};
      for (int e = 0; e < kFrameWords; e++) {
        sm.frame[e] = w[e];
        if (t.k == t.k0) p.frame[(size_t)c * kFrameWords + e] = w[e]; /* one writer per cloud, for phase C */
      }
    }
    __syncthreads(); /* frame written by thread 0 -> read by all */
    Frame f;
    for (int d = 0; d < 3; d++) f.lo[d] = __uint_as_float(sm.frame[d]);
    f.bits = sm.frame[3];
    f.step = sm.frame[4];
    for (int d = 0; d < 3; d++) f.shift[d] = sm.frame[5 + d];
    uint32_t hr[kMaxIpt]; /* local bucket << 16 | rank in the tile (nb <= 4096, tile <= 4096 points) */
#pragma unroll
    for (int it = 0; it < kMaxIpt; it++) {
      hr[it] = 0;
      if ((uint32_t)it >= p.ipt) break; /* block-uniform */
      const uint32_t i = t.lo + (uint32_t)it * kT + tid;
      const bool valid = i < t.hi;
      uint32_t h = 0;
      if (valid) {
        uint32_t v[3];
        voxel3(p, f, x[it][0], x[it][1], x[it][2], v);
        h = psh_hash3((psh_hash)p.hash, v[0], v[1], v[2], f.bits, nb);
      }
      if (kMatchRank) { /* v5: one shared atomic per group of lanes with the same bucket */
        const uint32_t active = __ballot_sync(0xFFFFFFFFu, valid);
        if (valid) {
          const uint32_t peers = __match_any_sync(active, h);
          const int leader = __ffs(peers) - 1;
          uint32_t base = 0;
          if (lane == leader) base = atomicAdd(&sm.u.cnt[h], (uint32_t)__popc(peers));
          base = __shfl_sync(active, base, leader);
          hr[it] = h << 16 | (base + (uint32_t)__popc(peers & lanemask_lt()));
        }
      } else {
        /* v7: the rank is the shared counter's old value: one ATOMS per point, no warp match (v5's MATCH.ANY
         * stall); ranks within a bucket are unique, which is all the rebase below needs */
        if (valid) hr[it] = h << 16 | atomicAdd(&sm.u.cnt[h], 1u);
      }
    }
    __syncthreads(); /* cnt complete -> commit reads */
    uint32_t *gcnt = p.cnt + (size_t)c * nb;
    uint32_t cnt[kPer], old[kPer];
#pragma unroll
    for (int q = 0; q < kPer; q++) {
      const uint32_t j = tid + (uint32_t)q * kT;
      cnt[q] = j < nb ? sm.u.cnt[j] : 0u;
      old[q] = 0;
      if (cnt[q]) old[q] = atomicAdd(gcnt + j, cnt[q]);
    }
#pragma unroll
    for (int q = 0; q < kPer; q++) {
      const uint32_t j = tid + (uint32_t)q * kT;
      if (cnt[q]) {
        const uint32_t keep_to = max(old[q], p.cap);
        if (old[q] + cnt[q] > keep_to) atomicSub(gcnt + j, old[q] + cnt[q] - keep_to); /* roll back past S */
        sm.u.cnt[j] = old[q]; /* rebase: slot j is read and written by this thread only */
      }
    }
    __syncthreads(); /* rebased cnt -> placement reads */
    uint32_t nfirst = 0;
#pragma unroll
    for (int it = 0; it < kMaxIpt; it++) {
      if ((uint32_t)it >= p.ipt) break; /* block-uniform */
      const uint32_t i = t.lo + (uint32_t)it * kT + tid;
      bool over = false;
      if (i < t.hi) {
        const uint32_t h = hr[it] >> 16, off = sm.u.cnt[h] + (hr[it] & 0xFFFFu);
        if (off < p.cap) {
          pl[it] = h << kOffBits | off;
          if (kStoreFirst) { /* v7: final, coalesced, issued while the grid barrier is pending */
            p.bucket[i] = c * nb + h;
            p.offset[i] = off;
          }
          nfirst++;
        } else {
          over = true;
        }
      }
      const uint32_t mo = __ballot_sync(0xFFFFFFFFu, over);
      if (mo) { /* rare: one list atomic per warp that has overflowing points */
        const int leader = __ffs(mo) - 1;
        uint32_t base = 0;
        if (lane == leader) base = atomicAdd(p.ctr + C_NOVF, (uint32_t)__popc(mo));
        base = __shfl_sync(0xFFFFFFFFu, base, leader);
        if (over) p.ovf[base + (uint32_t)__popc(mo & lanemask_lt())] = i;
      }
    }
    for (int o = 16; o > 0; o >>= 1) nfirst += __shfl_xor_sync(0xFFFFFFFFu, nfirst, o);
    if (lane == 0 && nfirst) atomicAdd(&sm.first, nfirst);
    __syncthreads(); /* first complete -> thread 0 */
    if (tid == 0 && sm.first) atomicAdd(p.ctr + C_FIRST, sm.first);
  }
}

/* Blocks of kern (kT threads each) resident at once on the device; 0 when it cannot launch cooperatively
 * (the caller runs v4 instead). who names the variant in errors. */
template <class K> static inline hx_status coop_resident(K kern, const char *who, uint64_t *resident, hx_err *err) {
  int dev = 0, sms = 0, coop = 0, per_sm = 0;
  const char *what = "device";
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) {
    what = "SM count";
    e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  }
  if (e == cudaSuccess) {
    what = "cooperative launch attribute";
    e = cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev);
  }
  if (e == cudaSuccess) {
    what = "occupancy";
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, kT, 0);
  }
  if (e != cudaSuccess) return hx_errf(err, HX_ECUDA, "%s: %s: %s", who, what, cudaGetErrorString(e));
  *resident = coop && per_sm >= 1 && sms >= 1 ? (uint64_t)per_sm * (uint64_t)sms : 0u;
  return HX_OK;
}

/* Points per thread so that the tiles fill the resident blocks in one wave, at most kMaxIpt. false: even
 * kMaxIpt needs more tiles than there are resident blocks (the caller runs v4). */
static inline bool coop_tiling(uint32_t n, uint32_t nclouds, uint64_t resident, uint64_t *ipt_out,
                               uint64_t *tiles_out) {
  const uint64_t per_wave = (uint64_t)kT * resident;
  uint64_t ipt = ((uint64_t)n + per_wave - 1) / per_wave;
  ipt = ipt < 1 ? 1 : ipt > kMaxIpt ? kMaxIpt : ipt;
  uint64_t tiles = (uint64_t)nclouds + ((uint64_t)n + kT * ipt - 1) / (kT * ipt);
  while (tiles > resident && ipt < kMaxIpt) { /* the +nclouds of the tile bound can spill a wave */
    ipt++;
    tiles = (uint64_t)nclouds + ((uint64_t)n + kT * ipt - 1) / (kT * ipt);
  }
  *ipt_out = ipt;
  *tiles_out = tiles;
  return tiles <= resident;
}

/* The cooperative variants' (v5-v7) choice for a launch, in one place so that their launchers and the phase
 * trace's "did it run?" (psh_v5_runs_own, psh_v7_runs_own) agree: *own = the variant's own kernel runs, in
 * *tiles blocks of *ipt points per thread; false = it runs v4 instead (nb or S beyond the dense shared arrays,
 * no cooperative launch, or more tiles than one wave of resident blocks). */
template <class K>
static inline hx_status coop_plan(K kern, const char *who, uint32_t n, uint32_t nclouds, uint32_t nb, uint32_t cap,
                                  uint64_t *ipt, uint64_t *tiles, bool *own, hx_err *err) {
  *own = false;
  *ipt = *tiles = 0;
  if (nb > kDense || cap > kMaxCap) return HX_OK;
  uint64_t resident = 0;
  HX_TRY(coop_resident(kern, who, &resident, err));
  if (resident) *own = coop_tiling(n, nclouds, resident, ipt, tiles);
  return HX_OK;
}

/* The launcher of v5/v6 and v7 (host): the parameter checks, v4 where the variant cannot run (coop_plan), the
 * scratch query (v4's layout is a prefix of the variant's, so the variant's size serves both), the parameters
 * and the cooperative launch of kern in one wave of tiles. layout(q, base, nclouds, nb, n): the variant's
 * scratch layout (NULL base: the size); align(&p, out): its output-alignment field (Prm's union). */
template <class P, class Layout, class Align>
static inline hx_status coop_run(void (*kern)(P), const char *who, Layout layout, Align align, void *d_scratch,
                                 size_t *scratch_bytes, const psh_out *out, const psh_in *in, const psh_params *prm,
                                 void *stream, hx_err *err) {
  HX_TRY(psh_call_check(prm, in, err));
  if (prm->nb > kDense || prm->cap > kMaxCap) /* v4 (which runs v2 past nb = 16384) */
    return psh_run_v4(d_scratch, scratch_bytes, out, in, prm, stream, err);
  P p;
  memset(&p, 0, sizeof p);
  const size_t need = layout(&p, NULL, in->nclouds, prm->nb, in->n);
  int query;
  const hx_status sq = psh_scratch_check(d_scratch, scratch_bytes, need, &query, err);
  if (sq != HX_OK || query) return sq;
  if ((uintptr_t)d_scratch & 255u)
    return hx_errf(err, HX_EINVAL, "%s: scratch must be 256-byte aligned (cudaMalloc)", who);
  uint64_t ipt = 0, tiles = 0; /* points per thread: the tiles fill the resident blocks in one wave */
  bool own = false;
  HX_TRY(coop_plan(kern, who, in->n, in->nclouds, prm->nb, prm->cap, &ipt, &tiles, &own, err));
  if (!own) return psh_run_v4(d_scratch, scratch_bytes, out, in, prm, stream, err);
  layout(&p, d_scratch, in->nclouds, prm->nb, in->n);
  tiles_params_fill(&p, out, in, prm, (uint32_t)ipt);
  align(&p, out);
  void *args[] = {&p};
  const cudaError_t e =
      cudaLaunchCooperativeKernel((const void *)kern, dim3((unsigned)tiles), dim3(kT), args, 0, (cudaStream_t)stream);
  if (e != cudaSuccess) return hx_errf(err, HX_ECUDA, "%s: cooperative launch: %s", who, cudaGetErrorString(e));
  return HX_OK;
}

} // namespace psh_tiles

#endif /* F3D_PSH_TILES_CUH */
