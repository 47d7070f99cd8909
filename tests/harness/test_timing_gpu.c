/*
 * test_timing_gpu.c - device queries and the GPU clock on a real device (suite gpu). Exits 77 (skip)
 * without a CUDA device or in a CPU-only build.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "harness/harness.h"

static void test_device_query(void **state) {
  (void)state;
  int n = 0;
  assert_int_equal(hx_device_count(&n, NULL), HX_OK);
  assert_true(n >= 1);
  hx_device_info d;
  assert_int_equal(hx_device_query(&d, 0, NULL), HX_OK);
  assert_true(strlen(d.name) > 0);
  assert_true(d.cc_major >= 7);
  assert_true(d.sm_count > 0 && d.l2_bytes > 0);
  assert_true(d.mem_bytes > ((size_t)1 << 30));
  assert_true(d.sm_clock_khz > 100000 && d.mem_clock_khz > 0);
  assert_true(d.driver_version >= d.runtime_version || d.driver_version > 0);
  assert_int_equal(hx_device_query(&d, n + 100, NULL), HX_ECUDA);
}

typedef struct spin {
  int runs;
  void *last_stream;
} spin;

static hx_status record_stream(void *arg, void *stream, hx_err *err) {
  (void)err;
  spin *s = arg;
  s->runs++;
  s->last_stream = stream;
  return HX_OK;
}

static void test_gpu_clock(void **state) {
  (void)state;
  spin s = {0, NULL};
  hx_closure cl = {record_stream, NULL, &s, 0.0, 0.0};
  hx_timing_opts o = {2, 7};
  double samples[7];
  assert_int_equal(hx_time(samples, HX_CLOCK_GPU, &o, &cl, NULL, NULL), HX_OK);
  assert_int_equal(s.runs, 9);
  assert_non_null(s.last_stream); /* a non-default stream was created and handed to run() */
  for (int i = 0; i < 7; i++) assert_true(samples[i] >= 0.0 && samples[i] < 100.0); /* empty interval */
}

int main(void) {
  int n = 0;
  if (hx_device_count(&n, NULL) != HX_OK || n == 0) return 77;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_device_query), cmocka_unit_test(test_gpu_clock)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
