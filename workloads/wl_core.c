/*
 * wl_core.c - cloud and batch containers, one-point-per-voxel deduplication, seeded subsampling and
 * wl_make_exact (a workload of exactly n points after deduplication).
 *
 * Invariants: wl_voxel_dedup's output is the subsequence of its input made of the first point of every
 * voxel floor(p / voxel) (computed in double, as PTv3's GridSample); wl_subsample's output is a
 * subsequence of exactly k points; wl_make_exact's output has exactly n points, no two in one voxel.
 * Every function leaves its output empty (n = 0, xyz = NULL) when it fails.
 */
#include "workloads/wl_internal.h"

#include <math.h>
#include <stdlib.h>

/* RNG streams (hx_rng_u64's `stream`) owned by this file; generators use streams below 0x100. */
enum { WL_STREAM_SUBSAMPLE = 0x1001, WL_STREAM_TILE_JITTER = 0x1002 };

void wl_cloud_clear(wl_cloud *c) {
  c->n = 0;
  c->xyz = NULL;
  c->dropped_nonfinite = 0;
  c->src = NULL;
}

hx_status wl_cloud_alloc(wl_cloud *out, size_t n, hx_err *err) {
  size_t bytes;
  wl_cloud_clear(out);
  if (n == 0) return HX_OK;
  if (!wl_mul_ok(n, 3 * sizeof(float), &bytes))
    return hx_errf(err, HX_ENOMEM, "cloud of %zu points: size overflows", n);
  out->xyz = malloc(bytes);
  if (!out->xyz) return hx_errf(err, HX_ENOMEM, "cloud of %zu points: out of memory", n);
  out->n = n;
  return HX_OK;
}

void wl_cloud_free(wl_cloud *c) {
  if (!c) return;
  free(c->xyz);
  free(c->src);
  wl_cloud_clear(c);
}

void wl_batch_free(wl_batch *bt) {
  if (!bt) return;
  free(bt->xyz);
  free(bt->offset);
  bt->xyz = NULL;
  bt->offset = NULL;
  bt->n = 0;
  bt->b = 0;
}

hx_status wl_batch_from_clouds(wl_batch *out, const wl_cloud *clouds, uint32_t count, hx_err *err) {
  size_t total = 0, bytes;
  out->b = 0;
  out->n = 0;
  out->xyz = NULL;
  out->offset = NULL;
  if (count > 0 && !clouds) return hx_errf(err, HX_EINVAL, "batch: %u clouds but no array", count);
  for (uint32_t i = 0; i < count; i++) {
    if (clouds[i].n > SIZE_MAX / 2 - total) return hx_errf(err, HX_EINVAL, "batch: total size overflows");
    total += clouds[i].n;
  }
  if (!wl_mul_ok(total, 3 * sizeof(float), &bytes)) return hx_errf(err, HX_ENOMEM, "batch: size overflows");
  out->offset = malloc(((size_t)count + 1) * sizeof(size_t));
  out->xyz = total ? malloc(bytes) : NULL;
  if (!out->offset || (total && !out->xyz)) {
    wl_batch_free(out);
    return hx_errf(err, HX_ENOMEM, "batch of %zu points: out of memory", total);
  }
  out->offset[0] = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (clouds[i].n) memcpy(out->xyz + 3 * out->offset[i], clouds[i].xyz, clouds[i].n * 3 * sizeof(float));
    out->offset[i + 1] = out->offset[i] + clouds[i].n;
  }
  out->b = count;
  out->n = total;
  return HX_OK;
}

/* ---- names ---------------------------------------------------------------------------------------- */
static const char *const kind_names[WL_KIND_COUNT] = {"lidar", "uniform", "indoor", "clusters"};

const char *wl_kind_name(wl_kind k) {
  return ((unsigned)k < WL_KIND_COUNT) ? kind_names[k] : "unknown";
}

hx_status wl_kind_parse(const char *name, wl_kind *out) {
  for (int k = 0; name && k < WL_KIND_COUNT; k++)
    if (strcmp(name, kind_names[k]) == 0) {
      *out = (wl_kind)k;
      return HX_OK;
    }
  return HX_EINVAL;
}

static const struct {
  const char *name;
  wl_format fmt;
} format_names[] = {
    {"auto", WL_FMT_AUTO}, {"pcd", WL_FMT_PCD}, {"ply", WL_FMT_PLY},  {"bin", WL_FMT_BIN4},
    {"bin5", WL_FMT_BIN5}, {"pcd.bin", WL_FMT_BIN5}, {"xyz", WL_FMT_XYZ}, {"txt", WL_FMT_XYZ},
    {"csv", WL_FMT_XYZ},
};

