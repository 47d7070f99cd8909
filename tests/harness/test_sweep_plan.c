/*
 * test_sweep_plan.c - what the sweep measures (app/pipe_plan.c), without a GPU: the default sweep registers only
 * main-path stages and variants, and --ladder every one.
 *   - every stage the report reads (app/study.c: each pipeline's headline stages, and every kernel the headline
 *     tables' column groups take) is on the main path, so the default run keeps every headline number;
 *   - the stages that split an operation into its parts are ladder-only, the others main;
 *   - per ladder, the main path runs exactly the naive ablation (PSH v1, v2) and the best entry, once each, in
 *     that order, and --ladder every variant of the table in table order;
 *   - the best entries answer with a variant of their own table (the CPU-only build lists the CUDA build's
 *     variants, from the one list), and the gather rule follows the row widths measured.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "app/pipe_plan.h"
#include "app/study.h"

/* Every kernel name the two pipelines write, and whether the main path measures it. */
static const struct {
  const char *pipeline, *kernel;
  int main;
} kernels[] = {
    {"ptv3", "grid", 1},
    {"ptv3", "dedup", 0},
    {"ptv3", "encode_z", 0},
    {"ptv3", "encode_z-trans", 0},
    {"ptv3", "encode_hilbert", 0},
    {"ptv3", "encode_hilbert-trans", 0},
    {"ptv3", "encode_all", 0},
    {"ptv3", "sort", 0},
    {"ptv3", "inverse", 0},
    {"ptv3", "serialize", 1},
    {"ptv3", "padding", 1},
    {"ptv3", "gather_qkv_C64", 1},
    {"ptv3", "gather_out_C64", 1},
    {"ptv3", "gather_qkv_C256", 1},
    {"ptv3", "gather_out_C256", 1},
    {"ptv3", "copy_qkv_C64", 0},
    {"ptv3", "copy_out_C64", 0},
    {"ptv3", "copy_qkv_C256", 0},
    {"ptv3", "copy_out_C256", 0},
    {"ptv3", "pool", 1},
    {"ptv3", "attn.patch1024", 1},
    {"ptv3", "attn.patch4096", 1},
    {"flash3d", "psh.xor-mod", 1},
    {"flash3d", "psh.xor-div", 1},
    {"flash3d", "psh.zorder-mod", 1},
    {"flash3d", "psh.zorder-div", 1},
    {"flash3d", "psh.floor", 1},
    {"flash3d", "locality.xor-div", 1},
    {"flash3d", "locality.zorder1024", 1},
    {"flash3d", "scatter_feat", 1},
    {"flash3d", "pool_assign", 0},
    {"flash3d", "pool", 1},
    {"flash3d", "attn.plain", 1},
    {"flash3d", "attn.swin4", 1},
    {"flash3d", "attn.stride2", 1},
    {"workload", "make_exact", 1},
};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

static void test_stages(void **state) {
  (void)state;
  for (size_t i = 0; i < NKERNELS; i++) {
    if (f3d_main_stage(kernels[i].pipeline, kernels[i].kernel) != kernels[i].main)
      fail_msg("%s/%s: main path %d, want %d", kernels[i].pipeline, kernels[i].kernel,
               f3d_main_stage(kernels[i].pipeline, kernels[i].kernel), kernels[i].main);
  }
  /* the PSH rows of every hash the library has */
  for (int h = 0; h < PSH_HASH_COUNT; h++) {
    char k[64];
    snprintf(k, sizeof k, "psh.%s", psh_hash_name((psh_hash)h));
    assert_int_equal(f3d_main_stage("flash3d", k), 1);
  }
  /* a pipeline the plan does not describe is on the main path whole */
  assert_int_equal(f3d_main_stage("ptv3-net", "anything"), 1);
}

static void test_report_stages_on_main_path(void **state) {
  (void)state;
  const hx_study *st = f3d_study();
  size_t checked = 0;
  for (size_t p = 0; p < st->n_pipelines; p++)
    for (size_t k = 0; k < st->pipelines[p].n_stages; k++, checked++)
      if (!f3d_main_stage(st->pipelines[p].name, st->pipelines[p].stages[k]))
        fail_msg("headline stage %s/%s is off the main path", st->pipelines[p].name, st->pipelines[p].stages[k]);
  assert_true(checked >= 8);
  /* every kernel a headline table's column group takes (prefix match, as the report does) */
  size_t taken = 0;
  for (size_t t = 0; t < st->n_tables; t++)
    for (size_t g = 0; g < st->tables[t].n_groups; g++) {
      const hx_study_col *c = &st->tables[t].groups[g];
      for (size_t i = 0; i < NKERNELS; i++) {
        if (strcmp(kernels[i].pipeline, c->pipeline) || strncmp(kernels[i].kernel, c->kernel, strlen(c->kernel)))
          continue;
        taken++;
        if (!kernels[i].main) fail_msg("headline column %s/%s is off the main path", c->pipeline, kernels[i].kernel);
      }
    }
  assert_true(taken >= 14); /* serialize, 5 psh, 5 attention plans, 4 gathers */
}

