/*
 * psh_v8.cu - PSH variant v8: one cooperative launch of 1024-thread blocks (one per SM, a tile of up to 16
 * points per thread), two grid barriers on the common path instead of v7's four, and no random scatter
 * pass of its own. Same invariants as v1-v7 (kernels.h): every point one (bucket, offset), offsets
 * 0..count-1, count <= S whenever n_c <= nb*S, bucket_start = exclusive scan from cloud_offset[c], slot and
 * perm inverse permutations; phase 1 keeps exactly min(hist, S) points per bucket (first-hash count =
 * CPU's). Which point of a bucket gets which offset is scheduling dependent (shared and global atomics),
 * as in v2-v7, so the tests check the invariants and the first-hash count, not the CPU's assignment.
 *
 * Why (v7's phase split, H100, 600k lidar xor-mod, 2026-11-22): probing 137 points cost 6.5 us because it
 * needs its own grid barrier, and the records + gather barrier + gather cost 12.5 us. v8:
 *   1  tile xyz -> shared memory (kept there for every later phase: no re-reads), tile bbox keys.
 *      grid barrier 1.
 *   2  frame from the cloud's tile keys; voxel + hash from shared memory; rank = a shared atomicAdd per
 *      point; one returning global atomicAdd per non-empty (tile, bucket) (1024-point-thread tiles: half of
 *      v7's 480k at 600k), roll back past S (so counters = points kept, min(hist, S)); the tile's points
 *      are also counting-sorted by bucket in shared memory (local exclusive scan + rank). First-hash points
 *      store bucket/offset (coalesced); the others go to the overflow list. grid barrier 2.
 *   3  short overflow list (<= kShort points in the batch, grid-uniform test): EVERY block resolves the
 *      whole list of its cloud itself, from the same list and the same counters, so no third barrier is
 *      needed. The resolution is deterministic given the list order (every block of a cloud computes the
 *      same placement): in rounds, each unplaced point takes its first probe (not the home bucket) whose
 *      bucket still has room; the points choosing one bucket are ranked in list order and the first
 *      `room` of them are placed; the others find it full in the next round and go on with their next
 *      probe. That is a linearisation of Alg. 2's racing (a point only skips buckets that are full at the
 *      moment it is placed), so "first probe with room" holds per point. Points that exhaust the probes
 *      are the cloud's leftovers, numbered in list order (the overflow policy of kernels.h). Each block
 *      writes the placements of its own tile's listed points. The probes of an entry are searched by 8
 *      lanes at once; each entry carries records written by its own thread in phase 2 (voxel, home
 *      bucket, the per-point half of the probe RNG), read with the list length (v9/v10: after it, by the threads
 *      with an entry).
 *      Long list (div hashes, Z-order-mod on lidar): v5's thread-per-point phase C (psh_tiles.cuh) on the
 *      global counters (for the XOR hashes with the reach proof and second-pass queue of c1fb0e7, the queue in
 *      Arr8::Ev), then grid barrier 3, then leftovers from the tickets as v7.
 *   4  the cloud's scans (free slots when there are leftovers, then the bucket starts) in every block; the
 *      cloud's first tile publishes bucket_start / bucket_count; slot (coalesced); perm and xyz_out written
 *      in the tile's bucket order: consecutive positions of the sorted tile are consecutive rows of one
 *      bucket, so a warp's stores form runs (xyz_out as 96 consecutive floats per warp instruction, spread
 *      over the runs) instead of 32 random rows. Listed (non-first-hash) points are written one by one.
 * Shared memory (dynamic, sized by the launcher): the tile's xyz (12 B/point), placements (4), sorted order
 * (2), the bucket arrays (4 nb words each) and the short list's entries; ~177 KB at 600k (tile 5120, nb
 * 2048). Falls back to v7 where it cannot run (nb > 4096, S > 2^20, no cooperative launch, more points than
 * one wave of tiles that fit in shared memory: about 0.9M per cloud batch at nb 2048 on 132 SMs).
 * Measured (2026-11-25; this is the "fourth cut", commit e0b3f42): 600k lidar xor-mod
 * 36.2 us graph on the H100 (v7 54.4) and ~36 on the H200 (v7 50.6); the fastest PSH there and on xor-div
 * and zorder-div (probing dominates those). Phases at 600k xor-mod (H100): bbox 5.5, commit 10.3,
 * resolution 7.3, rows 8.8 us. Tried after it and measured slower or no faster, then reverted (docs/psh.md):
 * one thread per sorted position in phase 4 (store wavefronts doubled), a bucket-ordered copy of xs before
 * barrier 2 (+2 us), hoisted shared loads in phase 4 (phase 4 is L1TEX-throughput bound: MIO 47%), and a
 * cheaper list-order ranking (-1.5 us in phase 3) whose build spilled into the long-list probe loop (+39%
 * on xor-div). Written 2026-11-25 offline; every cut checked first in a host emulation (removed in e7df985).
 *
 * v9 (psh_run_v9) is this kernel with the template flag kW (d1ccccf, 2026-11-25): v8's block stamps (the
 * instance with kBT, psh_params.trace_blocks = 1) showed 7.8 us of the 36 in the short-list resolution, ~2 us in each
 * block minimum and barrier 2's exit waiting on the bucket/offset stores. kW: the minima by redux.sync
 * (block_min6r); the first-hash bucket/offset stores after barrier 2 (none since 8633e87 when the caller asks
 * for no pair: P8::pair_out); the list entries staged per block and
 * appended with one atomic; the voxel index by an exact multiplication (vox1_fast); the short list walked by
 * warp 0 alone (resolve_short_w) with the probe offsets in shared memory and the general hashes out of line
 * (the lone warp waited on constant-cache serialisation and instruction fetches). Measured on the H100,
 * 600k xor-mod, psh_bench graph: 32.2-32.6 us (v8 35.9-36.6 in the same runs); the resolution 4.6 us (v8 7.5-7.9). What bounds it
 * now: the scattered perm / xyz_out stores of phase 4 drain for ~5 us after the last block's stores are
 * issued (the L2's rate for partial-sector writes), and the issue-bound hash loop (~0.5 us per point per
 * thread). Since 37db642 v9 also sizes its tiles to use every SM (any multiple of 32 points, at least
 * kMinTile9): 600k, 131 tiles of up to 4608 points instead of 118 of 5120; 31.4 us (v8 35.7-36.5) on the H100.
 * Since 694c883 a v9/v10 block none of whose points ranked past S (so it appends nothing to the overflow list)
 * arrives at barrier 2 right after its commit (grid_arrive) and waits after its placement loop (grid_wait): that
 * loop is ~1.9 us of conflicted shared-memory work per block at 600k, now under the barrier's ~1 us latency.
 * H100, psh_bench, old and new in one call, two seeds: 600k xor-mod cold -1.7 to -2.4%, hot -2 to -4%, 100k
 * -1 to -2.4%; the long-list hashes (few blocks without overflow) within noise (2026-11-27).
 *
 * v10 (psh_run_v10) is v9's kernel with the template flag kPF: while thread 0 builds the frame in phase 2, one lane of
 * every block asks the TMA unit to prefetch the block's share of xyz_out's lines into the L2 (l2_prefetch_share;
 * sm_90 on, a no-op before). Why (51f43ed, docs/psh.md): in the cold protocol the L2 is
 * full of the flush's dirty lines, and each output line's first store in phase 4 evicts one, so phase 4
 * drains ~2.5 us longer than hot; the prefetch moves those evictions (and fills) into phases 2-3, where the
 * DRAM idles. Poison stores did it before (dd05b0a) and lost on the LSU queue and a grid flag; the TMA
 * unit needs neither. The first form (51f43ed) also prefetched perm's lines: in the sweep (600k lidar
 * xor-mod, cold medians, 51f43ed) 33.2 -> 29.4 us on the H200 and 34.3 -> 31.4 on the H100, but +1-5% at 100k
 * and 300k, because the prefetches in flight slow phase 2's histogram step. xyz_out alone (cbb7180; 7.2 of
 * the 9.6 MB at 600k) against that form in one psh_bench call on the H100: 600k xor-mod cold -2.4%, hot -1.6%,
 * 100k and 300k -1.5 to -2.1%, xor-div -1 to -2%; in the sweep, v9 -> v10 at 600k xor-mod cold 32.8 -> 28.9 us
 * (H200, 7a049a8) and 35.4 -> 31.0 (H100, cbb7180), within 1% of v9 at 100k and 300k, up to +4% on the
 * long-list hashes at 100k. A variant of its own, so the sweep measures both side by side instead of one
 * trade-off being picked for every case.
 *
 * v9 and v10 run Z-order-div through instances with kDeal: phase C deals its list in 32-entry chunks over the
 * grid's warps where its cell tables apply (phase_probe_nt, psh_tiles.cuh; cfb7c9d, H100: Z-order-div -12 to
 * -14% at 300k and 600k). The deal's code in the shared kernel cost the other hashes 1-3%, so they keep the
 * instances without it (kern8). The stamped instances (trace_blocks = 1) have no deal, so Z-order-div's stamps
 * describe the kernel before it.
 */
#include "kernels/kernels.h"
#include "kernels/psh_internal.h"
#include "kernels/psh_internal.cuh"

#include <cuda_runtime.h>

#include "kernels/psh_tiles.cuh"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define V8_CUDA(what, call)                                                                             \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) return hx_errf(err, HX_ECUDA, "psh v8: %s: %s", what, cudaGetErrorString(e_)); \
  } while (0)

