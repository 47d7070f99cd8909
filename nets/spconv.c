/*
 * spconv.c - submanifold sparse 3D convolution, CPU side: the reference kernel map, the reference
 * convolution, and the variant table (both builds; spconv.cu or spconv_stub.c define the functions).
 *
 * The map: rows sorted by their packed voxel key (spc_pack_key: batch, x, y, z), so equal voxels of one
 * cloud are adjacent (HX_EINVAL naming both rows) and each of the n * K neighbour queries is a binary search.
 * Invariant: nbr[i*K + o] = j exactly when voxel(j) = voxel(i) + d(o) in the same cloud, where
 * d(o) = (o / k^2, (o / k) % k, o % k) - r; else -1. No neighbour is sought outside [0, 2^18) per axis, so
 * the key's 18-bit fields never wrap. This is deliberately a different algorithm from the GPU's hash table:
 * the tests compare the two maps exactly.
 *
 * The convolution: y[i] = b + sum_o W[:, o, :] x[nbr[i*K + o]], plain fp32, offsets in index order.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nets/nets_internal.h"
#include "nets/spconv_internal.h"

#define SPC_COORD_LIMIT (1u << 18)
#define SPC_BATCH_LIMIT (1u << 10)

typedef struct spc_keyrow {
  uint64_t key;
  uint32_t row;
} spc_keyrow;

static int spc_keyrow_cmp(const void *pa, const void *pb) {
  const spc_keyrow *a = (const spc_keyrow *)pa, *b = (const spc_keyrow *)pb;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->row < b->row ? -1 : (a->row > b->row);
}

/* Row of the voxel with this key, or -1 (s sorted by key, keys unique). */
static int32_t spc_find(const spc_keyrow *s, uint32_t n, uint64_t key) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2u;
    if (s[mid].key < key) lo = mid + 1u;
    else hi = mid;
  }
  return lo < n && s[lo].key == key ? (int32_t)s[lo].row : -1;
}

/* On failure *m is zeroed and nothing stays allocated. */
hx_status spc_map_cpu(spc_map *m, const uint32_t *grid, const uint32_t *batch, uint32_t n, uint32_t k, hx_err *err) {
  if (!m) return hx_errf(err, HX_EINVAL, "spc_map_cpu: NULL map");
  memset(m, 0, sizeof *m);
  if (k != 3u && k != 5u) return hx_errf(err, HX_EINVAL, "spc_map_cpu: kernel side %u (3 or 5 only)", k);
  const uint32_t K = k * k * k;
  if ((uint64_t)n * K > (uint64_t)INT32_MAX)
    return hx_errf(err, HX_EINVAL, "spc_map_cpu: %u rows x %u offsets exceed 2^31 map entries", n, K);
  if (n && !grid) return hx_errf(err, HX_EINVAL, "spc_map_cpu: NULL grid for %u rows", n);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t *g = grid + 3u * (size_t)i;
    if (g[0] >= SPC_COORD_LIMIT || g[1] >= SPC_COORD_LIMIT || g[2] >= SPC_COORD_LIMIT)
      return hx_errf(err, HX_EINVAL, "spc_map_cpu: row %u: voxel (%u, %u, %u) outside [0, 2^18) per axis", i, g[0],
                     g[1], g[2]);
    if (batch && batch[i] >= SPC_BATCH_LIMIT)
      return hx_errf(err, HX_EINVAL, "spc_map_cpu: row %u: batch %u >= 2^10", i, batch[i]);
  }
  m->n = n, m->k = k, m->K = K, m->order = NULL, m->tiles = NULL, m->tile_rows = 0;
  m->opairs[K / 2u] = n; /* an empty map is trivially counted */
  if (!n) return HX_OK;

  spc_keyrow *s = malloc((size_t)n * sizeof *s);
  int32_t *nbr = malloc((size_t)n * K * sizeof *nbr);
  if (!s || !nbr) {
    free(s), free(nbr);
    memset(m, 0, sizeof *m);
    return hx_errf(err, HX_ENOMEM, "spc_map_cpu: %u rows: out of host memory", n);
  }
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t *g = grid + 3u * (size_t)i;
    s[i].key = spc_pack_key(batch ? batch[i] : 0u, g[0], g[1], g[2]);
    s[i].row = i;
  }
  qsort(s, n, sizeof *s, spc_keyrow_cmp);
  for (uint32_t t = 1; t < n; ++t)
    if (s[t].key == s[t - 1u].key) {
      const uint32_t a = s[t - 1u].row, b = s[t].row;
      const uint32_t *g = grid + 3u * (size_t)a;
      hx_errf(err, HX_EINVAL, "spc_map_cpu: rows %u and %u are the same voxel (%u, %u, %u) of cloud %u", a, b, g[0],
              g[1], g[2], batch ? batch[a] : 0u);
      free(s), free(nbr);
      memset(m, 0, sizeof *m);
      return HX_EINVAL;
    }

  const int r = (int)(k / 2u);
  memset(m->opairs, 0, sizeof m->opairs);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t *g = grid + 3u * (size_t)i;
    const uint32_t b = batch ? batch[i] : 0u;
    for (uint32_t o = 0; o < K; ++o) {
      const int64_t x = (int64_t)g[0] + (int64_t)(o / (k * k)) - r;
      const int64_t y = (int64_t)g[1] + (int64_t)((o / k) % k) - r;
      const int64_t z = (int64_t)g[2] + (int64_t)(o % k) - r;
      int32_t j = -1;
      if (x >= 0 && y >= 0 && z >= 0 && x < SPC_COORD_LIMIT && y < SPC_COORD_LIMIT && z < SPC_COORD_LIMIT)
        j = spc_find(s, n, spc_pack_key(b, (uint32_t)x, (uint32_t)y, (uint32_t)z));
      nbr[(size_t)i * K + o] = j;
      if (j >= 0) m->opairs[o]++, m->pairs++;
    }
  }
  free(s);
  m->nbr = nbr;
  return HX_OK;
}