hx_status wl_format_parse(const char *name, wl_format *out) {
  for (size_t i = 0; name && i < sizeof format_names / sizeof format_names[0]; i++)
    if (strcmp(name, format_names[i].name) == 0) {
      *out = format_names[i].fmt;
      return HX_OK;
    }
  return HX_EINVAL;
}

const char *wl_format_name(wl_format f) {
  for (size_t i = 0; i < sizeof format_names / sizeof format_names[0]; i++)
    if (format_names[i].fmt == f) return format_names[i].name;
  return "unknown";
}

/* ---- reader sink ---------------------------------------------------------------------------------- */
hx_status wl_sink_init(wl_sink *s, size_t cap, const char *path, hx_err *err) {
  s->cap = 0;
  if (wl_cloud_alloc(&s->c, cap, NULL) != HX_OK)
    return hx_errf(err, HX_ENOMEM, "%s: cannot allocate %zu points", path, cap);
  s->cap = cap;
  s->c.n = 0;
  s->src_failed = 0;
  s->far = 0;
  return HX_OK;
}

void wl_sink_push(wl_sink *s, double x, double y, double z) {
  if (isfinite(x) && isfinite(y) && isfinite(z) &&
      (fabs(x) > WL_COORD_MAX || fabs(y) > WL_COORD_MAX || fabs(z) > WL_COORD_MAX)) {
    if (!s->far) {
      s->far = 1;
      s->far_index = s->c.n + s->c.dropped_nonfinite;
      s->far_value = fabs(x) > WL_COORD_MAX ? x : fabs(y) > WL_COORD_MAX ? y : z;
    }
    return;
  }
  float fx = (float)x, fy = (float)y, fz = (float)z;
  if (!isfinite(fx) || !isfinite(fy) || !isfinite(fz)) {
    /* from the first drop on, kept points carry their file position (wl_cloud.src); allocated only then,
     * since most files have no NaN/Inf points */
    if (!s->c.src && !s->src_failed) {
      s->c.src = malloc((s->cap ? s->cap : 1) * sizeof *s->c.src);
      if (!s->c.src) s->src_failed = 1;
      for (size_t i = 0; s->c.src && i < s->c.n; i++) s->c.src[i] = i;
    }
    s->c.dropped_nonfinite++;
    return;
  }
  if (s->c.src) s->c.src[s->c.n] = s->c.n + s->c.dropped_nonfinite;
  float *p = s->c.xyz + 3 * s->c.n++;
  p[0] = fx;
  p[1] = fy;
  p[2] = fz;
}

void wl_sink_free(wl_sink *s) {
  wl_cloud_free(&s->c);
  s->cap = 0;
}

hx_status wl_sink_finish(wl_sink *s, wl_cloud *out, const char *path, hx_err *err) {
  if (s->far) {
    const size_t i = s->far_index;
    const double v = s->far_value;
    wl_sink_free(s);
    return hx_errf(err, HX_EFORMAT,
                   "%s: point %zu has a coordinate of %g m, beyond the +-%.0e m every command accepts (float32 "
                   "coordinates are 8 mm apart there, coarser beyond): subtract an origin first",
                   path, i, v, WL_COORD_MAX);
  }
  if (s->src_failed) {
    wl_sink_free(s);
    return hx_errf(err, HX_ENOMEM, "%s: out of memory for the file positions of the points kept", path);
  }
  if (s->c.n == 0) {
    size_t dropped = s->c.dropped_nonfinite;
    wl_sink_free(s);
    return hx_errf(err, HX_EFORMAT, "%s: empty cloud (no finite points; %zu NaN/Inf dropped)", path, dropped);
  }
  *out = s->c;
  wl_cloud_clear(&s->c);
  s->cap = 0;
  return HX_OK;
}

/* ---- subsampling ---------------------------------------------------------------------------------- */
hx_status wl_subsample(wl_cloud *out, const wl_cloud *in, size_t k, uint64_t seed, hx_err *err) {
  wl_cloud_clear(out);
  if (k > in->n) return hx_errf(err, HX_EINVAL, "subsample: %zu points requested from %zu", k, in->n);
  WL_PASS(wl_cloud_alloc(out, k, err));
  /* Algorithm S: point i is taken with probability need/remaining, which yields exactly k points and
   * every k-subset with equal probability; when need == remaining every later point is taken. */
  size_t taken = 0;
  for (size_t i = 0; i < in->n && taken < k; i++) {
    double u = hx_rng_unit(seed, WL_STREAM_SUBSAMPLE, i);
    if ((double)(in->n - i) * u < (double)(k - taken)) {
      memcpy(out->xyz + 3 * taken, in->xyz + 3 * i, 3 * sizeof(float));
      taken++;
    }
  }
  return HX_OK;
}

