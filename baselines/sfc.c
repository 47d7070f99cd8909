/*
 * sfc.c - CPU reference of PTv3's serialization (ptv3.md section 1): GridSample grid coordinates,
 * one-point-per-voxel dedup, depth, the four curve orders with batch bits, argsort + inverse per row,
 * and the seeded row shuffle.
 *
 * Invariant after sfc_encode_cpu + sfc_sort_cpu: for every row r, code[r][order[r][j]] is non-decreasing
 * in j, ties broken by point index, and inverse[r][order[r][j]] == j; because the batch index sits above
 * bit 3*depth, the sorted positions of cloud b are exactly [offset[b], offset[b+1]).
 */
#include "baselines/sfc_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const sfc_order_names[SFC_ORDER_COUNT] = {"z", "z-trans", "hilbert", "hilbert-trans"};

const char *sfc_order_name(sfc_order o) {
  return (unsigned)o < SFC_ORDER_COUNT ? sfc_order_names[o] : "?";
}

hx_status sfc_order_parse(const char *name, sfc_order *out) {
  for (int i = 0; i < SFC_ORDER_COUNT; i++) {
    if (strcmp(name, sfc_order_names[i]) == 0) {
      *out = (sfc_order)i;
      return HX_OK;
    }
  }
  return HX_EINVAL;
}

hx_status sfc_orders_parse(const char *list, sfc_order *orders, int *count, hx_err *err) {
  int k = 0;
  const char *p = list;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char name[32];
    if (len == 0 || len >= sizeof name)
      return hx_errf(err, HX_EINVAL, "orders '%s': empty or overlong name", list);
    memcpy(name, p, len);
    name[len] = '\0';
    sfc_order o;
    if (sfc_order_parse(name, &o) != HX_OK)
      return hx_errf(err, HX_EINVAL, "orders: unknown order '%s' (z, z-trans, hilbert, hilbert-trans)", name);
    for (int j = 0; j < k; j++)
      if (orders[j] == o) return hx_errf(err, HX_EINVAL, "orders: '%s' given twice", name);
    if (k == SFC_MAX_ORDERS) return hx_errf(err, HX_EINVAL, "orders: more than %d", SFC_MAX_ORDERS);
    orders[k++] = o;
    p += len;
    if (*p == ',' && *++p == '\0') return hx_errf(err, HX_EINVAL, "orders '%s': empty name after the last comma", list);
  }
  if (k == 0) return hx_errf(err, HX_EINVAL, "orders: empty list");
  *count = k;
  return HX_OK;
}

uint64_t sfc_code_point(sfc_order o, uint32_t x, uint32_t y, uint32_t z, int depth) {
  switch (o) {
    case SFC_Z: return sfc_z_ref(x, y, z, depth);
    case SFC_Z_TRANS: return sfc_z_ref(y, x, z, depth);
    case SFC_HILBERT: return sfc_hilbert_ref(x, y, z, depth);
    case SFC_HILBERT_TRANS: return sfc_hilbert_ref(y, x, z, depth);
    default: return 0;
  }
}

int sfc_key_bits(int depth, uint32_t B) { return 3 * depth + (B > 1 ? sfc_bit_length(B - 1u) : 0); }

static hx_status check_offsets(const size_t *offset, uint32_t B, hx_err *err) {
  if (B == 0) return hx_errf(err, HX_EINVAL, "no clouds in the batch");
  if (offset[0] != 0) return hx_errf(err, HX_EINVAL, "offset[0] = %zu, must be 0", offset[0]);
  for (uint32_t b = 0; b < B; b++) {
    if (offset[b + 1] <= offset[b]) return hx_errf(err, HX_EINVAL, "cloud %u is empty", b);
  }
  if (offset[B] > UINT32_MAX) return hx_errf(err, HX_EINVAL, "%zu points: more than 2^32-1", offset[B]);
  return HX_OK;
}

hx_status sfc_batch_index_cpu(uint32_t *batch, const size_t *offset, uint32_t B, hx_err *err) {
  HX_TRY(check_offsets(offset, B, err));
  for (uint32_t b = 0; b < B; b++)
    for (size_t i = offset[b]; i < offset[b + 1]; i++) batch[i] = b;
  return HX_OK;
}