namespace {

using namespace psh_tiles;

constexpr int kT8 = 1024;                  /* threads of every block */
constexpr int kW8 = kT8 / 32;
constexpr uint32_t kMaxIpt8 = 16;          /* points per thread at most: sorted order fits 16 bits */
constexpr uint32_t kShort = kT8;           /* lists up to this many points are resolved in every block */
constexpr int kPer8 = (int)kDense / kT8;   /* bucket entries per thread in the scans and the commit */
constexpr uint32_t kPlBits = 20;           /* placement: local bucket << 20 | offset (S <= 2^20) */
constexpr uint32_t kPlMask = (1u << kPlBits) - 1u;
constexpr uint32_t kGroup = 8;             /* lanes that search one short-list entry's probes together */
constexpr uint32_t kGroups = kT8 / kGroup; /* entries searched per pass */
constexpr uint32_t kStage8 = 4 * kShort;   /* v9: overflowing points staged per block (in Arr8::Ev) */
constexpr uint32_t kBtBlocks = 1024;       /* blocks whose stamps are kept (a launch has <= one per SM) */
constexpr uint32_t kMinTile9 = 512;        /* v9's smallest tile: below it per-block fixed costs dominate */
static_assert(kMinTile9 >= (uint32_t)kT, "tiles_layout sizes the tile keys (part) for tiles of at least kT points");

typedef cub::BlockScan<uint32_t, kT8> Scan8;

struct P8 : Prm {
  unsigned long long *trace; /* [kTrace] %globaltimer stamps, psh_v5_trace's layout (slot 5 unused: 0) */
  unsigned long long *bt;    /* [kBtBlocks][PSH_V8_BT] every block's stamps (psh_v8_block_trace) */
  uint4 *ove;                /* [2 kShort] short-list entry e: (point, vx, vy, vz), (home, RNG base lo, hi, 0) */
  uint32_t smem_bytes;       /* dynamic shared memory of one block, as launched */
  uint32_t pair_out;         /* v9/v10: 1 = the caller asked for (bucket, offset): the first-hash points' pairs are
                              * stored; 0 = it did not (psh_out's NULL pair): only the list's points write theirs,
                              * into the launcher's scratch copy, as working state for phase 4 */
};

/* The fixed part of the dynamic shared memory. */
struct Sm8 {
  Scan8::TempStorage scan;
  uint32_t red[6][kW8];
  uint32_t frame[kFrameWords];
  uint32_t tally[3];
  uint32_t full[kSnapBits / 32]; /* long path: phase_probe_nt's "full" snapshot */
};

/* The arrays after it: A, B, C: per-bucket words whose meaning changes by phase (see the kernel), F the
 * free-slot scan (nb + 1); the short list's entries: E candidate bucket, Es state, Ek probe index, Ev and Eb
 * the entry's two records (ove); pl the tile's placements, xs its xyz, so its sorted order (local indices). */
struct Arr8 {
  uint32_t *A, *B, *C, *F, *E, *Es, *Ek, *pl;
  uint4 *Ev, *Eb;
  float *xs;
  uint16_t *so;
};

__host__ __device__ inline size_t al16(size_t x) { return (x + 15u) & ~(size_t)15u; }

/* Carve the arrays out of base (NULL: sizes only); returns the bytes used. Host and device agree. */
__host__ __device__ inline size_t carve8(unsigned char *base, uint32_t nb, uint32_t tile, Arr8 *a) {
  size_t off = al16(sizeof(Sm8));
  uint32_t **w[] = {&a->A, &a->B, &a->C, &a->F, &a->E, &a->Es, &a->Ek, (uint32_t **)&a->Ev, (uint32_t **)&a->Eb, &a->pl};
  const size_t words[] = {nb, nb, nb, (size_t)nb + 1, kShort, kShort, kShort, 4 * (size_t)kShort, 4 * (size_t)kShort, tile};
  for (int k = 0; k < 10; k++) {
    if (base) *w[k] = (uint32_t *)(base + off);
    off = al16(off + words[k] * 4u);
  }
  if (base) a->xs = (float *)(base + off); /* the kernel shifts it by 0-3 words: see tile_xyz */
  off = al16(off + (size_t)tile * 12u + 16u);
  if (base) a->so = (uint16_t *)(base + off);
  off = al16(off + (size_t)tile * 2u);
  return off;
}

/* Stamp k of this block's trace (thread 0; psh_v8_block_trace reads them): where the time goes block by block,
 * which block 0's stamps (P8::trace) cannot show, e.g. the last block into a grid barrier. */
template <bool kBT> __device__ __forceinline__ void bstamp(const P8 &p, int k) {
  if (kBT && threadIdx.x == 0 && blockIdx.x < kBtBlocks) p.bt[(size_t)blockIdx.x * PSH_V8_BT + k] = gtimer();
}

/* Exclusive scan of v[0..nb) into out[0..nb) (out may be v), starting at base; each thread owns a contiguous
 * run of ceil(nb / kT8) <= kPer8 entries. Returns the total (every thread). The caller separates the
 * writes of v from this call, and this call from the next use of sm.scan or of out, by barriers. */
__device__ __forceinline__ uint32_t scan_nb(Sm8 &sm, const uint32_t *v, uint32_t *out, uint32_t nb, uint32_t base) {
  const uint32_t per = (nb + kT8 - 1) / kT8;
  const uint32_t j0 = min(nb, threadIdx.x * per), j1 = min(nb, j0 + per);
  uint32_t x[kPer8], sum = 0;
#pragma unroll
  for (int q = 0; q < kPer8; q++) {
    x[q] = j0 + (uint32_t)q < j1 ? v[j0 + q] : 0u;
    sum += x[q];
  }
  uint32_t pre = 0, total = 0;
  Scan8(sm.scan).ExclusiveSum(sum, pre, total);
  uint32_t run = base + pre;
#pragma unroll
  for (int q = 0; q < kPer8; q++)
    if (j0 + (uint32_t)q < j1) {
      out[j0 + q] = run;
      run += x[q];
    }
  return total;
}

/* psh_hash3 with a mask instead of the remainder for the mod hashes when nb is a power of two (the buckets
 * psh_auto_buckets picks): code % nb == code & (nb - 1), the same bucket. */
__device__ __forceinline__ uint32_t hash8(const P8 &p, const Frame &f, const uint32_t v[3]) {
  if (p.hash == PSH_XOR_MOD && (p.nb & (p.nb - 1u)) == 0u) return (v[0] ^ v[1] ^ v[2]) & (p.nb - 1u);
  return psh_hash3((psh_hash)p.hash, v[0], v[1], v[2], f.bits, p.nb);
}

/* v9: hash8 with everything but the XOR-mask case out of line. The kernel's phases are straight-line code
 * that each block runs once, so their instructions are fetched cold (ncu on v9, H100: "no instruction"
 * stalls in the list resolution and the rows phase); psh_hash3 inlined at every call site (four hash
 * functions, the Morton spreads) made up most of those bytes. */
__device__ __noinline__ uint32_t hash9_general(uint32_t hash, uint32_t x, uint32_t y, uint32_t z, uint32_t bits, uint32_t nb) {
  return psh_hash3((psh_hash)hash, x, y, z, bits, nb);
}
__device__ __forceinline__ uint32_t hash9(const P8 &p, const Frame &f, const uint32_t v[3]) {
  if (p.hash == PSH_XOR_MOD && (p.nb & (p.nb - 1u)) == 0u) return (v[0] ^ v[1] ^ v[2]) & (p.nb - 1u);
  return hash9_general(p.hash, v[0], v[1], v[2], f.bits, p.nb);
}

/* Phase 1's copy of the tile's coordinates (3 * cnt words from g) into shared memory with 16-byte loads, all of
 * a thread's loads in flight at once (up to 4 per round). xs is the carved array shifted by 0-3 words so that
 * xs[w] and the global word w share their 16-byte alignment phase: the body is 16-byte loads and stores; the
 * 0-3 head words and the 0-3 tail words go one by one. Returns the shifted xs (every later phase indexes it as
 * xs[3 q + d]); the caller's barrier publishes it. */
__device__ __forceinline__ float *tile_xyz(const float *g, uint32_t cnt, float *xs_carved) {
  const uint32_t tid = threadIdx.x, W = 3u * cnt;
  const uint32_t head = (uint32_t)((16u - ((uintptr_t)g & 15u)) & 15u) >> 2; /* words before a 16-byte boundary */
  float *xs = xs_carved + ((4u - head) & 3u);
  const uint32_t hw = min(head, W), nq = (W - hw) / 4u, t0 = hw + 4u * nq;
  if (tid < hw) xs[tid] = __ldg(g + tid);
  if (tid < W - t0) xs[t0 + tid] = __ldg(g + t0 + tid);
  const float4 *g4 = (const float4 *)(g + hw);
  float4 *x4 = (float4 *)(xs + hw);
  for (uint32_t f0 = tid; f0 < nq; f0 += 4u * kT8) {
    float4 r[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const uint32_t f = f0 + (uint32_t)u * kT8;
      r[u] = f < nq ? __ldg(g4 + f) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < 4; u++)
      if (f0 + (uint32_t)u * kT8 < nq) x4[f0 + (uint32_t)u * kT8] = r[u];
  }
  return xs;
}

/* v10: this block's share (1/gridDim.x) of one output array of `bytes` bytes prefetched into the L2 by the TMA
 * unit (cp.async.bulk.prefetch.L2, sm_90 on; nothing on older GPUs). A hint: the
 * results do not depend on it. The shares: psh_prefetch_share (16-byte units, test_psh_cpu checks that they
 * tile the array's interior). Chunks of 32 KB (one instruction per array measured no faster, a2de831,
 * docs/psh.md). */
__device__ __forceinline__ void l2_prefetch_share(const void *base, size_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uintptr_t lo, hi;
  if (!psh_prefetch_share((uintptr_t)base, bytes, blockIdx.x, gridDim.x, &lo, &hi)) return;
  constexpr uintptr_t kChunk = 32768;
  for (; lo < hi; lo += kChunk) {
    const uint32_t sz = (uint32_t)(hi - lo < kChunk ? hi - lo : kChunk);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(lo), "r"(sz) : "memory");
  }
#else
  (void)base;
  (void)bytes;
#endif
}

