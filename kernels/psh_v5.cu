/*
 * psh_v5.cu - PSH variant v5: the whole PSH (voxelise + hash + rebalance + scan + scatter of coordinates)
 * in ONE cooperative launch, four phases separated by grid-wide barriers. Same invariants as v1-v4
 * (kernels.h): every point one (bucket, offset), offsets 0..count-1, count <= S whenever n_c <= nb*S,
 * bucket_start = exclusive scan (cloud c's buckets start at cloud_offset[c]), slot and perm inverse
 * permutations; phase 1 keeps exactly min(hist, S) points per bucket (first-hash count = CPU's). Which
 * overflowing point wins which slot is scheduling dependent, as in v2-v4.
 *
 * Why: v4 (4 launches) took 56 us at 600k xor-mod on the H200 against a ~20-28 us prediction; its four
 * kernels are each one wave of ~236 blocks whose time is mostly latency chains, and between them the
 * graph pays a drain + launch + ramp per kernel, plus two re-reads of xyz and one of bucket/offset.
 * v5 keeps v4's tiles and per-tile algorithm (the reasoning and the correctness argument are v4's, see
 * psh_v4.cu and docs/psh.md) but runs them as phases of one persistent kernel whose grid is exactly the
 * tiles (cooperative launch: all blocks resident, or the launch fails and v4 runs instead):
 *   A  zero the run state, default bucket tables; the tile's xyz into registers; per-tile bbox keys.
 *   -- grid barrier --
 *   B  the cloud's frame from the tiles' keys; voxelise + hash from the registers; dense shared ranking,
 *      one atomicAdd per non-empty bucket per tile, roll back past S, rebase; placements stay in
 *      registers; overflowing points go to the overflow list.
 *   -- grid barrier --
 *   C  only when the list is not empty (the count is read after the barrier, so every block takes the
 *      same branch): all blocks race the listed points over the probes as v4's K3 (the "full" snapshot,
 *      32-bit probe arithmetic, warp-aggregated leftover tickets), then one more grid barrier.
 *   D  per tile, the cloud's scans in shared memory (free-slot scan only with leftovers), the first tile
 *      publishes bucket_count / bucket_start; (bucket, offset) from the registers, or from phase C's
 *      stores for the points that probed; slot, perm and the scattered xyz.
 * Blocks whose id matches no tile do no tile work but take part in every barrier and in phase C.
 * Memory ordering: every datum one block writes and another reads in the same launch (tile keys, frames,
 * counters, tickets, overflow list, run counters, probed placements) is read after a grid barrier
 * (cooperative_groups grid sync: a release/acquire across the grid) and read with ld.global.cg (L2, not
 * the SM's L1, which is not coherent) or with atomics. Counters are only touched by atomics and .cg
 * loads while they change. Inside a block every shared write/read pair is separated by __syncthreads or
 * by a grid barrier (which synchronises the block too). Limits: nb <= 4096 (v4's dense shared arrays),
 * tiles <= resident blocks (one wave: ~1.08M points on an H200 with 2 blocks/SM and 8 points per
 * thread); otherwise the call runs v4, which runs v2 past nb = 16384.
 * Measured (H200, 2026-11-22, 88eb6a3): NOT faster than v4 (600k xor-mod graph: v4 56.4,
 * v5 59.5, v6 55.9 us; 100k: 20.8 / 20.4 / 24.0), so v4's time is inside its kernels' bodies, not in
 * the launches this variant removes. Kept as a checked variant and for its phase trace (psh_v5_trace).
 * Shared with v7 (psh_tiles.cuh): the shared-memory struct, phases A and B (phases_ab; v7's rank and its
 * first-hash stores are template flags), phase C (phase_probe), the run-state zeroing, the parameter struct,
 * the scratch layout, the one-wave tiling and phase D's scans (cloud_scans); phase D's rows stay here. Since
 * phases_ab (2026-11-25, aa09687) this file's PTX has the same instructions as the measured one, one
 * commutative or.b64 per Z-order code placed a few instructions later (nvcc -ptx, registers renumbered);
 * cloud_scans (84a7161) moved a few address computations, timed against the old code on the H200 in one
 * run: the same within noise (2026-11-26).
 */
#include "kernels/kernels.h"
#include "kernels/psh_internal.h"
#include "kernels/psh_internal.cuh"

#include <cuda_runtime.h>

#include "kernels/psh_tiles.cuh"
#include <stdint.h>
#include <string.h>

#define V5_CUDA(what, call)                                                                             \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) return hx_errf(err, HX_ECUDA, "psh v5: %s: %s", what, cudaGetErrorString(e_)); \
  } while (0)

