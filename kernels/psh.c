/*
 * psh.c - the plain, deterministic C reference of Flash3D's PSH bucketing, its invariant checker, the
 * padded layout, the row gather (feature scatter), balance statistics and the geometric quality measure.
 *
 * Reference algorithm (per cloud, points in index order; kernels.h states the invariant):
 *   1. frame: per-axis min/max of the cloud's points; voxel v = floor((x - min) / voxel); bits;
 *   2. phase 1: home bucket h = hash(v); the point takes offset count[h] if count[h] < S;
 *   3. phase 2: every point that found its home bucket full tries the seeded probes in order and takes
 *      the first perturbed bucket (different from home) with count < S;
 *   4. phase 3: the k-th point still without a bucket takes the k-th free slot of its cloud
 *      (psh_resid_place); bucket_start = exclusive scan of the final counts;
 *   5. scatter: slot = bucket_start[bucket] + offset, perm = inverse, xyz in packed order.
 * The GPU variants (psh.cu) compute the same frame, hashes, probes and overflow rule; only the order in
 * which racing points win slots differs.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "kernels/psh_internal.h"

static const char *const psh_hash_names[PSH_HASH_COUNT] = {"xor-mod", "xor-div", "zorder-mod", "zorder-div"};

const char *psh_hash_name(psh_hash h) {
  return (unsigned)h < PSH_HASH_COUNT ? psh_hash_names[h] : "unknown";
}

hx_status psh_hash_parse(const char *name, psh_hash *out) {
  for (int i = 0; i < PSH_HASH_COUNT; i++)
    if (name && strcmp(name, psh_hash_names[i]) == 0) {
      *out = (psh_hash)i;
      return HX_OK;
    }
  return HX_EINVAL;
}

void psh_params_default(psh_params *p) {
  p->hash = PSH_XOR_DIV; /* the official code's shipped config and test (hash_op = 2) */
  p->nb = 0;
  p->cap = 512;
  p->voxel = 0.05f;
  p->nprobe = PSH_NPROBE_MAX;
  p->seed = 3407;
  p->trace_blocks = 0;
}

uint32_t psh_auto_buckets(size_t n_max, uint32_t cap) {
  if (cap == 0) return 1;
  size_t need = (n_max + cap - 1) / cap;
  uint32_t nb = 1;
  while (nb < need && nb < (1u << 30)) nb <<= 1;
  return nb;
}

hx_status psh_params_check(const psh_params *p, const uint32_t *cloud_offset, uint32_t nclouds, hx_err *err) {
  if ((unsigned)p->hash >= PSH_HASH_COUNT) return hx_errf(err, HX_EINVAL, "psh: unknown hash %d", (int)p->hash);
  if (p->cap == 0 || p->cap % 16u) return hx_errf(err, HX_EINVAL, "psh: bucket size %u is not a positive multiple of 16", p->cap);
  if (p->nb == 0) return hx_errf(err, HX_EINVAL, "psh: zero buckets");
  if (p->nb > PSH_NB_MAX) return hx_errf(err, HX_EINVAL, "psh: %u buckets per cloud exceed the limit of %u", p->nb, PSH_NB_MAX);
  if (!(p->voxel > 0.0f) || !isfinite(p->voxel)) return hx_errf(err, HX_EINVAL, "psh: voxel size must be positive");
  if (p->nprobe > PSH_NPROBE_MAX) return hx_errf(err, HX_EINVAL, "psh: %u probes (at most %u)", p->nprobe, PSH_NPROBE_MAX);
  if (p->trace_blocks > 1) return hx_errf(err, HX_EINVAL, "psh: trace_blocks = %u (0 or 1)", p->trace_blocks);
  if (nclouds == 0) return hx_errf(err, HX_EINVAL, "psh: empty batch");
  if ((uint64_t)nclouds * p->nb >= PSH_RESID_FLAG)
    return hx_errf(err, HX_EINVAL, "psh: %u clouds x %u buckets exceed 2^31 buckets", nclouds, p->nb);
  if (!cloud_offset) return HX_OK;
  if (cloud_offset[0] != 0) return hx_errf(err, HX_EINVAL, "psh: cloud_offset[0] = %u, not 0", cloud_offset[0]);
  for (uint32_t c = 0; c < nclouds; c++)
    if (cloud_offset[c + 1] < cloud_offset[c]) return hx_errf(err, HX_EINVAL, "psh: cloud offsets decrease at cloud %u", c);
  if (cloud_offset[nclouds] > PSH_MAX_POINTS)
    return hx_errf(err, HX_EINVAL, "psh: %u points exceed the limit of %u", cloud_offset[nclouds], PSH_MAX_POINTS);
  return HX_OK;
}