/* Zero the run state and write the default bucket tables (init_run_state with this block size). */
__device__ __forceinline__ void init_state8(const P8 &p) {
  const uint32_t gt = blockIdx.x * kT8 + threadIdx.x, gs = gridDim.x * kT8;
  const uint32_t nbt = p.nclouds * p.nb;
  for (uint32_t g = gt; g < nbt; g += gs) {
    p.cnt[g] = 0;
    p.count_out[g] = 0;
    p.start[g] = __ldg(p.off + g / p.nb); /* kept by empty clouds; phase 4 rewrites the others */
  }
  for (uint32_t c = gt; c < p.nclouds; c += gs) p.resid[c] = 0;
  if (gt < C_WORDS) p.ctr[gt] = 0;
  if (gt < PSH_NCOUNTERS && p.counters_out) p.counters_out[gt] = 0; /* phase 3 adds after barrier 2 */
}

/* The cloud's free-slot scan F (nb + 1 words: F[j] = free slots of the buckets before j, F[nb] = their sum)
 * and its final counts with R > 0 leftovers placed by the overflow policy (psh_internal.h), in place of the
 * counts after probing in a.A (all <= S). The caller's barrier must separate the writes of a.A from this
 * call; F and the final counts are complete after the call's last barrier. Both phase-3 paths use it. */
__device__ __forceinline__ void leftover_counts(Sm8 &sm, const Arr8 &a, uint32_t nb, uint32_t S, uint32_t R) {
  const uint32_t tid = threadIdx.x;
  uint32_t fr[kPer8];
  const uint32_t per = (nb + kT8 - 1) / kT8, j0 = min(nb, tid * per), j1 = min(nb, j0 + per);
  uint32_t fsum = 0;
#pragma unroll
  for (int q = 0; q < kPer8; q++) {
    fr[q] = j0 + (uint32_t)q < j1 ? S - a.A[j0 + q] : 0u;
    fsum += fr[q];
  }
  uint32_t pre = 0, total = 0;
  Scan8(sm.scan).ExclusiveSum(fsum, pre, total);
  uint32_t run = pre;
#pragma unroll
  for (int q = 0; q < kPer8; q++)
    if (j0 + (uint32_t)q < j1) {
      const uint32_t j = j0 + (uint32_t)q;
      a.F[j] = run;
      a.A[j] = psh_final_count(a.A[j], run, fr[q], total, R, j, nb);
      run += fr[q];
    }
  if (tid == 0) a.F[nb] = total;
  __syncthreads(); /* F and the final counts complete */
}

/* The end of phase 3 on a short list, after either resolution: thread e's entry is in state a.Es[e] (4 placed
 * at (cand, off), 2 a leftover) and a.A holds the room left. Turns the room into counts after probing, places
 * the leftovers (numbered in list order, the same in every block of the cloud) by the overflow policy with
 * the free-slot scan, stores this tile's listed points, adds the cloud's tallies once; returns R. */
__device__ __forceinline__ uint32_t finish_short(const P8 &p, Sm8 &sm, const Arr8 &a, const Tile &t, uint32_t i_e,
                                                 uint32_t cand, uint32_t off) {
  const uint32_t tid = threadIdx.x, nb = p.nb, c = t.c, S = p.cap;
  const uint32_t est = a.Es[tid], lf = est == 2u;
  const uint32_t nprobed = (uint32_t)__syncthreads_count(est == 4u);
  const uint32_t R = (uint32_t)__syncthreads_count(lf);
  /* A: room -> count after probing */
  for (uint32_t j = tid; j < nb; j += kT8) a.A[j] = S - a.A[j];
  if (R > 0) { /* leftovers: numbered in list order (the same numbers in every block of the cloud) */
    uint32_t lrank = 0;
    Scan8(sm.scan).ExclusiveSum(lf, lrank); /* contains a barrier: also completes the counts above */
    __syncthreads(); /* sm.scan free; counts complete -> the free-slot scan */
    leftover_counts(sm, a, nb, S, R);
    if (lf) psh_resid_place(a.F, nb, S, lrank, &cand, &off);
  }
  if ((est == 4u || lf) && i_e >= t.lo && i_e < t.hi) { /* this tile's listed points */
    p.bucket[i_e] = c * nb + cand;
    p.offset[i_e] = off;
  }
  if (t.k == t.k0 && tid == 0 && p.counters_out) { /* the cloud's first tile adds its cloud's tallies */
    if (nprobed) atomicAdd(p.counters_out + 1, nprobed);
    if (R) atomicAdd(p.counters_out + 2, R);
  }
  return R;
}

/* Phase 3, short list: resolve the whole overflow list of cloud c in this block (module header). On entry
 * a.A[j] = room of local bucket j (S - points kept), read from the counters after barrier 2, and r0, r1 = list
 * entry tid's records (P8::ove; v8 reads them with the list length, v9 after it, for tid < n_ovf only; meaningful
 * when tid < n_ovf). On exit a.A[j] = count after probing and
 * the leftovers' placements; a.F holds the free-slot scan when R > 0; the listed points of this tile have
 * bucket/offset stored (visible to the block after its next barrier). Returns R, the cloud's leftover count.
 * Each round: every searching entry finds its first probe with room from its probe index on, kGroup lanes per
 * entry evaluating kGroup probes at once (the lowest with room wins: the serial rule); then thread e ranks
 * entry e among the entries that chose the same bucket, in list order, and the first `room` are placed.
 * States (Es): 0 searching, 1 candidate chosen, 2 leftover, 3 no entry (past the list, or another cloud's),
 * 4 placed. */
__device__ __forceinline__ uint32_t resolve_short(const P8 &p, Sm8 &sm, const Arr8 &a, const Tile &t, const Frame &f,
                                                  uint32_t n_ovf, uint4 r0, uint4 r1) {
  const uint32_t tid = threadIdx.x, lane = tid & 31u, nb = p.nb, c = t.c, S = p.cap;
  const uint32_t i_e = r0.x;
  /* entry tid: its records (point, voxel, home, RNG base), written by the point's own thread in phase 2 */
  uint32_t st = 3;
  if (tid < n_ovf && (p.nclouds == 1 || cloud_of(p.off, p.nclouds, i_e) == c)) {
    a.Ev[tid] = r0;
    a.Eb[tid] = r1;
    st = 0;
  }
  a.Es[tid] = st; /* kShort == kT8: one entry slot per thread */
  a.Ek[tid] = 0;
  a.E[tid] = kNone;
  for (uint32_t j = tid; j < nb; j += kT8) a.B[j] = 0; /* candidate counts per bucket */
  const uint32_t passes = (n_ovf + kGroups - 1) / kGroups;
  uint32_t cand = 0, off = 0;
  __syncthreads(); /* entries, B zeroed, A loaded (by the caller) -> the rounds */
  for (;;) {
    /* search (A is stable during it): group g of kGroup lanes takes entry ps * kGroups + g */
    for (uint32_t ps = 0; ps < passes; ps++) { /* block-uniform */
      const uint32_t e = ps * kGroups + tid / kGroup, l = tid % kGroup;
      bool need = e < n_ovf && a.Es[e] == 0;
      uint32_t k0 = 0, v[3] = {0, 0, 0}, home = 0;
      uint64_t base = 0;
      if (need) {
        const uint4 ev = a.Ev[e], eb = a.Eb[e];
        v[0] = ev.y, v[1] = ev.z, v[2] = ev.w, home = eb.x;
        base = (uint64_t)eb.z << 32 | eb.y;
        k0 = a.Ek[e];
      }
      while (__any_sync(0xFFFFFFFFu, need)) { /* warp-uniform */
        const uint32_t kk = k0 + l;
        bool room = false;
        uint32_t h = 0;
        if (need && kk < p.nprobe) {
          uint32_t w[3];
          probe_voxel(v, p.probe[kk], f.step, f.bits, hx_mix64(base + kk), w); /* = hx_rng_u64(seed, i, kk) */
          h = hash8(p, f, w);
          room = h != home && a.A[h] > 0;
        }
        const uint32_t gm = __ballot_sync(0xFFFFFFFFu, room) >> (lane & ~(kGroup - 1u)) & ((1u << kGroup) - 1u);
        if (need) {
          if (gm) {
            if (l == (uint32_t)__ffs(gm) - 1u) { /* the lowest probe with room */
              a.E[e] = h;
              a.Ek[e] = kk;
              a.Es[e] = 1;
              atomicAdd(&a.B[h], 1u); /* entries choosing h this round */
            }
            need = false;
          } else if (k0 + kGroup >= p.nprobe) {
            if (l == 0) a.Es[e] = 2; /* no probe left: a leftover */
            need = false;
          } else {
            k0 += kGroup;
          }
        }
      }
    }
    __syncthreads(); /* E, Es, B complete; A unchanged -> ranking, thread e = entry e */
    const bool act = a.Es[tid] == 1u; /* every thread reads its own entry (tid < kShort) */
    if (act) cand = a.E[tid];
    bool acc = false;
    if (act) {
      uint32_t rank = 0;
      if (a.B[cand] > 1u) { /* rare: several entries chose one bucket this round: rank in list order */
        const uint4 *E4 = (const uint4 *)a.E;
        for (uint32_t e4 = 0; e4 < tid / 4u; e4++) {
          const uint4 x = E4[e4];
          rank += (x.x == cand) + (x.y == cand) + (x.z == cand) + (x.w == cand);
        }
        for (uint32_t e = tid & ~3u; e < tid; e++) rank += a.E[e] == cand;
      }
      const uint32_t room = a.A[cand];
      acc = rank < room;
      off = S - room + rank;
    }
    __syncthreads(); /* every read of A, B and E done -> updates */
    if (act) {
      a.B[cand] = 0;
      a.E[tid] = kNone;
      if (acc) atomicSub(&a.A[cand], 1u);
      a.Es[tid] = acc ? 4u : 0u; /* rejected: the bucket is full now; the next search moves past it */
    }
    if (!__syncthreads_or(act && !acc)) break; /* also orders the updates before the next search */
  }
  return finish_short(p, sm, a, t, i_e, cand, off);
}