/* ---- voxel deduplication -------------------------------------------------------------------------- */
static uint64_t voxel_hash(const int64_t *k) {
  return hx_mix64((uint64_t)k[0] * 0x9E3779B97F4A7C15ull ^ (uint64_t)k[1] * 0xC2B2AE3D27D4EB4Full ^
                  (uint64_t)k[2]);
}

hx_status wl_voxel_dedup(wl_cloud *out, const wl_cloud *in, double voxel, size_t *dropped, hx_err *err) {
  wl_cloud_clear(out);
  if (dropped) *dropped = 0;
  if (!(voxel > 0.0) || !isfinite(voxel)) return hx_errf(err, HX_EINVAL, "voxel size %g is not positive", voxel);
  if (in->n == 0) return HX_OK;
  size_t cap = 16, kbytes;
  /* sizes first: n * 24 bytes fitting size_t bounds n below 2^60, so the doubling below ends (for n past
   * 2^62 it would pass 2^63 and wrap to 0) */
  if (!wl_mul_ok(in->n, 3 * sizeof(int64_t), &kbytes))
    return hx_errf(err, HX_ENOMEM, "dedup of %zu points: size overflows", in->n);
  while (cap < 2 * in->n) cap *= 2; /* load factor <= 1/2 keeps linear probing short */
  if (cap > SIZE_MAX / sizeof(size_t)) return hx_errf(err, HX_ENOMEM, "dedup of %zu points: size overflows", in->n);
  int64_t *key = malloc(kbytes);
  size_t *slot = malloc(cap * sizeof(size_t));
  hx_status st = HX_OK;
  if (!key || !slot) {
    st = hx_errf(err, HX_ENOMEM, "dedup of %zu points: out of memory", in->n);
    goto done;
  }
  for (size_t i = 0; i < 3 * in->n; i++) {
    double q = floor((double)in->xyz[i] / voxel);
    if (!(fabs(q) < 4.0e18)) { /* NaN/Inf or a grid index beyond int64 */
      st = hx_errf(err, HX_EINVAL, "dedup: point %zu coordinate %g has no voxel index at voxel %g", i / 3,
                   (double)in->xyz[i], voxel);
      goto done;
    }
    key[i] = (int64_t)q;
  }
  for (size_t i = 0; i < cap; i++) slot[i] = SIZE_MAX;
  size_t kept = 0;
  /* One pass in input order: a point is kept iff it is the first to claim its voxel's slot, so the kept
   * indices come out increasing (order preserved, first point per voxel). */
  size_t *kept_idx = malloc(in->n * sizeof(size_t));
  if (!kept_idx) {
    st = hx_errf(err, HX_ENOMEM, "dedup of %zu points: out of memory", in->n);
    goto done;
  }
  for (size_t i = 0; i < in->n; i++) {
    const int64_t *k = key + 3 * i;
    size_t h = (size_t)voxel_hash(k) & (cap - 1);
    for (;;) {
      size_t j = slot[h];
      if (j == SIZE_MAX) {
        slot[h] = i;
        kept_idx[kept++] = i;
        break;
      }
      const int64_t *kj = key + 3 * j;
      if (kj[0] == k[0] && kj[1] == k[1] && kj[2] == k[2]) break;
      h = (h + 1) & (cap - 1);
    }
  }
  st = wl_cloud_alloc(out, kept, err);
  if (st == HX_OK) {
    for (size_t i = 0; i < kept; i++) memcpy(out->xyz + 3 * i, in->xyz + 3 * kept_idx[i], 3 * sizeof(float));
    if (dropped) *dropped = in->n - kept;
  }
  free(kept_idx);
done:
  free(key);
  free(slot);
  return st;
}

