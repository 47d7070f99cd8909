/*
 * psh.cu - GPU variants of PSH bucketing (the psh_ section of kernels.h), plus the padded layout and the
 * row gather that scatters features.
 *
 * Pipeline of one call (no host round trip; every launch checked):
 *   init      zero the bucket counters, leftover counters and run counters; bbox keys to +inf
 *   bbox      per-cloud min/max (block reduction over a contiguous chunk, 6 atomicMin per block and cloud)
 *   first     voxelise + hash + place:
 *               v1: Alg. 1 literally, one thread per point with global atomics: try the home bucket
 *                   (read, atomicAdd, roll back with atomicSub on overflow), then race over the probes
 *                   (Alg. 2) in the same thread, then take a leftover ticket;
 *               v2: two-stage counters: warp-aggregated increments of a block-local hash table of
 *                   (bucket, count) in shared memory (any nb, no [nb] array per block), one bulk
 *                   atomicAdd per bucket per block, bulk roll-back of the part past S, rebase; points
 *                   past S go to an overflow list; a second grid-stride kernel races them over the probes
 *                   (one thread per point: up to 128 dependent counter reads in a row);
 *               v3: v2 with warp-cooperative probing: one warp per overflowing point, 32 probes per
 *                   round trip, atomics tried in probe order (the tail of points that exhaust all probes
 *                   costs 4 round trips instead of 128).
 *   finalize  one block per cloud: exclusive scan of free slots (F), final counts with the leftovers
 *             (psh_final_count), exclusive scan of counts -> bucket_start; copies the run counters
 *   scatter   leftovers resolved (psh_resid_place), slot, perm, coordinates in packed order.
 * Why the counters never pass S for good: a failed increment only happens once the bucket holds S
 * placed points (while fewer are placed no increment is pending, so the old value equals the placed
 * count), and every failed increment is undone by its owner; so offsets 0..S-1 are handed out once each.
 * Determinism: v2's phase 1 keeps exactly min(hist, S) points per bucket (the count of "placed by first
 * hash" equals the CPU's), but which points stay, which win a race and the order of leftover tickets
 * depend on scheduling, so tests check invariants and counts, not the CPU's exact assignment.
 */
#include "kernels/kernels.h"
#include "kernels/psh_internal.h"
#include "kernels/psh_internal.cuh"
#include "kernels/variants_internal.h"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#define PSH_CUDA(call)                                                                                  \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess)                                                                             \
      return hx_errf(err, HX_ECUDA, "psh: %s: %s (%s:%d)", #call, cudaGetErrorString(e_), __FILE__,    \
                     __LINE__);                                                                        \
  } while (0)

#define PSH_LAUNCHED(what)                                                                              \
  do {                                                                                                 \
    cudaError_t e_ = cudaGetLastError();                                                               \
    if (e_ != cudaSuccess) return hx_errf(err, HX_ECUDA, "psh: launch of %s: %s", what, cudaGetErrorString(e_)); \
  } while (0)

