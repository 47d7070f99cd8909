/*
 * psh_v4.cu - PSH variant v4: the whole PSH (voxelise + hash + rebalance + scan + scatter of coordinates)
 * in 4 kernels with no host round trip, built for the 600k-point / 30 us target. Same invariants as
 * v1-v3 (kernels.h): every point one (bucket, offset), offsets 0..count-1, count <= S whenever
 * n_c <= nb*S, bucket_start = exclusive scan (cloud c's buckets start at cloud_offset[c]), slot and perm
 * inverse permutations; phase 1 keeps exactly min(hist, S) points per bucket (first-hash count = CPU's).
 * Which overflowing point wins which slot is scheduling dependent, as in v2/v3.
 *
 * ---- Where v2's time goes (H200, lidar, S=512; v2 xor-mod graph 28.4 us at 100k, 77.7 us at 600k with
 * 599863 of 600000 points placed by the first hash, so not probing) ----
 *  - 6 dependent kernels per call (init, bbox, first, probe, finalize, scatter). Each costs its launch
 *    gap (~1 us in a graph, ~3 us direct) plus its own latency chain (a global load ~0.6-0.8 us, an L2
 *    atomic with return ~1 us, each __syncthreads round, block launch/drain). At 100k every kernel is
 *    under one wave, so 6 x ~4.5 us = the 28 us measured: launch and latency count, not bytes (the
 *    bytes move in ~3 us there).
 *  - probe kernel: 528 blocks launched to read one counter and exit when nothing overflowed (~2 us).
 *  - finalize: ONE block of 1024 threads per cloud, two CUB block scans and global loads in series
 *    (~3-4 us on the critical path, the GPU otherwise idle).
 *  - first (k_first_2stage): 512 points per block -> 1172 blocks at 600k = ~2.2-3 waves (3-4 blocks of
 *    512 per SM depending on registers); per block: 8 KB table init + sync, bbox + xyz loads, an
 *    open-addressing CAS per distinct key, sync, then a commit loop whose 2 iterations per thread each
 *    wait for an atomicAdd with return (~1 us each, in series), sync, stores. ~4-5 us per block x 3
 *    waves = the ~12-15 us it costs at 600k. Its commits: ~1172 blocks x ~450 distinct buckets = ~530k
 *    returning atomics on 2048 counters (~260 per counter).
 *  - hot counter: count_event() does one atomicAdd per warp on ONE address (placed-by-first-hash):
 *    600k/32 = 18750 same-address atomics per call, serialised at one L2 slice (~0.5-1 ns each: up to
 *    ~10-19 us of serial work that the kernel cannot finish before).
 *  - scatter: perm[s] and 3 scalar stores of xyz_out per point at random s: 4 uncoalesced stores per
 *    point = 32 L1 wavefronts per warp instruction; 2.4M wavefronts / 132 SMs ~ 9 us at 600k (the
 *    DRAM traffic itself is ~3 us).
 *  - bbox: 293 blocks, 8 dependent strided loads per thread, 6 atomicMin per block; ~4-5 us.
 *  - every thread of first/probe recomputes the frame (bbox loads, 3-6 fp32 divisions, bit-width loops)
 *    and runs a binary search for its cloud: small but per point.
 *  Sum at 600k: launches ~6-8, bbox ~5, first ~12-15, hot counter overlapped ~5-10, probe ~2, finalize
 *  ~4, scatter ~9-10 => ~45-55 us of device time plus gaps: the 77 us measured.
 *
 * ---- v4 ----
 * Tiles: a "tile" is the points of ONE cloud inside a chunk of T = 512 * ipt points (ipt = 1..8 points
 * per thread, chosen so that the tiles fill about two blocks per SM in one wave: 600k -> ipt 5, 235
 * tiles). Tile id = c + k for chunk k of cloud c: unique and increasing (c + floor(off[c]/T) grows by
 * >= 1 per cloud), so a grid of nclouds + ceil(n/T) blocks covers every tile; a block whose id matches no
 * tile exits. Every block therefore serves exactly one cloud: one frame, one dense counter array.
 *   K1 bbox:    per-tile min/max keys written to slot (c + k) (no atomics, so no init needed); the same
 *               launch zeroes the counters and writes default bucket_count = 0 / bucket_start =
 *               cloud_offset[c] (what empty clouds keep).
 *   K2 count:   each tile reduces its cloud's partial slots (c+k0 .. c+k1: <= 150 at 600k, one L2 round
 *               trip) to the frame (the cloud's first tile stores it for K3), voxelises + hashes its
 *               points (xyz loads of all items issued first), ranks them in a dense shared [nb] counter
 *               array (warp-aggregated by __match_any_sync), then commits with ONE atomicAdd per
 *               non-empty bucket per tile (all of a thread's atomics issued before any result is used),
 *               rolls back the part past S, rebases, and writes (bucket, offset) of the points that fit;
 *               the rest go to the overflow list (one atomic per warp that has any). The first-hash tally
 *               is reduced per block: one atomic per block, not per warp.
 *   K3 probe:   reads the overflow length and exits at once when it is 0 (the device-side flag: the host
 *               never looks). Otherwise one thread per overflowing point races over the probes as v2
 *               (frame loaded from K2's copy, not recomputed), leftover tickets warp-aggregated per cloud
 *               (v2 takes one returning same-address atomic per leftover point: 376k in series for
 *               zorder-div at 600k), tallies one atomic per block.
 *   K4 scatter: each tile recomputes its cloud's scan in shared memory (free-slot scan F only when the
 *               cloud has leftovers, final counts, exclusive scan + cloud_offset[c]) instead of a
 *               one-block finalize kernel: nb = 2048 counters = 8 KB of L2 reads per tile, overlapped with
 *               the tile's own bucket/offset loads. The cloud's first tile writes bucket_count and
 *               bucket_start. Then leftovers are resolved against F in shared memory, slot / perm are
 *               written and xyz is scattered with 2 stores per point (a float2 on the 8-byte aligned half
 *               and a float) instead of 3. Block 0 copies the run counters.
 *   Counters live in scratch during the run (bucket_count is written once, final, by K4), so no tile can
 *   read a count that another tile already replaced by its final value.
 * Correctness of mixing bulk and single increments: every increment (bulk cnt in K2, 1 in K3) keeps the
 * part of [old, old+cnt) below S and subtracts the rest itself. With K = offsets kept (always exactly
 * [0, K)) and P = pending roll-backs, counter = K + P and P > 0 implies K = S (induction over atomics in
 * any order), so each offset below S is handed out once and the counters end at K <= S. K3 runs after
 * every K2 commit (separate launch), so phase 1 is exactly min(hist, S) per bucket as on the CPU.
 * Cross-block dependencies only go through launch boundaries: K2 reads K1's partials, K3 reads K2's
 * counters / list / frames, K4 reads K3's counters and tickets. Inside a block every shared write/read
 * pair is separated by __syncthreads (marked below).
 * Limits: nb <= 4096 with the dense counters and the two scans' arrays in static shared memory (32 KB in K4);
 * up to kDenseBig = 16384 (e.g. a 4M-point cloud at S = 512: 8192) the same kernels with those arrays in dynamic
 * shared memory (since 2026-11-26; before, v2 ran there, and the 128-probe searches without the snapshot made a
 * 4M cloud ~1 ms on xor-mod); larger nb (the 70001-bucket test) runs v2 unchanged.
 * Predicted (H200, graph): 100k ~11-15 us, 600k xor-mod ~20-28 us (4 launch gaps ~4 us, K1 ~4 us
 * (7.2 MB from DRAM), K2 ~5-6 us, K3 ~3 us (137 overflow points, one block), K4 ~7-8 us (1.8M random
 * store requests: the floor of a random scatter)). Measured 20.6 / 56.3 us (H200, e7b8084; docs/psh.md).
 *
 * Div hashes: 376k of 600k zorder-div points try all 128 probes (48M probe evaluations), so probing is
 * ALU and L2 bound, not launch bound. v2 spends per probe a counter-based RNG, three 64-bit remainders
 * (a software routine each), the hash and a dependent L2 read of the counter (~0.6 us: 128 probes in
 * series are ~80 us of latency per thread), plus one same-address returning atomic per leftover point.
 * v4's K3 keeps v2's one thread per point (v3's warp per point was slower on the device: the same
 * total probe work with 32x fewer points in flight) and removes what is not Alg. 2 itself:
 *   - a shared snapshot of "bucket full" bits (nclouds*nb <= 16384, built with 16-byte loads when >= 2048
 *     points overflowed): a counter that reached S never holds fewer than S placed points again
 *     (counter = K + P, P > 0 implies K = S), so a set bit is exact and skips the L2 read; bits are
 *     added when a read or a failed increment finds a bucket full. Only "room" answers go to L2 and the
 *     atomic, so the invariants and the "first probe with room" rule are unchanged. Trade-off: one
 *     extra round trip per block to build it, hence the 2048-point threshold;
 *   - 32-bit probe arithmetic giving the same bucket as psh_probe_bucket (mask for a power-of-two step);
 *   - warp-aggregated leftover tickets, per-block tallies, the frame stored once by K2.
 * K3 is the probe phase of v5-v9 (phase_probe_nt in psh_tiles.cuh) with plain loads of what K2 wrote and
 * grid-stride chunks of the list (kShare = false: equal shares measured +9% at 4M here, 4e0a2eb), and
 * K4's scans are their phase D's (cloud_scans). The sizes, the parameter struct, the run-state zeroing, the
 * frame load and the scratch layout come from psh_tiles.cuh too.
 * What remains is the RNG + Morton + hash per probe (~100-150 instructions): 48M probes ~ 150-250 us
 * on an H200 for zorder-div at 600k. A further cut would change the algorithm (fewer probes, or probing
 * whole buckets instead of points), which the invariants allow but which would no longer be Alg. 2.
 */
