/*
 * test_sweep_mem.c - the sweep's device memory rows (app/sweep.c) from an arena on a host backend,
 * written into a real run directory and read back: a stage's mem_peak is the arena's high-water mark
 * since the stage's mark (buffers held plus temporaries), the pipeline total is the arena's peak
 * (kernel "total", variant "all") with the largest mem_used beside it when there was one; a pipeline that
 * never allocated through the arena, or a context without one, gets no memory rows; CPU stages measured by
 * f3d_measure get none either. The pipelines of the registry are stubs here: only the row helpers are
 * under test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/sweep.h"
#include "tests/harness/test_run_util.h"

/* the registry in sweep.c names these; nothing runs them here */
hx_status f3d_pipe_workload(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_ptv3(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_flash3d(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_ptv3_net(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_flash3d_net(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }

static hx_status h_alloc(void *ctx, void **p, size_t bytes, hx_err *err) {
  (void)ctx;
  *p = aligned_alloc(HX_ARENA_ALIGN, bytes);
  return *p ? HX_OK : hx_errf(err, HX_ENOMEM, "host");
}
static void h_release(void *ctx, void *p) { (void)ctx, free(p); }

static hx_status cpu_work(void *arg, void *stream, hx_err *err) {
  (void)stream, (void)err;
  volatile int *x = arg;
  (*x)++;
  return HX_OK;
}

/* value of the one row with this kernel/variant/metric, NAN when absent (-1 when twice); memory rows in B */
static double row(const hx_run *r, const char *pipeline, const char *kernel, const char *variant, const char *metric) {
  int n = 0;
  const hx_run_row *w = t_run_row(r, pipeline, kernel, variant, metric, &n);
  if (w && strncmp(metric, "mem", 3) == 0) assert_string_equal(w->unit, "B");
  return n > 1 ? -1.0 : w ? w->value : (double)NAN;
}

static size_t count_metric(const hx_run *r, const char *metric) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_rows; i++) n += !strcmp(r->rows[i].metric, metric);
  return n;
}

static void test_memory_rows(void **state) {
  (void)state;
  char root[] = "/tmp/f3d-test-sweep-mem-XXXXXX";
  assert_non_null(mkdtemp(root));
  hx_results *res;
  hx_err e;
  assert_int_equal(hx_results_open(&res, root, "run", &e), HX_OK);
  hx_arena_backend be = {h_alloc, h_release, NULL};
  hx_arena a;
  hx_arena_init(&a, "ptv3", 0, &be);
  f3d_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.results = res;
  ctx.timing.warmup = 0;
  ctx.timing.reps = 3;
  ctx.c.workload = "lidar";
  ctx.c.n_points = 1000;
  ctx.c.batch = 1;

  /* no arena: nothing */
  assert_int_equal(f3d_record_mem(&ctx, "ptv3", "grid", "v0", &e), HX_OK);
  assert_int_equal(f3d_record_mem_total(&ctx, "ptv3", &e), HX_OK);
  /* an arena the pipeline never used: nothing either (no misleading 0) */
  ctx.arena = &a;
  assert_int_equal(f3d_record_mem(&ctx, "workload", "generate", "cpu", &e), HX_OK);
  assert_int_equal(f3d_record_mem_total(&ctx, "workload", &e), HX_OK);

  /* stage grid: 1000 B held (1024 accounted), a 5000 B temporary (5120) allocated and freed during it */
  void *held, *tmp;
  assert_int_equal(hx_arena_alloc(&a, &held, 1000, "held", &e), HX_OK);
  hx_arena_mark(&a);
  assert_int_equal(hx_arena_alloc(&a, &tmp, 5000, "tmp", &e), HX_OK);
  assert_int_equal(hx_arena_free(&a, tmp, &e), HX_OK);
  assert_int_equal(f3d_record_mem(&ctx, "ptv3", "grid", "v0", &e), HX_OK);
  /* stage sort: starts after the temporary is gone */
  hx_arena_mark(&a);
  assert_int_equal(f3d_record_mem(&ctx, "ptv3", "sort", "v0", &e), HX_OK);
  /* a CPU stage through f3d_measure: timed, but no memory row */
  int x = 0;
  hx_closure c = {cpu_work, NULL, &x, 0, 0};
  assert_int_equal(f3d_measure(&ctx, "ptv3", "encode_all", "cpu", HX_CLOCK_CPU, &c, &e), HX_OK);
  assert_int_equal(x, 3);
  assert_int_equal(f3d_record_mem_total(&ctx, "ptv3", &e), HX_OK);

  /* a second pipeline on the same arena after a reset, with a cudaMemGetInfo figure */
  hx_arena_reset(&a);
  assert_int_equal(hx_arena_alloc(&a, &held, 300, "psh", &e), HX_OK);
  ctx.mem_used_max = 2u << 20;
  assert_int_equal(f3d_record_mem_total(&ctx, "flash3d", &e), HX_OK);
  hx_arena_destroy(&a);

  assert_int_equal(hx_results_commit(res, &e), HX_OK);
  hx_results_close(res);
  char dir[128];
  snprintf(dir, sizeof dir, "%s/run", root);
  hx_run r;
  assert_int_equal(hx_run_load(&r, dir, &e), HX_OK);
  assert_true(row(&r, "ptv3", "grid", "v0", "mem_peak") == 1024.0 + 5120.0);
  assert_true(row(&r, "ptv3", "sort", "v0", "mem_peak") == 1024.0);
  assert_true(row(&r, "ptv3", "total", "all", "mem_peak") == 1024.0 + 5120.0);
  assert_true(isnan(row(&r, "ptv3", "total", "all", "mem_used"))); /* no mem_used rows in that pipeline */
  assert_true(isnan(row(&r, "ptv3", "encode_all", "cpu", "mem_peak")));
  assert_true(row(&r, "ptv3", "encode_all", "cpu", "reps") == 3.0);
  assert_true(row(&r, "flash3d", "total", "all", "mem_peak") == 512.0);
  assert_true(row(&r, "flash3d", "total", "all", "mem_used") == (double)(2u << 20));
  assert_int_equal(count_metric(&r, "mem_peak"), 4); /* nothing for "workload", nothing without an arena */
  assert_int_equal(count_metric(&r, "mem_used"), 1);
  hx_run_free(&r);
  assert_int_equal(t_rm_rf(root), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_memory_rows)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