namespace {

using namespace psh_tiles;

/* v4's fields (Prm; xyz_pair: 0, 1 = 8-byte aligned xyz_out, 2 = 16-byte aligned xyz_out and perm) and the
 * phase stamps */
struct P5 : Prm {
  unsigned long long *trace; /* [kTrace] %globaltimer (ns) at the phase boundaries, see psh_v5_trace */
};

/* Phase D: the cloud's scans, then the tile's rows (and, with kScatter, its coordinates). */
template <bool kScatter>
__device__ __forceinline__ void phase_rows(const P5 &p, Smem &sm, const Tile &t, const uint32_t (&pl)[kMaxIpt]) {
  const uint32_t tid = threadIdx.x, nb = p.nb, c = t.c;
  const uint32_t S = p.cap;
  const uint32_t R = __ldcg(p.resid + c);
  cloud_scans<kPer, false, LdL2>(p.cnt + (size_t)c * nb, nb, S, R, p.off + c, t.k == t.k0, p.start + (size_t)c * nb,
                                 p.count_out + (size_t)c * nb, sm.u.d.F, sm.u.d.start, [](uint32_t j) { return j; },
                                 sm.scan);
  __syncthreads(); /* start (and F) complete -> scatter reads */
  const uint32_t nit = p.ipt;
  uint32_t pb[kMaxIpt], po[kMaxIpt];
#pragma unroll
  for (int it = 0; it < kMaxIpt; it++) { /* points that probed: phase C's stores (L2) */
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
    uint32_t b = pb[it], o = po[it], local;
    if (pl[it] == kNone) {
      if (b & PSH_RESID_FLAG) {
        uint32_t off;
        psh_resid_place(sm.u.d.F, nb, S, o, &local, &off);
        o = off;
        p.bucket[i] = c * nb + local;
        p.offset[i] = o;
      } else {
        local = b - c * nb; /* phase C already wrote bucket/offset */
      }
    } else {
      local = pl[it] >> kOffBits;
      o = pl[it] & kOffMask;
      p.bucket[i] = c * nb + local;
      p.offset[i] = o;
    }
    const uint32_t s = sm.u.d.start[local] + o;
    p.slot[i] = s;
    p.perm[s] = i;
    pb[it] = s; /* the row, for the coordinate pass */
  }
  if (kScatter && p.xyz_out) {
    float x[kMaxIpt][3];
    /* this tile's xyz again (L1/L2: phases A and B read the same lines), all loads before any store */
#pragma unroll
    for (int it = 0; it < kMaxIpt; it++) {
      const uint32_t i = t.lo + (uint32_t)it * kT + tid;
      const bool v = (uint32_t)it < nit && i < t.hi;
      for (int d = 0; d < 3; d++) x[it][d] = v ? __ldg(p.xyz + 3 * (size_t)i + d) : 0.0f;
    }
#pragma unroll
    for (int it = 0; it < kMaxIpt; it++) {
      const uint32_t i = t.lo + (uint32_t)it * kT + tid;
      if ((uint32_t)it >= nit || i >= t.hi) continue;
      const uint32_t s = pb[it];
      float *row = p.xyz_out + 3 * (size_t)s;
      if (p.xyz_pair >= 1) {
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
}

/* kGather: coordinates are not scattered by phase D (two random stores per point) but gathered after one
 * more grid barrier, xyz_out[r] = xyz[perm[r]]: coalesced 16-byte stores, one random 12-byte read per row
 * (variant v6). */
template <bool kGather>
__global__ void __launch_bounds__(kT, 2) k5_psh(P5 p) {
  __shared__ Smem sm;
  const uint32_t tid = threadIdx.x;
  const int lane = (int)(tid & 31u);
  const bool tr = blockIdx.x == 0 && tid == 0; /* the phase timestamps: one thread */
  Tile t;
  bool has;
  uint32_t pl[kMaxIpt]; /* placement of each item: local bucket << kOffBits | offset; kNone: probed, or none */
  phases_ab<true, false>(p, sm, lane, tr, t, has, pl); /* A, grid barrier 1, B (psh_tiles.cuh) */
  grid_sync(); /* every commit, the list and its length -> phase C */
  if (tr) p.trace[2] = p.trace[3] = gtimer();
  /* ---- C: probing, only when something overflowed (same answer in every block) ---- */
  const uint32_t n_ovf = __ldcg(p.ctr + C_NOVF);
  if (n_ovf > 0) {
    phase_probe(p, sm, n_ovf);
    grid_sync(); /* probed counters, tickets, placements, tallies -> phase D */
    if (tr) p.trace[3] = gtimer();
  }
  if (blockIdx.x == 0 && tid < PSH_NCOUNTERS && p.counters_out)
    p.counters_out[tid] = tid < 3 ? __ldcg(p.ctr + tid) : 0u; /* every tally is in */
  if (has) phase_rows<!kGather>(p, sm, t, pl);
  if (tr) p.trace[4] = gtimer();
  if (!kGather || !p.xyz_out) {
    __syncthreads(); /* the block's stores are issued -> its end time */
    if (tid == 0) atomicMax(p.trace + 6, gtimer());
    return; /* uniform */
  }
  grid_sync(); /* every perm entry -> the gather */
  if (tr) p.trace[5] = gtimer();
  /* ---- E: xyz_out[r] = xyz[perm[r]], 4 rows (48 bytes, 3 float4 stores) per thread when aligned ---- */
  const uint32_t gt = blockIdx.x * kT + tid, gs = gridDim.x * kT;
  if (p.xyz_pair == 2) {
    const uint32_t quads = p.n / 4u;
    for (uint32_t q = gt; q < quads; q += gs) {
      const uint4 pm = __ldcg((const uint4 *)p.perm + q);
      const uint32_t src[4] = {pm.x, pm.y, pm.z, pm.w};
      float v[12];
#pragma unroll
      for (int k = 0; k < 4; k++)
#pragma unroll
        for (int d = 0; d < 3; d++) v[3 * k + d] = __ldg(p.xyz + 3 * (size_t)src[k] + d);
      float4 *o = (float4 *)(p.xyz_out + 12 * (size_t)q);
      o[0] = make_float4(v[0], v[1], v[2], v[3]);
      o[1] = make_float4(v[4], v[5], v[6], v[7]);
      o[2] = make_float4(v[8], v[9], v[10], v[11]);
    }
    for (uint32_t r = quads * 4u + gt; r < p.n; r += gs) {
      const uint32_t i = __ldcg(p.perm + r);
      for (int d = 0; d < 3; d++) p.xyz_out[3 * (size_t)r + d] = __ldg(p.xyz + 3 * (size_t)i + d);
    }
  } else {
    for (uint32_t r = gt; r < p.n; r += gs) {
      const uint32_t i = __ldcg(p.perm + r);
      for (int d = 0; d < 3; d++) p.xyz_out[3 * (size_t)r + d] = __ldg(p.xyz + 3 * (size_t)i + d);
    }
  }
  __syncthreads(); /* the block's stores are issued -> its end time */
  if (tid == 0) atomicMax(p.trace + 6, gtimer());
}

size_t layout(P5 *q, void *base, uint32_t nclouds, uint32_t nb, uint32_t n) {
  uint32_t *tw = NULL, *pw = NULL;
  uint32_t **const xslots[] = {&tw, &pw};
  const size_t xwords[] = {2 * (size_t)kTrace, spread_words(nclouds, nb)};
  const size_t off = tiles_layout(q, base, nclouds, nb, n, 2, xslots, xwords);
  q->trace = (unsigned long long *)tw; /* 256-byte aligned */
  spread_set(q, pw, nclouds, nb);
  return off;
}

template <bool kGather>
hx_status run5(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in, const psh_params *prm,
               void *stream, hx_err *err) {
  /* 1: float2 + float scatter stores possible (8-byte aligned); 2: also 16-byte aligned, and perm too
   * (v6's gather reads perm as uint4 and stores float4s; a caller's perm need not be 16-byte aligned) */
  auto align = [](P5 *p, const psh_out *o) {
    p->xyz_pair = ((uintptr_t)o->xyz & 15u) == 0 && ((uintptr_t)o->perm & 15u) == 0 ? 2
                  : ((uintptr_t)o->xyz & 7u) == 0                                   ? 1
                                                                                    : 0;
  };
  return coop_run(k5_psh<kGather>, "psh v5", layout, align, d_scratch, scratch_bytes, out, in, prm, stream, err);
}

} // namespace

extern "C" hx_status psh_run_v5(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                                const psh_params *prm, void *stream, hx_err *err) {
  return run5<false>(d_scratch, scratch_bytes, out, in, prm, stream, err);
}

extern "C" hx_status psh_run_v6(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                                const psh_params *prm, void *stream, hx_err *err) {
  return run5<true>(d_scratch, scratch_bytes, out, in, prm, stream, err);
}

extern "C" hx_status psh_v5_runs_own(int gather, uint32_t n, uint32_t nclouds, uint32_t nb, uint32_t cap, int *own,
                                     hx_err *err) {
  uint64_t ipt = 0, tiles = 0;
  bool o = false;
  HX_TRY(gather ? coop_plan(k5_psh<true>, "psh v6", n, nclouds, nb, cap, &ipt, &tiles, &o, err)
                : coop_plan(k5_psh<false>, "psh v5", n, nclouds, nb, cap, &ipt, &tiles, &o, err));
  *own = o;
  return HX_OK;
}

extern "C" hx_status psh_v5_trace(double phase_us[PSH_V5_TRACE], const void *d_scratch, uint32_t nclouds, uint32_t nb,
                                  uint32_t n, hx_err *err) {
  P5 p;
  memset(&p, 0, sizeof p);
  layout(&p, (void *)d_scratch, nclouds, nb, n);
  unsigned long long t[kTrace];
  V5_CUDA("trace copy", cudaMemcpy(t, p.trace, sizeof t, cudaMemcpyDeviceToHost));
  for (int k = 0; k < PSH_V5_TRACE; k++) phase_us[k] = t[k + 1] ? (double)(t[k + 1] - t[0]) * 1e-3 : -1.0;
  return HX_OK;
}