#include "kernels/kernels.h"
#include "kernels/psh_internal.h"
#include "kernels/psh_internal.cuh"

#include <cuda_runtime.h>

#include "kernels/psh_tiles.cuh"
#include <stdint.h>
#include <string.h>

#define V4_LAUNCHED(what)                                                                               \
  do {                                                                                                 \
    cudaError_t e_ = cudaGetLastError();                                                               \
    if (e_ != cudaSuccess) return hx_errf(err, HX_ECUDA, "psh v4: launch of %s: %s", what, cudaGetErrorString(e_)); \
  } while (0)

namespace {

using namespace psh_tiles;

constexpr int kProbeT = 256; /* threads of K3 (K1, K2 and K4 run kT) */
/* Past kDense buckets per cloud (a 4M-point cloud at S = 512 has 8192) K2 and K4 keep their per-bucket arrays in
 * dynamic shared memory: 4 nb bytes in K2, 8 nb + nb / 8 + 4 in K4 (130 KB at 16384, one K4 block per SM); K2
 * commits in chunks of kPer counters and K4 scans them in shared memory; K3's "full" snapshot covers them when
 * nclouds * nb <= kSnapBits (one cloud at 16384, two at 8192). */
constexpr uint32_t kDenseBig = 16384;
constexpr int kPerBig = (int)kDenseBig / kT;
static_assert(kDenseBig <= kSnapBits && kDenseBig <= 65536u, "K3's snapshot and K2's 16-bit bucket field cover v4's buckets");

typedef Prm P4; /* v4 needs no field beyond the shared ones */

/* K1: zero the run state, default bucket tables, per-tile bbox keys. */
__global__ void __launch_bounds__(kT) k4_bbox(P4 p) {
  __shared__ uint32_t s_red[6][kWarps];
  init_run_state(p);
  Tile t;
  if (!tile_of(p, t)) return; /* block-uniform */
  uint32_t k[6] = {kNone, kNone, kNone, kNone, kNone, kNone};
  for (uint32_t i = t.lo + threadIdx.x; i < t.hi; i += kT)
    for (int d = 0; d < 3; d++) {
      const uint32_t key = psh_f2key(__ldg(p.xyz + 3 * (size_t)i + d));
      k[d] = min(k[d], key);
      k[3 + d] = min(k[3 + d], ~key);
    }
  block_min6(k, s_red);
  if (threadIdx.x == 0)
    for (int e = 0; e < 6; e++) p.part[(size_t)blockIdx.x * 6 + e] = k[e];
}

/* K2: frame, voxelise + hash, dense shared ranking, bulk commit, placement or overflow list. */
template <int PER> __global__ void __launch_bounds__(kT, 2) k4_count(P4 p) {
  constexpr bool kBig = PER > kPer; /* nb up to kDenseBig: the counters in dynamic shared memory */
  __shared__ uint32_t s_cnt_st[kBig ? 1 : kDense];
  extern __shared__ uint32_t s_dyn4[];
  uint32_t *const s_cnt = kBig ? s_dyn4 : s_cnt_st;
  __shared__ uint32_t s_red[6][kWarps];
  __shared__ uint32_t s_frame[kFrameWords];
  __shared__ uint32_t s_first;
  Tile t;
  if (!tile_of(p, t)) return; /* block-uniform */
  const uint32_t nb = p.nb, c = t.c, tid = threadIdx.x;
  const int lane = (int)(tid & 31u);
  for (uint32_t j = tid; j < nb; j += kT) s_cnt[j] = 0;
  if (tid == 0) s_first = 0;
  /* the cloud's frame from K1's per-tile keys (slots c+k0 .. c+k1) */
  uint32_t k[6] = {kNone, kNone, kNone, kNone, kNone, kNone};
  const uint32_t pbase = c + t.k0, m = t.k1 - t.k0 + 1;
  for (uint32_t j = tid; j < m; j += kT)
    for (int e = 0; e < 6; e++) k[e] = min(k[e], __ldg(p.part + (size_t)(pbase + j) * 6 + e));
  /* xyz of this thread's items, issued before the reduction's barriers so the loads overlap them */
  float x[kMaxIpt][3];
#pragma unroll
  for (int it = 0; it < kMaxIpt; it++) {
    const uint32_t i = t.lo + (uint32_t)it * kT + tid;
    if ((uint32_t)it < p.ipt && i < t.hi) {
      x[it][0] = __ldg(p.xyz + 3 * (size_t)i);
      x[it][1] = __ldg(p.xyz + 3 * (size_t)i + 1);
      x[it][2] = __ldg(p.xyz + 3 * (size_t)i + 2);
    } else {
      x[it][0] = x[it][1] = x[it][2] = 0.0f;
    }
  }
  block_min6(k, s_red); /* contains a barrier: also orders the s_cnt / s_first zeroing above */
  if (tid == 0) {
    const Frame f = frame_from_keys(p, k);
    uint32_t w[kFrameWords] = {__float_as_uint(f.lo[0]), __float_as_uint(f.lo[1]), __float_as_uint(f.lo[2]),
                               f.bits, f.step, f.shift[0], f.shift[1], f.shift[2]};
    for (int e = 0; e < kFrameWords; e++) {
      s_frame[e] = w[e];
      if (t.k == t.k0) p.frame[(size_t)c * kFrameWords + e] = w[e]; /* one writer per cloud, for K3 */
    }
  }
  __syncthreads(); /* s_frame written by thread 0 -> read by all */
  Frame f;
  for (int d = 0; d < 3; d++) f.lo[d] = __uint_as_float(s_frame[d]);
  f.bits = s_frame[3];
  f.step = s_frame[4];
  for (int d = 0; d < 3; d++) f.shift[d] = s_frame[5 + d];
  /* rank every point in its bucket: one shared atomic per distinct bucket per warp */
  uint32_t hr[kMaxIpt]; /* local bucket << 16 | rank in the tile (nb <= kDenseBig, tile <= 4096 points) */
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
    const uint32_t active = __ballot_sync(0xFFFFFFFFu, valid);
    if (valid) {
      const uint32_t peers = __match_any_sync(active, h);
      const int leader = __ffs(peers) - 1;
      uint32_t base = 0;
      if (lane == leader) base = atomicAdd(&s_cnt[h], (uint32_t)__popc(peers));
      base = __shfl_sync(active, base, leader);
      hr[it] = h << 16 | (base + (uint32_t)__popc(peers & lanemask_lt()));
    }
  }
  __syncthreads(); /* s_cnt complete -> commit reads */
  /* commit: one atomicAdd per non-empty bucket, all of a chunk of kPer issued before any result is used (one
   * chunk up to kDense buckets; kBig: PER / kPer chunks, so that the counters stay in registers) */
  uint32_t *gcnt = p.cnt + (size_t)c * nb;
#pragma unroll 1
  for (int q0 = 0; q0 < PER; q0 += kPer) {
    uint32_t cnt[kPer], old[kPer];
#pragma unroll
    for (int q = 0; q < kPer; q++) {
      const uint32_t j = tid + (uint32_t)(q0 + q) * kT;
      cnt[q] = j < nb ? s_cnt[j] : 0u;
      old[q] = 0;
      if (cnt[q]) old[q] = atomicAdd(gcnt + j, cnt[q]);
    }
#pragma unroll
    for (int q = 0; q < kPer; q++) {
      const uint32_t j = tid + (uint32_t)(q0 + q) * kT;
      if (cnt[q]) {
        const uint32_t keep_to = max(old[q], p.cap);
        if (old[q] + cnt[q] > keep_to) atomicSub(gcnt + j, old[q] + cnt[q] - keep_to); /* roll back past S */
        s_cnt[j] = old[q]; /* rebase: slot j is read and written by this thread only */
      }
    }
  }
  __syncthreads(); /* rebased s_cnt -> placement reads */
  uint32_t nfirst = 0;
#pragma unroll
  for (int it = 0; it < kMaxIpt; it++) {
    if ((uint32_t)it >= p.ipt) break; /* block-uniform */
    const uint32_t i = t.lo + (uint32_t)it * kT + tid;
    bool over = false;
    if (i < t.hi) {
      const uint32_t h = hr[it] >> 16, off = s_cnt[h] + (hr[it] & 0xFFFFu);
      if (off < p.cap) {
        p.bucket[i] = c * nb + h;
        p.offset[i] = off;
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
  if (lane == 0 && nfirst) atomicAdd(&s_first, nfirst);
  __syncthreads(); /* s_first complete -> thread 0 */
  if (tid == 0 && s_first) atomicAdd(p.ctr + C_FIRST, s_first);
}

/* K3: the overflow list races over the probes (exits at once when K2 placed every point). Four blocks per SM, as
 * launched, so at most 64 registers: left to itself ptxas took 77 once Z-order-mod's probe loop joined (de86c97),
 * three blocks fitted an SM, and the 4-per-SM grid ran in two waves (600k xor-div +10-20%, H200). */
__global__ void __launch_bounds__(kProbeT, 4) k4_probe(P4 p) {
  __shared__ uint32_t s_tally[3];
  __shared__ uint32_t s_full[kSnapBits / 32]; /* bit g: counter g reached S, so it is full for good */
  __shared__ uint32_t s_defer[2 * kProbeT];     /* the second pass's queue (phase_probe_nt) */
  __shared__ uint32_t s_cells[kCellWords];      /* Z-order-div's cell tables (phase_probe_nt) */
  __shared__ uint32_t s_ptab[PSH_NPROBE_BASE];  /* the probe table of probe_warp_z (Z-order-div) */
  const uint32_t n_ovf = p.ctr[C_NOVF]; /* written by K2, a previous launch */
  if (blockIdx.x * kProbeT >= n_ovf) return; /* block-uniform: no list entry for this block */
  phase_probe_nt<kProbeT, LdPrev, false, false, true, true>(p, s_full, s_ptab, s_tally, s_defer, n_ovf, s_cells); /* grid-stride chunks (see there) */
}

/* K4: the cloud's scans in shared memory, then the tile's scatter. */
template <int PER> __global__ void __launch_bounds__(kT, 2) k4_scatter(P4 p) {
  constexpr bool kBig = PER > kPer; /* nb up to kDenseBig: F and the starts in dynamic shared memory */
  /* kBig: the starts at j + j / 32 (sp), so that the lanes of a warp, each on its own run of per = nb / kT
   * consecutive buckets in the scans, hit different banks (unpadded, per = 16 or 32 words apart: a 16- or
   * 32-way conflict on every access; a copy of the loops on the H200, 978 blocks at nb 8192: 170 us
   * unpadded, 35 padded). */
  __shared__ typename Scan::TempStorage tmp;
  __shared__ uint32_t s_F_st[kBig ? 1 : kDense + 1];
  __shared__ uint32_t s_start_st[kBig ? 1 : kDense];
  extern __shared__ uint32_t s_dyn4[];
  uint32_t *const s_F = kBig ? s_dyn4 : s_F_st;
  uint32_t *const s_start = kBig ? s_dyn4 + p.nb + 1 : s_start_st;
  auto sp = [](uint32_t j) { return kBig ? j + (j >> 5) : j; };
  if (blockIdx.x == 0 && threadIdx.x < PSH_NCOUNTERS && p.counters_out)
    p.counters_out[threadIdx.x] = threadIdx.x < 3 ? p.ctr[threadIdx.x] : 0u; /* K2 and K3 are done */
  Tile t;
  if (!tile_of(p, t)) return; /* block-uniform */
  const uint32_t nb = p.nb, S = p.cap, c = t.c, tid = threadIdx.x;
  const uint32_t R = p.resid[c];
  cloud_scans<PER, kBig, LdPrev>(p.cnt + (size_t)c * nb, nb, S, R, p.off + c, t.k == t.k0, p.start + (size_t)c * nb,
                                 p.count_out + (size_t)c * nb, s_F, s_start, sp, tmp);
  __syncthreads(); /* s_start (and s_F) complete -> scatter reads */
  /* Three unrolled passes so that each pass's loads are all in flight at once (the stores of one item
   * would otherwise stop the compiler from hoisting the next item's loads): placements, then rows (slot,
   * perm), then coordinates. */
  const uint32_t nit = p.ipt;
  uint32_t pb[kMaxIpt], po[kMaxIpt];
#pragma unroll
  for (int it = 0; it < kMaxIpt; it++) {
    const uint32_t i = t.lo + (uint32_t)it * kT + tid;
    pb[it] = po[it] = 0;
    if ((uint32_t)it < nit && i < t.hi) {
      pb[it] = p.bucket[i];
      po[it] = p.offset[i];
    }
  }
#pragma unroll
  for (int it = 0; it < kMaxIpt; it++) {
    const uint32_t i = t.lo + (uint32_t)it * kT + tid;
    if ((uint32_t)it >= nit || i >= t.hi) continue;
    uint32_t b = pb[it], o = po[it], local;
    if (b & PSH_RESID_FLAG) {
      uint32_t off;
      psh_resid_place(s_F, nb, S, o, &local, &off);
      b = c * nb + local;
      o = off;
      p.bucket[i] = b;
      p.offset[i] = o;
    } else {
      local = b - c * nb;
    }
    const uint32_t s = s_start[sp(local)] + o;
    p.slot[i] = s;
    p.perm[s] = i;
    pb[it] = s; /* the row, for the coordinate pass */
  }
  if (!p.xyz_out) return;
  float x[kMaxIpt][3];
#pragma unroll
  for (int it = 0; it < kMaxIpt; it++) {
    const uint32_t i = t.lo + (uint32_t)it * kT + tid;
    x[it][0] = x[it][1] = x[it][2] = 0.0f;
    if ((uint32_t)it < nit && i < t.hi) {
      x[it][0] = __ldg(p.xyz + 3 * (size_t)i);
      x[it][1] = __ldg(p.xyz + 3 * (size_t)i + 1);
      x[it][2] = __ldg(p.xyz + 3 * (size_t)i + 2);
    }
  }
#pragma unroll
  for (int it = 0; it < kMaxIpt; it++) {
    const uint32_t i = t.lo + (uint32_t)it * kT + tid;
    if ((uint32_t)it >= nit || i >= t.hi) continue;
    const uint32_t s = pb[it];
    float *row = p.xyz_out + 3 * (size_t)s;
    if (p.xyz_pair) {
      /* row at byte 12s: for even s its first 8 bytes are 8-byte aligned, for odd s its last 8 */
      const bool odd = (s & 1u) != 0;
      float2 *pair = (float2 *)(row + (odd ? 1 : 0));
      *pair = odd ? make_float2(x[it][1], x[it][2]) : make_float2(x[it][0], x[it][1]);
      row[odd ? 0 : 2] = odd ? x[it][0] : x[it][2];
    } else {
      row[0] = x[it][0];
      row[1] = x[it][1];
      row[2] = x[it][2];
    }
  }
}

size_t layout(P4 *q, void *base, uint32_t nclouds, uint32_t nb, uint32_t n) {
  return tiles_layout(q, base, nclouds, nb, n, 0, NULL, NULL);
}

/* v2 unchanged, for what v4's dense shared arrays cannot hold: its launcher itself, not the table's entry, which
 * would add a second copy of the pair to a size query made without one (v4 runs with the pair it is given) */
hx_status run_v2(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in, const psh_params *prm,
                 void *stream, hx_err *err) {
  return psh_run_v2(d_scratch, scratch_bytes, out, in, prm, stream, err);
}

} // namespace

extern "C" hx_status psh_run_v4(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                                const psh_params *prm, void *stream, hx_err *err) {
  HX_TRY(psh_call_check(prm, in, err));
  if (prm->nb > kDenseBig) return run_v2(d_scratch, scratch_bytes, out, in, prm, stream, err); /* arrays do not fit */
  P4 p;
  memset(&p, 0, sizeof p);
  const size_t need = layout(&p, NULL, in->nclouds, prm->nb, in->n);
  int query;
  const hx_status sq = psh_scratch_check(d_scratch, scratch_bytes, need, &query, err);
  if (sq != HX_OK || query) return sq;
  if ((uintptr_t)d_scratch & 255u) return hx_errf(err, HX_EINVAL, "psh v4: scratch must be 256-byte aligned (cudaMalloc)");
  layout(&p, d_scratch, in->nclouds, prm->nb, in->n);
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      sms <= 0)
    return hx_errf(err, HX_ECUDA, "psh v4: cannot read the SM count: %s", cudaGetErrorString(cudaGetLastError()));
  /* points per thread: about two tiles per SM in one wave, at most kMaxIpt */
  const uint64_t per_wave = (uint64_t)kT * 2u * (uint64_t)sms;
  uint64_t ipt = ((uint64_t)in->n + per_wave - 1) / per_wave;
  ipt = ipt < 1 ? 1 : ipt > kMaxIpt ? kMaxIpt : ipt;
  tiles_params_fill(&p, out, in, prm, (uint32_t)ipt);
  p.xyz_pair = ((uintptr_t)out->xyz & 7u) == 0;
  cudaStream_t s = (cudaStream_t)stream;
  const uint64_t tiles = (uint64_t)in->nclouds + ((uint64_t)in->n + p.tile - 1) / p.tile;
  if (tiles > 0x7FFFFFFFull) return hx_errf(err, HX_EINVAL, "psh v4: %llu tiles", (unsigned long long)tiles);
  /* past kDense buckets: the dynamic shared memory, checked before anything is launched (a device that cannot
   * give it runs v2, as every nb past kDenseBig does) */
  const bool big = prm->nb > kDense;
  const size_t sm2 = big ? 4u * (size_t)prm->nb : 0u;
  const size_t sm4 = big ? 4u * (2u * (size_t)prm->nb + prm->nb / 32u + 1u) : 0u; /* F, padded starts */
  if (big) {
    int smem_max = 0;
    cudaFuncAttributes fa4;
    if (cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess ||
        cudaFuncGetAttributes(&fa4, (const void *)k4_scatter<kPerBig>) != cudaSuccess)
      return hx_errf(err, HX_ECUDA, "psh v4: cannot read the shared memory limits: %s", cudaGetErrorString(cudaGetLastError()));
    if (sm4 + fa4.sharedSizeBytes > (size_t)smem_max ||
        cudaFuncSetAttribute((const void *)k4_count<kPerBig>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm2) != cudaSuccess ||
        cudaFuncSetAttribute((const void *)k4_scatter<kPerBig>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm4) != cudaSuccess) {
      (void)cudaGetLastError(); /* a refused attribute is not an error of this call: v2 serves it */
      return run_v2(d_scratch, scratch_bytes, out, in, prm, stream, err);
    }
  }
  void (*const count)(P4) = big ? k4_count<kPerBig> : k4_count<kPer>;
  void (*const scatter)(P4) = big ? k4_scatter<kPerBig> : k4_scatter<kPer>;
  k4_bbox<<<(unsigned)tiles, kT, 0, s>>>(p);
  V4_LAUNCHED("bbox + init (v4)");
  count<<<(unsigned)tiles, kT, sm2, s>>>(p);
  V4_LAUNCHED("count + commit (v4)");
  k4_probe<<<(unsigned)(4 * sms), kProbeT, 0, s>>>(p);
  V4_LAUNCHED("probe (v4)");
  scatter<<<(unsigned)tiles, kT, sm4, s>>>(p);
  V4_LAUNCHED("scan + scatter (v4)");
  return HX_OK;
}
