/*
 * test_net_util.h - what the model tests (test_net_ptv3.c, test_net_flash3d.c, test_net_costs.c) share: their test
 * clouds (distinct voxels in a box, as PTv3 takes them; uniform lidar-like points, as PSH buckets them), the tiny
 * configuration fixture, the shape check of a named parameter, and a state_dict written as PyTorch would hold it
 * (the model's parameters plus the entries no forward reads: BatchNorm's num_batches_tracked beside every
 * running_mean; with te, TransformerEngine's _extra_state for every module of a block) with the check that
 * loading it ignores exactly those entries and gives the forward of the saved parameters. Include after
 * <cmocka.h>.
 */
#ifndef F3D_TEST_NET_UTIL_H
#define F3D_TEST_NET_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baselines/baselines.h"
#include "nets/nets_internal.h"

/* ---- clouds ---------------------------------------------------------------------------------------------- */
/* B clouds, cloud b owning rows [offset[b], offset[b+1]); features (x, y, z, intensity). */
typedef struct tnet_cloud {
  float *xyz, *feat;
  size_t *offset;
  size_t n;
  uint32_t B;
} tnet_cloud;

static inline void tnet_cloud_alloc(tnet_cloud *c, const size_t *sizes, uint32_t B) {
  memset(c, 0, sizeof *c);
  c->B = B;
  c->offset = calloc(B + 1, sizeof *c->offset);
  assert_non_null(c->offset);
  for (uint32_t b = 0; b < B; b++) c->offset[b + 1] = c->offset[b] + sizes[b];
  c->n = c->offset[B];
  c->xyz = malloc(c->n * 3 * sizeof *c->xyz);
  c->feat = malloc(c->n * 4 * sizeof *c->feat);
  assert_non_null(c->xyz), assert_non_null(c->feat);
}

/* Distinct voxels (grid 0.05) drawn from a 48 x 48 x 12 box per cloud (clouds 3 m apart), the point jittered
 * inside its voxel: no two points of a cloud share a voxel, as PTv3's input after GridSample. */
static inline void tnet_cloud_voxels(tnet_cloud *c, const size_t *sizes, uint32_t B, uint64_t seed) {
  const uint32_t X = 48, Y = 48, Z = 12, cells = X * Y * Z;
  tnet_cloud_alloc(c, sizes, B);
  uint32_t *perm = malloc(cells * sizeof *perm);
  assert_non_null(perm);
  for (uint32_t b = 0; b < B; b++) {
    assert_true(sizes[b] <= cells);
    for (uint32_t k = 0; k < cells; k++) perm[k] = k;
    for (uint32_t k = 0; k < sizes[b]; k++) { /* partial Fisher-Yates: the first sizes[b] cells */
      const uint32_t j = k + (uint32_t)(hx_rng_u64(seed, b, k) % (cells - k));
      const uint32_t t = perm[k];
      perm[k] = perm[j], perm[j] = t;
    }
    for (size_t k = 0; k < sizes[b]; k++) {
      const size_t i = c->offset[b] + k;
      const uint32_t v = perm[k], g[3] = {v % X, (v / X) % Y, v / (X * Y)};
      for (int a = 0; a < 3; a++) {
        const double u = hx_rng_unit(seed, 100 + b, 3 * k + (uint64_t)a);
        c->xyz[3 * i + (size_t)a] = (float)((g[a] + 0.1 + 0.8 * u) * 0.05 + 3.0 * b - 1.0);
        c->feat[4 * i + (size_t)a] = c->xyz[3 * i + (size_t)a];
      }
      c->feat[4 * i + 3] = (float)hx_rng_unit(seed, 200 + b, k);
    }
  }
  free(perm);
}

/* Lidar-like clouds: points uniform in a 24 x 24 x 3 m box, shifted 5 m per cloud (voxels may repeat). */
static inline void tnet_cloud_uniform(tnet_cloud *c, const size_t *sizes, uint32_t B, uint64_t seed) {
  tnet_cloud_alloc(c, sizes, B);
  const double ext[3] = {24.0, 24.0, 3.0};
  for (uint32_t b = 0; b < B; b++)
    for (size_t i = c->offset[b]; i < c->offset[b + 1]; i++) {
      for (int a = 0; a < 3; a++) {
        c->xyz[3 * i + (size_t)a] = (float)(ext[a] * hx_rng_unit(seed, b, 3 * i + (uint64_t)a) + 5.0 * b - 10.0);
        c->feat[4 * i + (size_t)a] = c->xyz[3 * i + (size_t)a];
      }
      c->feat[4 * i + 3] = (float)hx_rng_unit(seed, 100 + b, i);
    }
}

/* PTv3's serialization depth of B clouds (their largest grid coordinate at `grid`, sfc_grid_cpu, then sfc_depth);
 * the test fails with the library's message where either refuses. */
static inline int tnet_depth(const float *xyz, const size_t *offset, uint32_t B, double grid) {
  hx_err err = {HX_OK, ""};
  uint32_t *g = malloc((offset[B] ? offset[B] : 1) * 3 * sizeof *g), gmax = 0;
  assert_non_null(g);
  const hx_status st = sfc_grid_cpu(g, &gmax, xyz, offset, B, grid, &err);
  free(g);
  int d = 0;
  if (st != HX_OK || sfc_depth(&d, gmax, B, grid, &err) != HX_OK) fail_msg("%s", err.msg);
  return d;
}

static inline void tnet_cloud_free(tnet_cloud *c) { free(c->xyz), free(c->feat), free(c->offset); }