namespace {

constexpr int kBboxThreads = 256;
constexpr int kBboxChunk = kBboxThreads * 8;  /* points per bbox block */
constexpr int kFirstThreads = 512;
constexpr int kTable = 1024;                  /* shared hash table slots: >= 2 x distinct keys per block */
constexpr int kProbeThreads = 256;
constexpr int kProbeBlocks = 528;             /* 4 per SM on a 132-SM part; grid-stride */
constexpr int kFinalThreads = 1024;
constexpr int kScatterThreads = 256;
constexpr uint32_t kEmpty = 0xFFFFFFFFu;

/* Everything the kernels read, by value (the probe table travels in the parameter space). */
struct Prm {
  const float *xyz;
  const uint32_t *cloud_offset;
  uint32_t nclouds, n, nb, cap, nprobe, hash;
  float voxel;
  uint64_t seed;
  int8_t probe[PSH_NPROBE_BASE][3];
  /* outputs */
  uint32_t *bucket, *offset, *count, *start, *slot, *perm, *counters_out;
  float *xyz_out;
  /* scratch */
  uint32_t *bbox;   /* [nclouds*6]: ordered keys of min xyz, then of ~max xyz (both atomicMin) */
  uint32_t *resid;  /* [nclouds] leftover tickets */
  uint32_t *ctr;    /* [PSH_NCOUNTERS]: first, probe, overflow, overflow-list length */
  uint32_t *F;      /* [nclouds*(nb+1)] free-slot scan */
  uint32_t *ovf;    /* [n] overflow list (v2) */
};

struct Frame {
  float lo[3];
  uint32_t bits, step, shift[3];
};

__device__ __forceinline__ uint32_t cloud_of(const uint32_t *off, uint32_t nclouds, uint32_t i) {
  uint32_t lo = 0, hi = nclouds; /* last c with off[c] <= i; off[nclouds] = n > i */
  while (hi - lo > 1) {
    uint32_t mid = (lo + hi) >> 1;
    if (__ldg(off + mid) <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

__device__ __forceinline__ Frame frame_of(const Prm &p, uint32_t c) {
  Frame f;
  float hi[3];
  for (int d = 0; d < 3; d++) {
    f.lo[d] = psh_key2f(p.bbox[c * 6 + d]);
    hi[d] = psh_key2f(~p.bbox[c * 6 + 3 + d]);
  }
  f.bits = psh_frame_bits(f.lo, hi, p.voxel);
  f.step = psh_probe_step((psh_hash)p.hash, f.bits, p.nb);
  psh_frame_shift((psh_hash)p.hash, f.lo, hi, p.voxel, f.bits, f.shift);
  return f;
}

__device__ __forceinline__ void voxel_of(const Prm &p, const Frame &f, uint32_t i, uint32_t v[3]) {
  for (int d = 0; d < 3; d++) v[d] = psh_vox1(__ldg(p.xyz + 3 * (size_t)i + d), f.lo[d], p.voxel) << f.shift[d];
}

__device__ __forceinline__ uint32_t lanemask_lt() {
  uint32_t m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

__global__ void k_init(Prm p) {
  const uint32_t nbt = p.nclouds * p.nb;
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < nbt; t += gridDim.x * blockDim.x) p.count[t] = 0;
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < p.nclouds * 6u; t += gridDim.x * blockDim.x)
    p.bbox[t] = 0xFFFFFFFFu;
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < p.nclouds; t += gridDim.x * blockDim.x) p.resid[t] = 0;
  if (blockIdx.x == 0 && threadIdx.x < PSH_NCOUNTERS) p.ctr[threadIdx.x] = 0;
}

/* Per-cloud bbox over a contiguous chunk of points; a chunk may straddle clouds. */
__global__ void __launch_bounds__(kBboxThreads) k_bbox(Prm p) {
  __shared__ uint32_t s_key[6];
  const uint32_t base = blockIdx.x * (uint32_t)kBboxChunk;
  const uint32_t end = min(p.n, base + (uint32_t)kBboxChunk);
  uint32_t c = cloud_of(p.cloud_offset, p.nclouds, base);
  while (c < p.nclouds && p.cloud_offset[c] < end) {
    const uint32_t lo = max(base, p.cloud_offset[c]), hi = min(end, p.cloud_offset[c + 1]);
    if (threadIdx.x < 6) s_key[threadIdx.x] = 0xFFFFFFFFu;
    __syncthreads();
    uint32_t k[6] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
    for (uint32_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
      for (int d = 0; d < 3; d++) {
        uint32_t key = psh_f2key(__ldg(p.xyz + 3 * (size_t)i + d));
        k[d] = min(k[d], key);
        k[3 + d] = min(k[3 + d], ~key);
      }
    for (int d = 0; d < 6; d++) {
      for (int o = 16; o > 0; o >>= 1) k[d] = min(k[d], __shfl_xor_sync(0xFFFFFFFFu, k[d], o));
      if ((threadIdx.x & 31) == 0) atomicMin(&s_key[d], k[d]);
    }
    __syncthreads();
    if (threadIdx.x < 6) atomicMin(&p.bbox[c * 6 + threadIdx.x], s_key[threadIdx.x]);
    __syncthreads();
    c++;
  }
}

/* Alg. 2 for one point whose home bucket is full: race over the probes, else take a leftover ticket.
 * Returns 1 when placed by a probe, 0 when it became a leftover. */
__device__ __forceinline__ int race(const Prm &p, uint32_t i, uint32_t c, const Frame &f, const uint32_t v[3],
                                    uint32_t home) {
  for (uint32_t k = 0; k < p.nprobe; k++) {
    uint32_t h = psh_probe_bucket((psh_hash)p.hash, v, p.probe[k], f.step, f.bits, p.nb, p.seed, i, k);
    if (h == home) continue;
    uint32_t g = c * p.nb + h;
    if (*(volatile uint32_t *)(p.count + g) >= p.cap) continue; /* optimistic read */
    uint32_t old = atomicAdd(p.count + g, 1u);
    if (old < p.cap) {
      p.bucket[i] = g;
      p.offset[i] = old;
      return 1;
    }
    atomicSub(p.count + g, 1u); /* roll back: full by the time we got there */
  }
  p.bucket[i] = PSH_RESID_FLAG | c;
  p.offset[i] = atomicAdd(p.resid + c, 1u);
  return 0;
}

/* Add a per-thread 0/1 event to a run counter: warp popcount, one atomic per warp. */
__device__ __forceinline__ void count_event(uint32_t *ctr, bool ev) {
  uint32_t m = __ballot_sync(0xFFFFFFFFu, ev);
  if ((threadIdx.x & 31) == 0 && m) atomicAdd(ctr, (uint32_t)__popc(m));
}

/* v1: Alg. 1 + Alg. 2 with global atomics, one thread per point. */
__global__ void __launch_bounds__(kFirstThreads) k_naive(Prm p) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  bool first = false, probed = false, left = false;
  if (i < p.n) {
    const uint32_t c = cloud_of(p.cloud_offset, p.nclouds, i);
    const Frame f = frame_of(p, c);
    uint32_t v[3];
    voxel_of(p, f, i, v);
    const uint32_t home = psh_hash3((psh_hash)p.hash, v[0], v[1], v[2], f.bits, p.nb);
    const uint32_t g = c * p.nb + home;
    if (*(volatile uint32_t *)(p.count + g) < p.cap) {
      uint32_t old = atomicAdd(p.count + g, 1u);
      if (old < p.cap) {
        p.bucket[i] = g;
        p.offset[i] = old;
        first = true;
      } else {
        atomicSub(p.count + g, 1u);
      }
    }
    if (!first) {
      probed = race(p, i, c, f, v, home) != 0;
      left = !probed;
    }
  }
  count_event(p.ctr + PSH_C_FIRST, first);
  count_event(p.ctr + PSH_C_PROBE, probed);
  count_event(p.ctr + PSH_C_OVERFLOW, left);
}

/* v2 phase 1: two-stage counters in a shared hash table keyed by global bucket id. */
__global__ void __launch_bounds__(kFirstThreads) k_first_2stage(Prm p) {
  __shared__ uint32_t t_key[kTable], t_cnt[kTable];
  for (int t = threadIdx.x; t < kTable; t += blockDim.x) {
    t_key[t] = kEmpty;
    t_cnt[t] = 0;
  }
  __syncthreads();
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const bool valid = i < p.n;
  uint32_t g = 0, slot = 0, local = 0;
  if (valid) {
    const uint32_t c = cloud_of(p.cloud_offset, p.nclouds, i);
    const Frame f = frame_of(p, c);
    uint32_t v[3];
    voxel_of(p, f, i, v);
    g = c * p.nb + psh_hash3((psh_hash)p.hash, v[0], v[1], v[2], f.bits, p.nb);
  }
  const uint32_t active = __ballot_sync(0xFFFFFFFFu, valid);
  if (valid) {
    /* warp aggregation: lanes with the same bucket share one shared-memory atomic */
    const uint32_t peers = __match_any_sync(active, g);
    const int leader = __ffs(peers) - 1;
    const int lane = threadIdx.x & 31;
    uint32_t base = 0;
    if (lane == leader) {
      slot = (g * 2654435761u) >> 22; /* Fibonacci hash to 10 bits = kTable */
      for (;;) {
        uint32_t k = atomicCAS(&t_key[slot], kEmpty, g);
        if (k == kEmpty || k == g) break;
        slot = (slot + 1) & (kTable - 1);
      }
      base = atomicAdd(&t_cnt[slot], (uint32_t)__popc(peers));
    }
    slot = __shfl_sync(active, slot, leader);
    base = __shfl_sync(active, base, leader);
    local = base + (uint32_t)__popc(peers & lanemask_lt());
  }
  __syncthreads();
  /* bulk commit: one atomicAdd per bucket per block; the part past S is rolled back at once. t_cnt is
   * replaced by the rebase offset (each slot is read and written by the one thread that owns it). */
  for (int t = threadIdx.x; t < kTable; t += blockDim.x) {
    const uint32_t key = t_key[t];
    if (key == kEmpty) continue;
    const uint32_t cnt = t_cnt[t];
    const uint32_t b = atomicAdd(p.count + key, cnt);
    const uint32_t keep_to = max(b, p.cap);
    if (b + cnt > keep_to) atomicSub(p.count + key, b + cnt - keep_to);
    t_cnt[t] = b;
  }
  __syncthreads();
  bool first = false, over = false;
  if (valid) {
    const uint32_t off = t_cnt[slot] + local;
    if (off < p.cap) {
      p.bucket[i] = g;
      p.offset[i] = off;
      first = true;
    } else {
      over = true;
    }
  }
  count_event(p.ctr + PSH_C_FIRST, first);
  /* append to the overflow list, one atomic per warp */
  const uint32_t m = __ballot_sync(0xFFFFFFFFu, over);
  if (m) {
    const int lane = threadIdx.x & 31;
    uint32_t base = 0;
    if (lane == __ffs(m) - 1) base = atomicAdd(p.ctr + PSH_C_SPARE, (uint32_t)__popc(m));
    base = __shfl_sync(0xFFFFFFFFu, base, __ffs(m) - 1);
    if (over) p.ovf[base + __popc(m & lanemask_lt())] = i;
  }
}

/* v2 phase 2: the overflow list races over the probes (grid-stride; the list length is on the device). */
__global__ void __launch_bounds__(kProbeThreads) k_probe(Prm p) {
  const uint32_t n_ovf = *(volatile uint32_t *)(p.ctr + PSH_C_SPARE);
  const uint32_t stride = gridDim.x * blockDim.x;
  /* whole warps walk the list together (t0 is warp-aligned and block-uniform) so every lane reaches
   * the ballots in count_event */
  for (uint32_t t0 = blockIdx.x * blockDim.x; t0 < n_ovf; t0 += stride) {
    const uint32_t t = t0 + threadIdx.x;
    bool probed = false, left = false;
    if (t < n_ovf) {
      const uint32_t i = p.ovf[t];
      const uint32_t c = cloud_of(p.cloud_offset, p.nclouds, i);
      const Frame f = frame_of(p, c);
      uint32_t v[3];
      voxel_of(p, f, i, v);
      const uint32_t home = psh_hash3((psh_hash)p.hash, v[0], v[1], v[2], f.bits, p.nb);
      probed = race(p, i, c, f, v, home) != 0;
      left = !probed;
    }
    count_event(p.ctr + PSH_C_PROBE, probed);
    count_event(p.ctr + PSH_C_OVERFLOW, left);
  }
}

/* v3 phase 2: one warp per overflowing point; the 32 lanes evaluate 32 probes at once (one round trip to
 * the counters per 32 probes instead of one per probe), then the candidates with room try their atomic in
 * probe order, lowest first, so the outcome is the sequential "first probe with room" of Alg. 2. */
__global__ void __launch_bounds__(kProbeThreads) k_probe_warp(Prm p) {
  const uint32_t n_ovf = *(volatile uint32_t *)(p.ctr + PSH_C_SPARE);
  const uint32_t lane = threadIdx.x & 31u;
  const uint32_t nwarps = gridDim.x * (blockDim.x >> 5);
  uint32_t n_probed = 0, n_left = 0; /* lane 0's tallies */
  for (uint32_t t = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); t < n_ovf; t += nwarps) {
    const uint32_t i = p.ovf[t];
    const uint32_t c = cloud_of(p.cloud_offset, p.nclouds, i);
    const Frame f = frame_of(p, c);
    uint32_t v[3];
    voxel_of(p, f, i, v);
    const uint32_t home = psh_hash3((psh_hash)p.hash, v[0], v[1], v[2], f.bits, p.nb);
    bool placed = false;
    for (uint32_t base = 0; base < p.nprobe && !placed; base += 32) {
      const uint32_t k = base + lane;
      uint32_t g = 0;
      bool cand = false;
      if (k < p.nprobe) {
        const uint32_t h = psh_probe_bucket((psh_hash)p.hash, v, p.probe[k], f.step, f.bits, p.nb, p.seed, i, k);
        g = c * p.nb + h;
        cand = h != home && *(volatile uint32_t *)(p.count + g) < p.cap;
      }
      uint32_t mask = __ballot_sync(0xFFFFFFFFu, cand);
      while (mask && !placed) {
        const int src = __ffs(mask) - 1;
        int ok = 0;
        if ((int)lane == src) {
          const uint32_t old = atomicAdd(p.count + g, 1u);
          if (old < p.cap) {
            p.bucket[i] = g;
            p.offset[i] = old;
            ok = 1;
          } else {
            atomicSub(p.count + g, 1u);
          }
        }
        placed = __shfl_sync(0xFFFFFFFFu, ok, src) != 0;
        mask &= mask - 1u;
      }
    }
    if (lane == 0) {
      if (placed) {
        n_probed++;
      } else {
        p.bucket[i] = PSH_RESID_FLAG | c;
        p.offset[i] = atomicAdd(p.resid + c, 1u);
        n_left++;
      }
    }
  }
  if (lane == 0 && n_probed) atomicAdd(p.ctr + PSH_C_PROBE, n_probed);
  if (lane == 0 && n_left) atomicAdd(p.ctr + PSH_C_OVERFLOW, n_left);
}

/* One block per cloud: free-slot scan F, final counts, bucket_start. */
__global__ void __launch_bounds__(kFinalThreads) k_finalize(Prm p) {
  typedef cub::BlockScan<uint32_t, kFinalThreads> Scan;
  __shared__ typename Scan::TempStorage tmp;
  const uint32_t c = blockIdx.x, nb = p.nb, S = p.cap;
  uint32_t *cnt = p.count + (size_t)c * nb;
  uint32_t *F = p.F + (size_t)c * (nb + 1);
  const uint32_t R = p.resid[c];
  const uint32_t per = (nb + kFinalThreads - 1) / kFinalThreads;
  const uint32_t j0 = min(nb, threadIdx.x * per), j1 = min(nb, j0 + per);
  uint32_t sum = 0, total = 0;
  for (uint32_t j = j0; j < j1; j++) sum += S - cnt[j];
  uint32_t pre;
  Scan(tmp).ExclusiveSum(sum, pre, total);
  __syncthreads();
  uint32_t run = pre, fsum = 0;
  for (uint32_t j = j0; j < j1; j++) {
    F[j] = run;
    const uint32_t freej = S - cnt[j];
    fsum += psh_final_count(cnt[j], run, freej, total, R, j, nb);
    run += freej;
  }
  if (threadIdx.x == 0) F[nb] = total;
  uint32_t pre2, all;
  Scan(tmp).ExclusiveSum(fsum, pre2, all);
  run = p.cloud_offset[c] + pre2;
  for (uint32_t j = j0; j < j1; j++) {
    const uint32_t fc = psh_final_count(cnt[j], F[j], S - cnt[j], total, R, j, nb);
    p.start[(size_t)c * nb + j] = run;
    cnt[j] = fc;
    run += fc;
  }
  if (c == 0 && threadIdx.x < 3 && p.counters_out) p.counters_out[threadIdx.x] = p.ctr[threadIdx.x];
  if (c == 0 && threadIdx.x == 3 && p.counters_out) p.counters_out[3] = 0;
}

__global__ void __launch_bounds__(kScatterThreads) k_scatter(Prm p) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= p.n) return;
  uint32_t b = p.bucket[i], o = p.offset[i];
  if (b & PSH_RESID_FLAG) {
    const uint32_t c = b & ~PSH_RESID_FLAG;
    uint32_t local, off;
    psh_resid_place(p.F + (size_t)c * (p.nb + 1), p.nb, p.cap, o, &local, &off);
    b = c * p.nb + local;
    o = off;
    p.bucket[i] = b;
    p.offset[i] = o;
  }
  const uint32_t s = p.start[b] + o;
  p.slot[i] = s;
  p.perm[s] = i;
  if (p.xyz_out) {
    const float x = __ldg(p.xyz + 3 * (size_t)i), y = __ldg(p.xyz + 3 * (size_t)i + 1),
                z = __ldg(p.xyz + 3 * (size_t)i + 2);
    p.xyz_out[3 * (size_t)s] = x;
    p.xyz_out[3 * (size_t)s + 1] = y;
    p.xyz_out[3 * (size_t)s + 2] = z;
  }
}