/* v9: block_min6 (psh_tiles.cuh) with each warp's minima in one redux.sync instead of 5 shuffle rounds, and
 * the second level in warp 0 instead of thread 0's 6 x 31 serial shared loads: with 32 warps, block_min6 took
 * ~2 us per use (v8's block stamps, H100: 1.95 -> 3.94 us for the tile bbox). Result in every lane of warp 0. */
__device__ __forceinline__ void block_min6r(uint32_t k[6], uint32_t (*s_red)[kW8]) {
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
#pragma unroll
  for (int e = 0; e < 6; e++) {
    k[e] = __reduce_min_sync(0xFFFFFFFFu, k[e]);
    if (lane == 0) s_red[e][warp] = k[e];
  }
  __syncthreads(); /* s_red -> warp 0 */
  if (warp == 0)
#pragma unroll
    for (int e = 0; e < 6; e++) k[e] = __reduce_min_sync(0xFFFFFFFFu, s_red[e][lane]); /* kW8 == 32 lanes */
}

/* psh_vox1 (floorf((x - o) / voxel), clamped) with a multiplication by inv = 1 / voxel (rounded) instead of
 * the IEEE division, exact: q = (x - o) * inv is within 1.5 * 2^-23 |q| of the rounded quotient that psh_vox1
 * floors, so the two floors can differ only if an integer lies that close to q; then (fr or 1 - fr below
 * |q| * 2^-20) the division decides. The same voxel as psh_vox1 for every input (NaN: 0, +Inf: the clamp). */
__device__ __forceinline__ uint32_t vox1_fast(float x, float o, float voxel, float inv) {
  const float q = __fmul_rn(x - o, inv), t = floorf(q), fr = __fsub_rn(q, t), e = fabsf(q) * 0x1p-20f;
  if (fr <= e || fr >= 1.0f - e) return psh_vox1(x, o, voxel);
  if (!(t > 0.0f)) return 0;
  if (t >= (float)PSH_VOX_MAX) return PSH_VOX_MAX;
  return (uint32_t)t;
}
/* voxel3 (psh_tiles.cuh) through vox1_fast */
__device__ __forceinline__ void voxel3f(const P8 &p, const Frame &f, float inv, float x, float y, float z, uint32_t v[3]) {
  v[0] = vox1_fast(x, f.lo[0], p.voxel, inv) << f.shift[0];
  v[1] = vox1_fast(y, f.lo[1], p.voxel, inv) << f.shift[1];
  v[2] = vox1_fast(z, f.lo[2], p.voxel, inv) << f.shift[2];
}

/* A point's overflow-list entry at position pos: its index, and below kShort the records phase 3 reads
 * (point, voxel; home bucket, the per-point half of the probe RNG), so phase 3 loads nothing of the point. */
__device__ __forceinline__ void list_entry(const P8 &p, const Frame &f, const float *xs, uint32_t q, uint32_t i,
                                           uint32_t h, uint32_t pos) {
  p.ovf[pos] = i;
  if (pos < kShort) {
    uint32_t v[3];
    voxel3(p, f, xs[3 * q], xs[3 * q + 1], xs[3 * q + 2], v);
    const uint64_t rb = hx_rng_base(p.seed, i);
    p.ove[2 * pos] = make_uint4(i, v[0], v[1], v[2]);
    p.ove[2 * pos + 1] = make_uint4(h, (uint32_t)rb, (uint32_t)(rb >> 32), 0u);
  }
}

/* probe_hash's case of a probe step > 1 (the div hashes: a random jitter per probe), out of line (hash9) */
__device__ __noinline__ uint32_t probe_hash_jitter(const P8 &p, const Frame &f, const uint32_t v[3], uint32_t pk,
                                                   uint32_t k, uint64_t base) {
  const int8_t o[3] = {(int8_t)(pk & 0xFFu), (int8_t)(pk >> 8 & 0xFFu), (int8_t)(pk >> 16 & 0xFFu)};
  uint32_t w[3];
  probe_voxel(v, o, f.step, f.bits, hx_mix64(base + k), w); /* = hx_rng_u64(seed, i, k) */
  return hash9_general(p.hash, w[0], w[1], w[2], f.bits, p.nb);
}

/* The bucket of probe k of a point at voxel v (home excluded by the caller): probe_voxel + hash9; with probe
 * step 1 (the mod hashes) the jitter is 0 whatever the random word, so no mix is computed (same bucket). */
__device__ __forceinline__ uint32_t probe_hash(const P8 &p, const Frame &f, const uint32_t *ptab, const uint32_t v[3],
                                               uint32_t k, uint64_t base, uint32_t vmask) {
  const uint32_t pk = ptab[k]; /* probe k's offsets, one signed byte per axis (probe_table) */
  if (f.step != 1u) return probe_hash_jitter(p, f, v, pk, k, base);
  uint32_t w[3];
  for (int d = 0; d < 3; d++) w[d] = (uint32_t)((int32_t)v[d] + (int32_t)(int8_t)(pk >> 8 * d & 0xFFu)) & vmask;
  return hash9(p, f, w);
}

/* v9: the probe offsets packed one word per probe into shared memory (Sm8::full, which only the long path
 * uses, after barrier 2, for its own snapshot): p.probe lives in the kernel's parameter (constant) bank, whose
 * cache serves one address per warp instruction, so lanes at different probes serialised (ncu on v9's second
 * cut, H100: the three LDC.S8 of p.probe[k] were the top stall sites of the resolution). Issued at the
 * kernel's start, behind the tile's loads; the first use is after two barriers. */
static_assert(kSnapBits / 32 >= PSH_NPROBE_MAX, "Sm8::full holds v9's probe table");
static_assert(2 * kT8 <= 4 * kShort, "Arr8::Ev holds phase_probe_nt's queue on the long path");
static_assert(kShort >= PSH_NPROBE_MAX, "Arr8::E holds phase_probe_nt's probe table on the long path");
static_assert(4 * kShort >= kCellWords, "Arr8::Eb holds phase_probe_nt's cell tables on the long path");

/* v9's phase 3 for a short list: the same contract as resolve_short (on entry a.A = room, r0/r1 = entry tid's
 * records; on exit a.A = counts after probing, the listed points of this tile stored, returns R), but the
 * list is walked by warp 0 alone, with no block barrier inside, 32 entries at a time in list order: each lane
 * searches its entry's probes one by one from where it stopped (the first bucket with room, never the home
 * bucket); lanes that chose the same bucket are ranked by lane (= list order, __match_any_sync) and the first
 * `room` of them placed; the others go on searching (the bucket is full now). A chunk is finished before the
 * next begins. Every point takes its first probe with room at the moment it is placed: a linearisation of
 * Alg. 2's racing, deterministic given the list, so every block of a cloud computes the same placement.
 * Measured (H100, 2026-11-25, d1ccccf, 600k lidar xor-mod, 137 entries): 4.6 us against 7.5-7.9 for v8's
 * rounds over the whole block (~10 barrier-gated steps). Tried and dropped: a first step in which every warp
 * computed each entry's 32-probe room mask (6.2 us). What made the difference: probe offsets from shared
 * memory (probe_table) and compact code (hash9), since a lone warp running once-executed code waits on
 * instruction fetches and on the parameter bank's one-address-per-instruction constant cache. */
