/*
 * psh_v7.cu - PSH variant v7: v6 (one cooperative launch, phases separated by grid barriers, coordinates
 * gathered after the rows; psh_v5.cu) with the three costs its phase trace measured at 600k xor-mod on the
 * H200 (2026-11-22, de4ea26) attacked where they are. Same invariants as v1-v6 (kernels.h):
 * every point one (bucket, offset), offsets 0..count-1, count <= S whenever n_c <= nb*S, bucket_start =
 * exclusive scan from cloud_offset[c], slot and perm inverse permutations; phase 1 keeps exactly
 * min(hist, S) points per bucket (first-hash count = CPU's). Which overflowing point wins which slot is
 * scheduling dependent, as in v2-v6.
 *   B  rank inside the tile's dense shared counters with one shared atomicAdd per point (its return value is
 *      the rank) instead of __match_any_sync + popc + shfl (ncu: MATCH.ANY's short-scoreboard wait was K2's
 *      top stall); the first-hash points store bucket/offset here (coalesced, overlapping the barrier
 *      wait) instead of in phase D.
 *   C  a short overflow list (<= one point per warp of the grid; 137 points at 600k xor-mod) is probed with
 *      one WARP per point: 32 probes computed at once, their 32 counters read in one round trip, then the
 *      candidates with room tried with atomicAdd in probe order (v5's path: one thread per point, up to
 *      128 dependent round trips). "First probe with room wins" is kept exactly: a counter read >= S is
 *      full for good (counter = kept + pending roll-backs, pending > 0 only when kept = S; psh_v4.cu), so
 *      skipping it is what the serial loop does, and the candidates are tried lowest probe first, each
 *      failed increment rolled back. Long lists (div hashes) keep v5's thread-per-point phase C.
 *   D  rows (slot, coalesced), and ONE random store per point: the 16-byte record (i, x, y, z) at its row of
 *      a scratch array (one L2 sector); after one more grid barrier every row's perm and xyz_out are copied
 *      from the records in row order, coalesced. v6 made 2.25 random requests per point here (perm's
 *      store, the gather's 12-byte read), v5 ~3; a model fitted to v1-v6's scatter times charges each ~12 ns of the
 *      GPU's throughput (~7.5 us per 600k). Costs 16 bytes of scratch per point. Without coordinates
 *      (xyz_out NULL) phase D stores perm directly and there is no gather.
 * Everything else (tiles, phases A and the commit of B, the correctness argument, memory ordering through
 * grid barriers and ld.global.cg, the fall-back to v4) is v5's; see psh_v5.cu. v5's phase C for long lists,
 * the shared-memory struct, the sizes, the launch set-up and phases A and B (phases_ab<false, true>: the
 * shared-atomic rank and the first-hash stores above; same PTX instructions as before it was shared, one
 * or.b64 per Z-order code moved) and phase D's scans (cloud_scans, 84a7161: timed the same as before on the
 * H200) are shared code (psh_tiles.cuh). The scratch layout starts
 * with v5's arrays in v5's order (the records come after), so psh_v5_trace reads v7's phase stamps (same
 * slot meanings as v6).
 * Written offline and checked in a host emulation (removed in e7df985); measured on the H200 (2026-11-22,
 * af776f7): 600k xor-mod 50.2 us graph (v4 56.2, v5 59.1), the fastest PSH on xor-mod and
 * zorder-mod; v4 stays faster on xor-div and v5 on zorder-div (probing dominates there).
 */
#include "kernels/kernels.h"
#include "kernels/psh_internal.h"
#include "kernels/psh_internal.cuh"

#include <cuda_runtime.h>

#include "kernels/psh_tiles.cuh"
#include <stdint.h>