hx_status psh_span_check(const psh_in *in, float voxel, hx_err *err) {
  if (!(voxel > 0.0f) || !isfinite(voxel)) return hx_errf(err, HX_EINVAL, "psh: voxel size must be positive");
  for (uint32_t c = 0; c < in->nclouds; c++) {
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = in->cloud_offset[c]; i < in->cloud_offset[c + 1]; i++)
      for (int d = 0; d < 3; d++) {
        const float x = in->xyz[3 * (size_t)i + (size_t)d];
        lo[d] = x < lo[d] ? x : lo[d], hi[d] = x > hi[d] ? x : hi[d];
      }
    for (int d = 0; d < 3 && in->cloud_offset[c + 1] > in->cloud_offset[c]; d++)
      if (floorf((hi[d] - lo[d]) / voxel) >= (float)PSH_VOX_MAX)
        return hx_errf(err, HX_EINVAL, "psh: cloud %u spans %.0f m along %c: more than %u voxels of %g m, the hashes' "
                       "grid (a larger voxel, or the cloud cut into parts)", c, (double)(hi[d] - lo[d]), "xyz"[d],
                       PSH_VOX_MAX, (double)voxel);
  }
  return HX_OK;
}

uint64_t psh_morton3(uint32_t vx, uint32_t vy, uint32_t vz) { return psh_morton(vx, vy, vz); }

uint32_t psh_hash_voxel(psh_hash h, uint32_t vx, uint32_t vy, uint32_t vz, uint32_t bits, uint32_t nb) {
  return psh_hash3(h, vx, vy, vz, bits, nb);
}

void psh_probe_order(int8_t (*probe)[3], uint32_t count, uint64_t seed) {
  int8_t all[PSH_NPROBE_BASE][3];
  psh_probe_canonical(all);
  /* Fisher-Yates from the top, one counter-based draw per position: a pure function of the seed. */
  for (uint32_t i = PSH_NPROBE_BASE - 1; i > 0; i--) {
    uint32_t j = (uint32_t)(hx_rng_u64(seed, PSH_STREAM_PROBE, i) % (i + 1u));
    for (int d = 0; d < 3; d++) {
      int8_t t = all[i][d];
      all[i][d] = all[j][d];
      all[j][d] = t;
    }
  }
  if (count > PSH_NPROBE_BASE) count = PSH_NPROBE_BASE;
  memcpy(probe, all, (size_t)count * sizeof all[0]);
}

void psh_stats_compute(psh_stats *st, const uint32_t *bucket_count, uint32_t nbuckets, const uint32_t *counters,
                       uint32_t cap) {
  memset(st, 0, sizeof *st);
  st->buckets = nbuckets;
  for (uint32_t g = 0; g < nbuckets; g++) {
    uint32_t c = bucket_count[g];
    st->n += c;
    if (c > st->max_count) st->max_count = c;
    if (c == 0) st->empty_buckets++;
    if (c > cap) st->over_cap_buckets++;
  }
  if (counters) {
    st->placed_first = counters[PSH_C_FIRST];
    st->placed_probe = counters[PSH_C_PROBE];
    st->placed_overflow = counters[PSH_C_OVERFLOW];
  }
  st->mean_fill = nbuckets ? (double)st->n / ((double)nbuckets * (double)cap) : 0.0;
}

/* Per-cloud bounding box of points [lo, hi). */
static void cloud_bbox(float mn[3], float mx[3], const float *xyz, uint32_t lo, uint32_t hi) {
  for (int d = 0; d < 3; d++) {
    mn[d] = FLT_MAX;
    mx[d] = -FLT_MAX;
  }
  for (uint32_t i = lo; i < hi; i++)
    for (int d = 0; d < 3; d++) {
      float x = xyz[3 * (size_t)i + (size_t)d];
      if (x < mn[d]) mn[d] = x;
      if (x > mx[d]) mx[d] = x;
    }
}

/* A cloud's voxel frame as psh_run_cpu and psh_check see it: the bounding box's low corner, the code width, the
 * per-axis shift (Z-order-div only) and the probe step. */
typedef struct cloud_frame {
  float mn[3];
  uint32_t bits, sh[3], step;
} cloud_frame;

static void frame_of(cloud_frame *f, const psh_in *in, const psh_params *p, uint32_t lo, uint32_t hi) {
  float mx[3];
  cloud_bbox(f->mn, mx, in->xyz, lo, hi);
  f->bits = psh_frame_bits(f->mn, mx, p->voxel);
  psh_frame_shift(p->hash, f->mn, mx, p->voxel, f->bits, f->sh);
  f->step = psh_probe_step(p->hash, f->bits, p->nb);
}

/* The voxel (v, shifted) and home bucket (local) of the point at x. */
static uint32_t frame_home(const cloud_frame *f, const psh_params *p, const float *x, uint32_t v[3]) {
  for (int d = 0; d < 3; d++) v[d] = psh_vox1(x[d], f->mn[d], p->voxel) << f->sh[d];
  return psh_hash3(p->hash, v[0], v[1], v[2], f->bits, p->nb);
}