__device__ __forceinline__ uint32_t resolve_short_w(const P8 &p, Sm8 &sm, const Arr8 &a, const Tile &t, const Frame &f,
                                                    uint32_t n_ovf, uint4 r0, uint4 r1) {
  const uint32_t tid = threadIdx.x, lane = tid & 31u, c = t.c, S = p.cap;
  const uint32_t i_e = r0.x, np = p.nprobe;
  const uint32_t vmask = f.bits >= 32u ? 0xFFFFFFFFu : ((1u << f.bits) - 1u);
  uint32_t st = 3; /* states as resolve_short: 0 searching, 2 leftover, 3 no entry, 4 placed */
  if (tid < n_ovf && (p.nclouds == 1 || cloud_of(p.off, p.nclouds, i_e) == c)) {
    a.Ev[tid] = r0;
    a.Eb[tid] = r1;
    st = 0;
  }
  a.Es[tid] = st; /* kShort == kT8: one entry slot per thread */
  __syncthreads(); /* entries, room (the caller's) -> warp 0's walk */
  if (tid < 32u) {
    for (uint32_t e0 = 0; e0 < n_ovf; e0 += 32u) { /* warp-uniform */
      const uint32_t e = e0 + lane;
      bool act = e < n_ovf && a.Es[e] == 0u;
      uint32_t v[3] = {0, 0, 0}, home = 0, k = 0, h = kNone;
      uint64_t base = 0;
      if (act) {
        const uint4 ev = a.Ev[e], eb = a.Eb[e];
        v[0] = ev.y, v[1] = ev.z, v[2] = ev.w, home = eb.x;
        base = (uint64_t)eb.z << 32 | eb.y;
      }
      while (__any_sync(0xFFFFFFFFu, act)) { /* warp-uniform */
        if (act) { /* this entry's first probe from k on whose bucket has room */
          bool found = false;
          for (; k < np && !found; k++) {
            h = probe_hash(p, f, sm.full, v, k, base, vmask);
            found = h != home && a.A[h] > 0u;
          }
          if (!found) { /* no probe left: a leftover */
            a.Es[e] = 2u;
            act = false;
          }
        }
        const uint32_t peers = __match_any_sync(0xFFFFFFFFu, act ? h : kNone);
        const uint32_t room = act ? a.A[h] : 0u; /* read by every lane of a group before its leader writes */
        __syncwarp();
        if (act) {
          const uint32_t rank = (uint32_t)__popc(peers & lanemask_lt()), cnt = (uint32_t)__popc(peers);
          if (rank == 0u) a.A[h] = room - min(cnt, room);
          if (rank < room) {
            a.E[e] = h;
            a.Ek[e] = S - room + rank;
            a.Es[e] = 4u;
            act = false;
          } /* else: h is full now; the search goes on after it (k is past it already) */
        }
        __syncwarp(); /* room updates -> the next search */
      }
    }
  }
  __syncthreads(); /* placements, states -> every thread's own entry */
  const bool placed = a.Es[tid] == 4u;
  return finish_short(p, sm, a, t, i_e, placed ? a.E[tid] : 0u, placed ? a.Ek[tid] : 0u);
}

/* The whole PSH in one cooperative launch (module header for the phases). kW: v9's changes (the module
 * header lists them); kPF (with kW): v10's prefetch; kBT: every block's phase stamps (psh_v8_block_trace). kPF
 * is a template flag, not a field, so that v9's code stays as measured (a runtime flag cost v9 ~1%, a2de831). */