void spc_map_free_host(spc_map *m) {
  if (!m) return;
  free(m->nbr);
  memset(m, 0, sizeof *m);
}

typedef struct conv_job {
  float *y;
  const float *x, *w, *b;
  const spc_map *m;
  size_t in, out;
} conv_job;

static void conv_rows(void *ctx, size_t i0, size_t i1) {
  const conv_job *c = ctx;
  const size_t K = c->m->K;
  for (size_t i = i0; i < i1; ++i) {
    float *yi = c->y + i * c->out;
    for (size_t co = 0; co < c->out; ++co) yi[co] = c->b ? c->b[co] : 0.0f;
    for (size_t o = 0; o < K; ++o) {
      const int32_t j = c->m->nbr[i * K + o];
      if (j < 0) continue;
      const float *xj = c->x + (size_t)j * c->in;
      /* four output channels at a time, each its own chain over ci ascending (the bits of one at a time) */
      const size_t step = K * c->in; /* w[co + 1][o] - w[co][o] */
      for (size_t co = 0; co < c->out; co += 4) {
        const size_t nc = c->out - co < 4 ? c->out - co : 4;
        const float *w0 = c->w + (co * K + o) * c->in, *w1 = nc > 1 ? w0 + step : w0,
                    *w2 = nc > 2 ? w0 + 2 * step : w0, *w3 = nc > 3 ? w0 + 3 * step : w0; /* past out: unused */
        float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (size_t ci = 0; ci < c->in; ++ci) {
          const float xv = xj[ci];
          a[0] += w0[ci] * xv, a[1] += w1[ci] * xv, a[2] += w2[ci] * xv, a[3] += w3[ci] * xv;
        }
        for (size_t q = 0; q < nc; ++q) yi[co + q] += a[q];
      }
    }
  }
}