uint32_t psh_reachable_buckets(const psh_in *in, const psh_params *p, uint32_t c, uint32_t *bits_out) {
  const uint32_t lo = in->cloud_offset[c], hi = in->cloud_offset[c + 1];
  if (bits_out) *bits_out = 0;
  if (lo >= hi) return 0;
  cloud_frame f;
  frame_of(&f, in, p, lo, hi);
  const uint32_t bits = f.bits;
  if (bits_out) *bits_out = bits;
  const uint32_t k = psh_code_bits(p->hash, bits); /* <= 63 */
  return k >= 32u || (1u << k) >= p->nb ? p->nb : 1u << k;
}

hx_status psh_run_cpu(const psh_out *out, const psh_in *in, const psh_params *p, hx_err *err) {
  HX_TRY(psh_params_check(p, in->cloud_offset, in->nclouds, err));
  if (!out->bucket || !out->offset || !out->slot || !out->perm || !out->bucket_count || !out->bucket_start)
    return hx_errf(err, HX_EINVAL, "psh_run_cpu: bucket, offset, slot, perm, count and start outputs are required");
  if (in->cloud_offset[in->nclouds] != in->n)
    return hx_errf(err, HX_EINVAL, "psh: cloud_offset[%u] = %u but n = %u", in->nclouds, in->cloud_offset[in->nclouds], in->n);
  const uint32_t nb = p->nb, S = p->cap, nbt = in->nclouds * nb;
  int8_t probe[PSH_NPROBE_BASE][3];
  psh_probe_order(probe, p->nprobe, p->seed);
  uint32_t *F = malloc(((size_t)nb + 1) * sizeof *F);
  uint32_t *ovf = malloc(((size_t)in->n + 1) * sizeof *ovf);
  if (!F || !ovf) {
    free(F);
    free(ovf);
    return hx_errf(err, HX_ENOMEM, "psh: no memory for %u points", in->n);
  }
  uint32_t ctr[PSH_NCOUNTERS] = {0};
  memset(out->bucket_count, 0, (size_t)nbt * sizeof *out->bucket_count);

  for (uint32_t c = 0; c < in->nclouds; c++) {
    const uint32_t lo = in->cloud_offset[c], hi = in->cloud_offset[c + 1];
    uint32_t *cnt = out->bucket_count + (size_t)c * nb;
    if (lo == hi) continue;
    cloud_frame f;
    frame_of(&f, in, p, lo, hi);
    uint32_t novf = 0, resid = 0;
    /* phase 1: home buckets in point order */
    for (uint32_t i = lo; i < hi; i++) {
      uint32_t v[3];
      const uint32_t h = frame_home(&f, p, in->xyz + 3 * (size_t)i, v);
      if (cnt[h] < S) {
        out->bucket[i] = c * nb + h;
        out->offset[i] = cnt[h]++;
        ctr[PSH_C_FIRST]++;
      } else {
        ovf[novf++] = i;
      }
    }
    /* phase 2: probes for the overflowing points, in point order */
    for (uint32_t t = 0; t < novf; t++) {
      const uint32_t i = ovf[t];
      uint32_t v[3];
      const uint32_t home = frame_home(&f, p, in->xyz + 3 * (size_t)i, v);
      int placed = 0;
      const uint64_t rb = hx_rng_base(p->seed, i); /* hx_rng_u64(seed, i, k) = hx_mix64(rb + k) */
      for (uint32_t k = 0; k < p->nprobe && !placed; k++) {
        uint32_t h = psh_probe_bucket_r(p->hash, v, probe[k], f.step, f.bits, nb, hx_mix64(rb + k));
        if (h != home && cnt[h] < S) {
          out->bucket[i] = c * nb + h;
          out->offset[i] = cnt[h]++;
          ctr[PSH_C_PROBE]++;
          placed = 1;
        }
      }
      if (!placed) {
        out->bucket[i] = PSH_RESID_FLAG | c;
        out->offset[i] = resid++;
        ctr[PSH_C_OVERFLOW]++;
      }
    }
    /* phase 3: free-slot scan, final counts, placement of the leftovers */
    uint32_t acc = 0;
    for (uint32_t j = 0; j < nb; j++) {
      F[j] = acc;
      acc += S - cnt[j];
    }
    F[nb] = acc;
    for (uint32_t j = 0; j < nb; j++)
      cnt[j] = psh_final_count(cnt[j], F[j], F[j + 1] - F[j], F[nb], resid, j, nb);
    for (uint32_t t = 0; t < novf && resid; t++) {
      const uint32_t i = ovf[t];
      if (!(out->bucket[i] & PSH_RESID_FLAG)) continue;
      uint32_t local, off;
      psh_resid_place(F, nb, S, out->offset[i], &local, &off);
      out->bucket[i] = c * nb + local;
      out->offset[i] = off;
    }
  }
  /* scan and scatter */
  uint32_t acc = 0;
  for (uint32_t g = 0; g < nbt; g++) {
    out->bucket_start[g] = acc;
    acc += out->bucket_count[g];
  }
  for (uint32_t i = 0; i < in->n; i++) {
    uint32_t s = out->bucket_start[out->bucket[i]] + out->offset[i];
    out->slot[i] = s;
    out->perm[s] = i;
    if (out->xyz) memcpy(out->xyz + 3 * (size_t)s, in->xyz + 3 * (size_t)i, 3 * sizeof(float));
  }
  if (out->counters) memcpy(out->counters, ctr, sizeof ctr);
  free(F);
  free(ovf);
  return HX_OK;
}