static inline net_input tnet_cloud_input(const tnet_cloud *c, uint64_t seed) {
  net_input in = {c->xyz, c->feat, c->offset, c->B, c->n, 0.05, seed};
  return in;
}

/* ---- parameters and the tiny fixture ------------------------------------------------------------------------ */
static inline void tnet_expect_shape(const net_params *p, const char *name, int ndim, const int64_t *shape,
                                     int counted) {
  const net_tensor *t = net_params_find(p, name);
  if (!t) fail_msg("missing %s", name);
  assert_int_equal(t->ndim, ndim);
  for (int d = 0; d < ndim; d++) assert_int_equal(t->shape[d], shape[d]);
  assert_int_equal(t->counted, counted);
}

/* A tiny configuration, its parameters (seed 11) and a batch of clouds (seed 3). */
typedef struct tnet_tiny {
  net_config cfg;
  net_params p;
  tnet_cloud c;
} tnet_tiny;

static inline int tnet_tiny_setup(void **state, const char *model, const size_t *sizes, uint32_t B, int voxels) {
  tnet_tiny *t = calloc(1, sizeof *t);
  if (!t || net_config_named(&t->cfg, model, NULL) != HX_OK || net_params_init(&t->p, &t->cfg, 11, NULL) != HX_OK) {
    free(t);
    return -1;
  }
  if (voxels) tnet_cloud_voxels(&t->c, sizes, B, 3);
  else tnet_cloud_uniform(&t->c, sizes, B, 3);
  *state = t;
  return 0;
}

static inline int tnet_tiny_teardown(void **state) {
  tnet_tiny *t = *state;
  net_params_free(&t->p);
  tnet_cloud_free(&t->c);
  free(t);
  return 0;
}

/* ---- state_dicts ---------------------------------------------------------------------------------------------- */
/* Write p and its state_dict's unread entries to path through stf_write; returns how many unread entries. */
static inline size_t tnet_save_state_dict(const net_params *p, const char *path, int te) {
  stf_tensor *t = calloc(2 * p->n + 1, sizeof *t);
  assert_non_null(t);
  float extra[4] = {1000.0f, 2.0f, 3.0f, 4.0f};
  size_t k = 0;
  for (size_t i = 0; i < p->n; i++) {
    snprintf(t[k].name, sizeof t[k].name, "%s", p->t[i].name);
    t[k].ndim = p->t[i].ndim;
    for (int d = 0; d < p->t[i].ndim; d++) t[k].shape[d] = p->t[i].shape[d];
    t[k++].data = p->t[i].data;
  }
  size_t extras = 0;
  for (size_t i = 0; i < p->n; i++) {
    const char *name = p->t[i].name, *dot = strrchr(name, '.');
    assert_non_null(dot);
    const int mod = (int)(dot - name);
    const char *leaf = dot + 1;
    const char *suffix = NULL;
    if (strcmp(leaf, "running_mean") == 0) suffix = "num_batches_tracked"; /* an I64 scalar in PyTorch */
    else if (te && strstr(name, "_blocks.") && (strcmp(leaf, "weight") == 0 || strcmp(leaf, "layer_norm_weight") == 0))
      suffix = "_extra_state"; /* a U8 blob in TransformerEngine */
    if (!suffix) continue;
    assert_true(snprintf(t[k].name, sizeof t[k].name, "%.*s.%s", mod, name, suffix) < (int)sizeof t[k].name);
    t[k].ndim = suffix[0] == '_' ? 1 : 0, t[k].shape[0] = 4;
    t[k++].data = extra;
    extras++;
  }
  hx_err err = {HX_OK, ""};
  const hx_status st = stf_write(path, t, k, &err);
  if (st != HX_OK) fail_msg("%s", err.msg);
  free(t);
  return extras;
}

/* p saved as a state_dict (tnet_save_state_dict) and loaded into a parameter set of other values (seed 99):
 * exactly the unread entries are ignored, at least min_extras of them, and the forward on in equals p's bit for
 * bit (where the other values' forward differs). */
static inline void tnet_state_dict_roundtrip(const net_config *cfg, const net_params *p, const net_input *in, int te,
                                             size_t min_extras) {
  char dir[] = "/tmp/net-test-XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/w.safetensors", dir);
  const size_t extras = tnet_save_state_dict(p, path, te);
  assert_true(extras >= min_extras);
  net_params q = {0};
  hx_err err = {HX_OK, ""};
  assert_int_equal(net_params_init(&q, cfg, 99, &err), HX_OK);
  net_output a, b;
  assert_int_equal(net_forward_cpu(&a, cfg, p, in, 0, &err), HX_OK);
  assert_int_equal(net_forward_cpu(&b, cfg, &q, in, 0, &err), HX_OK);
  assert_true(memcmp(a.logits, b.logits, a.n * a.classes * sizeof(float)) != 0);
  net_output_free(&b);
  size_t ignored = 0;
  const hx_status st = net_params_load(&q, path, &ignored, &err);
  if (st != HX_OK) fail_msg("%s", err.msg);
  printf("%s: state_dict of %zu parameter tensors + %zu unread entries: %zu ignored\n", cfg->name, q.n, extras,
         ignored);
  assert_int_equal(ignored, extras);
  assert_int_equal(net_forward_cpu(&b, cfg, &q, in, 0, &err), HX_OK);
  assert_memory_equal(a.logits, b.logits, a.n * a.classes * sizeof(float));
  net_output_free(&a), net_output_free(&b);
  net_params_free(&q);
  unlink(path);
  rmdir(dir);
}

#endif /* F3D_TEST_NET_UTIL_H */
