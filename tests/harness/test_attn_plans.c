/*
 * test_attn_plans.c - the flash3d pipeline's attention plans from a PSH result (app/attn_plans.c):
 * psh_run_cpu on a batch of two clouds of different sizes -> packed bucket table -> plain, swin:4 and
 * stride:2 plans with 8 buckets per scope; each plan passes battn_validate against the packed layout,
 * keeps the PSH bucket table, never mixes clouds, covers every point once, and has the shape its kind
 * promises (swin's first scope per cloud holds the 4 shifted buckets, stride's slots step by 2). Bucket
 * counts per cloud that are and are not multiples of the scope (auto = 8, 13). A corrupted plan must
 * fail validation (so the validation above can fail).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "app/pipe_attn.h"

typedef struct psh_case {
  uint32_t n, nclouds, nb;
  uint32_t off[3];
  float *xyz;
  uint32_t *bucket, *offset, *count, *start, *slot, *perm, counters[PSH_NCOUNTERS];
} psh_case;

/* Two clouds (1900 and 700 points, clustered around two centres) through PSH with S = 64. */
static void psh_case_run(psh_case *c, uint32_t nb) {
  memset(c, 0, sizeof *c);
  c->nclouds = 2;
  c->off[0] = 0, c->off[1] = 1900, c->off[2] = 2600;
  c->n = c->off[2];
  c->xyz = malloc((size_t)c->n * 12);
  assert_non_null(c->xyz);
  for (uint32_t i = 0; i < c->n; i++)
    for (uint32_t d = 0; d < 3; d++)
      c->xyz[i * 3 + d] = (float)((i % 2 ? 3.0 : 0.0) + hx_rng_unit(7, (uint64_t)d, i) * (d == 2 ? 0.5 : 4.0));
  psh_params p;
  psh_params_default(&p);
  p.cap = 64;
  p.nb = nb ? nb : psh_auto_buckets(1900, p.cap);
  c->nb = p.nb;
  const uint32_t nbt = c->nclouds * c->nb;
  c->bucket = malloc(c->n * 4u), c->offset = malloc(c->n * 4u), c->slot = malloc(c->n * 4u), c->perm = malloc(c->n * 4u);
  c->count = malloc(nbt * 4u), c->start = malloc(nbt * 4u);
  assert_true(c->bucket && c->offset && c->slot && c->perm && c->count && c->start);
  psh_in in = {c->xyz, c->off, c->nclouds, c->n};
  psh_out out = {c->bucket, c->offset, c->count, c->start, c->slot, c->perm, NULL, c->counters};
  hx_err e = {HX_OK, ""};
  assert_int_equal(psh_run_cpu(&out, &in, &p, &e), HX_OK);
  assert_int_equal(psh_check(&out, &in, &p, &e), HX_OK);
}

static void psh_case_free(psh_case *c) {
  free(c->xyz), free(c->bucket), free(c->offset), free(c->slot), free(c->perm), free(c->count), free(c->start);
}

static void check_plans(uint32_t nb_in) {
  psh_case c;
  psh_case_run(&c, nb_in);
  const uint32_t nb = c.nb, nbt = c.nclouds * nb;
  battn_plan plans[F3D_ATTN_NPLANS];
  hx_err e = {HX_OK, ""};
  assert_int_equal(f3d_attn_psh_plans(plans, c.start, c.count, c.nclouds, nb, &e), HX_OK);
  for (int k = 0; k < F3D_ATTN_NPLANS; k++) {
    const battn_plan *pl = &plans[k];
    assert_int_equal(pl->num_buckets, nbt);
    assert_int_equal(pl->buckets_per_scope, F3D_ATTN_SCOPE_BUCKETS);
    assert_memory_equal(pl->bucket_start, c.start, nbt * 4u);
    assert_memory_equal(pl->bucket_count, c.count, nbt * 4u);
    battn_params p;
    battn_params_init(&p, c.n, F3D_ATTN_CHANNELS / F3D_ATTN_HEAD_DIM, F3D_ATTN_HEAD_DIM, BATTN_F16, pl);
    assert_int_equal(battn_validate(&p, pl, &e), HX_OK);
    /* every bucket (empty ones too) in exactly one slot; scopes inside one cloud; all points covered */
    uint32_t *seen = calloc(nbt, 4);
    assert_non_null(seen);
    uint64_t rows = 0;
    for (uint32_t s = 0; s < pl->num_scopes; s++) {
      const uint32_t *row = pl->scope + (size_t)s * pl->buckets_per_scope;
      uint32_t cloud = UINT32_MAX, first = BATTN_EMPTY, used = 0;
      for (uint32_t j = 0; j < pl->buckets_per_scope; j++) {
        if (row[j] == BATTN_EMPTY) continue;
        assert_true(row[j] < nbt);
        if (cloud == UINT32_MAX) cloud = row[j] / nb, first = row[j];
        assert_int_equal(row[j] / nb, cloud);
        if (k == F3D_ATTN_STRIDE_PLAN) assert_int_equal(row[j], first + used * F3D_ATTN_STRIDE);
        else assert_int_equal(row[j], first + used);
        used++;
        seen[row[j]]++;
        rows += pl->bucket_count[row[j]];
      }
      assert_true(used >= 1);
      if (k == F3D_ATTN_SWIN && first % nb == 0) /* the shifted head of each cloud */
        assert_int_equal(used, nb < F3D_ATTN_SWIN_SHIFT ? nb : F3D_ATTN_SWIN_SHIFT);
    }
    for (uint32_t b = 0; b < nbt; b++) assert_int_equal(seen[b], 1);
    assert_int_equal(rows, c.n);
    free(seen);
    /* a corrupted plan fails: bucket 0 also stands in the last scope's first slot */
    const uint32_t last = (pl->num_scopes - 1) * pl->buckets_per_scope;
    const uint32_t keep = pl->scope[last];
    pl->scope[last] = pl->scope[0];
    if (last != 0) assert_int_equal(battn_validate(&p, pl, &e), HX_EINVAL);
    pl->scope[last] = keep;
  }
  /* plain scopes are consecutive groups of 8 per cloud: ceil(nb / 8) of them in each */
  assert_int_equal(plans[F3D_ATTN_PLAIN].num_scopes, c.nclouds * ((nb + 7) / 8));
  for (int k = 0; k < F3D_ATTN_NPLANS; k++) battn_plan_free(&plans[k]);
  psh_case_free(&c);
}

static void test_plans_auto_nb(void **state) {
  (void)state;
  check_plans(0); /* 1900 / 64 -> 30 -> 32 buckets per cloud: whole scopes */
}

static void test_plans_odd_nb(void **state) {
  (void)state;
  check_plans(13); /* partial scopes at each cloud's end */
}

static void test_plans_errors(void **state) {
  (void)state;
  battn_plan plans[F3D_ATTN_NPLANS];
  uint32_t st[2] = {0, 5}, ct[2] = {5, 3};
  hx_err e = {HX_OK, ""};
  assert_int_equal(f3d_attn_psh_plans(plans, st, ct, 2, 0, &e), HX_EINVAL);
  for (int k = 0; k < F3D_ATTN_NPLANS; k++) assert_null(plans[k].scope);
  assert_string_equal(f3d_attn_plan_kernel(F3D_ATTN_SWIN), "attn.swin4");
  assert_string_equal(f3d_attn_plan_kernel(F3D_ATTN_STRIDE_PLAN), "attn.stride2");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plans_auto_nb),
      cmocka_unit_test(test_plans_odd_nb),
      cmocka_unit_test(test_plans_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