hx_status psh_floor_cpu(const psh_out *out, const psh_in *in, hx_err *err) {
  if (!out || !in || !out->slot || !out->perm || !out->bucket != !out->offset || (in->n && !in->xyz))
    return hx_errf(err, HX_EINVAL, "psh_floor_cpu: an input or a required output is NULL (or one of bucket, offset)");
  for (uint32_t i = 0; i < in->n; i++) out->slot[i] = out->perm[i] = i;
  if (out->bucket)
    for (uint32_t i = 0; i < in->n; i++) out->bucket[i] = out->offset[i] = i;
  if (out->xyz && in->n) memcpy(out->xyz, in->xyz, (size_t)in->n * 3 * sizeof *in->xyz);
  return HX_OK;
}

hx_status psh_floor_check(const psh_out *got, const psh_in *in, hx_err *err) {
  if (!got || !in) return hx_errf(err, HX_EINVAL, "psh_floor_check: NULL output or input");
  const size_t n = in->n;
  uint32_t *want = malloc(n * sizeof *want + 4);
  float *wx = got->xyz ? malloc(n * 3 * sizeof *wx + 4) : NULL;
  psh_out w = {want, want, NULL, NULL, want, want, wx, NULL}; /* every index array holds the same pattern */
  hx_status st = !want || (got->xyz && !wx) ? hx_errf(err, HX_ENOMEM, "psh_floor_check: no memory for %zu points", n)
                                            : psh_floor_cpu(&w, in, err);
  const uint32_t *const g[] = {got->slot, got->perm, got->bucket, got->offset};
  static const char *const name[] = {"slot", "perm", "bucket", "offset"};
  for (int k = 0; k < 4 && st == HX_OK; k++) {
    if (!g[k]) {
      if (k < 2) st = hx_errf(err, HX_EINVAL, "psh_floor_check: %s is NULL", name[k]);
    } else if (memcmp(g[k], want, n * sizeof *want))
      st = hx_errf(err, HX_ECHECK, "psh floor: %s differs from psh_floor_cpu", name[k]);
  }
  if (st == HX_OK && got->xyz && memcmp(got->xyz, wx, n * 3 * sizeof *wx))
    st = hx_errf(err, HX_ECHECK, "psh floor: xyz_out differs from the input");
  free(want), free(wx);
  return st;
}

/* Where each point was placed, against the rule every variant follows (kernels.h): its home bucket; else, home
 * being full, the bucket of one of its probes; else, by the overflow policy, a bucket none of its probes reaches,
 * every probe's bucket being full. A bucket's count never falls once it is full (racing variants keep the first S
 * claims and roll back only claims past S), so "full when the point tried it" implies "full at the end", and the
 * final counts decide this whatever order the points raced in. Which probe a point took is not checked: the
 * reference takes the first with room, but the cooperative variants' queue pass splits a point's probes over
 * lanes that race (psh_tiles.cuh, queue_pass), so a later probe may win while an earlier one still has room.
 * Why it is needed: a pair rebuilt from slot (psh_bo_from_slot_cpu) always satisfies slot = start + offset, so
 * without this a variant that put points in wrong buckets consistently (a wrong frame, hash, probe set or jitter)
 * would pass psh_check. Clouds past their capacity (n_c > nb * S) are left out: there the overflow policy also
 * fills full buckets. With counters given and every cloud within capacity, the three kinds must equal them.
 * Cost: all nprobe probes of every overflow point (3.4M points x 128 at 4M on Z-order-div, ~6 s on one core), so
 * the points are split over threads; each share stops at its first violation and the lowest one is reported, as
 * one thread would. */
typedef struct place_share {
  const psh_out *o;
  const psh_in *in;
  const psh_params *p;
  const int8_t (*probe)[3];
  const cloud_frame *fr; /* per cloud; bits = PSH_NONE: empty or past its capacity, not checked */
  uint32_t a, b;         /* points [a, b) */
  uint64_t kind[3];      /* first hash, probe, overflow policy: as PSH_C_FIRST.. */
  hx_err err;            /* status HX_OK, or the share's first violation */
} place_share;