static void test_psh_plan(void **state) {
  (void)state;
  size_t n = 0;
  const psh_variant *t = psh_variants(&n), *out[64];
  assert_true(n >= 3);
  /* main path: v1, v2, then the best entry, each once */
  const char *const bests[] = {"v10", "v9", "v7", "v4"};
  for (size_t b = 0; b < sizeof bests / sizeof bests[0]; b++) {
    const psh_variant *best = psh_variant_find(bests[b]);
    assert_non_null(best);
    assert_int_equal(f3d_plan_psh(out, 64, 0, best), 3);
    assert_string_equal(out[0]->name, "v1");
    assert_string_equal(out[1]->name, "v2");
    assert_ptr_equal(out[2], best);
  }
  assert_int_equal(f3d_plan_psh(out, 64, 0, psh_variant_find("v2")), 2); /* the best among the ablation: once */
  assert_string_equal(out[1]->name, "v2");
  assert_int_equal(f3d_plan_psh(out, 64, 0, NULL), 2);
  assert_int_equal(f3d_plan_psh(out, 2, 0, psh_variant_find("v10")), 2); /* cap */
  /* ladder: every variant, table order */
  assert_int_equal(f3d_plan_psh(out, 64, 1, psh_variant_find("v10")), n);
  for (size_t i = 0; i < n; i++) assert_ptr_equal(out[i], &t[i]);
}

static void test_pool_serial_gather_plans(void **state) {
  (void)state;
  size_t n = 0;
  const bpool_variant *pt = bpool_variants(&n), *pout[64];
  const bpool_variant *pbest = bpool_variant_best();
  assert_non_null(pbest);
  assert_string_equal(pbest->name, "v9");
  assert_int_equal(f3d_plan_pool(pout, 64, 0, pbest), 1);
  assert_ptr_equal(pout[0], pbest);
  assert_int_equal(f3d_plan_pool(pout, 64, 1, pbest), n);
  for (size_t i = 0; i < n; i++) assert_ptr_equal(pout[i], &pt[i]);

  const sfc_serial_variant *sout[16], *sbest = sfc_serial_variant_best();
  assert_non_null(sbest);
  assert_int_equal(sbest->id, 2);
  assert_int_equal(f3d_plan_serial(sout, 16, 0, sbest), 1);
  assert_ptr_equal(sout[0], sbest);
  assert_int_equal(f3d_plan_serial(sout, 16, 1, sbest), (size_t)sfc_serial_variant_count());
  for (int i = 0; i < sfc_serial_variant_count(); i++) assert_ptr_equal(sout[i], sfc_serial_variant_get(i));

  /* the gather rule by row width (2-byte elements): 128 B rows v2, 384 B v3, 512 B and 1536 B v1, a row that is
   * not a multiple of 16 bytes v0 */
  const struct {
    size_t width;
    int id;
  } rule[] = {{64, 2}, {192, 3}, {256, 1}, {768, 1}, {100, 0}, {4, 0}};
  const shuf_gather_variant *gout[16];
  for (size_t r = 0; r < sizeof rule / sizeof rule[0]; r++) {
    const shuf_gather_variant *g = shuf_gather_variant_best(rule[r].width);
    assert_non_null(g);
    if (g->id != rule[r].id) fail_msg("width %zu: gather v%d, want v%d", rule[r].width, g->id, rule[r].id);
    assert_int_equal(f3d_plan_gather(gout, 16, 0, g), 1);
    assert_ptr_equal(gout[0], g);
  }
  assert_int_equal(f3d_plan_gather(gout, 16, 1, shuf_gather_variant_best(64)), (size_t)shuf_gather_variant_count());
  for (int i = 0; i < shuf_gather_variant_count(); i++) assert_ptr_equal(gout[i], shuf_gather_variant_get(i));
}

/* The tables every build lists (the CPU-only build's from the same list): row names are "v<id>" for PSH, pooling
 * and attention, ids unique; the device-dependent best entries answer with a variant of their table or with
 * nothing. */
static void test_tables_and_best(void **state) {
  (void)state;
  size_t n = 0;
  char name[16];
  const psh_variant *pt = psh_variants(&n);
  for (size_t i = 0; i < n; i++) {
    snprintf(name, sizeof name, "v%d", pt[i].id);
    assert_string_equal(pt[i].name, name);
    for (size_t j = 0; j < i; j++) assert_int_not_equal(pt[i].id, pt[j].id);
  }
  const bpool_variant *bt = bpool_variants(&n);
  for (size_t i = 0; i < n; i++) {
    snprintf(name, sizeof name, "v%d", bt[i].id);
    assert_string_equal(bt[i].name, name);
  }
  const battn_variant *at = battn_variants(&n);
  for (size_t i = 0; i < n; i++) {
    snprintf(name, sizeof name, "v%d", at[i].id);
    assert_string_equal(at[i].name, name);
    assert_ptr_equal(battn_variant_by_id(at[i].id), &at[i]);
    assert_ptr_equal(battn_variant_find(name), &at[i]);
  }
  assert_null(battn_variant_by_id(-1));
  assert_null(battn_variant_by_id(12)); /* a dropped experiment's id */
  psh_params p;
  psh_params_default(&p);
  p.nb = psh_auto_buckets(600000, p.cap);
  const psh_variant *pb = (const psh_variant *)&p; /* not NULL: the call must set it */
  hx_err e;
  if (psh_variant_best(&pb, 600000, 1, &p, &e) == HX_OK) {
    assert_non_null(pb);
    assert_true(!strcmp(pb->name, "v10") || !strcmp(pb->name, "v9") || !strcmp(pb->name, "v7") ||
                !strcmp(pb->name, "v4"));
  } else {
    assert_null(pb);
  }
  battn_params ap;
  battn_params_init(&ap, 4096, 4, 16, BATTN_F16, NULL);
  const battn_variant *ab = at;
  if (battn_variant_best(&ab, &ap, &e) == HX_OK)
    assert_true(!strcmp(ab->name, "v9") || !strcmp(ab->name, "v24"));
  else
    assert_null(ab);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stages),
      cmocka_unit_test(test_report_stages_on_main_path),
      cmocka_unit_test(test_psh_plan),
      cmocka_unit_test(test_pool_serial_gather_plans),
      cmocka_unit_test(test_tables_and_best),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
