/*
 * test_psh_util.h - clouds and buffers shared by the PSH / pooling tests (CPU and GPU): seeded random,
 * clustered and adversarial clouds built from hx_rng, and a host result bundle. Header-only (static
 * functions), private to tests/kernels.
 */
#ifndef F3D_TEST_PSH_UTIL_H
#define F3D_TEST_PSH_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

typedef enum tcloud_kind { TC_UNIFORM = 0, TC_CLUSTERED, TC_ONE_VOXEL, TC_PLANE } tcloud_kind;

/* n points of one kind, extent about 50 m, appended at xyz + 3*first. */
static inline void tcloud_fill(float *xyz, uint32_t first, uint32_t n, tcloud_kind kind, uint64_t seed) {
  for (uint32_t i = 0; i < n; i++) {
    float *p = xyz + 3 * (size_t)(first + i);
    double u = hx_rng_unit(seed, i, 0), v = hx_rng_unit(seed, i, 1), w = hx_rng_unit(seed, i, 2);
    switch (kind) {
    case TC_UNIFORM:
      p[0] = (float)(50.0 * u - 25.0);
      p[1] = (float)(50.0 * v - 25.0);
      p[2] = (float)(4.0 * w);
      break;
    case TC_CLUSTERED: {
      /* 8 tight blobs of very different sizes: most points in a few voxels' neighbourhoods */
      uint64_t c = hx_rng_u64(seed, i, 3) % 8u;
      double r = c == 0 ? 0.02 : 0.3 * (double)c;
      p[0] = (float)(5.0 * (double)c + r * (u - 0.5));
      p[1] = (float)(-3.0 * (double)c + r * (v - 0.5));
      p[2] = (float)(0.5 * (double)(c % 3) + r * (w - 0.5));
      break;
    }
    case TC_ONE_VOXEL:
      p[0] = 1.0f + (float)(0.001 * u);
      p[1] = 2.0f + (float)(0.001 * v);
      p[2] = 3.0f + (float)(0.001 * w);
      break;
    case TC_PLANE:
      p[0] = (float)(100.0 * u);
      p[1] = (float)(100.0 * v);
      p[2] = 0.0f;
      break;
    }
  }
}

/* Host buffers for one PSH run. */
typedef struct tres {
  uint32_t n, nbt;
  uint32_t *bucket, *offset, *count, *start, *slot, *perm, *counters;
  float *xyz;
} tres;

static inline int tres_alloc(tres *r, uint32_t n, uint32_t nbt) {
  memset(r, 0, sizeof *r);
  r->n = n;
  r->nbt = nbt;
  size_t nn = (size_t)n + 1, nb = (size_t)nbt + 1;
  r->bucket = malloc(nn * 4);
  r->offset = malloc(nn * 4);
  r->slot = malloc(nn * 4);
  r->perm = malloc(nn * 4);
  r->count = malloc(nb * 4);
  r->start = malloc(nb * 4);
  r->counters = malloc(PSH_NCOUNTERS * 4);
  r->xyz = malloc(nn * 12);
  return r->bucket && r->offset && r->slot && r->perm && r->count && r->start && r->counters && r->xyz;
}

static inline void tres_free(tres *r) {
  free(r->bucket);
  free(r->offset);
  free(r->slot);
  free(r->perm);
  free(r->count);
  free(r->start);
  free(r->counters);
  free(r->xyz);
  memset(r, 0, sizeof *r);
}

static inline psh_out tres_out(tres *r) {
  psh_out o = {r->bucket, r->offset, r->count, r->start, r->slot, r->perm, r->xyz, r->counters};
  return o;
}

/* Independent phase-1 count: sum over buckets of min(hist, S), with the frame recomputed here. */
static inline uint64_t tphase1_expected(const float *xyz, const uint32_t *off, uint32_t nclouds, const psh_params *p) {
  uint64_t total = 0;
  uint32_t *hist = calloc(p->nb, 4);
  for (uint32_t c = 0; c < nclouds; c++) {
    if (off[c] == off[c + 1]) continue;
    memset(hist, 0, (size_t)p->nb * 4);
    float lo[3] = {1e30f, 1e30f, 1e30f}, hi[3] = {-1e30f, -1e30f, -1e30f};
    for (uint32_t i = off[c]; i < off[c + 1]; i++)
      for (int d = 0; d < 3; d++) {
        float x = xyz[3 * (size_t)i + (size_t)d];
        lo[d] = x < lo[d] ? x : lo[d];
        hi[d] = x > hi[d] ? x : hi[d];
      }
    uint32_t maxv = 0, bd[3];
    for (int d = 0; d < 3; d++) {
      float t = floorf((hi[d] - lo[d]) / p->voxel);
      uint32_t v = t > 0 ? (uint32_t)t : 0;
      maxv = v > maxv ? v : maxv;
      bd[d] = 0;
      while (v >> bd[d]) bd[d]++;
    }
    uint32_t bits = 0;
    while (maxv >> bits) bits++;
    for (uint32_t i = off[c]; i < off[c + 1]; i++) {
      uint32_t v[3];
      for (int d = 0; d < 3; d++) {
        float t = floorf((xyz[3 * (size_t)i + (size_t)d] - lo[d]) / p->voxel);
        v[d] = t > 0 ? (uint32_t)t : 0;
        if (p->hash == PSH_ZORDER_DIV) v[d] <<= bits - bd[d]; /* axis stretch of Z-div */
      }
      hist[psh_hash_voxel(p->hash, v[0], v[1], v[2], bits, p->nb)]++;
    }
    for (uint32_t j = 0; j < p->nb; j++) total += hist[j] < p->cap ? hist[j] : p->cap;
  }
  free(hist);
  return total;
}

#endif /* F3D_TEST_PSH_UTIL_H */