hx_status spc_conv_cpu(float *y, const float *x, const float *w, const float *b, const spc_map *m, size_t in,
                       size_t out, hx_err *err) {
  if (!m) return hx_errf(err, HX_EINVAL, "spc_conv_cpu: NULL map");
  if (!in || !out) return hx_errf(err, HX_EINVAL, "spc_conv_cpu: %zu -> %zu channels (both must be > 0)", in, out);
  if ((m->k != 3u && m->k != 5u) || m->K != m->k * m->k * m->k)
    return hx_errf(err, HX_EINVAL, "spc_conv_cpu: map of kernel side %u with %u offsets is not a map", m->k, m->K);
  if (!m->n) return HX_OK;
  if (!y || !x || !w || !m->nbr) return hx_errf(err, HX_EINVAL, "spc_conv_cpu: NULL y, x, w or map entries");
  const size_t K = m->K;
  for (size_t i = 0; i < (size_t)m->n * K; ++i) /* every entry checked before any row is computed */
    if (m->nbr[i] >= 0 && (uint32_t)m->nbr[i] >= m->n)
      return hx_errf(err, HX_EINVAL, "spc_conv_cpu: map entry (%zu, %zu) = %d outside %u rows", i / K, i % K,
                     (int)m->nbr[i], m->n);
  conv_job c = {y, x, w, b, m, in, out};
  /* output rows are independent: split them over the CPUs */
  hx_par_for(m->n, 1 + 65536 / (K * in * out / 4 + 1), conv_rows, &c);
  return HX_OK;
}

/* The fold as a GEMM, w2 = lw w, in double: groups of FOLD_ROWS output rows over the CPUs, each walking w's rows
 * (co) once per FOLD_COLS-wide column tile with the tile's sums in acc, so w streams contiguously. Each sum adds
 * co = 0, 1, ... to 0.0 in turn: the bits of the dot product taken one output at a time. (That dot product walked w
 * with a stride of K in: 27 C^3 strided loads, ~22 s per PTv3 create on an H200's host, most at C = 512.) */
enum { FOLD_ROWS = 8, FOLD_COLS = 512 };
typedef struct fold_job {
  float *w2;
  const float *w, *lw;
  size_t R, out, out2;
  double *acc; /* [out2][FOLD_COLS]: group g's rows from g FOLD_ROWS */
} fold_job;

static void fold_rows(void *ctx, size_t g0, size_t g1) {
  const fold_job *f = ctx;
  for (size_t g = g0; g < g1; ++g) {
    const size_t c0 = g * FOLD_ROWS, nr = f->out2 - c0 < FOLD_ROWS ? f->out2 - c0 : FOLD_ROWS;
    double *acc = f->acc + c0 * FOLD_COLS;
    for (size_t t0 = 0; t0 < f->R; t0 += FOLD_COLS) {
      const size_t nt = f->R - t0 < FOLD_COLS ? f->R - t0 : FOLD_COLS;
      memset(acc, 0, nr * FOLD_COLS * sizeof *acc);
      for (size_t co = 0; co < f->out; ++co) {
        const float *wr = f->w + co * f->R + t0;
        for (size_t q = 0; q < nr; ++q) {
          const double l = (double)f->lw[(c0 + q) * f->out + co];
          double *a = acc + q * FOLD_COLS;
          for (size_t i = 0; i < nt; ++i) a[i] += l * (double)wr[i];
        }
      }
      for (size_t q = 0; q < nr; ++q)
        for (size_t i = 0; i < nt; ++i) f->w2[(c0 + q) * f->R + t0 + i] = (float)acc[q * FOLD_COLS + i];
    }
  }
}

hx_status spc_fold_linear_cpu(float *w2, float *b2, const float *w, const float *b, const float *lw, const float *lb,
                              size_t in, size_t out, size_t out2, uint32_t K, hx_err *err) {
  if (!w2 || !b2 || !w || !lw) return hx_errf(err, HX_EINVAL, "spc_fold_linear_cpu: NULL weights");
  if (!in || !out || !out2 || (K != 27u && K != 125u))
    return hx_errf(err, HX_EINVAL, "spc_fold_linear_cpu: %zu -> %zu -> %zu channels, %u offsets", in, out, out2, K);
  fold_job f = {w2, w, lw, (size_t)K * in, out, out2, malloc(out2 * FOLD_COLS * sizeof(double))};
  if (!f.acc) return hx_errf(err, HX_ENOMEM, "spc_fold_linear_cpu: %zu rows of sums", out2);
  hx_par_for((out2 + FOLD_ROWS - 1) / FOLD_ROWS, 1, fold_rows, &f);
  free(f.acc);
  for (size_t c2 = 0; c2 < out2; ++c2) {
    const float *l = lw + c2 * out;
    double s = lb ? (double)lb[c2] : 0.0;
    for (size_t co = 0; b && co < out; ++co) s += (double)l[co] * (double)b[co];
    b2[c2] = (float)s;
  }
  return HX_OK;
}

