/*
 * pipe_plan.c - the main path and the ladder of the sweep (pipe_plan.h): which stages and which variants a case
 * measures. Rules are data here; the pipelines ask, so what the default sweep runs is written once.
 */
#include "app/pipe_plan.h"

#include <fnmatch.h>
#include <string.h>

/* Per pipeline that distinguishes them, the stages on the main path (fnmatch patterns of the kernel names); the
 * pipeline's other stages run only with --ladder. Why the others are off the main path:
 *   ptv3 dedup            one point per voxel: the case clouds are unique per voxel already, so it times a check
 *                         (and synchronises the host inside its call: one 2 s hold time-out per case);
 *   ptv3 encode_<order>, encode_all, sort, inverse
 *                         serialization's parts, which serialize times together (the headline's PTv3 column);
 *   ptv3 copy_<which>_C<C> a cudaMemcpy of each gather's size: the copy yardstick, which the run's measured copy
 *                         ceiling (context ceiling_copy_gbs) already gives the headline;
 *   flash3d pool_assign   pooling's assignment alone, which pool times with its reduction. */
static const struct {
  const char *pipeline, *kernel;
} main_stages[] = {
    {"ptv3", "grid"},          {"ptv3", "serialize"},  {"ptv3", "padding"},      {"ptv3", "gather_*"},
    {"ptv3", "pool"},          {"ptv3", "attn.*"},     {"flash3d", "psh.*"},     {"flash3d", "locality.*"},
    {"flash3d", "scatter_feat"}, {"flash3d", "pool"},  {"flash3d", "attn.*"},
};

int f3d_main_stage(const char *pipeline, const char *kernel) {
  int known = 0;
  for (size_t i = 0; i < sizeof main_stages / sizeof main_stages[0]; i++) {
    if (strcmp(main_stages[i].pipeline, pipeline) != 0) continue;
    known = 1;
    if (fnmatch(main_stages[i].kernel, kernel, 0) == 0) return 1;
  }
  return !known;
}

/* The naive ablation of the PSH ladder that the paper's ratio needs: v1 (global atomics) against v2 (two-stage
 * counters), in that order, on the main path beside the best entry. */
static const int psh_ablation[] = {1, 2};

/* Generic over the tables' element types: id_of(table, i) is entry i's id. */
typedef int (*id_of_fn)(const void *table, size_t i);

static size_t plan_ids(size_t *out, size_t cap, int ladder, const void *table, size_t n, id_of_fn id_of,
                       const int *ablation, size_t n_ablation, int best_id) {
  size_t k = 0;
  if (ladder) {
    for (size_t i = 0; i < n && k < cap; i++) out[k++] = i;
    return k;
  }
  int have_best = 0;
  for (size_t a = 0; a < n_ablation; a++)
    for (size_t i = 0; i < n && k < cap; i++)
      if (id_of(table, i) == ablation[a]) {
        out[k++] = i;
        have_best |= ablation[a] == best_id;
      }
  if (!have_best && best_id >= 0)
    for (size_t i = 0; i < n && k < cap; i++)
      if (id_of(table, i) == best_id) out[k++] = i;
  return k;
}

static int psh_id(const void *t, size_t i) { return ((const psh_variant *)t)[i].id; }
static int pool_id(const void *t, size_t i) { return ((const bpool_variant *)t)[i].id; }

size_t f3d_plan_psh(const psh_variant **out, size_t cap, int ladder, const psh_variant *best) {
  size_t n = 0, idx[64];
  const psh_variant *t = psh_variants(&n);
  if (cap > 64) cap = 64;
  size_t k = plan_ids(idx, cap, ladder, t, n, psh_id, psh_ablation, sizeof psh_ablation / sizeof psh_ablation[0],
                      best ? best->id : -1);
  for (size_t i = 0; i < k; i++) out[i] = &t[idx[i]];
  return k;
}

size_t f3d_plan_pool(const bpool_variant **out, size_t cap, int ladder, const bpool_variant *best) {
  size_t n = 0, idx[64];
  const bpool_variant *t = bpool_variants(&n);
  if (cap > 64) cap = 64;
  size_t k = plan_ids(idx, cap, ladder, t, n, pool_id, NULL, 0, best ? best->id : -1);
  for (size_t i = 0; i < k; i++) out[i] = &t[idx[i]];
  return k;
}

/* sfc and shuf tables are reached one entry at a time (sfc_serial_variant_get, shuf_gather_variant_get) */
static int serial_id(const void *t, size_t i) {
  (void)t;
  return sfc_serial_variant_get((int)i)->id;
}
static int gather_id(const void *t, size_t i) {
  (void)t;
  return shuf_gather_variant_get((int)i)->id;
}

size_t f3d_plan_serial(const sfc_serial_variant **out, size_t cap, int ladder, const sfc_serial_variant *best) {
  size_t idx[64];
  const size_t n = (size_t)sfc_serial_variant_count();
  if (cap > 64) cap = 64;
  size_t k = plan_ids(idx, cap, ladder, NULL, n, serial_id, NULL, 0, best ? best->id : -1);
  for (size_t i = 0; i < k; i++) out[i] = sfc_serial_variant_get((int)idx[i]);
  return k;
}

size_t f3d_plan_gather(const shuf_gather_variant **out, size_t cap, int ladder, const shuf_gather_variant *best) {
  size_t idx[64];
  const size_t n = (size_t)shuf_gather_variant_count();
  if (cap > 64) cap = 64;
  size_t k = plan_ids(idx, cap, ladder, NULL, n, gather_id, NULL, 0, best ? best->id : -1);
  for (size_t i = 0; i < k; i++) out[i] = shuf_gather_variant_get((int)idx[i]);
  return k;
}
