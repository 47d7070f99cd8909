/*
 * test_sweep_oom.c - a pipeline that does not fit is skipped, not failed (app/sweep.c f3d_pipeline_run), on an
 * arena with a host backend, so it runs without a GPU: refused by the arena's capacity (sweep --device-memory)
 * or by the backend out of memory (cudaMalloc's HX_ENOMEM), the pipeline gets skipped_bytes_needed (what it held
 * plus the request refused) and skipped_bytes_free (the capacity; none when nothing says what was free) under
 * total/all, the call returns HX_OK, and the next pipeline runs. Failures that are not a refused allocation (host
 * out of memory, a CUDA error, a refusal left over from an earlier pipeline, one after a stop was asked) stay
 * failures. Also: the finished-case bookkeeping an interrupted sweep keeps (f3d_cases_*, hx_results_stop cutting
 * the rows back to the last finished case) and f3d_parse_bytes (sweep --device-memory).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "app/sweep.h"
#include "tests/harness/test_run_util.h"

/* the registry in sweep.c names these; nothing runs them here */
hx_status f3d_pipe_workload(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_ptv3(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_flash3d(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_ptv3_net(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_flash3d_net(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }

/* host backend that runs out past `limit` bytes live (a device out of memory), HX_ENOMEM as arena_gpu.cu says */
typedef struct host_dev {
  size_t limit, live;
} host_dev;
static hx_status h_alloc(void *ctx, void **p, size_t bytes, hx_err *err) {
  host_dev *h = ctx;
  *p = NULL;
  if (h->limit && h->live + bytes > h->limit) return hx_errf(err, HX_ENOMEM, "simulated device out of memory");
  *p = aligned_alloc(HX_ARENA_ALIGN, bytes);
  if (!*p) return hx_errf(err, HX_ENOMEM, "host");
  h->live += bytes;
  return HX_OK;
}
static void h_release(void *ctx, void *p) {
  (void)ctx;
  free(p); /* live is not decremented: each test allocates little and starts a fresh host_dev */
}

/* A pipeline as the real ones are written: holds a buffer, asks for a second one, frees what it holds on the way
 * out (HX_TRY-style), and writes one row before the refusal so the test sees that measured rows stay. */
static size_t g_second = 5000;
static hx_status pipe_big(f3d_ctx *ctx, hx_err *err) {
  void *held = NULL, *big = NULL;
  HX_TRY(hx_arena_alloc(ctx->arena, &held, 1000, "held", err));
  hx_status st = f3d_record(ctx, "big", "grid", "v0", "points", 7.0, "count", err);
  if (st == HX_OK) st = hx_arena_alloc(ctx->arena, &big, g_second, "big buffer", err);
  hx_arena_free(ctx->arena, big, NULL);
  hx_arena_free(ctx->arena, held, NULL);
  return st;
}
static hx_status pipe_small(f3d_ctx *ctx, hx_err *err) {
  void *p = NULL;
  HX_TRY(hx_arena_alloc(ctx->arena, &p, 2000, "small", err));
  hx_status st = f3d_record(ctx, "small", "grid", "v0", "points", 3.0, "count", err);
  hx_arena_free(ctx->arena, p, NULL);
  return st;
}
static hx_status pipe_host_oom(f3d_ctx *ctx, hx_err *err) {
  (void)ctx;
  return hx_errf(err, HX_ENOMEM, "no host memory for the samples"); /* not the device's: a failure */
}
static hx_status pipe_cuda_err(f3d_ctx *ctx, hx_err *err) {
  (void)ctx;
  return hx_errf(err, HX_ECUDA, "an illegal address");
}

static const f3d_pipeline P_BIG = {"big", "asks for more than fits", pipe_big, 0, 0};
static const f3d_pipeline P_SMALL = {"small", "fits", pipe_small, 0, 0};
static const f3d_pipeline P_HOST = {"host", "host out of memory", pipe_host_oom, 0, 0};
static const f3d_pipeline P_CUDA = {"cuda", "a CUDA error", pipe_cuda_err, 0, 0};

/* value of the one row (pipeline, kernel, variant, metric) of a loaded run, NAN when absent (-1 when twice) */
static double row(const hx_run *r, const char *pipeline, const char *kernel, const char *variant, const char *metric) {
  int n = 0;
  const hx_run_row *w = t_run_row(r, pipeline, kernel, variant, metric, &n);
  return n > 1 ? -1.0 : w ? w->value : (double)NAN;
}

static void rm_rf(const char *dir) { assert_int_equal(t_rm_rf(dir), 0); }

static void ctx_init(f3d_ctx *ctx, hx_results *res, hx_arena *a, const volatile sig_atomic_t *stop) {
  memset(ctx, 0, sizeof *ctx);
  ctx->results = res;
  ctx->timing.reps = 3;
  ctx->c.workload = "lidar";
  ctx->c.n_points = 1000;
  ctx->c.batch = 1;
  ctx->arena = a;
  ctx->stop = stop;
}

static void test_skip_over_capacity(void **state) {
  (void)state;
  char root[] = "/tmp/f3d-test-sweep-oom-XXXXXX";
  assert_non_null(mkdtemp(root));
  hx_results *res;
  hx_err e;
  assert_int_equal(hx_results_open(&res, root, "run", &e), HX_OK);
  host_dev h = {0, 0};
  hx_arena_backend be = {h_alloc, h_release, &h};
  hx_arena a;
  hx_arena_init(&a, "sweep", 4096, &be); /* sweep --device-memory 4K */
  static volatile sig_atomic_t stop = 0;
  f3d_ctx ctx;
  ctx_init(&ctx, res, &a, &stop);
  int skipped = -1;

  /* 1000 B held (1024 accounted) + 5000 asked (5120) > 4096: skipped with its need and the capacity */
  hx_arena_reset(&a);
  assert_int_equal(f3d_pipeline_run(&ctx, &P_BIG, &skipped, &e), HX_OK);
  assert_int_equal(skipped, 1);
  assert_int_equal(e.status, HX_OK);
  assert_int_equal(hx_arena_live(&a), 0);
  /* the next pipeline runs and fits */
  hx_arena_reset(&a);
  assert_int_equal(f3d_pipeline_run(&ctx, &P_SMALL, &skipped, &e), HX_OK);
  assert_int_equal(skipped, 0);
  /* "big" refused again, on the next case as a sweep runs it (a run holds each row key once: hx_run_load refuses a
   * repeat), and the arena is not reset before the next two: the refusal it leaves in the arena must not turn their
   * failures into skips */
  ctx.c.n_points = 2000;
  assert_int_equal(f3d_pipeline_run(&ctx, &P_BIG, &skipped, &e), HX_OK);
  assert_int_equal(skipped, 1);
  assert_int_equal(f3d_pipeline_run(&ctx, &P_HOST, &skipped, &e), HX_ENOMEM);
  assert_int_equal(skipped, 0);
  assert_non_null(strstr(e.msg, "host memory"));
  assert_int_equal(f3d_pipeline_run(&ctx, &P_CUDA, &skipped, &e), HX_ECUDA);
  assert_int_equal(skipped, 0);
  /* after a stop was asked a refusal is not a result: the sweep is ending, the status goes back as is */
  stop = SIGINT;
  ctx.c.n_points = 3000;
  hx_arena_reset(&a);
  assert_int_equal(f3d_pipeline_run(&ctx, &P_BIG, &skipped, &e), HX_ENOMEM);
  assert_int_equal(skipped, 0);
  stop = 0;
  hx_arena_destroy(&a);

  assert_int_equal(hx_results_commit(res, &e), HX_OK);
  hx_results_close(res);
  char dir[128];
  snprintf(dir, sizeof dir, "%s/run", root);
  hx_run r;
  assert_int_equal(hx_run_load(&r, dir, &e), HX_OK);
  /* "big" was skipped on two cases, so its rows appear twice: row() says -1; count them instead */
  size_t need_rows = 0, free_rows = 0;
  for (size_t i = 0; i < r.n_rows; i++) {
    const hx_run_row *w = &r.rows[i];
    if (!strcmp(w->pipeline, "big") && !strcmp(w->kernel, "total") && !strcmp(w->variant, "all")) {
      if (!strcmp(w->metric, "skipped_bytes_needed")) {
        need_rows++;
        assert_true(w->value == 1024.0 + 5120.0);
        assert_string_equal(w->unit, "B");
      } else if (!strcmp(w->metric, "skipped_bytes_free")) {
        free_rows++;
        assert_true(w->value == 4096.0);
        assert_string_equal(w->unit, "B");
      }
    }
  }
  assert_int_equal(need_rows, 2);
  assert_int_equal(free_rows, 2);
  assert_true(row(&r, "small", "grid", "v0", "points") == 3.0);
  assert_true(isnan(row(&r, "small", "total", "all", "skipped_bytes_needed")));
  /* the stage measured before the refusal keeps its row (three times: three runs of "big") */
  assert_true(row(&r, "big", "grid", "v0", "points") == -1.0);
  assert_true(isnan(row(&r, "host", "total", "all", "skipped_bytes_needed")));
  assert_true(isnan(row(&r, "cuda", "total", "all", "skipped_bytes_needed")));
  hx_run_free(&r);
  rm_rf(root);
}

static void test_skip_device_out_of_memory(void **state) {
  (void)state;
  char root[] = "/tmp/f3d-test-sweep-oom-XXXXXX";
  assert_non_null(mkdtemp(root));
  hx_results *res;
  hx_err e;
  assert_int_equal(hx_results_open(&res, root, "run", &e), HX_OK);
  host_dev h = {4096, 0}; /* the "device" has 4 KiB, the arena no cap */
  hx_arena_backend be = {h_alloc, h_release, &h};
  hx_arena a;
  hx_arena_init(&a, "sweep", 0, &be);
  f3d_ctx ctx;
  ctx_init(&ctx, res, &a, NULL);
  int skipped = -1;
  g_second = 5000;
  assert_int_equal(f3d_pipeline_run(&ctx, &P_BIG, &skipped, &e), HX_OK);
  assert_int_equal(skipped, 1);
  hx_arena_destroy(&a);
  assert_int_equal(hx_results_commit(res, &e), HX_OK);
  hx_results_close(res);
  char dir[128];
  snprintf(dir, sizeof dir, "%s/run", root);
  hx_run r;
  assert_int_equal(hx_run_load(&r, dir, &e), HX_OK);
  assert_true(row(&r, "big", "total", "all", "skipped_bytes_needed") == 1024.0 + 5120.0);
  /* no capacity and no device to ask: what was free is unknown, so no row rather than a made-up one */
  assert_true(isnan(row(&r, "big", "total", "all", "skipped_bytes_free")));
  hx_run_free(&r);
  rm_rf(root);
}

/* Rows of case 3 written after the last finished case are cut away by hx_results_stop; the context lists 2 of 4. */
static void test_finished_cases_kept(void **state) {
  (void)state;
  char root[] = "/tmp/f3d-test-sweep-oom-XXXXXX";
  assert_non_null(mkdtemp(root));
  hx_results *res;
  hx_err e;
  assert_int_equal(hx_results_open(&res, root, "run", &e), HX_OK);
  f3d_cases cs;
  assert_int_equal(f3d_cases_begin(&cs, res, 4, &e), HX_OK);
  f3d_ctx ctx;
  ctx_init(&ctx, res, NULL, NULL);
  const size_t sizes[3] = {1000, 2000, 3000};
  for (int c = 0; c < 3; c++) {
    ctx.c.n_points = sizes[c];
    double s[3] = {1.0 + c, 2.0 + c, 3.0 + c};
    assert_int_equal(f3d_record_times(&ctx, "p", "k", "v0", s, 3, &e), HX_OK);
    if (c < 2) assert_int_equal(f3d_case_finished(&cs, res, "lidar", sizes[c], &e), HX_OK);
  }
  assert_int_equal(cs.done, 2);
  assert_int_equal(hx_results_stop(res, "interrupted", "SIGINT received", &e), HX_OK);
  hx_results_close(res);
  char dir[128];
  snprintf(dir, sizeof dir, "%s/run", root);
  hx_run r;
  assert_int_equal(hx_run_load(&r, dir, &e), HX_OK);
  assert_true(r.incomplete);
  assert_false(r.from_partial);
  assert_string_equal(hx_run_context(&r, "cases_done"), "2");
  assert_string_equal(hx_run_context(&r, "cases_total"), "4");
  assert_string_equal(hx_run_context(&r, "cases_finished"), "lidar:1000 lidar:2000");
  for (size_t i = 0; i < r.n_rows; i++) assert_true(r.rows[i].n_points != 3000);
  for (size_t i = 0; i < r.n_samples; i++) assert_true(r.samples[i].n_points != 3000);
  assert_true(row(&r, "p", "k", "v0", "time_median") == -1.0); /* two cases: 1000 and 2000 */
  assert_int_equal(r.n_samples, 6);
  char why[256];
  assert_string_equal(hx_run_incomplete_why(&r, why, sizeof why),
                      "incomplete run (interrupted after 2 of 4 cases: SIGINT received)");
  hx_run_free(&r);
  /* a run stopped before any case finished keeps nothing, and reading it says why */
  assert_int_equal(hx_results_open(&res, root, "none", &e), HX_OK);
  assert_int_equal(f3d_cases_begin(&cs, res, 4, &e), HX_OK);
  ctx.results = res;
  double s[3] = {1.0, 2.0, 3.0};
  assert_int_equal(f3d_record_times(&ctx, "p", "k", "v0", s, 3, &e), HX_OK);
  assert_int_equal(hx_results_stop(res, "interrupted", "SIGTERM received", &e), HX_OK);
  hx_results_close(res);
  snprintf(dir, sizeof dir, "%s/none", root);
  assert_int_equal(hx_run_load(&r, dir, &e), HX_EIO);
  assert_non_null(strstr(e.msg, "incomplete run (interrupted after 0 of 4 cases: SIGTERM received): no finished case"));
  rm_rf(root);
}

static void test_parse_bytes(void **state) {
  (void)state;
  uint64_t v = 0;
  const struct {
    const char *s;
    uint64_t want;
  } ok[] = {{"1048576", 1048576u}, {"512M", 512u << 20}, {"512MiB", 512u << 20}, {"2G", 2ull << 30},
            {"1.5GiB", 3ull << 29}, {"1K", 1024u},      {"0.5K", 512u},           {"1T", 1ull << 40}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    assert_int_equal(f3d_parse_bytes(ok[i].s, &v), 0);
    assert_true(v == ok[i].want);
  }
  const char *bad[] = {"", "0", "0M", "abc", "1.5", "-1", "1e3", "1KB", "1 G", "1g", "0x10", "M", ".", "1..5M",
                       "99999999T"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_int_equal(f3d_parse_bytes(bad[i], &v), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_skip_over_capacity),
                                     cmocka_unit_test(test_skip_device_out_of_memory),
                                     cmocka_unit_test(test_finished_cases_kept), cmocka_unit_test(test_parse_bytes)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