static void *place_run(void *arg) {
  place_share *sh = arg;
  const psh_params *p = sh->p;
  const uint32_t nb = p->nb, S = p->cap;
  uint32_t c = 0;
  for (uint32_t i = sh->a; i < sh->b; i++) {
    while (sh->in->cloud_offset[c + 1] <= i) c++;
    const cloud_frame *f = &sh->fr[c];
    if (f->bits == PSH_NONE) continue;
    const uint32_t *cnt = sh->o->bucket_count + (size_t)c * nb;
    uint32_t v[3];
    const uint32_t home = frame_home(f, p, sh->in->xyz + 3 * (size_t)i, v), b = sh->o->bucket[i] - c * nb;
    if (b == home) {
      sh->kind[PSH_C_FIRST]++;
      continue;
    }
    if (cnt[home] < S) {
      hx_errf(&sh->err, HX_ECHECK, "point %u (cloud %u) is in bucket %u, not its home bucket %u, which has room (%u < S = %u)",
              i, c, sh->o->bucket[i], c * nb + home, cnt[home], S);
      return NULL;
    }
    uint32_t k = 0, room = PSH_NONE; /* room: the first probe whose bucket has room at the end */
    const uint64_t rb = hx_rng_base(p->seed, i);
    for (; k < p->nprobe; k++) {
      const uint32_t h = psh_probe_bucket_r(p->hash, v, sh->probe[k], f->step, f->bits, nb, hx_mix64(rb + k));
      if (h == home) continue;
      if (h == b) break;
      if (room == PSH_NONE && cnt[h] < S) room = k;
    }
    if (k == p->nprobe && room != PSH_NONE) {
      const uint32_t h = psh_probe_bucket_r(p->hash, v, sh->probe[room], f->step, f->bits, nb, hx_mix64(rb + room));
      hx_errf(&sh->err, HX_ECHECK, "point %u (cloud %u) is in bucket %u, which none of its probes reaches, though its "
              "probe %u's bucket %u has room (%u < S = %u)", i, c, sh->o->bucket[i], room, c * nb + h, cnt[h], S);
      return NULL;
    }
    sh->kind[k < p->nprobe ? PSH_C_PROBE : PSH_C_OVERFLOW]++;
  }
  return NULL;
}

#define PSH_CHECK_THREADS 16u          /* at most */
#define PSH_CHECK_POINTS_PER_THREAD 65536u /* below this a thread costs more than it saves */

static hx_status check_placement(const psh_out *o, const psh_in *in, const psh_params *p, hx_err *err) {
  const uint32_t nb = p->nb, S = p->cap;
  int8_t probe[PSH_NPROBE_BASE][3];
  psh_probe_order(probe, p->nprobe, p->seed);
  cloud_frame *fr = malloc(((size_t)in->nclouds + 1) * sizeof *fr);
  if (!fr) return hx_errf(err, HX_ENOMEM, "psh_check: no memory for %u clouds' frames", in->nclouds);
  int all_fit = 1;
  for (uint32_t c = 0; c < in->nclouds; c++) {
    const uint32_t lo = in->cloud_offset[c], hi = in->cloud_offset[c + 1];
    if (hi - lo > (uint64_t)nb * S) all_fit = 0;
    if (lo == hi || hi - lo > (uint64_t)nb * S) fr[c].bits = PSH_NONE;
    else frame_of(&fr[c], in, p, lo, hi);
  }
  const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t nt = in->n / PSH_CHECK_POINTS_PER_THREAD + 1u;
  if (nt > PSH_CHECK_THREADS) nt = PSH_CHECK_THREADS;
  if (ncpu > 0 && nt > (uint32_t)ncpu) nt = (uint32_t)ncpu;
  place_share sh[PSH_CHECK_THREADS];
  pthread_t tid[PSH_CHECK_THREADS];
  int started[PSH_CHECK_THREADS] = {0};
  for (uint32_t t = 0; t < nt; t++) {
    sh[t] = (place_share){o, in, p, (const int8_t(*)[3])probe, fr, (uint32_t)((uint64_t)in->n * t / nt),
                          (uint32_t)((uint64_t)in->n * (t + 1) / nt), {0, 0, 0}, {HX_OK, ""}};
    if (t > 0) started[t] = pthread_create(&tid[t], NULL, place_run, &sh[t]) == 0;
  }
  place_run(&sh[0]);
  for (uint32_t t = 1; t < nt; t++) {
    if (started[t]) pthread_join(tid[t], NULL);
    else place_run(&sh[t]); /* no thread: this share here */
  }
  free(fr);
  uint64_t kind[3] = {0, 0, 0};
  for (uint32_t t = 0; t < nt; t++) {
    if (sh[t].err.status != HX_OK) { /* the lowest share's first violation: the one a single pass meets first */
      *err = sh[t].err;
      return err->status;
    }
    for (int k = 0; k < 3; k++) kind[k] += sh[t].kind[k];
  }
  if (o->counters && all_fit && (kind[0] != o->counters[PSH_C_FIRST] || kind[1] != o->counters[PSH_C_PROBE] ||
                                 kind[2] != o->counters[PSH_C_OVERFLOW]))
    return hx_errf(err, HX_ECHECK, "counters say %u / %u / %u points placed by first hash / probing / overflow; the placement "
                   "gives %llu / %llu / %llu", o->counters[PSH_C_FIRST], o->counters[PSH_C_PROBE],
                   o->counters[PSH_C_OVERFLOW], (unsigned long long)kind[0], (unsigned long long)kind[1],
                   (unsigned long long)kind[2]);
  return HX_OK;
}