/* Scratch layout; returns the total size. */
size_t layout(Prm *q, void *base, uint32_t nclouds, uint32_t nb, uint32_t n) {
  char *b = (char *)base;
  size_t off = 0;
  uint32_t **slots[] = {&q->bbox, &q->resid, &q->ctr, &q->F, &q->ovf};
  const size_t words[] = {(size_t)nclouds * 6, nclouds, PSH_NCOUNTERS, (size_t)nclouds * ((size_t)nb + 1), (size_t)n + 1};
  for (int k = 0; k < 5; k++) {
    if (b) *slots[k] = (uint32_t *)(b + off);
    off += psh_align256(words[k] * sizeof(uint32_t));
  }
  return off;
}

enum Mode { kNaive = 1, kTwoStage = 2, kTwoStageWarp = 3 };

hx_status run(Mode mode, void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
              const psh_params *prm, void *stream, hx_err *err) {
  HX_TRY(psh_call_check(prm, in, err));
  Prm p;
  memset(&p, 0, sizeof p);
  const size_t need = layout(&p, NULL, in->nclouds, prm->nb, in->n);
  int query;
  const hx_status sq = psh_scratch_check(d_scratch, scratch_bytes, need, &query, err);
  if (sq != HX_OK || query) return sq;
  layout(&p, d_scratch, in->nclouds, prm->nb, in->n);
  psh_kparams_fill(&p, out, in, prm);
  p.cloud_offset = in->cloud_offset;
  p.count = out->bucket_count;
  cudaStream_t s = (cudaStream_t)stream;
  const uint32_t nbt = in->nclouds * prm->nb;
  const uint32_t init_n = nbt > in->nclouds * 6u ? nbt : in->nclouds * 6u;
  k_init<<<(init_n + 255) / 256 < 1024 ? (init_n + 255) / 256 + 1 : 1024, 256, 0, s>>>(p);
  PSH_LAUNCHED("init");
  if (in->n > 0) {
    k_bbox<<<(in->n + kBboxChunk - 1) / kBboxChunk, kBboxThreads, 0, s>>>(p);
    PSH_LAUNCHED("bbox");
    const uint32_t blocks = (in->n + kFirstThreads - 1) / kFirstThreads;
    if (mode == kNaive) {
      k_naive<<<blocks, kFirstThreads, 0, s>>>(p);
      PSH_LAUNCHED("naive bucketing (v1)");
    } else {
      k_first_2stage<<<blocks, kFirstThreads, 0, s>>>(p);
      PSH_LAUNCHED("two-stage bucketing (v2)");
      if (mode == kTwoStage) {
        k_probe<<<kProbeBlocks, kProbeThreads, 0, s>>>(p);
        PSH_LAUNCHED("probe racing (v2)");
      } else {
        k_probe_warp<<<kProbeBlocks, kProbeThreads, 0, s>>>(p);
        PSH_LAUNCHED("warp probe racing (v3)");
      }
    }
  }
  k_finalize<<<in->nclouds, kFinalThreads, 0, s>>>(p);
  PSH_LAUNCHED("finalize");
  if (in->n > 0) {
    k_scatter<<<(in->n + kScatterThreads - 1) / kScatterThreads, kScatterThreads, 0, s>>>(p);
    PSH_LAUNCHED("scatter");
  }
  return HX_OK;
}