/* spc_stem_gpu's reference: the convolution on the k = 5 map, then the affine and the activation, in fp32. */
hx_status spc_stem_cpu(float *y, const float *x, const float *w, const float *b, const float *scale, const float *shift,
                       nl_act act, const spc_map *m, size_t in, size_t out, hx_err *err) {
  if (!m || m->k != 5u)
    return hx_errf(err, HX_EINVAL, "spc_stem_cpu: %s", m ? "the map is not a k = 5 map" : "NULL map");
  if (!scale != !shift) return hx_errf(err, HX_EINVAL, "spc_stem_cpu: scale and shift go together");
  HX_TRY(spc_conv_cpu(y, x, w, b, m, in, out, err));
  if (scale) return nl_affine_act_cpu(y, y, scale, shift, m->n, out, act, err);
  float *one = malloc(2u * out * sizeof(float)); /* no affine: scale 1, shift 0 */
  if (!one) return hx_errf(err, HX_ENOMEM, "spc_stem_cpu: %zu channels", out);
  for (size_t c = 0; c < out; ++c) one[c] = 1.0f, one[out + c] = 0.0f;
  const hx_status st = nl_affine_act_cpu(y, y, one, one + out, m->n, out, act, err);
  free(one);
  return st;
}

/* ---- v3's row order -------------------------------------------------------------------------------- */
static uint32_t row_mask(const spc_map *m, uint32_t i) {
  uint32_t mask = 0;
  for (uint32_t o = 0; o < m->K; ++o) {
    const int32_t j = m->nbr[(size_t)i * m->K + o];
    mask |= (j >= 0 && (uint32_t)j < m->n ? 1u : 0u) << o;
  }
  return mask;
}

hx_status spc_mask_order_cpu(uint32_t *order, const spc_map *m, hx_err *err) {
  if (!order || !m || (m->n && !m->nbr)) return hx_errf(err, HX_EINVAL, "spc_mask_order_cpu: NULL argument");
  if (m->K > 32u) return hx_errf(err, HX_EINVAL, "spc_mask_order_cpu: %u offsets do not fit a 32-bit mask", m->K);
  uint64_t *key = malloc((m->n ? m->n : 1) * sizeof *key);
  if (!key) return hx_errf(err, HX_ENOMEM, "spc_mask_order_cpu: %u rows", m->n);
  for (uint32_t i = 0; i < m->n; ++i) key[i] = (uint64_t)row_mask(m, i) << 32 | i; /* (mask, row): stable */
  /* LSD radix sort of the 64-bit keys, 16 bits a pass (the row half is already in order: passes over bits 32..63) */
  uint64_t *tmp = malloc((m->n ? m->n : 1) * sizeof *tmp);
  size_t *count = malloc(65537 * sizeof *count);
  if (!tmp || !count) {
    free(key), free(tmp), free(count);
    return hx_errf(err, HX_ENOMEM, "spc_mask_order_cpu: %u rows", m->n);
  }
  for (int shift = 32; shift < 64; shift += 16) {
    memset(count, 0, 65537 * sizeof *count);
    for (uint32_t i = 0; i < m->n; ++i) count[((key[i] >> shift) & 0xFFFFu) + 1]++;
    for (size_t b = 1; b < 65537; ++b) count[b] += count[b - 1];
    for (uint32_t i = 0; i < m->n; ++i) tmp[count[(key[i] >> shift) & 0xFFFFu]++] = key[i];
    uint64_t *t = key;
    key = tmp, tmp = t;
  }
  for (uint32_t i = 0; i < m->n; ++i) order[i] = (uint32_t)key[i];
  free(key), free(tmp), free(count);
  return HX_OK;
}