hx_status psh_check(const psh_out *o, const psh_in *in, const psh_params *p, hx_err *err) {
  const uint32_t nb = p->nb, S = p->cap, nbt = in->nclouds * nb, n = in->n;
  if (!o->bucket || !o->offset || !o->slot || !o->perm || !o->bucket_count || !o->bucket_start)
    return hx_errf(err, HX_EINVAL, "psh_check: bucket, offset, slot, perm, count and start are required (rebuild a "
                                   "missing pair with psh_bo_from_slot_cpu)");
  if (in->cloud_offset[in->nclouds] != n) /* the walks over clouds below stop there */
    return hx_errf(err, HX_EINVAL, "psh_check: cloud_offset[%u] = %u but n = %u", in->nclouds, in->cloud_offset[in->nclouds], n);
  hx_status st = HX_OK;
  uint32_t *seen = calloc((size_t)nbt + 1, sizeof *seen);
  uint8_t *hit = calloc((size_t)n + 1, 1);
  if (!seen || !hit) {
    st = hx_errf(err, HX_ENOMEM, "psh_check: no memory");
    goto done;
  }
  /* every point in a bucket of its own cloud, offsets below the count, each (bucket, offset) once
   * (counted via the slot bijection below) */
  for (uint32_t c = 0; c < in->nclouds && st == HX_OK; c++)
    for (uint32_t i = in->cloud_offset[c]; i < in->cloud_offset[c + 1]; i++) {
      uint32_t g = o->bucket[i];
      if (g / nb != c || g >= nbt) {
        st = hx_errf(err, HX_ECHECK, "point %u of cloud %u: bucket %u outside the cloud's [%u, %u)", i, c, g, c * nb, (c + 1) * nb);
        break;
      }
      if (o->offset[i] >= o->bucket_count[g]) {
        st = hx_errf(err, HX_ECHECK, "point %u: offset %u >= count %u of bucket %u", i, o->offset[i], o->bucket_count[g], g);
        break;
      }
      seen[g]++;
    }
  if (st != HX_OK) goto done;
  uint32_t acc = 0;
  for (uint32_t g = 0; g < nbt; g++) {
    if (seen[g] != o->bucket_count[g]) {
      st = hx_errf(err, HX_ECHECK, "bucket %u: count %u but %u points", g, o->bucket_count[g], seen[g]);
      goto done;
    }
    if (o->bucket_start[g] != acc) {
      st = hx_errf(err, HX_ECHECK, "bucket %u: start %u, exclusive scan gives %u", g, o->bucket_start[g], acc);
      goto done;
    }
    acc += o->bucket_count[g];
  }
  /* capacity: count <= S whenever the cloud fits */
  for (uint32_t c = 0; c < in->nclouds; c++) {
    uint64_t nc = in->cloud_offset[c + 1] - in->cloud_offset[c];
    if (nc > (uint64_t)nb * S) continue;
    for (uint32_t j = 0; j < nb; j++)
      if (o->bucket_count[c * nb + j] > S) {
        st = hx_errf(err, HX_ECHECK, "cloud %u (%llu points <= %u x %u) has bucket %u with %u > S points", c,
                     (unsigned long long)nc, nb, S, c * nb + j, o->bucket_count[c * nb + j]);
        goto done;
      }
  }
  /* slot = start + offset is a bijection, perm its inverse (this also proves offsets are distinct) */
  for (uint32_t i = 0; i < n; i++) {
    uint32_t s = o->bucket_start[o->bucket[i]] + o->offset[i];
    if (o->slot[i] != s || s >= n || hit[s]) {
      st = hx_errf(err, HX_ECHECK, "point %u: slot %u (start+offset %u) invalid or taken twice", i, o->slot[i], s);
      goto done;
    }
    hit[s] = 1;
    if (o->perm[s] != i) {
      st = hx_errf(err, HX_ECHECK, "perm[%u] = %u, expected %u", s, o->perm[s], i);
      goto done;
    }
    if (o->xyz && memcmp(o->xyz + 3 * (size_t)s, in->xyz + 3 * (size_t)i, 3 * sizeof(float)) != 0) {
      st = hx_errf(err, HX_ECHECK, "packed row %u does not hold the coordinates of point %u", s, i);
      goto done;
    }
  }
  st = check_placement(o, in, p, err);
done:
  free(seen);
  free(hit);
  return st;
}