hx_status run_v1(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                 const psh_params *p, void *stream, hx_err *err) {
  return run(kNaive, d_scratch, scratch_bytes, out, in, p, stream, err);
}
hx_status run_v2(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                 const psh_params *p, void *stream, hx_err *err) {
  return run(kTwoStage, d_scratch, scratch_bytes, out, in, p, stream, err);
}
} // namespace

extern "C" hx_status psh_run_v2(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                                const psh_params *p, void *stream, hx_err *err) {
  return run_v2(d_scratch, scratch_bytes, out, in, p, stream, err);
}

namespace {

hx_status run_v3(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                 const psh_params *p, void *stream, hx_err *err) {
  return run(kTwoStageWarp, d_scratch, scratch_bytes, out, in, p, stream, err);
}

/* v1-v7 keep the pair as working state: without the caller's, a scratch copy (psh_run_paired). v8-v10's
 * launcher (run8) carves its own, so that v9/v10 can skip the first-hash pairs' stores. */
template <psh_fn F>
hx_status paired(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in, const psh_params *p,
                 void *stream, hx_err *err) {
  return psh_run_paired(F, d_scratch, scratch_bytes, out, in, p, stream, err);
}

/* the table from the one list (variants_internal.h), which the CPU-only stub expands too */
#define PSH_ROW(id, name, summary, fn) {id, name, summary, fn},
const psh_variant psh_table[] = {PSH_VARIANT_LIST(PSH_ROW)};
#undef PSH_ROW

/* ---- padded layout and row gather ---- */

__global__ void k_pad(uint32_t *perm_pad, uint32_t *slot_pad, const uint32_t *bucket, const uint32_t *offset,
                      const uint32_t *start, const uint32_t *count, uint32_t nbuckets, uint32_t n, uint32_t cap,
                      const uint32_t *perm) {
  const size_t rows = (size_t)nbuckets * cap;
  for (size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < rows; r += (size_t)gridDim.x * blockDim.x) {
    const uint32_t g = (uint32_t)(r / cap), o = (uint32_t)(r % cap);
    perm_pad[r] = o < count[g] ? perm[start[g] + o] : PSH_NONE;
  }
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    slot_pad[i] = offset[i] < cap ? bucket[i] * cap + offset[i] : PSH_NONE;
}

template <typename V>
__global__ void k_gather(V *out, const V *in, const uint32_t *src, uint32_t rows, uint32_t per_row) {
  const size_t total = (size_t)rows * per_row;
  for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < total; t += (size_t)gridDim.x * blockDim.x) {
    const uint32_t r = (uint32_t)(t / per_row), k = (uint32_t)(t % per_row);
    const uint32_t s = __ldg(src + r);
    V v;
    if (s == PSH_NONE) memset(&v, 0, sizeof v);
    else v = in[(size_t)s * per_row + k];
    out[t] = v;
  }
}

} // namespace