hx_status sfc_grid_cpu(uint32_t *grid, uint32_t *max_coord, const float *xyz, const size_t *offset,
                       uint32_t B, double grid_size, hx_err *err) {
  if (!(grid_size > 0.0) || !isfinite(grid_size))
    return hx_errf(err, HX_EINVAL, "grid size %g: must be a positive number", grid_size);
  HX_TRY(check_offsets(offset, B, err));
  uint32_t gmax = 0;
  for (uint32_t b = 0; b < B; b++) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = offset[b]; i < offset[b + 1]; i++) {
      for (int a = 0; a < 3; a++) {
        const double v = floor((double)xyz[3 * i + (size_t)a] / grid_size);
        if (!isfinite(v)) return hx_errf(err, HX_EINVAL, "cloud %u point %zu: non-finite coordinate", b, i - offset[b]);
        if (v < lo[a]) lo[a] = v;
        if (v > hi[a]) hi[a] = v;
      }
    }
    for (int a = 0; a < 3; a++) {
      if (hi[a] - lo[a] > 2147483647.0)
        return hx_errf(err, HX_EINVAL, "cloud %u: extent of %.0f grid cells along axis %d does not fit 31 bits",
                       b, hi[a] - lo[a], a);
    }
    for (size_t i = offset[b]; i < offset[b + 1]; i++) {
      for (int a = 0; a < 3; a++) {
        /* floor(v) - floor(min) is an exact integer in double (both < 2^53), so the cast is exact. */
        const uint32_t g = (uint32_t)(floor((double)xyz[3 * i + (size_t)a] / grid_size) - lo[a]);
        grid[3 * i + (size_t)a] = g;
        if (g > gmax) gmax = g;
      }
    }
  }
  if (max_coord) *max_coord = gmax;
  return HX_OK;
}

/* Open-addressing set of voxels, keyed by the point index of the first point seen (index + 1; 0 = empty). */
static uint64_t voxel_hash(const uint32_t *g) {
  return hx_mix64((uint64_t)g[0] * 0x9E3779B97F4A7C15ull ^ hx_mix64((uint64_t)g[1] << 32 | g[2]));
}

hx_status sfc_dedup_cpu(uint32_t *keep, size_t *offset_out, size_t *dropped, const uint32_t *grid,
                        const size_t *offset, uint32_t B, hx_err *err) {
  HX_TRY(check_offsets(offset, B, err));
  size_t maxn = 0;
  for (uint32_t b = 0; b < B; b++)
    if (offset[b + 1] - offset[b] > maxn) maxn = offset[b + 1] - offset[b];
  size_t cap = 16;
  while (cap < 2 * maxn) cap <<= 1;
  uint32_t *table = malloc(cap * sizeof *table);
  if (!table) return hx_errf(err, HX_ENOMEM, "dedup: %zu-slot table", cap);
  size_t k = 0;
  offset_out[0] = 0;
  for (uint32_t b = 0; b < B; b++) {
    size_t nb = offset[b + 1] - offset[b], c = 16;
    while (c < 2 * nb) c <<= 1; /* load factor <= 1/2 */
    memset(table, 0, c * sizeof *table);
    for (size_t i = offset[b]; i < offset[b + 1]; i++) {
      const uint32_t *g = grid + 3 * i;
      size_t h = (size_t)voxel_hash(g) & (c - 1);
      int seen = 0;
      while (table[h]) {
        const uint32_t *o = grid + 3 * (size_t)(table[h] - 1);
        if (o[0] == g[0] && o[1] == g[1] && o[2] == g[2]) {
          seen = 1;
          break;
        }
        h = (h + 1) & (c - 1);
      }
      if (!seen) {
        table[h] = (uint32_t)i + 1u;
        keep[k++] = (uint32_t)i;
      }
    }
    offset_out[b + 1] = k;
  }
  free(table);
  if (dropped) *dropped = offset[B] - k;
  return HX_OK;
}