size_t psh_pair_bytes(uint32_t n) { return psh_align256((size_t)n * 8u); }

/* Host code only, here rather than in psh.cu so that a CPU-only build has it too (test_psh_cpu's
 * test_run_paired tests it there). */
hx_status psh_run_paired(psh_fn fn, void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                         const psh_params *p, void *stream, hx_err *err) {
  if (out->bucket && out->offset) return fn(d_scratch, scratch_bytes, out, in, p, stream, err);
  if (out->bucket || out->offset) return hx_errf(err, HX_EINVAL, "psh: bucket and offset outputs: both or neither");
  const size_t pb = psh_pair_bytes(in->n);
  size_t inner = 0;
  HX_TRY(fn(NULL, &inner, out, in, p, stream, err)); /* a size query reads no output pointer */
  inner = psh_align256(inner);
  int query;
  const hx_status sq = psh_scratch_check(d_scratch, scratch_bytes, pb + inner, &query, err);
  if (sq != HX_OK || query) return sq;
  psh_out o = *out;
  o.bucket = (uint32_t *)((unsigned char *)d_scratch + inner);
  o.offset = o.bucket + in->n;
  return fn(d_scratch, &inner, &o, in, p, stream, err);
}

hx_status psh_bo_from_slot_cpu(uint32_t *bucket, uint32_t *offset, const uint32_t *slot, const uint32_t *bucket_start,
                               const uint32_t *bucket_count, uint32_t nbuckets, uint32_t n, hx_err *err) {
  /* row -> bucket map from the bucket table; its rows must tile [0, n) exactly, else the table is not a
   * packed layout and no (bucket, offset) follows from a slot */
  uint32_t *own = malloc((size_t)n * sizeof *own + 4);
  if (!own) return hx_errf(err, HX_ENOMEM, "psh_bo_from_slot_cpu: no memory for %u rows", n);
  for (uint32_t r = 0; r < n; r++) own[r] = PSH_NONE;
  hx_status st = HX_OK;
  for (uint32_t g = 0; g < nbuckets && st == HX_OK; g++) {
    const uint64_t lo = bucket_start[g], hi = lo + bucket_count[g];
    if (hi > n) {
      st = hx_errf(err, HX_ECHECK, "bucket %u: rows [%llu, %llu) pass the %u rows", g, (unsigned long long)lo,
                   (unsigned long long)hi, n);
      break;
    }
    for (uint64_t r = lo; r < hi; r++) {
      if (own[r] != PSH_NONE) {
        st = hx_errf(err, HX_ECHECK, "row %llu is in buckets %u and %u", (unsigned long long)r, own[r], g);
        break;
      }
      own[r] = g;
    }
  }
  for (uint32_t i = 0; i < n && st == HX_OK; i++) {
    const uint32_t s = slot[i];
    if (s >= n || own[s] == PSH_NONE) {
      st = hx_errf(err, HX_ECHECK, "point %u: slot %u is in no bucket's rows", i, s);
      break;
    }
    bucket[i] = own[s];
    offset[i] = s - bucket_start[own[s]];
  }
  free(own);
  return st;
}

hx_status psh_pad_cpu(uint32_t *perm_pad, uint32_t *slot_pad, const uint32_t *bucket, const uint32_t *offset,
                      const uint32_t *bucket_start, const uint32_t *bucket_count, uint32_t nbuckets,
                      uint32_t n, uint32_t cap, const uint32_t *perm, hx_err *err) {
  for (uint32_t g = 0; g < nbuckets; g++)
    if (bucket_count[g] > cap)
      return hx_errf(err, HX_EUNSUPPORTED, "psh_pad: bucket %u holds %u > S = %u points", g, bucket_count[g], cap);
  if ((uint64_t)nbuckets * cap > 0xFFFFFFFFull)
    return hx_errf(err, HX_EUNSUPPORTED, "psh_pad: %u buckets x %u rows exceed 2^32 rows", nbuckets, cap);
  for (uint32_t g = 0; g < nbuckets; g++)
    for (uint32_t o = 0; o < cap; o++)
      perm_pad[(size_t)g * cap + o] = o < bucket_count[g] ? perm[bucket_start[g] + o] : PSH_NONE;
  for (uint32_t i = 0; i < n; i++) slot_pad[i] = bucket[i] * cap + offset[i];
  return HX_OK;
}

size_t psh_dtype_size(psh_dtype t) { return t == PSH_F32 ? 4u : 2u; }

hx_status psh_gather_rows_cpu(void *out, const void *in, const uint32_t *src, uint32_t rows, size_t row_bytes) {
  unsigned char *o = out;
  const unsigned char *s = in;
  for (uint32_t r = 0; r < rows; r++) {
    if (src[r] == PSH_NONE) memset(o + (size_t)r * row_bytes, 0, row_bytes);
    else memcpy(o + (size_t)r * row_bytes, s + (size_t)src[r] * row_bytes, row_bytes);
  }
  return HX_OK;
}