extern "C" const psh_variant *psh_variants(size_t *count) {
  if (count) *count = sizeof psh_table / sizeof psh_table[0];
  return psh_table;
}

extern "C" const psh_variant *psh_floor_variant(void) {
  static const psh_variant floor = {
      PSH_FLOOR_ID, "floor",
      "not a PSH: v10's launch that only reads the coordinates, passes two grid barriers and writes slot, perm "
      "and xyz_out (20 B/point; 28 with the pair) coalesced (psh_v8.cu)",
      psh_run_floor};
  return &floor;
}

extern "C" const psh_variant *psh_variant_find(const char *name) {
  for (size_t i = 0; i < sizeof psh_table / sizeof psh_table[0]; i++)
    if (name && strcmp(psh_table[i].name, name) == 0) return &psh_table[i];
  return NULL;
}

/* The rungs of the fall-back chain v10 -> v7 -> v4, each asked with its launcher's own planning code whether it
 * runs its own kernel on this shape (kernels.h says which wins where, and why). */
extern "C" hx_status psh_variant_best(const psh_variant **out, uint32_t n, uint32_t nclouds, const psh_params *p,
                                      hx_err *err) {
  *out = NULL;
  if (!p) return hx_errf(err, HX_EINVAL, "psh_variant_best: no parameters");
  int own = 0, dev = 0, major = 0;
  HX_TRY(psh_v8_runs_own(2, n, nclouds, p->nb, p->cap, &own, err));
  if (own) {
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e != cudaSuccess) return hx_errf(err, HX_ECUDA, "psh_variant_best: %s", cudaGetErrorString(e));
    *out = psh_variant_find(major >= 9 ? "v10" : "v9");
    return HX_OK;
  }
  HX_TRY(psh_v7_runs_own(n, nclouds, p->nb, p->cap, &own, err));
  *out = psh_variant_find(own ? "v7" : "v4");
  return HX_OK;
}

