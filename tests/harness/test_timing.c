/*
 * test_timing.c - the timing module on the CPU clock: the one summary (hx_stats_describe) on samples with
 * known answers, warm-up and repetition counts, reset() outside the timed region, error propagation, a
 * closure's declared bytes and FLOPs checked before anything is timed, and the GPU clock refusing
 * cleanly when there is no device.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>
#include <time.h>

#include "f3d_config.h"
#include "harness/harness.h"

static void test_summary_known(void **state) {
  (void)state;
  hx_stats_desc s;
  const double even[] = {4.0, 1.0, 3.0, 2.0};
  assert_int_equal(hx_stats_describe(&s, even, 4, NULL), HX_OK);
  assert_int_equal(s.n, 4);
  assert_true(fabs(s.median - 2.5) < 1e-12);
  assert_true(fabs(s.mean - 2.5) < 1e-12);
  assert_true(fabs(s.std - sqrt(5.0 / 3.0)) < 1e-12); /* sum of squares 5, n-1 = 3 */
  assert_true(s.min == 1.0 && s.max == 4.0);
  assert_true(even[0] == 4.0 && even[1] == 1.0); /* input not sorted in place */
  const double odd[] = {5.0, 1.0, 3.0};
  assert_int_equal(hx_stats_describe(&s, odd, 3, NULL), HX_OK);
  assert_true(s.median == 3.0 && fabs(s.std - 2.0) < 1e-12);
  const double one[] = {7.25};
  assert_int_equal(hx_stats_describe(&s, one, 1, NULL), HX_OK);
  assert_true(s.median == 7.25 && s.mean == 7.25 && s.std == 0.0 && s.min == 7.25 && s.max == 7.25);
  /* large offset, tiny spread: the two-pass variance keeps it (naive sum of squares gives 0 or junk) */
  const double off[] = {1e9 + 1.0, 1e9 + 2.0, 1e9 + 3.0};
  assert_int_equal(hx_stats_describe(&s, off, 3, NULL), HX_OK);
  assert_true(fabs(s.std - 1.0) < 1e-6);
}

static void test_summary_invalid(void **state) {
  (void)state;
  hx_stats_desc s;
  const double bad[] = {1.0, NAN, 2.0};
  hx_err err = {HX_OK, ""};
  assert_int_equal(hx_stats_describe(&s, bad, 3, &err), HX_EINVAL);
  assert_non_null(strstr(err.msg, "sample 1"));
  const double inf[] = {INFINITY};
  assert_int_equal(hx_stats_describe(&s, inf, 1, NULL), HX_EINVAL);
  assert_int_equal(hx_stats_describe(&s, bad, 0, NULL), HX_EINVAL);
}

typedef struct counter {
  int runs, resets, fail_at;
  double sleep_ms;
  int reset_before_run; /* set by reset, cleared by run: checks ordering */
  int order_ok;
} counter;

static hx_status count_reset(void *arg, hx_err *err) {
  (void)err;
  counter *c = arg;
  c->resets++;
  c->reset_before_run = 1;
  return HX_OK;
}

static hx_status count_run(void *arg, void *stream, hx_err *err) {
  counter *c = arg;
  if (stream != NULL || !c->reset_before_run) c->order_ok = 0;
  c->reset_before_run = 0;
  c->runs++;
  if (c->fail_at && c->runs == c->fail_at) return hx_errf(err, HX_ECHECK, "run %d failed", c->runs);
  if (c->sleep_ms > 0) {
    struct timespec ts = {0, (long)(c->sleep_ms * 1e6)};
    nanosleep(&ts, NULL);
  }
  return HX_OK;
}

static void test_time_cpu_counts(void **state) {
  (void)state;
  counter c = {0, 0, 0, 2.0, 0, 1};
  hx_closure cl = {count_run, count_reset, &c, 0.0, 0.0};
  hx_timing_opts o = {3, 5};
  double samples[5];
  assert_int_equal(hx_time(samples, HX_CLOCK_CPU, &o, &cl, NULL, NULL), HX_OK);
  assert_int_equal(c.runs, 8); /* 3 warm-up + 5 kept */
  assert_int_equal(c.resets, 8);
  assert_true(c.order_ok);
  for (int i = 0; i < 5; i++) {
    assert_true(samples[i] >= 2.0);   /* slept at least 2 ms inside the timed region */
    assert_true(samples[i] < 1000.0); /* and the clock is in milliseconds, not microseconds */
  }
}

/* Defaults are the paper's protocol (20 kept runs, first discarded); reset() is optional. */
static void test_time_defaults_no_reset(void **state) {
  (void)state;
  counter c = {0, 0, 0, 0.0, 0, 1};
  hx_closure cl = {count_run, NULL, &c, 0.0, 0.0};
  hx_timing_opts o = hx_timing_defaults();
  assert_int_equal(o.reps, 20);
  assert_int_equal(o.warmup, 1);
  double samples[20];
  assert_int_equal(hx_time(samples, HX_CLOCK_CPU, &o, &cl, NULL, NULL), HX_OK);
  assert_int_equal(c.runs, 21);
  for (int i = 0; i < 20; i++) assert_true(samples[i] >= 0.0 && samples[i] < 5.0);
}