uint64_t spc_group_steps_cpu(const spc_map *m, const uint32_t *order) {
  if (!m || !m->nbr || m->K > 32u) return 0;
  uint64_t steps = 0;
  for (uint32_t g = 0; g < m->n; g += 16u) {
    uint32_t any = 0;
    for (uint32_t r = g; r < g + 16u && r < m->n; ++r) any |= row_mask(m, order ? order[r] : r);
    steps += (uint64_t)__builtin_popcount(any);
  }
  return steps;
}

/* One stamp per input row (the last tile that named it, + 1): a tile's walk over its rows' K entries counts a row
 * the first time its stamp is not the tile's. O(n K) time, 4 n bytes. */
hx_status spc_tile_halos_cpu(uint32_t *halo, const spc_map *m, const uint32_t *order, uint32_t tile, hx_err *err) {
  if (!halo || !m || (m->n && !m->nbr) || !tile)
    return hx_errf(err, HX_EINVAL, "spc_tile_halos_cpu: NULL argument or tile 0");
  uint32_t *stamp = calloc(m->n ? m->n : 1, sizeof *stamp);
  if (!stamp) return hx_errf(err, HX_ENOMEM, "spc_tile_halos_cpu: %u stamps", m->n);
  for (uint32_t t = 0; (size_t)t * tile < m->n; ++t) {
    const uint32_t r0 = t * tile, r1 = m->n - r0 < tile ? m->n : r0 + tile;
    uint32_t h = 0;
    for (uint32_t i = r0; i < r1; ++i) {
      const int32_t *e = m->nbr + (size_t)(order ? order[i] : i) * m->K;
      for (uint32_t o = 0; o < m->K; ++o)
        if (e[o] >= 0 && (uint32_t)e[o] < m->n && stamp[e[o]] != t + 1u) stamp[e[o]] = t + 1u, ++h;
    }
    halo[t] = h;
  }
  free(stamp);
  return HX_OK;
}

/* A counting sort of the tiles by their active offsets, descending; tiles of one count stay in increasing order. */
hx_status spc_tile_order_cpu(uint32_t *tiles, const spc_map *m, const uint32_t *order, uint32_t tile_rows,
                             hx_err *err) {
  if (!tiles || !m || (m->n && !m->nbr) || !tile_rows)
    return hx_errf(err, HX_EINVAL, "spc_tile_order_cpu: NULL argument or tile_rows 0");
  if (m->K > 32u) return hx_errf(err, HX_EINVAL, "spc_tile_order_cpu: %u offsets do not fit a 32-bit mask", m->K);
  const uint32_t nt = (uint32_t)(((uint64_t)m->n + tile_rows - 1u) / tile_rows);
  unsigned char *steps = malloc(nt ? nt : 1u);
  if (!steps) return hx_errf(err, HX_ENOMEM, "spc_tile_order_cpu: %u tiles", nt);
  uint32_t start[34] = {0}; /* start[32 - c] counts tiles of c steps, then becomes where they go */
  for (uint32_t t = 0; t < nt; ++t) {
    const uint32_t r0 = t * tile_rows, r1 = m->n - r0 < tile_rows ? m->n : r0 + tile_rows;
    uint32_t any = 0;
    for (uint32_t i = r0; i < r1; ++i) any |= row_mask(m, order ? order[i] : i);
    steps[t] = (unsigned char)__builtin_popcount(any);
    start[32u - steps[t] + 1u]++;
  }
  for (int b = 1; b < 34; ++b) start[b] += start[b - 1];
  for (uint32_t t = 0; t < nt; ++t) tiles[start[32u - steps[t]]++] = t;
  free(steps);
  return HX_OK;
}

/* Tiles<BN, BK>::BM of nets/spconv_wgmma.cu: 256 rows at 128-channel output slices (two 64-row blocks a consumer
 * warpgroup), 128 otherwise; the launcher uses a map's tile order only when its tile_rows equal the kernel's. */