hx_status sfc_depth(int *depth, uint32_t max_coord, uint32_t B, double grid_size, hx_err *err) {
  const int d = sfc_bit_length((uint64_t)max_coord + 1u);
  const int bb = sfc_bit_length(B); /* PTv3: len(offset).bit_length(), offset has B entries */
  if (d <= SFC_MAX_DEPTH && 3 * d + bb <= 63) {
    *depth = d;
    return HX_OK;
  }
  int dmax = (63 - bb) / 3;
  if (dmax > SFC_MAX_DEPTH) dmax = SFC_MAX_DEPTH;
  /* The extent spans max+1 cells; with the grid scaled by f it spans at most (max+1)/f + 1 cells, and
   * depth <= dmax needs max'+1 <= 2^dmax - 1, so f = (max+2)/(2^dmax - 2) is enough. */
  char hint[96] = "";
  if (grid_size > 0.0) {
    const double f = ((double)max_coord + 2.0) / (ldexp(1.0, dmax) - 2.0);
    const double g = grid_size * f * 1.001;
    const double p = pow(10.0, floor(log10(g)) - 2.0); /* round up at three significant digits */
    snprintf(hint, sizeof hint, "; a grid size of %g or more would fit", ceil(g / p) * p);
  }
  if (d > SFC_MAX_DEPTH)
    return hx_errf(err, HX_EINVAL,
                   "depth %d > %d: the largest grid coordinate is %u (PTv3 asserts depth <= 16)%s", d,
                   SFC_MAX_DEPTH, max_coord, hint);
  return hx_errf(err, HX_EINVAL, "depth %d with %u clouds needs 3*%d + %d = %d > 63 key bits%s", d, B, d, bb,
                 3 * d + bb, hint);
}

hx_status sfc_encode_cpu(uint64_t *code, const uint32_t *grid, const uint32_t *batch, size_t n, int depth,
                         const sfc_order *orders, int R, hx_err *err) {
  if (depth < 1 || depth > SFC_MAX_DEPTH) return hx_errf(err, HX_EINVAL, "depth %d outside 1..16", depth);
  if (R < 1 || R > SFC_MAX_ORDERS) return hx_errf(err, HX_EINVAL, "%d orders, want 1..4", R);
  for (int r = 0; r < R; r++) {
    if ((unsigned)orders[r] >= SFC_ORDER_COUNT) return hx_errf(err, HX_EINVAL, "bad order %d", (int)orders[r]);
    for (size_t i = 0; i < n; i++) {
      const uint32_t *g = grid + 3 * i;
      const uint64_t b = batch ? batch[i] : 0u;
      code[(size_t)r * n + i] = b << (3 * depth) | sfc_code_point(orders[r], g[0], g[1], g[2], depth);
    }
  }
  return HX_OK;
}

int sfc_key_idx_cmp(const void *pa, const void *pb) {
  const sfc_key_idx *a = pa, *b = pb;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

hx_status sfc_sort_cpu(uint32_t *order, uint32_t *inverse, const uint64_t *code, size_t n, int R,
                       hx_err *err) {
  if (n > UINT32_MAX) return hx_errf(err, HX_EINVAL, "%zu points: more than 2^32-1", n);
  if (n == 0) return HX_OK;
  sfc_key_idx *tmp = malloc(n * sizeof *tmp);
  if (!tmp) return hx_errf(err, HX_ENOMEM, "sort: %zu keys", n);
  for (int r = 0; r < R; r++) {
    const uint64_t *c = code + (size_t)r * n;
    for (size_t i = 0; i < n; i++) tmp[i] = (sfc_key_idx){c[i], (uint32_t)i};
    qsort(tmp, n, sizeof *tmp, sfc_key_idx_cmp);
    for (size_t j = 0; j < n; j++) {
      order[(size_t)r * n + j] = tmp[j].idx;
      if (inverse) inverse[(size_t)r * n + tmp[j].idx] = (uint32_t)j;
    }
  }
  free(tmp);
  return HX_OK;
}

void sfc_row_perm(int *perm, int R, uint64_t seed, uint64_t counter) {
  for (int k = 0; k < R; k++) perm[k] = k;
  for (int k = R - 1; k > 0; k--) {
    const int j = (int)(hx_rng_u64(seed, SFC_RNG_STREAM, counter * 16u + (uint64_t)k) % (uint64_t)(k + 1));
    const int t = perm[k];
    perm[k] = perm[j];
    perm[j] = t;
  }
}