template <bool kBT, bool kW, bool kPF = false, bool kDeal = false> __global__ void __launch_bounds__(kT8, 1) k8_psh(P8 p) {
  extern __shared__ __align__(16) unsigned char smraw[];
  Sm8 &sm = *(Sm8 *)smraw;
  Arr8 a;
  carve8(smraw, p.nb, p.tile, &a);
  const uint32_t tid = threadIdx.x, lane = tid & 31u, nb = p.nb, S = p.cap;
  const bool tr = blockIdx.x == 0 && tid == 0;
  if (tr) {
    p.trace[0] = gtimer();
    p.trace[5] = p.trace[6] = 0;
    p.trace[7] = kBT ? gridDim.x : 0u; /* psh_v8_block_trace reads this many blocks' stamps */
  }
  if (kBT && tid == 0 && blockIdx.x < kBtBlocks)
    for (int k = 1; k < PSH_V8_BT; k++) p.bt[(size_t)blockIdx.x * PSH_V8_BT + k] = 0; /* stamps a block skips */
  bstamp<kBT>(p, 0);
  /* ---- 1: run state, the tile's xyz into shared memory, tile bbox keys ---- */
  init_state8(p);
  if (kW) probe_table<kT8>(p, sm.full);
  Tile t;
  const bool has = tile_of(p, t); /* block-uniform */
  const uint32_t cnt_t = has ? t.hi - t.lo : 0u;
  float *xs = a.xs;
  if (has) {
    for (uint32_t j = tid; j < nb; j += kT8) a.A[j] = 0;
    xs = tile_xyz(p.xyz + 3 * (size_t)t.lo, cnt_t, a.xs);
    __syncthreads(); /* xs complete -> the bbox keys */
    bstamp<kBT>(p, 1);
    uint32_t k6[6] = {kNone, kNone, kNone, kNone, kNone, kNone};
    for (uint32_t q = tid; q < cnt_t; q += kT8)
      for (int d = 0; d < 3; d++) {
        const uint32_t key = psh_f2key(xs[3 * q + d]);
        k6[d] = min(k6[d], key);
        k6[3 + d] = min(k6[3 + d], ~key);
      }
    if (kW) block_min6r(k6, sm.red);
    else block_min6<kW8>(k6, sm.red);
    if (tid == 0)
      for (int e = 0; e < 6; e++) p.part[(size_t)blockIdx.x * 6 + e] = k6[e];
  }
  bstamp<kBT>(p, 2);
  grid_sync(); /* run state, tile keys -> phase 2 (also a block barrier: xs, A zeroed) */
  bstamp<kBT>(p, 3);
  if (tr) p.trace[1] = gtimer();
  /* ---- 2: frame, hash, rank, bulk commit, local counting sort ---- */
  const uint32_t c = t.c;
  uint32_t *gcnt = p.cnt + (size_t)c * nb;
  Frame f;
  /* v9/v10 (694c883): a block none of whose points ranked past S appends nothing to the list, so it arrives at
   * barrier 2 before its placement loop (shared memory only) and waits after it: the loop overlaps the barrier */
  bool early = false, any_over = false;
  unsigned int tok2 = 0;
  if (has) {
    uint32_t k6[6] = {kNone, kNone, kNone, kNone, kNone, kNone};
    const uint32_t pbase = c + t.k0, m = t.k1 - t.k0 + 1;
    for (uint32_t j = tid; j < m; j += kT8)
      for (int e = 0; e < 6; e++) k6[e] = min(k6[e], __ldcg(p.part + (size_t)(pbase + j) * 6 + e));
    if (kW) block_min6r(k6, sm.red);
    else block_min6<kW8>(k6, sm.red);
    /* v10: xyz_out's lines into the L2 (l2_prefetch_share), from a lane that waits here while thread 0 builds the
     * frame. perm's lines too cost more than they gain (cbb7180, docs/psh.md) */
    if (kW && kPF && tid == kT8 - 32u && p.xyz_out) l2_prefetch_share(p.xyz_out, (size_t)p.n * 12u);
    bstamp<kBT>(p, 14); /* the tiles' keys loaded and reduced (H100, 2026-11-27: 1.15 us after barrier 1's exit) */
    if (tid == 0) {
      const Frame f0 = frame_from_keys(p, k6);
      const uint32_t w[kFrameWords] = {__float_as_uint(f0.lo[0]), __float_as_uint(f0.lo[1]), __float_as_uint(f0.lo[2]),
                                       f0.bits, f0.step, f0.shift[0], f0.shift[1], f0.shift[2]};
      for (int e = 0; e < kFrameWords; e++) {
        sm.frame[e] = w[e];
        if (t.k == t.k0) p.frame[(size_t)c * kFrameWords + e] = w[e]; /* the long path's probe phase reads it */
      }
      if (kBT) asm volatile("" ::: "memory"); /* the stamp after the frame's stores */
      bstamp<kBT>(p, 15); /* thread 0's frame built, its stores issued (H100, 2026-11-27: 0.4 us of the step's 1.6) */
    }
    __syncthreads(); /* frame -> everyone */
    bstamp<kBT>(p, 4);
    for (int d = 0; d < 3; d++) f.lo[d] = __uint_as_float(sm.frame[d]);
    f.bits = sm.frame[3];
    f.step = sm.frame[4];
    for (int d = 0; d < 3; d++) f.shift[d] = sm.frame[5 + d];
    const float vinv = 1.0f / p.voxel; /* v9's voxel3f */
    /* hash and rank: pl[q] = bucket << 16 | rank among the tile's points of that bucket */
#pragma unroll 4
    for (uint32_t k = 0; k < p.ipt; k++) {
      const uint32_t q = k * kT8 + tid;
      if (q < cnt_t) {
        uint32_t v[3];
        if (kW) voxel3f(p, f, vinv, xs[3 * q], xs[3 * q + 1], xs[3 * q + 2], v);
        else voxel3(p, f, xs[3 * q], xs[3 * q + 1], xs[3 * q + 2], v);
        const uint32_t h = kW ? hash9(p, f, v) : hash8(p, f, v);
        a.pl[q] = h << 16 | atomicAdd(&a.A[h], 1u);
      }
    }
    if (kW && tid == 0) sm.tally[0] = 0; /* v9's list stage count (phase_probe_nt re-zeroes it) */
    __syncthreads(); /* A = the tile's histogram -> commit and local scan */
    bstamp<kBT>(p, 5);
    {
      const uint32_t per = (nb + kT8 - 1) / kT8, j0 = min(nb, tid * per), j1 = min(nb, j0 + per);
      uint32_t h[kPer8], old[kPer8];
#pragma unroll
      for (int q = 0; q < kPer8; q++) {
        h[q] = j0 + (uint32_t)q < j1 ? a.A[j0 + q] : 0u;
        old[q] = 0;
        if (h[q]) old[q] = atomicAdd(gcnt + j0 + q, h[q]); /* all issued before any result is used */
      }
      uint32_t hs = 0;
#pragma unroll
      for (int q = 0; q < kPer8; q++) hs += h[q];
#pragma unroll
      for (int q = 0; q < kPer8; q++) any_over |= kW && h[q] && old[q] + h[q] > S; /* points ranked past S */
      uint32_t pre = 0;
      Scan8(sm.scan).ExclusiveSum(hs, pre);
#pragma unroll
      for (int q = 0; q < kPer8; q++)
        if (j0 + (uint32_t)q < j1) {
          const uint32_t j = j0 + (uint32_t)q;
          a.B[j] = pre; /* the tile's sorted order: first position of bucket j */
          pre += h[q];
          a.C[j] = old[q]; /* the tile's first offset in bucket j */
          const uint32_t keep_to = max(old[q], S);
          if (h[q] && old[q] + h[q] > keep_to) atomicSub(gcnt + j, old[q] + h[q] - keep_to); /* roll back past S */
        }
    }
    if (kW) {
      early = !__syncthreads_or(any_over); /* B, C -> placements; block-uniform */
      if (early) tok2 = grid_arrive(); /* the commits and roll-backs are this block's part of barrier 2 */
    } else {
      __syncthreads(); /* B, C -> placements */
    }
    bstamp<kBT>(p, 6);
#pragma unroll 4
    for (uint32_t k = 0; k < p.ipt; k++) { /* block-uniform trip count: warps stay whole for the ballot */
      const uint32_t q = k * kT8 + tid, i = t.lo + q;
      bool over = false;
      uint32_t h = 0;
      if (q < cnt_t) {
        h = a.pl[q] >> 16;
        const uint32_t r = a.pl[q] & 0xFFFFu, o = a.C[h] + r;
        a.so[a.B[h] + r] = (uint16_t)q;
        if (o < S) {
          a.pl[q] = h << kPlBits | o;
          if (!kW) { /* v9 stores them after barrier 2 */
            p.bucket[i] = c * nb + h; /* final: coalesced, drains during the barrier */
            p.offset[i] = o;
          }
        } else {
          a.pl[q] = kNone;
          over = true;
        }
      }
      if (kW) {
        if (over) { /* staged in shared memory: one list atomic per block after the loop */
          const uint32_t s8 = atomicAdd(&sm.tally[0], 1u);
          if (s8 < kStage8) ((uint32_t *)a.Ev)[s8] = q | h << 16;
          else list_entry(p, f, xs, q, i, h, atomicAdd(p.ctr + C_NOVF, 1u)); /* past the stage: one by one */
        }
        continue;
      }
      const uint32_t mo = __ballot_sync(0xFFFFFFFFu, over);
      if (mo) { /* one list atomic per warp with overflowing points */
        const int leader = __ffs(mo) - 1;
        uint32_t base = 0;
        if ((int)lane == leader) base = atomicAdd(p.ctr + C_NOVF, (uint32_t)__popc(mo));
        base = __shfl_sync(0xFFFFFFFFu, base, leader);
        const uint32_t pos = base + (uint32_t)__popc(mo & lanemask_lt());
        if (over) p.ovf[pos] = i;
        if (over && pos < kShort) { /* a short list's records: phase 3 then needs no load of this point */
          uint32_t v[3];
          voxel3(p, f, xs[3 * q], xs[3 * q + 1], xs[3 * q + 2], v);
          const uint64_t rb = hx_rng_base(p.seed, i);
          p.ove[2 * pos] = make_uint4(i, v[0], v[1], v[2]);
          p.ove[2 * pos + 1] = make_uint4(h, (uint32_t)rb, (uint32_t)(rb >> 32), 0u);
        }
      }
    }
    if (kW) { /* the staged list entries: one returning global atomic per block instead of one per warp and
               * round (the block with the list's points arrived at barrier 2 ~1.6 us after the median) */
      __syncthreads(); /* the stage and its count */
      const uint32_t nst = min(sm.tally[0], kStage8);
      if (nst) { /* block-uniform */
        if (tid == 0) sm.tally[1] = atomicAdd(p.ctr + C_NOVF, nst);
        __syncthreads(); /* the block's first list position */
        const uint32_t gb = sm.tally[1];
        for (uint32_t s8 = tid; s8 < nst; s8 += kT8) {
          const uint32_t w = ((const uint32_t *)a.Ev)[s8], q = w & 0xFFFFu;
          list_entry(p, f, xs, q, t.lo + q, w >> 16, gb + s8);
        }
      }
    }
  }
  bstamp<kBT>(p, 7);
  if (early) grid_wait(tok2); /* arrived after the commit (above) */
  else grid_sync();           /* every commit and roll-back, the list and its length -> phase 3 */
  bstamp<kBT>(p, 8);
  if (tr) p.trace[2] = p.trace[3] = gtimer();
  /* ---- 3: the overflow list ---- */
  /* the list length (and, below, this thread's entry of a short list) */
  const uint32_t n_ovf = __ldcg(p.ctr + C_NOVF); /* grid-uniform */
  /* entry tid's records (if any): v8 reads them with the list length; v9 only on a short list, where they are
   * used (kLazy, 48bc18e: every block reading all 32 KB of them was 4.2 MB of L2 reads of the same 256 lines
   * at barrier 2's exit, on the paths that never use them; H100, 600k lidar xor-mod without a list, the stamps
   * from barrier 2's exit to phase 4's scan 1.9 -> 1.5 us, v10 cold -1%, 100k/300k -1 to -4%; with a 137-entry
   * short list (the raw cloud) +0.3 to +1.4% at 600k, the records' load now after the list length's) */
  constexpr bool kLazy = kW;
  uint4 r0 = make_uint4(0u, 0u, 0u, 0u), r1 = r0;
  if (!kLazy) r0 = __ldcg(p.ove + 2 * tid), r1 = __ldcg(p.ove + 2 * tid + 1);
  uint32_t rl[kPer8]; /* the room of this thread's buckets, loaded before the branch (the short path uses it) */
#pragma unroll
  for (int q = 0; q < kPer8; q++) {
    const uint32_t j = tid + (uint32_t)q * kT8;
    rl[q] = has && j < nb ? __ldcg(gcnt + j) : 0u;
  }
  if (kW && p.pair_out && has) /* the first-hash placements: stored here, they drain during phase 3 instead of
                  * delaying barrier 2 (its exit came ~2 us after the last block's arrival in v8, against ~1 us at
                  * barrier 1, which follows few stores). Not at all when the caller wants no pair: 4.8 MB less
                  * to write at 600k, v10 xor-mod -1.7% cold, -2.0% hot (H100, 2026-11-27, 8633e87) */
    for (uint32_t k = 0; k < p.ipt; k++) {
      const uint32_t q = k * kT8 + tid;
      if (q < cnt_t && a.pl[q] != kNone) {
        p.bucket[t.lo + q] = c * nb + (a.pl[q] >> kPlBits);
        p.offset[t.lo + q] = a.pl[q] & kPlMask;
      }
    }
  uint32_t R = 0;
  if (n_ovf > kShort) {
    /* E, Ev, Eb: free on the long path; the counts stay in phase C's spread copy (pc_final below) */
    phase_probe_nt<kT8, LdL2, true, true, false, true, kDeal>(p, sm.full, a.E, sm.tally, (uint32_t *)a.Ev, n_ovf, (uint32_t *)a.Eb);
    bstamp<kBT>(p, 13); /* this block's part of phase C done (the long path only) */
    grid_sync(); /* probed counters, tickets, placements, tallies -> phase 4 */
    if (tr) p.trace[3] = gtimer();
    if (blockIdx.x == 0 && tid < PSH_NCOUNTERS && p.counters_out)
      p.counters_out[tid] = tid == 0 ? p.n - n_ovf : tid < 3 ? __ldcg(p.ctr + tid) : 0u;
    if (has) {
      R = __ldcg(p.resid + c);
      for (uint32_t j = tid; j < nb; j += kT8) a.A[j] = pc_final(p, c * nb + j); /* counts after probing, <= S */
      if (R > 0) { /* free-slot scan and final counts, as v7's phase D */
        __syncthreads(); /* A -> scan */
        leftover_counts(sm, a, nb, S, R);
      }
    }
  } else if (has) {
    if (blockIdx.x == 0 && tid == 0 && p.counters_out) p.counters_out[0] = p.n - n_ovf;
#pragma unroll
    for (int q = 0; q < kPer8; q++) { /* room (v9 without a list: the counts, which phase 4 reads) */
      const uint32_t j = tid + (uint32_t)q * kT8;
      if (j < nb) a.A[j] = kLazy && n_ovf == 0u ? rl[q] : S - rl[q];
    }
    if (n_ovf > 0) {
      if (kLazy && tid < n_ovf) r0 = __ldcg(p.ove + 2 * tid), r1 = __ldcg(p.ove + 2 * tid + 1);
      R = kW ? resolve_short_w(p, sm, a, t, f, n_ovf, r0, r1) : resolve_short(p, sm, a, t, f, n_ovf, r0, r1);
      if (tr) p.trace[3] = gtimer(); /* the short list resolved (block 0) */
    } else if (!kLazy) { /* v8, kept as measured: room back to counts (v9 wrote the counts above, each thread its
                          * own j, which phase 4's barrier orders) */
      __syncthreads(); /* room complete */
      for (uint32_t j = tid; j < nb; j += kT8) a.A[j] = S - a.A[j];
    }
  } else if (blockIdx.x == 0 && tid == 0 && p.counters_out) {
    p.counters_out[0] = p.n - n_ovf;
  }
  if (!has) {
    if (tid == 0) atomicMax(p.trace + 6, gtimer());
    return; /* block-uniform; no barrier follows */
  }
  /* ---- 4: bucket starts, rows, perm and coordinates in bucket order ---- */
  __syncthreads(); /* final counts in A (and F, the listed placements) -> the start scan */
  bstamp<kBT>(p, 9);
  scan_nb(sm, a.A, a.C, nb, __ldg(p.off + c));
  __syncthreads(); /* C = first row of each local bucket */
  bstamp<kBT>(p, 10);
  if (t.k == t.k0)
    for (uint32_t j = tid; j < nb; j += kT8) {
      p.start[(size_t)c * nb + j] = a.C[j];
      p.count_out[(size_t)c * nb + j] = a.A[j];
    }
  /* points of the list (not placed by the first hash): slot, perm, xyz one by one */
  for (uint32_t k = 0; k < p.ipt; k++) {
    const uint32_t q = k * kT8 + tid, i = t.lo + q;
    if (q >= cnt_t || a.pl[q] != kNone) continue;
    uint32_t b = __ldcg(p.bucket + i), o = __ldcg(p.offset + i), local;
    if (b & PSH_RESID_FLAG) { /* long path: a leftover ticket -> its slot in the free-slot order */
      psh_resid_place(a.F, nb, S, o, &local, &o);
      p.bucket[i] = c * nb + local;
      p.offset[i] = o;
    } else {
      local = b - c * nb;
    }
    const uint32_t s = a.C[local] + o;
    p.slot[i] = s;
    p.perm[s] = i;
    if (p.xyz_out)
      for (int d = 0; d < 3; d++) p.xyz_out[3 * (size_t)s + d] = xs[3 * q + d];
  }
  /* first-hash points: slot in input order (coalesced) */
  for (uint32_t k = 0; k < p.ipt; k++) {
    const uint32_t q = k * kT8 + tid;
    if (q < cnt_t && a.pl[q] != kNone) p.slot[t.lo + q] = a.C[a.pl[q] >> kPlBits] + (a.pl[q] & kPlMask);
  }
  bstamp<kBT>(p, 11);
  /* ... and perm / xyz_out in the tile's bucket order: a warp takes 32 consecutive sorted positions */
  const uint32_t warp = tid >> 5;
  for (uint32_t b0 = warp * 32u; b0 < cnt_t; b0 += kT8) { /* warp-uniform */
    const uint32_t pos = b0 + lane;
    uint32_t q = 0, row = 0;
    bool ok = false;
    if (pos < cnt_t) {
      q = a.so[pos];
      const uint32_t w = a.pl[q];
      ok = w != kNone;
      if (ok) {
        row = a.C[w >> kPlBits] + (w & kPlMask);
        p.perm[row] = t.lo + q;
      }
    }
    if (p.xyz_out) {
      /* the warp's 96 floats in order: float e is coordinate e % 3 of position e / 3 */
#pragma unroll
      for (int m = 0; m < 3; m++) {
        const uint32_t e = lane + 32u * (uint32_t)m, src = e / 3u, d = e - 3u * src;
        const uint32_t rq = __shfl_sync(0xFFFFFFFFu, q, (int)src), rr = __shfl_sync(0xFFFFFFFFu, row, (int)src);
        const bool rok = __shfl_sync(0xFFFFFFFFu, (uint32_t)ok, (int)src) != 0u;
        if (rok) p.xyz_out[3 * (size_t)rr + d] = xs[3 * rq + d];
      }
    }
  }
  if (tr) p.trace[4] = gtimer();
  __syncthreads(); /* the block's stores are issued -> its end time */
  bstamp<kBT>(p, 12);
  if (tid == 0) atomicMax(p.trace + 6, gtimer());
}