namespace {

using namespace psh_tiles;

/* v4's fields (Prm; vec16 set), the phase stamps and the records */
struct P5 : Prm {
  unsigned long long *trace; /* [kTrace] %globaltimer (ns) at the phase boundaries, see psh_v5_trace */
  uint4 *stage;    /* [n] row r's record (perm, x, y, z bits): one random 16-byte store per point in phase D,
                      read in row order by the gather */
};

/* Phase C for a short list (n_ovf <= warps in the grid; grid-uniform choice): one warp per overflowing
 * point. Lane k computes probe k0 + k and reads its counter: 32 probes per L2 round trip instead of one. The
 * candidates (not the home bucket, counter read < S) are then tried in probe order with a returning
 * atomicAdd by their lane, each failure rolled back: the same outcome as v5's serial loop, which skips a
 * probe whose counter reads >= S (full for good) and takes the first increment that lands below S. */
__device__ __forceinline__ void phase_probe_warps(const P5 &p, Smem &sm, uint32_t n_ovf) {
  const uint32_t lane = threadIdx.x & 31u;
  const uint32_t t = blockIdx.x * (uint32_t)kWarps + (threadIdx.x >> 5); /* the warp's point: warp-uniform */
  if (threadIdx.x == 0) sm.tally[0] = sm.tally[1] = 0;
  __syncthreads(); /* tally zeroed -> lane 0's adds below */
  if (t < n_ovf) {
    const uint32_t i = __ldcg(p.ovf + t);
    uint32_t c, v[3], home;
    Frame f;
    listed_point<LdL2>(p, i, c, f, v, home);
    const uint64_t rb = hx_rng_base(p.seed, i); /* hx_rng_u64(seed, i, k) = hx_mix64(rb + k) */
    bool placed = false;
    for (uint32_t k0 = 0; k0 < p.nprobe && !placed; k0 += 32u) { /* warp-uniform: placed is broadcast */
      const uint32_t k = k0 + lane;
      uint32_t g = 0;
      bool room = false;
      if (k < p.nprobe) {
        const uint32_t h = probe_bucket_fast((psh_hash)p.hash, v, p.probe[k], f.step, f.bits, p.nb, hx_mix64(rb + k));
        g = c * p.nb + h;
        room = h != home && __ldcg(p.cnt + g) < p.cap;
      }
      uint32_t cand = __ballot_sync(0xFFFFFFFFu, room);
      while (cand) { /* lowest probe first */
        const int leader = __ffs(cand) - 1;
        uint32_t o = 0;
        if ((int)lane == leader) {
          o = atomicAdd(p.cnt + g, 1u);
          if (o < p.cap) {
            p.bucket[i] = g;
            p.offset[i] = o;
          } else {
            atomicSub(p.cnt + g, 1u); /* roll back; full for good */
          }
        }
        o = __shfl_sync(0xFFFFFFFFu, o, leader);
        if (o < p.cap) {
          placed = true;
          break;
        }
        cand &= cand - 1u;
      }
    }
    if (lane == 0) {
      if (!placed) { /* leftover ticket (a handful of points: one atomic each) */
        p.bucket[i] = PSH_RESID_FLAG | c;
        p.offset[i] = atomicAdd(p.resid + c, 1u);
      }
      atomicAdd(&sm.tally[placed ? 0 : 1], 1u);
    }
  }
  __syncthreads(); /* tally complete -> thread 0 */
  if (threadIdx.x == 0) {
    if (sm.tally[0]) atomicAdd(p.ctr + C_PROBE, sm.tally[0]);
    if (sm.tally[1]) atomicAdd(p.ctr + C_OVER, sm.tally[1]);
  }
}

/* Phase D: the cloud's scans, then the tile's rows: slot (coalesced) and perm (one random store per point).
 * bucket/offset were stored by phase B (first hash) or C (probed); only leftovers are stored here. */
__device__ __forceinline__ void phase_rows(const P5 &p, Smem &sm, const Tile &t, const uint32_t (&pl)[kMaxIpt]) {
  const uint32_t tid = threadIdx.x, nb = p.nb, c = t.c;
  const uint32_t S = p.cap;
  const uint32_t R = __ldcg(p.resid + c);
  const uint32_t nit = p.ipt;
  cloud_scans<kPer, false, LdL2>(p.cnt + (size_t)c * nb, nb, S, R, p.off + c, t.k == t.k0, p.start + (size_t)c * nb,
                                 p.count_out + (size_t)c * nb, sm.u.d.F, sm.u.d.start, [](uint32_t j) { return j; },
                                 sm.scan);
  __syncthreads(); /* start (and F) complete -> row reads */
  uint32_t pb[kMaxIpt], po[kMaxIpt];
#pragma unroll
  for (int it = 0; it < kMaxIpt; it++) { /* points that probed: phase C's stores (L2); loaded after the scans
                                          * (held across them they spill) */
    const uint32_t i = t.lo + (uint32_t)it * kT + tid;
    pb[it] = po[it] = 0;
    if ((uint32_t)it < nit && i < t.hi && pl[it] == kNone) {
      pb[it] = __ldcg(p.bucket + i); /* global id, or RESID_FLAG | cloud */
      po[it] = __ldcg(p.offset + i);
    }
  }
#pragma unroll
  for (int it = 0; it < kMaxIpt; it++) {
    const uint32_t i = t.lo + (uint32_t)it * kT + tid;
    if ((uint32_t)it >= nit || i >= t.hi) continue;
    uint32_t local, o;
    if (pl[it] == kNone) {
      o = po[it];
      if (pb[it] & PSH_RESID_FLAG) {
        uint32_t off;
        psh_resid_place(sm.u.d.F, nb, S, o, &local, &off);
        o = off;
        p.bucket[i] = c * nb + local;
        p.offset[i] = o;
      } else {
        local = pb[it] - c * nb; /* phase C already wrote bucket/offset */
      }
    } else {
      local = pl[it] >> kOffBits; /* phase B already wrote bucket/offset */
      o = pl[it] & kOffMask;
    }
    const uint32_t s = sm.u.d.start[local] + o;
    p.slot[i] = s;
    if (p.xyz_out) pb[it] = s; /* the row, for the record below */
    else p.perm[s] = i;        /* no coordinates: perm is the only random store */
  }
  if (p.xyz_out) {
    /* this tile's xyz again (L1/L2: phases A and B read the same lines), in two groups of 4 items whose
     * loads all precede their stores (all 8 at once spill) */
    constexpr int kG = kMaxIpt / 2;
#pragma unroll
    for (int g0 = 0; g0 < kMaxIpt; g0 += kG) {
      if ((uint32_t)g0 >= nit) break; /* block-uniform */
      float x[kG][3];
#pragma unroll
      for (int u = 0; u < kG; u++) {
        const uint32_t i = t.lo + (uint32_t)(g0 + u) * kT + tid;
        const bool v = (uint32_t)(g0 + u) < nit && i < t.hi;
        for (int d = 0; d < 3; d++) x[u][d] = v ? __ldg(p.xyz + 3 * (size_t)i + d) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kG; u++) {
        const uint32_t i = t.lo + (uint32_t)(g0 + u) * kT + tid;
        if ((uint32_t)(g0 + u) >= nit || i >= t.hi) continue;
        /* one aligned 16-byte store (one L2 sector) at the random row instead of perm's 4-byte store plus
         * the gather's 12-byte random read */
        p.stage[pb[g0 + u]] = make_uint4(i, __float_as_uint(x[u][0]), __float_as_uint(x[u][1]), __float_as_uint(x[u][2]));
      }
    }
  }
}

/* The whole PSH: phases A-D as v5/v6 (psh_v5.cu); with coordinates, phase D stores one record per point at
 * its row and, after one more grid barrier, every row's perm and xyz_out are copied from the records in row
 * order (coalesced loads and stores only). */
__global__ void __launch_bounds__(kT, 2) k7_psh(P5 p) {
  __shared__ Smem sm;
  const uint32_t tid = threadIdx.x;
  const int lane = (int)(tid & 31u);
  const bool tr = blockIdx.x == 0 && tid == 0; /* the phase timestamps: one thread */
  Tile t;
  bool has;
  uint32_t pl[kMaxIpt]; /* placement of each item: local bucket << kOffBits | offset; kNone: probed, or none */
  phases_ab<false, true>(p, sm, lane, tr, t, has, pl); /* A, grid barrier 1, B (psh_tiles.cuh) */
  grid_sync(); /* every commit, the list and its length -> phase C */
  if (tr) p.trace[2] = p.trace[3] = gtimer();
  /* ---- C: probing, only when something overflowed (same answer in every block) ---- */
  const uint32_t n_ovf = __ldcg(p.ctr + C_NOVF);
  if (n_ovf > 0) {
    if (n_ovf <= gridDim.x * (uint32_t)kWarps) phase_probe_warps(p, sm, n_ovf); /* grid-uniform choice */
    else phase_probe(p, sm, n_ovf);
    grid_sync(); /* probed counters, tickets, placements, tallies -> phase D */
    if (tr) p.trace[3] = gtimer();
  }
  if (blockIdx.x == 0 && tid < PSH_NCOUNTERS && p.counters_out)
    p.counters_out[tid] = tid < 3 ? __ldcg(p.ctr + tid) : 0u; /* every tally is in */
  if (has) phase_rows(p, sm, t, pl);
  if (tr) p.trace[4] = gtimer();
  if (!p.xyz_out) {
    __syncthreads(); /* the block's stores are issued -> its end time */
    if (tid == 0) atomicMax(p.trace + 6, gtimer());
    return; /* uniform */
  }
  grid_sync(); /* every perm entry -> the gather */
  if (tr) p.trace[5] = gtimer();
  /* ---- E: perm[r], xyz_out[r] from the record of row r, 4 rows per thread (64 bytes in, 16 + 48 out) ---- */
  const uint32_t gt = blockIdx.x * kT + tid, gs = gridDim.x * kT;
  const uint32_t quads = p.vec16 ? p.n / 4u : 0u;
  for (uint32_t q = gt; q < quads; q += gs) {
    uint4 r[4];
#pragma unroll
    for (int k = 0; k < 4; k++) r[k] = __ldcg(p.stage + 4 * (size_t)q + k); /* written by other blocks: L2 */
    ((uint4 *)p.perm)[q] = make_uint4(r[0].x, r[1].x, r[2].x, r[3].x);
    float4 *o = (float4 *)(p.xyz_out + 12 * (size_t)q);
    o[0] = make_float4(__uint_as_float(r[0].y), __uint_as_float(r[0].z), __uint_as_float(r[0].w), __uint_as_float(r[1].y));
    o[1] = make_float4(__uint_as_float(r[1].z), __uint_as_float(r[1].w), __uint_as_float(r[2].y), __uint_as_float(r[2].z));
    o[2] = make_float4(__uint_as_float(r[2].w), __uint_as_float(r[3].y), __uint_as_float(r[3].z), __uint_as_float(r[3].w));
  }
  for (uint32_t rr = quads * 4u + gt; rr < p.n; rr += gs) { /* the tail, or everything when unaligned */
    const uint4 r = __ldcg(p.stage + rr);
    p.perm[rr] = r.x;
    p.xyz_out[3 * (size_t)rr] = __uint_as_float(r.y);
    p.xyz_out[3 * (size_t)rr + 1] = __uint_as_float(r.z);
    p.xyz_out[3 * (size_t)rr + 2] = __uint_as_float(r.w);
  }
  __syncthreads(); /* the block's stores are issued -> its end time */
  if (tid == 0) atomicMax(p.trace + 6, gtimer());
}

size_t layout(P5 *q, void *base, uint32_t nclouds, uint32_t nb, uint32_t n) {
  uint32_t *tw = NULL, *sw = NULL, *pw = NULL;
  /* v5's arrays in v5's order (psh_v5_trace reads the stamps), then the records, then phase C's spread counters */
  uint32_t **const xslots[] = {&tw, &sw, &pw};
  const size_t xwords[] = {2 * (size_t)kTrace, 4 * (size_t)n, spread_words(nclouds, nb)};
  const size_t off = tiles_layout(q, base, nclouds, nb, n, 3, xslots, xwords);
  q->trace = (unsigned long long *)tw; /* 256-byte aligned */
  q->stage = (uint4 *)sw;
  spread_set(q, pw, nclouds, nb);
  return off;
}

hx_status run7(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in, const psh_params *prm,
               void *stream, hx_err *err) {
  /* v4's scratch layout is v5's without the records: v7's size also serves the v4 fall-back */
  auto align = [](P5 *p, const psh_out *o) { p->vec16 = (((uintptr_t)o->xyz | (uintptr_t)o->perm) & 15u) == 0; };
  return coop_run(k7_psh, "psh v7", layout, align, d_scratch, scratch_bytes, out, in, prm, stream, err);
}

} // namespace

extern "C" hx_status psh_v7_runs_own(uint32_t n, uint32_t nclouds, uint32_t nb, uint32_t cap, int *own, hx_err *err) {
  uint64_t ipt = 0, tiles = 0;
  bool o = false;
  HX_TRY(coop_plan(k7_psh, "psh v7", n, nclouds, nb, cap, &ipt, &tiles, &o, err));
  *own = o;
  return HX_OK;
}

extern "C" hx_status psh_run_v7(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                                const psh_params *prm, void *stream, hx_err *err) {
  return run7(d_scratch, scratch_bytes, out, in, prm, stream, err);
}
