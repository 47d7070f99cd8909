/*
 * test_spconv_util.h - test clouds for the submanifold convolution tests: B clouds of distinct voxels drawn
 * from a box (side `box`, corner `base`), rows in a random order with the clouds interleaved, so neither the
 * map nor the convolution can lean on sorted input.
 */
#ifndef F3D_TEST_SPCONV_UTIL_H
#define F3D_TEST_SPCONV_UTIL_H

#include <stdint.h>
#include <stdlib.h>

#include "base/base.h"

typedef struct tcloud {
  uint32_t n;
  uint32_t *grid;  /* [n*3] */
  uint32_t *batch; /* [n] */
} tcloud;

/* per[c] voxels for each of B clouds (per[c] <= box^3), distinct within a cloud; cloud c's corner is base[c]
 * (x, y, z). Returns 0 on allocation failure. */
static inline int tcloud_make(tcloud *t, uint32_t B, const uint32_t *per, uint32_t box, const uint32_t *base,
                              uint64_t seed) {
  const uint32_t cells = box * box * box;
  uint32_t n = 0;
  for (uint32_t c = 0; c < B; ++c) n += per[c];
  t->n = n;
  t->grid = malloc(((size_t)n * 3u + 1u) * sizeof(uint32_t));
  t->batch = malloc(((size_t)n + 1u) * sizeof(uint32_t));
  uint32_t *cell = malloc((size_t)cells * sizeof(uint32_t));
  uint32_t *perm = malloc(((size_t)n + 1u) * sizeof(uint32_t));
  if (!t->grid || !t->batch || !cell || !perm) {
    free(t->grid), free(t->batch), free(cell), free(perm);
    t->grid = t->batch = NULL;
    return 0;
  }
  for (uint32_t i = 0; i < n; ++i) perm[i] = i;
  for (uint32_t i = n; i > 1; --i) { /* Fisher-Yates: row order */
    const uint32_t j = (uint32_t)(hx_rng_u64(seed, 1, i) % i), tmp = perm[i - 1u];
    perm[i - 1u] = perm[j], perm[j] = tmp;
  }
  uint32_t row = 0;
  for (uint32_t c = 0; c < B; ++c) {
    for (uint32_t v = 0; v < cells; ++v) cell[v] = v;
    for (uint32_t v = 0; v < per[c]; ++v) { /* partial Fisher-Yates: per[c] distinct cells */
      const uint32_t j = v + (uint32_t)(hx_rng_u64(seed, 2u + c, v) % (cells - v)), tmp = cell[v];
      cell[v] = cell[j], cell[j] = tmp;
      const uint32_t r = perm[row++];
      t->grid[3u * r + 0u] = base[3u * c + 0u] + cell[v] / (box * box);
      t->grid[3u * r + 1u] = base[3u * c + 1u] + (cell[v] / box) % box;
      t->grid[3u * r + 2u] = base[3u * c + 2u] + cell[v] % box;
      t->batch[r] = c;
    }
  }
  free(cell), free(perm);
  return 1;
}

static inline void tcloud_free(tcloud *t) {
  free(t->grid), free(t->batch);
  t->grid = t->batch = NULL;
  t->n = 0;
}

#endif /* F3D_TEST_SPCONV_UTIL_H */