static hx_status slow_reset(void *arg, hx_err *err) {
  (void)arg, (void)err;
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
  return HX_OK;
}

static hx_status empty_run(void *arg, void *stream, hx_err *err) {
  (void)arg, (void)stream, (void)err;
  return HX_OK;
}

static void test_time_reset_not_timed(void **state) {
  (void)state;
  hx_closure cl = {empty_run, slow_reset, NULL, 0.0, 0.0};
  hx_timing_opts o = {0, 3};
  double samples[3];
  assert_int_equal(hx_time(samples, HX_CLOCK_CPU, &o, &cl, NULL, NULL), HX_OK);
  for (int i = 0; i < 3; i++) assert_true(samples[i] < 10.0); /* the 20 ms reset is outside */
}

static void test_time_errors(void **state) {
  (void)state;
  counter c = {0, 0, 4, 0.0, 0, 1};
  hx_closure cl = {count_run, count_reset, &c, 0.0, 0.0};
  hx_timing_opts o = {1, 10};
  double samples[10];
  hx_err err = {HX_OK, ""};
  assert_int_equal(hx_time(samples, HX_CLOCK_CPU, &o, &cl, NULL, &err), HX_ECHECK);
  assert_string_equal(err.msg, "run 4 failed");
  assert_int_equal(c.runs, 4); /* stops at the failure */
  hx_timing_opts zero = {1, 0};
  assert_int_equal(hx_time(samples, HX_CLOCK_CPU, &zero, &cl, NULL, NULL), HX_EINVAL);
  hx_closure none = {NULL, NULL, NULL, 0.0, 0.0};
  assert_int_equal(hx_time(samples, HX_CLOCK_CPU, &o, &none, NULL, NULL), HX_EINVAL);
}

/* A declaration of bytes or FLOPs that is negative or not finite is refused before the first run (it would
 * give a rate row of nonsense after the whole measurement); 0 declares nothing, any positive value passes. */
static void test_closure_declaration(void **state) {
  (void)state;
  counter c = {0, 0, 0, 0.0, 0, 1};
  hx_closure cl = {count_run, count_reset, &c, 72e6, 1e9};
  hx_timing_opts o = {1, 2};
  double samples[2];
  hx_err err = {HX_OK, ""};
  assert_int_equal(hx_closure_check(&cl, &err), HX_OK);
  assert_int_equal(hx_time(samples, HX_CLOCK_CPU, &o, &cl, NULL, &err), HX_OK);
  assert_int_equal(c.runs, 3);
  const double bad[] = {-1.0, NAN, INFINITY};
  for (int field = 0; field < 2; field++)
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      hx_closure b = cl;
      if (field) b.flops = bad[i];
      else b.bytes = bad[i];
      c.runs = 0;
      assert_int_equal(hx_time(samples, HX_CLOCK_CPU, &o, &b, NULL, &err), HX_EINVAL);
      assert_non_null(strstr(err.msg, field ? "FLOP" : "bytes"));
      assert_int_equal(c.runs, 0); /* nothing ran */
    }
}

static void test_time_gpu_without_device(void **state) {
  (void)state;
  int n = 0;
  if (hx_device_count(&n, NULL) == HX_OK) skip(); /* covered by test_timing_gpu on a GPU machine */
  assert_int_equal(n, 0);
  hx_closure cl = {empty_run, NULL, NULL, 0.0, 0.0};
  hx_timing_opts o = {1, 2};
  double samples[2];
  hx_err err = {HX_OK, ""};
  assert_int_equal(hx_time(samples, HX_CLOCK_GPU, &o, &cl, NULL, &err), HX_ENODEV);
  assert_true(strlen(err.msg) > 0);
}

static void test_now_monotonic(void **state) {
  (void)state;
  double a = hx_now_ms(), b = hx_now_ms();
  assert_true(b >= a);
  char v[16];
  hx_cuda_version_str(v, sizeof v, 13000);
  assert_string_equal(v, "13.0");
  hx_cuda_version_str(v, sizeof v, 12080);
  assert_string_equal(v, "12.8");
  hx_cuda_version_str(v, sizeof v, 0);
  assert_string_equal(v, "none");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_summary_known),          cmocka_unit_test(test_summary_invalid),
      cmocka_unit_test(test_time_cpu_counts),        cmocka_unit_test(test_time_defaults_no_reset),
      cmocka_unit_test(test_time_reset_not_timed),   cmocka_unit_test(test_time_errors),
      cmocka_unit_test(test_time_gpu_without_device), cmocka_unit_test(test_now_monotonic),
      cmocka_unit_test(test_closure_declaration),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