uint32_t spc_v6_tile_rows(size_t out) { return spc_v6_slice(out) == 128u ? 256u : 128u; }

/* ---- The variant table (one list: spconv_internal.h) ---------------------------------------------- */
#define SPC_ROW_(id_, name_, fn_, rule_, order_) {id_, name_, fn_, rule_, order_},
static const spc_variant spc_table[] = {SPC_VARIANT_LIST(SPC_ROW_)};
#undef SPC_ROW_

int spc_variant_count(void) { return (int)(sizeof spc_table / sizeof spc_table[0]); }

const spc_variant *spc_variant_get(int i) { return i >= 0 && i < spc_variant_count() ? &spc_table[i] : NULL; }

const spc_variant *spc_variant_by_id(int id) {
  for (int i = 0; i < spc_variant_count(); ++i)
    if (spc_table[i].id == id) return &spc_table[i];
  return NULL;
}

/* v2 (the small-input implicit GEMM) for inputs of at most 8 channels: the stem's 4 -> 32; v8 (v7's register
 * gathers over the mask order, active offsets only) for k = 3 at 32 input channels (PTv3's level-0 encoder), where it
 * measured faster than v7 and v6 (H200, 600k points: enc0's xCPE 0.445 against 0.480 ms on v7 and 0.649 on v6; at 64
 * channels it is slower than v6: dec0 0.937 against 0.671, docs/spconv.md "v8"); v1's channel rule (every other xCPE
 * width of PTv3, 64 .. 512): v3 (v1's kernel over mask-sorted rows) at k = 3, where it measured faster than v1 at
 * every level of PTv3's forward (H200, 600k points: xCPE 17.1 -> 14.1 ms; spconv alone at C = 64 0.97 -> 0.70 ms,
 * C = 256 8.64 -> 3.97 ms), and v1 at other K (v3 sorts 27-bit masks only); v0 otherwise. Looked up by id, so the
 * rule does not depend on the table's order. */
const spc_variant *spc_variant_best(size_t in, size_t out, uint32_t K) {
  const int id = spc_v2_takes(in, out)                           ? 2
                 : K == 27u && in == 32u && spc_v7_takes(in, out) ? 8
                 : spc_v1_takes(in, out)                         ? (K == 27u ? 3 : 1)
                                                                 : 0;
  const spc_variant *v = spc_variant_by_id(id);
  return v ? v : &spc_table[0];
}

int spc_variant_takes(const spc_variant *v, size_t in, size_t out, uint32_t K) {
  if (!v) return 0;
  switch (v->id) { /* v0-v2 at any K (the launch refuses maps other than k = 3 and 5) */
  case 0: return in && out;
  case 1: return spc_v1_takes(in, out);
  case 2: return spc_v2_takes(in, out);
  case 3: case 4: case 5: return K == 27u && spc_v1_takes(in, out); /* 27-bit masks, 128 x 27 map tiles */
  case 6: return K == 27u && spc_v6_takes(in, out);
  case 7: case 8: return K == 27u && spc_v7_takes(in, out);
  default: return 0;
  }
}

hx_status spc_variant_query(const spc_variant *v, size_t in, size_t out, uint32_t K) {
  if (!v) return HX_EINVAL;
  spc_weights w;
  spc_map m;
  memset(&w, 0, sizeof w), memset(&m, 0, sizeof m);
  w.in = in, w.out = out, w.K = K, m.K = K, m.k = K == 125u ? 5u : 3u;
  size_t bytes = 0;
  hx_err e = {HX_OK, ""};
  return v->fn(NULL, NULL, &w, &m, NULL, &bytes, NULL, NET_F16, NULL, &e);
}

/* v6's size query answers HX_OK exactly when it takes the widths on this device (its sm_90a check; the stub of a
 * CPU-only build answers HX_ENODEV). */
const spc_variant *spc_variant_main(size_t in, size_t out, uint32_t K) {
  const spc_variant *best = spc_variant_best(in, out, K), *v6 = spc_variant_by_id(6);
  if (best->id != 3 || !v6) return best;
  return spc_variant_query(v6, in, out, K) == HX_OK ? v6 : best;
}