/* The data-movement floor of v9/v10 (psh_floor_variant, psh_run_floor): v10's launch (its tiles, block size,
 * dynamic shared memory, cooperative launch) doing only what any PSH of this shape must: each tile's coordinates
 * read into shared memory (tile_xyz, v10's phase 1), two grid barriers (the bounding box's and the counts'
 * dependencies across the grid), then the outputs written coalesced (slot, perm = the point's index, xyz_out = its
 * coordinates from shared memory, and bucket = offset = the index when the caller asked for the pair: psh_floor_cpu;
 * 20 B per point without the pair, as psh_gpu runs it, 28 with it), all after barrier 2 as v9/v10 store theirs.
 * No keys, frame, hash, counts or scatter: a PSH of this shape (v9/v10's: every output stored after the second
 * barrier) takes at least this long, and the real kernel's scattered perm and xyz_out stores cost more
 * than these. (v8 stores bucket and offset before barrier 2; a design that did so would have a lower floor.)
 * Why (9c8a33b, docs/psh.md, lab/kernels/launch_floor.cu): the sweep reports it beside every PSH so that a
 * reader sees how much of a PSH's time is movement and launch on that device. */
__global__ void __launch_bounds__(kT8, 1) k8_floor(P8 p) {
  extern __shared__ __align__(16) unsigned char smraw[];
  Arr8 a;
  carve8(smraw, p.nb, p.tile, &a);
  Tile t;
  const bool has = tile_of(p, t); /* block-uniform */
  const uint32_t cnt_t = has ? t.hi - t.lo : 0u, tid = threadIdx.x;
  const float *xs = has ? tile_xyz(p.xyz + 3 * (size_t)t.lo, cnt_t, a.xs) : a.xs;
  grid_sync(); /* v9/v10: run state, the tiles' keys (also the block barrier that publishes xs) */
  grid_sync(); /* v9/v10: every commit, the list */
  if (!has) return;
  for (uint32_t q = tid; q < cnt_t; q += kT8) {
    const uint32_t i = t.lo + q;
    if (p.bucket) p.bucket[i] = i, p.offset[i] = i; /* launch-uniform: a run without the pair writes neither */
    p.slot[i] = i;
    p.perm[i] = i;
  }
  if (p.xyz_out)
    for (uint32_t w = tid; w < 3u * cnt_t; w += kT8) p.xyz_out[3 * (size_t)t.lo + w] = xs[w];
}

size_t layout(P8 *q, void *base, uint32_t nclouds, uint32_t nb, uint32_t n) {
  uint32_t *tw = NULL, *ew = NULL, *bw = NULL, *pw = NULL;
  uint32_t **const xslots[] = {&tw, &ew, &bw, &pw};
  const size_t xwords[] = {2 * (size_t)kTrace, 8 * (size_t)kShort, 2 * (size_t)kBtBlocks * PSH_V8_BT,
                           spread_words(nclouds, nb)};
  const size_t off = tiles_layout(q, base, nclouds, nb, n, 4, xslots, xwords); /* v5's prefix: psh_v5_trace reads it */
  q->trace = (unsigned long long *)tw;
  q->ove = (uint4 *)ew; /* 256-byte aligned */
  q->bt = (unsigned long long *)bw;
  spread_set(q, pw, nclouds, nb);
  return off;
}

/* How v8/v9 launch for a batch shape: the fewest points per thread whose tiles fit one wave (one block per SM)
 * and whose arrays fit the shared memory; ipt = 0: v8's kernel cannot run it (no cooperative launch, or not
 * one wave) and the launcher runs v7. One function for the launcher and psh_v8_runs_own, so they agree. */
struct Plan8 {
  uint32_t ipt, tile;
  uint64_t tiles;
  size_t smem;
};

/* Whether v8's kernels take this shape at all: its per-bucket arrays hold up to kDense buckets and a placement
 * word up to kMaxCap offsets (past these v7 runs, which runs v4, then v2). The launcher, psh_v8_runs_own and the
 * floor ask it before planning. */
bool shape8(uint32_t nb, uint32_t cap) { return nb <= kDense && cap <= kMaxCap; }

/* form: 0 v8, 1 v9 (kW), 2 v10 (kW and kPF), as psh_v8_runs_own takes it. v9 and v10 run Z-order-div through
 * an instance with phase C's deal (kDeal, phase_probe_nt), which costs the other hashes 1-3% when it shares
 * their kernel (cfb7c9d). */
void (*kern8(int form, psh_hash hash, bool bt))(P8) {
  /* bt (psh_params.trace_blocks, set by the device bench): the build of the kernel that stamps every block's phases
   * (psh_v8_block_trace); a separate instance, so the measured kernel's code is untouched. The stamped instances
   * have no deal. */
  if (form != 0 && hash == PSH_ZORDER_DIV && !bt)
    return form == 2 ? k8_psh<false, true, true, true> : k8_psh<false, true, false, true>;
  if (form == 2) return bt ? k8_psh<true, true, true> : k8_psh<false, true, true>;
  return form ? (bt ? k8_psh<true, true> : k8_psh<false, true>) : (bt ? k8_psh<true, false> : k8_psh<false, false>);
}

