/*
 * test_rates.c - rate rows written by the measurement layer from a closure's declared bytes and FLOPs
 * (hx_rates_record), read back from a real run directory: bytes + bandwidth (GB/s) and flops + tflops
 * (TFLOP/s) at the given median; no rate without a usable median; nothing for a closure that declares
 * nothing; a negative or non-finite declaration refused with no row written. Then the sweep's path
 * (app/sweep.c, f3d_measure on the CPU clock): the rates come out at the median its time_median row
 * reports, and a pipeline never sees the median. Last, the sweep's random 16-bit inputs in either dtype and the GEMM
 * ceiling each dtype's floors take. The pipelines of the registry are stubs here.
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
#include <time.h>

#include "app/sweep.h"
#include "kernels/kernels.h"
#include "tests/harness/test_run_util.h"

/* the registry in sweep.c names these; nothing runs them here */
hx_status f3d_pipe_workload(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_ptv3(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_flash3d(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_ptv3_net(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }
hx_status f3d_pipe_flash3d_net(f3d_ctx *ctx, hx_err *err) { return (void)ctx, (void)err, HX_OK; }

static char root[64];

static int setup(void **state) {
  (void)state;
  return t_tmpdir(root, sizeof root, "rates");
}
static int teardown(void **state) {
  (void)state;
  return t_rm_rf(root);
}

/* The value of the one row (kernel, metric) with its unit checked; NAN when absent, -1 when there are two. */
static double row(const hx_run *r, const char *kernel, const char *metric, const char *unit) {
  double v = NAN;
  int n = 0;
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (strcmp(w->kernel, kernel) || strcmp(w->metric, metric)) continue;
    assert_string_equal(w->unit, unit);
    v = w->value;
    n++;
  }
  return n > 1 ? -1.0 : v;
}

static hx_status nop(void *arg, void *stream, hx_err *err) {
  (void)arg, (void)stream, (void)err;
  return HX_OK;
}

static void test_record(void **state) {
  (void)state;
  hx_results *res;
  hx_err e;
  assert_int_equal(hx_results_open(&res, root, "direct", &e), HX_OK);
  hx_key k = {"lidar", 1000000u, 1, "p", "both", "v1"};
  /* 72 MB and 2 TFLOP in 0.5 ms: 144 GB/s (72e6 / 0.5e-3 / 1e9) and 4000 TFLOP/s */
  hx_closure c = {nop, NULL, NULL, 72e6, 2e12};
  assert_int_equal(hx_rates_record(res, &k, &c, 0.5, &e), HX_OK);
  k.kernel = "bytes_only";
  c.flops = 0.0;
  assert_int_equal(hx_rates_record(res, &k, &c, 2.0, &e), HX_OK);
  k.kernel = "no_median"; /* a stage with no kept sample: the declarations, no rate */
  c.flops = 1e9;
  assert_int_equal(hx_rates_record(res, &k, &c, NAN, &e), HX_OK);
  k.kernel = "zero_median";
  assert_int_equal(hx_rates_record(res, &k, &c, 0.0, &e), HX_OK);
  k.kernel = "undeclared";
  hx_closure none = {nop, NULL, NULL, 0.0, 0.0};
  assert_int_equal(hx_rates_record(res, &k, &none, 1.0, &e), HX_OK);
  k.kernel = "bad";
  const double bad[] = {-1.0, NAN, INFINITY};
  for (size_t i = 0; i < 3; i++) {
    hx_closure b = {nop, NULL, NULL, 8.0, bad[i]};
    assert_int_equal(hx_rates_record(res, &k, &b, 1.0, &e), HX_EINVAL);
    assert_non_null(strstr(e.msg, "FLOP"));
    b.bytes = bad[i], b.flops = 8.0;
    assert_int_equal(hx_rates_record(res, &k, &b, 1.0, &e), HX_EINVAL);
    assert_non_null(strstr(e.msg, "bytes"));
  }
  assert_int_equal(hx_results_commit(res, &e), HX_OK);
  hx_results_close(res);
  char dir[128];
  snprintf(dir, sizeof dir, "%s/direct", root);
  hx_run r;
  assert_int_equal(hx_run_load(&r, dir, &e), HX_OK);
  assert_true(row(&r, "both", "bytes", "B") == 72e6);
  assert_true(fabs(row(&r, "both", "bandwidth", "GB/s") - 144.0) < 1e-9);
  assert_true(row(&r, "both", "flops", "FLOP") == 2e12);
  assert_true(fabs(row(&r, "both", "tflops", "TFLOP/s") - 4000.0) < 1e-6);
  assert_true(fabs(row(&r, "bytes_only", "bandwidth", "GB/s") - 36.0) < 1e-9);
  assert_true(isnan(row(&r, "bytes_only", "flops", "FLOP")));
  assert_true(isnan(row(&r, "bytes_only", "tflops", "TFLOP/s")));
  for (int z = 0; z < 2; z++) {
    const char *kn = z ? "zero_median" : "no_median";
    assert_true(row(&r, kn, "bytes", "B") == 72e6);
    assert_true(row(&r, kn, "flops", "FLOP") == 1e9);
    assert_true(isnan(row(&r, kn, "bandwidth", "GB/s")));
    assert_true(isnan(row(&r, kn, "tflops", "TFLOP/s")));
  }
  for (size_t i = 0; i < r.n_rows; i++) { /* nothing for the undeclared closure or the refused ones */
    assert_string_not_equal(r.rows[i].kernel, "undeclared");
    assert_string_not_equal(r.rows[i].kernel, "bad");
  }
  hx_run_free(&r);
}

static hx_status busy(void *arg, void *stream, hx_err *err) {
  (void)stream, (void)err;
  volatile double *x = arg;
  for (int i = 0; i < 20000; i++) *x += 1e-3 * i;
  return HX_OK;
}

/* f3d_measure, CPU clock: the closure declares its work and the rows carry the rates at the median of the
 * time_median row; the caller only gets a status. */
static void test_sweep_path(void **state) {
  (void)state;
  hx_results *res;
  hx_err e;
  assert_int_equal(hx_results_open(&res, root, "sweep", &e), HX_OK);
  f3d_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.results = res;
  ctx.timing = (hx_timing_opts){1, 9};
  ctx.c.workload = "lidar";
  ctx.c.n_points = 1000;
  ctx.c.batch = 1;
  volatile double x = 0.0;
  hx_closure c = {busy, NULL, (void *)&x, 3.0e6, 5.0e9};
  assert_int_equal(f3d_measure(&ctx, "p", "work", "cpu", HX_CLOCK_CPU, &c, &e), HX_OK);
  hx_closure plain = {busy, NULL, (void *)&x, 0.0, 0.0};
  assert_int_equal(f3d_measure(&ctx, "p", "plain", "cpu", HX_CLOCK_CPU, &plain, &e), HX_OK);
  hx_closure bad = {busy, NULL, (void *)&x, -3.0, 0.0};
  assert_int_equal(f3d_measure(&ctx, "p", "bad", "cpu", HX_CLOCK_CPU, &bad, &e), HX_EINVAL);
  assert_int_equal(hx_results_commit(res, &e), HX_OK);
  hx_results_close(res);
  char dir[128];
  snprintf(dir, sizeof dir, "%s/sweep", root);
  hx_run r;
  assert_int_equal(hx_run_load(&r, dir, &e), HX_OK);
  const double med = row(&r, "work", "time_median", "ms");
  assert_true(med > 0.0);
  assert_true(row(&r, "work", "bytes", "B") == 3.0e6);
  assert_true(row(&r, "work", "flops", "FLOP") == 5.0e9);
  /* the rows print %.10g: compare to 1e-9 relative */
  assert_true(fabs(row(&r, "work", "bandwidth", "GB/s") / (3.0e6 / (med * 1e6)) - 1.0) < 1e-8);
  assert_true(fabs(row(&r, "work", "tflops", "TFLOP/s") / (5.0e9 / (med * 1e-3) / 1e12) - 1.0) < 1e-8);
  assert_true(isnan(row(&r, "plain", "bandwidth", "GB/s")));
  assert_true(isnan(row(&r, "plain", "bytes", "B")));
  assert_true(row(&r, "plain", "time_median", "ms") > 0.0);
  assert_true(isnan(row(&r, "bad", "time_median", "ms"))); /* refused before it was timed */
  hx_run_free(&r);
}

/* The sweep's random 16-bit inputs in either dtype (sweep --dtype): value i is amp x (2u - 1) rounded to the dtype,
 * u the (i % 4)-th 16-bit part of draw i / 4, as sweep.h states; and the GEMM ceiling a dtype's floors take. */
static void test_fill16(void **state) {
  (void)state;
  enum { N = 1003 }; /* not a multiple of 4: the last draw is cut */
  static const double amp[3] = {2.0, 2.0, 1.0};
  uint16_t got[2][N + 1];
  for (int d = 0; d < 2; d++) {
    got[d][N] = 0xABCD; /* past the end: untouched */
    f3d_fill_uniform16(got[d], N, 77, 5, amp, 3, d ? NET_BF16 : NET_F16);
    assert_int_equal(got[d][N], 0xABCD);
    const battn_dtype bt = d ? BATTN_BF16 : BATTN_F16;
    for (size_t i = 0; i < N; i++) {
      const double u = (double)((hx_rng_u64(77, 0, i / 4) >> (16 * (i % 4))) & 0xFFFFu) / 65536.0;
      const double a = amp[(i / 5) % 3], v = a * (2.0 * u - 1.0);
      assert_int_equal(got[d][i], battn_from_float(bt, (float)v));
      const double back = (double)battn_to_float(bt, got[d][i]);
      assert_true(back >= -a && back <= a);
    }
  }
  size_t differ = 0;
  for (size_t i = 0; i < N; i++) differ += got[0][i] != got[1][i];
  assert_true(differ > N / 2); /* two encodings, not one */
  hx_bench b;
  memset(&b, 0, sizeof b);
  b.ceilings.gemm_fp16_tflops = 800.0, b.ceilings.gemm_bf16_tflops = 790.0;
  assert_true(f3d_gemm_ceiling(&b, NET_F16) == 800.0);
  assert_true(f3d_gemm_ceiling(&b, NET_BF16) == 790.0);
  assert_true(isnan(f3d_gemm_ceiling(NULL, NET_BF16)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_record),
      cmocka_unit_test(test_sweep_path),
      cmocka_unit_test(test_fill16),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