/* ---- geometric quality -------------------------------------------------------------------------- */

/* Accumulate the measures of one group given by an index list (or contiguous rows when idx == NULL). */
static void quality_group(psh_quality *q, double *wdiag, double *wspread, uint64_t *wn, const float *xyz,
                          const uint32_t *idx, uint32_t first, uint32_t count) {
  if (count == 0) return;
  double mn[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, mx[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX}, cen[3] = {0, 0, 0};
  for (uint32_t k = 0; k < count; k++) {
    const float *x = xyz + 3 * (size_t)(idx ? idx[first + k] : first + k);
    for (int d = 0; d < 3; d++) {
      double v = (double)x[d];
      mn[d] = v < mn[d] ? v : mn[d];
      mx[d] = v > mx[d] ? v : mx[d];
      cen[d] += v;
    }
  }
  for (int d = 0; d < 3; d++) cen[d] /= (double)count;
  double spread = 0;
  for (uint32_t k = 0; k < count; k++) {
    const float *x = xyz + 3 * (size_t)(idx ? idx[first + k] : first + k);
    double dx = (double)x[0] - cen[0], dy = (double)x[1] - cen[1], dz = (double)x[2] - cen[2];
    spread += sqrt(dx * dx + dy * dy + dz * dz);
  }
  spread /= (double)count;
  double diag = sqrt((mx[0] - mn[0]) * (mx[0] - mn[0]) + (mx[1] - mn[1]) * (mx[1] - mn[1]) + (mx[2] - mn[2]) * (mx[2] - mn[2]));
  q->groups++;
  *wdiag += diag * count;
  *wspread += spread * count;
  *wn += count;
  if (diag > q->diag_max) q->diag_max = diag;
  if (spread > q->spread_max) q->spread_max = spread;
}

hx_status psh_quality_buckets(psh_quality *q, const float *xyz_packed, const uint32_t *bucket_start,
                              const uint32_t *bucket_count, uint32_t nbuckets, hx_err *err) {
  (void)err;
  memset(q, 0, sizeof *q);
  double wd = 0, ws = 0;
  uint64_t wn = 0;
  for (uint32_t g = 0; g < nbuckets; g++)
    quality_group(q, &wd, &ws, &wn, xyz_packed, NULL, bucket_start[g], bucket_count[g]);
  if (wn) {
    q->diag_mean = wd / (double)wn;
    q->spread_mean = ws / (double)wn;
  }
  return HX_OK;
}

typedef struct zkey {
  uint64_t code;
  uint32_t idx;
} zkey;

static int zkey_cmp(const void *a, const void *b) {
  const zkey *x = a, *y = b;
  if (x->code != y->code) return x->code < y->code ? -1 : 1;
  return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

hx_status psh_quality_zorder(psh_quality *q, const psh_in *in, float voxel, uint32_t patch, hx_err *err) {
  memset(q, 0, sizeof *q);
  if (patch == 0) return hx_errf(err, HX_EINVAL, "psh_quality_zorder: zero patch size");
  zkey *keys = malloc(((size_t)in->n + 1) * sizeof *keys);
  uint32_t *idx = malloc(((size_t)in->n + 1) * sizeof *idx);
  if (!keys || !idx) {
    free(keys);
    free(idx);
    return hx_errf(err, HX_ENOMEM, "psh_quality_zorder: no memory for %u points", in->n);
  }
  double wd = 0, ws = 0;
  uint64_t wn = 0;
  for (uint32_t c = 0; c < in->nclouds; c++) {
    uint32_t lo = in->cloud_offset[c], hi = in->cloud_offset[c + 1];
    if (lo == hi) continue;
    float mn[3], mx[3];
    cloud_bbox(mn, mx, in->xyz, lo, hi);
    for (uint32_t i = lo; i < hi; i++) {
      const float *x = in->xyz + 3 * (size_t)i;
      keys[i - lo].code = psh_morton(psh_vox1(x[0], mn[0], voxel), psh_vox1(x[1], mn[1], voxel), psh_vox1(x[2], mn[2], voxel));
      keys[i - lo].idx = i;
    }
    qsort(keys, hi - lo, sizeof *keys, zkey_cmp);
    for (uint32_t k = 0; k < hi - lo; k++) idx[k] = keys[k].idx;
    for (uint32_t s = 0; s < hi - lo; s += patch) {
      uint32_t m = hi - lo - s < patch ? hi - lo - s : patch;
      quality_group(q, &wd, &ws, &wn, in->xyz, idx, s, m);
    }
  }
  if (wn) {
    q->diag_mean = wd / (double)wn;
    q->spread_mean = ws / (double)wn;
  }
  free(keys);
  free(idx);
  return HX_OK;
}