hx_status plan8(bool w, void (*kern)(P8), uint32_t n, uint32_t nclouds, uint32_t nb, Plan8 *pl, hx_err *err) {
  memset(pl, 0, sizeof *pl);
  int dev = 0, sms = 0, coop = 0, smem_max = 0;
  V8_CUDA("device", cudaGetDevice(&dev));
  V8_CUDA("SM count", cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  V8_CUDA("cooperative launch attribute", cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  V8_CUDA("shared memory limit", cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  uint32_t ipt = 0;
  uint64_t tiles = 0;
  size_t smem = 0;
  for (uint32_t k = 1; coop && k <= kMaxIpt8; k++) {
    Arr8 a;
    const size_t sm_k = carve8(NULL, nb, kT8 * k, &a);
    if (sm_k > (size_t)smem_max) break;
    const uint64_t tl = (uint64_t)nclouds + ((uint64_t)n + kT8 * k - 1) / (kT8 * k);
    if (tl > (uint64_t)sms) continue;
    V8_CUDA("shared memory attribute", cudaFuncSetAttribute((const void *)kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm_k));
    int per_sm = 0;
    V8_CUDA("occupancy", cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, kT8, sm_k));
    if (per_sm < 1) break;
    ipt = k, tiles = tl, smem = sm_k;
    break;
  }
  uint32_t tile = kT8 * ipt;
  if (w && ipt && (uint32_t)sms > nclouds) {
    /* v9: tiles of any multiple of 32 points, so that a wave uses every SM (v8's 1024 * ipt left 14 of the
     * H100's 132 idle at 600k: 118 tiles of 5120); the per-block phases shrink with the tile (600k: 131
     * tiles of 4608, the last of a thread's ipt points on half the threads) */
    const uint64_t slots = (uint64_t)sms - nclouds;
    uint64_t tt = ((uint64_t)n + slots - 1) / slots;
    tt = (tt + 31u) & ~(uint64_t)31u;
    if (tt < kMinTile9) tt = kMinTile9;
    if (tt < tile) {
      Arr8 a; /* its shared memory is below the 1024 * ipt tile's, for which the limit is already raised */
      const size_t sm_t = carve8(NULL, nb, (uint32_t)tt, &a);
      tile = (uint32_t)tt;
      ipt = (tile + kT8 - 1) / kT8;
      tiles = (uint64_t)nclouds + ((uint64_t)n + tile - 1) / tile;
      smem = sm_t;
    }
  }
  pl->ipt = ipt, pl->tile = tile, pl->tiles = tiles, pl->smem = smem;
  return HX_OK;
}

/* The cooperative launch of a plan (kern: a k8_psh instance or k8_floor): p's scratch pointers set by the caller
 * (layout; none for the floor), the inputs, outputs and tiling filled here. */
hx_status launch8(void (*kern)(P8), const Plan8 &pl, P8 &p, const psh_out *out, const psh_in *in, const psh_params *prm,
                  void *stream, hx_err *err) {
  tiles_params_fill(&p, out, in, prm, pl.ipt);
  p.tile = pl.tile; /* tiles_params_fill assumed v5's block size */
  p.smem_bytes = (uint32_t)pl.smem;
  void *args[] = {&p};
  V8_CUDA("cooperative launch", cudaLaunchCooperativeKernel((const void *)kern, dim3((unsigned)pl.tiles), dim3(kT8), args,
                                                            pl.smem, (cudaStream_t)stream));
  return HX_OK;
}

hx_status run8(int form, void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
               const psh_params *prm, void *stream, hx_err *err) {
  void (*kern)(P8) = kern8(form, prm->hash, prm->trace_blocks != 0);
  HX_TRY(psh_call_check(prm, in, err));
  if (!out->bucket != !out->offset) return hx_errf(err, HX_EINVAL, "psh: bucket and offset outputs: both or neither");
  if (!shape8(prm->nb, prm->cap)) /* v7 (which runs v4, then v2, past these) */
    return psh_run_paired(psh_run_v7, d_scratch, scratch_bytes, out, in, prm, stream, err);
  /* scratch: the larger of v8's and v7's, so the fall-back below always has enough, then the pair's working copy
   * when the caller wants no pair (psh_pair_bytes; after the layout, so that the layout's addresses are the same
   * either way) */
  P8 p;
  memset(&p, 0, sizeof p);
  const size_t pb = out->bucket ? 0 : psh_pair_bytes(in->n);
  size_t need = layout(&p, NULL, in->nclouds, prm->nb, in->n), need7 = 0;
  HX_TRY(psh_run_v7(NULL, &need7, out, in, prm, stream, err));
  need = psh_align256(need > need7 ? need : need7);
  int query;
  const hx_status sq = psh_scratch_check(d_scratch, scratch_bytes, need + pb, &query, err);
  if (sq != HX_OK || query) return sq;
  if ((uintptr_t)d_scratch & 255u) return hx_errf(err, HX_EINVAL, "psh v8: scratch must be 256-byte aligned (cudaMalloc)");
  psh_out o = *out;
  if (pb) o.bucket = (uint32_t *)((unsigned char *)d_scratch + need), o.offset = o.bucket + in->n;
  Plan8 pl;
  HX_TRY(plan8(form != 0, kern, in->n, in->nclouds, prm->nb, &pl, err));
  if (!pl.ipt) return psh_run_v7(d_scratch, &need, &o, in, prm, stream, err);
  layout(&p, d_scratch, in->nclouds, prm->nb, in->n);
  p.pair_out = pb == 0;
  return launch8(kern, pl, p, &o, in, prm, stream, err);
}

/* k8_floor on v10's own launch plan (plan8 with v10's kernel for this hash, as run8 computes it: the same tiles,
 * block count and dynamic shared memory); HX_EUNSUPPORTED where v10 would not run its own kernel (it falls back to
 * v7 there, whose shape this is not). Scratch: 0 bytes (the query protocol still applies: NULL asks the size). */
hx_status run_floor(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in, const psh_params *prm,
                    void *stream, hx_err *err) {
  HX_TRY(psh_call_check(prm, in, err));
  int query;
  const hx_status sq = psh_scratch_check(d_scratch, scratch_bytes, 0, &query, err);
  if (sq != HX_OK || query) return sq;
  if (!out->slot || !out->perm || !out->bucket != !out->offset)
    return hx_errf(err, HX_EINVAL, "psh floor: slot and perm outputs are required, bucket and offset both or neither");
  Plan8 pl = {0, 0, 0, 0};
  if (shape8(prm->nb, prm->cap))
    HX_TRY(plan8(true, kern8(2, prm->hash, false), in->n, in->nclouds, prm->nb, &pl, err));
  if (!pl.ipt)
    return hx_errf(err, HX_EUNSUPPORTED, "psh floor: v10 has no one-wave launch of its own for %u points, %u clouds, "
                   "%u buckets, S %u", in->n, in->nclouds, prm->nb, prm->cap);
  V8_CUDA("floor shared memory attribute",
          cudaFuncSetAttribute((const void *)k8_floor, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)pl.smem));
  P8 p;
  memset(&p, 0, sizeof p);
  return launch8(k8_floor, pl, p, out, in, prm, stream, err);
}

} // namespace

static int cmp_d(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

extern "C" hx_status psh_v8_block_trace(double st[PSH_V8_BT][4], uint32_t *nblocks, const void *d_scratch,
                                        uint32_t nclouds, uint32_t nb, uint32_t n, hx_err *err) {
  P8 p;
  memset(&p, 0, sizeof p);
  layout(&p, (void *)d_scratch, nclouds, nb, n);
  unsigned long long tr[kTrace];
  V8_CUDA("trace copy", cudaMemcpy(tr, p.trace, sizeof tr, cudaMemcpyDeviceToHost));
  const uint32_t nbk = tr[7] < kBtBlocks ? (uint32_t)tr[7] : kBtBlocks;
  *nblocks = nbk;
  const size_t words = (size_t)nbk * PSH_V8_BT;
  unsigned long long *t = (unsigned long long *)malloc(words * sizeof *t + 1);
  double *v = (double *)malloc(nbk * sizeof *v + 1);
  if (!t || !v) {
    free(t), free(v);
    return hx_errf(err, HX_ENOMEM, "psh v8: block trace buffers");
  }
  const cudaError_t e = cudaMemcpy(t, p.bt, words * sizeof *t, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) {
    free(t), free(v);
    return hx_errf(err, HX_ECUDA, "psh v8: block trace copy: %s", cudaGetErrorString(e));
  }
  unsigned long long t0 = ~0ull;
  for (uint32_t b = 0; b < nbk; b++)
    if (t[(size_t)b * PSH_V8_BT] && t[(size_t)b * PSH_V8_BT] < t0) t0 = t[(size_t)b * PSH_V8_BT];
  for (int k = 0; k < PSH_V8_BT; k++) {
    uint32_t m = 0, arg = 0;
    double mx = -1.0;
    for (uint32_t b = 0; b < nbk; b++) {
      const unsigned long long x = t[(size_t)b * PSH_V8_BT + k];
      if (!x || x < t0) continue;
      v[m++] = (double)(x - t0) * 1e-3;
      if (v[m - 1] > mx) mx = v[m - 1], arg = b;
    }
    if (!m) {
      st[k][0] = st[k][1] = st[k][2] = st[k][3] = -1.0;
      continue;
    }
    qsort(v, m, sizeof *v, cmp_d);
    st[k][0] = v[0], st[k][1] = v[m / 2], st[k][2] = v[m - 1], st[k][3] = (double)arg;
  }
  free(t), free(v);
  return HX_OK;
}

extern "C" hx_status psh_v8_runs_own(int w, uint32_t n, uint32_t nclouds, uint32_t nb, uint32_t cap, int *own,
                                     hx_err *err) {
  *own = 0;
  if (!shape8(nb, cap)) return HX_OK;
  Plan8 pl;
  HX_TRY(plan8(w != 0, kern8(w, PSH_XOR_DIV, false), n, nclouds, nb, &pl, err)); /* every instance: one block per SM */
  *own = pl.ipt != 0;
  return HX_OK;
}

extern "C" hx_status psh_run_v8(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                                const psh_params *prm, void *stream, hx_err *err) {
  return run8(0, d_scratch, scratch_bytes, out, in, prm, stream, err);
}

extern "C" hx_status psh_run_v9(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                                const psh_params *prm, void *stream, hx_err *err) {
  return run8(1, d_scratch, scratch_bytes, out, in, prm, stream, err);
}

extern "C" hx_status psh_run_floor(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                                   const psh_params *prm, void *stream, hx_err *err) {
  return run_floor(d_scratch, scratch_bytes, out, in, prm, stream, err);
}

extern "C" hx_status psh_run_v10(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                                 const psh_params *prm, void *stream, hx_err *err) {
  return run8(2, d_scratch, scratch_bytes, out, in, prm, stream, err);
}