extern "C" hx_status psh_pad_gpu(uint32_t *d_perm_pad, uint32_t *d_slot_pad, const uint32_t *d_bucket,
                                 const uint32_t *d_offset, const uint32_t *d_bucket_start,
                                 const uint32_t *d_bucket_count, uint32_t nbuckets, uint32_t n, uint32_t cap,
                                 const uint32_t *d_perm, void *stream, hx_err *err) {
  if (n && (!d_bucket || !d_offset))
    return hx_errf(err, HX_EINVAL, "psh_pad: needs the per-point (bucket, offset): run the PSH with them");
  if ((uint64_t)nbuckets * cap > 0xFFFFFFFFull)
    return hx_errf(err, HX_EUNSUPPORTED, "psh_pad: %u buckets x %u rows exceed 2^32 rows", nbuckets, cap);
  const size_t work = (size_t)nbuckets * cap > n ? (size_t)nbuckets * cap : n;
  const unsigned blocks = (unsigned)((work + 255) / 256 < 4096 ? (work + 255) / 256 + 1 : 4096);
  k_pad<<<blocks, 256, 0, (cudaStream_t)stream>>>(d_perm_pad, d_slot_pad, d_bucket, d_offset, d_bucket_start,
                                                  d_bucket_count, nbuckets, n, cap, d_perm);
  PSH_LAUNCHED("pad");
  return HX_OK;
}