/* ---- exact-size workloads ------------------------------------------------------------------------- */
static hx_status make_tiled(wl_cloud *out, const wl_cloud *base, size_t n, double voxel, uint64_t seed,
                            hx_err *err) {
  double lo[3], hi[3];
  for (int a = 0; a < 3; a++) lo[a] = hi[a] = (double)base->xyz[a];
  for (size_t i = 0; i < base->n; i++)
    for (size_t a = 0; a < 3; a++) {
      double v = (double)base->xyz[3 * i + a];
      lo[a] = v < lo[a] ? v : lo[a];
      hi[a] = v > hi[a] ? v : hi[a];
    }
  /* pitch = extent + 2 voxels: a copy jittered by < voxel/2 never reaches its neighbour's voxels */
  double pitch_x = hi[0] - lo[0] + 2.0 * voxel, pitch_y = hi[1] - lo[1] + 2.0 * voxel;
  size_t copies = n / base->n + 2;
  for (int round = 0; round < 16; round++, copies += copies / 4 + 2) {
    size_t cols = 1;
    while (cols * cols < copies) cols++;
    wl_cloud all, uniq;
    size_t total;
    if (!wl_mul_ok(copies, base->n, &total)) return hx_errf(err, HX_ENOMEM, "tiling: size overflows");
    WL_PASS(wl_cloud_alloc(&all, total, err));
    for (size_t c = 0; c < copies; c++) {
      double off[3] = {(double)(c % cols) * pitch_x, (double)(c / cols) * pitch_y, 0.0};
      for (int a = 0; c > 0 && a < 3; a++) /* copy 0 is the source itself */
        off[a] += (hx_rng_unit(seed, WL_STREAM_TILE_JITTER, 3 * c + (uint64_t)a) - 0.5) * 0.98 * voxel;
      for (size_t i = 0; i < base->n; i++)
        for (size_t a = 0; a < 3; a++)
          all.xyz[3 * (c * base->n + i) + a] = (float)((double)base->xyz[3 * i + a] + off[a]);
    }
    hx_status st = wl_voxel_dedup(&uniq, &all, voxel, NULL, err);
    wl_cloud_free(&all);
    if (st != HX_OK) return st;
    if (uniq.n >= n) {
      st = wl_subsample(out, &uniq, n, seed, err);
      wl_cloud_free(&uniq);
      return st;
    }
    wl_cloud_free(&uniq);
  }
  return hx_errf(err, HX_EINVAL, "tiling: could not reach %zu unique voxels from %zu", n, base->n);
}

hx_status wl_make_exact(wl_cloud *out, wl_kind kind, const wl_cloud *source, size_t n, double voxel,
                        uint64_t seed, int *tiled, hx_err *err) {
  wl_cloud_clear(out);
  if (tiled) *tiled = 0;
  if (!(voxel > 0.0) || !isfinite(voxel)) return hx_errf(err, HX_EINVAL, "voxel size %g is not positive", voxel);
  if (n == 0) return HX_OK;
  wl_cloud uniq;
  hx_status st;
  if (source) {
    WL_PASS(wl_voxel_dedup(&uniq, source, voxel, NULL, err));
    if (uniq.n == 0) return hx_errf(err, HX_EINVAL, "make_exact: the source cloud is empty");
    if (uniq.n < n) {
      st = make_tiled(out, &uniq, n, voxel, seed, err);
      wl_cloud_free(&uniq);
      if (st == HX_OK && tiled) *tiled = 1;
      return st;
    }
  } else {
    if ((unsigned)kind >= WL_KIND_COUNT) return hx_errf(err, HX_EINVAL, "make_exact: unknown kind %d", (int)kind);
    size_t m = n, prev_u = 0;
    for (int round = 0;; round++) {
      wl_cloud raw;
      WL_PASS(wl_generate(&raw, kind, m, seed, err));
      st = wl_voxel_dedup(&uniq, &raw, voxel, NULL, err);
      wl_cloud_free(&raw);
      if (st != HX_OK) return st;
      if (uniq.n >= n) break;
      size_t u = uniq.n;
      wl_cloud_free(&uniq);
      /* Saturation guard: a generator whose surfaces hold fewer than n voxels would make m grow without
       * bound; stop when a round adds under 1% unique points or m passes 32 n. */
      if (round == 24 || m > SIZE_MAX / 16 || m / 32 > n || (round > 0 && u - prev_u < prev_u / 100 + 1))
        return hx_errf(err, HX_EINVAL, "make_exact: %s gives only %zu unique voxels (of %zu wanted) at voxel %g "
                       "from %zu raw points", wl_kind_name(kind), u, n, voxel, m);
      prev_u = u;
      /* grow by the observed unique fraction plus 5%, at least 1/8 more, at most 8x per round */
      double want = (double)m * (double)n / (double)(u ? u : 1) * 1.05 + 64.0;
      double lim = (double)m * 8.0;
      size_t next = (size_t)(want < lim ? want : lim);
      m = next > m + m / 8 ? next : m + m / 8 + 1;
    }
  }
  st = wl_subsample(out, &uniq, n, seed, err);
  wl_cloud_free(&uniq);
  return st;
}