extern "C" hx_status psh_gather_rows_gpu(void *d_out, const void *d_in, const uint32_t *d_src, uint32_t rows,
                                         size_t row_bytes, void *stream, hx_err *err) {
  if (rows == 0 || row_bytes == 0) return HX_OK;
  const uintptr_t align = (uintptr_t)d_out | (uintptr_t)d_in | (uintptr_t)row_bytes;
  const size_t total_bytes = (size_t)rows * row_bytes;
  const unsigned blocks = (unsigned)((total_bytes / 16 + 255) / 256 < 8192 ? (total_bytes / 16 + 255) / 256 + 1 : 8192);
  cudaStream_t s = (cudaStream_t)stream;
  /* widest access the row size and both pointers allow: 16-byte vectors for C % 4 == 0 fp32 or C % 8 == 0
   * half rows */
  if (align % 16 == 0)
    k_gather<uint4><<<blocks, 256, 0, s>>>((uint4 *)d_out, (const uint4 *)d_in, d_src, rows, (uint32_t)(row_bytes / 16));
  else if (align % 4 == 0)
    k_gather<uint32_t><<<blocks, 256, 0, s>>>((uint32_t *)d_out, (const uint32_t *)d_in, d_src, rows, (uint32_t)(row_bytes / 4));
  else if (align % 2 == 0)
    k_gather<uint16_t><<<blocks, 256, 0, s>>>((uint16_t *)d_out, (const uint16_t *)d_in, d_src, rows, (uint32_t)(row_bytes / 2));
  else
    k_gather<uint8_t><<<blocks, 256, 0, s>>>((uint8_t *)d_out, (const uint8_t *)d_in, d_src, rows, (uint32_t)row_bytes);
  PSH_LAUNCHED("gather rows");
  return HX_OK;
}
