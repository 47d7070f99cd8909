/*
 * test_cupti.c - metric-name validation through the CUPTI Profiler Host API, which needs no GPU and no
 * driver: the default set is valid and one pass on GH100 (H100/H200) and GA100 (A100); a misspelled name
 * is an error that lists the intended name among the close ones; an unknown chip is an error; the
 * metric table and list splitting. Exits 77 (skip) in a build without CUPTI (the stub says so).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "harness/harness.h"

static void check_chip(const char *chip) {
  size_t n, passes = 0;
  const char *const *names = hx_counters_default_names(&n);
  hx_err e;
  assert_true(n == 5);
  hx_status st = hx_counters_validate(chip, names, n, &passes, &e);
  if (st != HX_OK) print_error("%s: %s\n", chip, e.msg);
  assert_int_equal(st, HX_OK);
  assert_true(passes == 1);
  /* a few more names from harness-cupti.md section 2 */
  const char *more[] = {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                        "dram__throughput.avg.pct_of_peak_sustained_elapsed", "gpc__cycles_elapsed.max",
                        "sm__warps_active.avg.pct_of_peak_sustained_active"};
  assert_int_equal(hx_counters_validate(chip, more, 4, &passes, &e), HX_OK);
  assert_true(passes >= 1);
}

static void test_gh100(void **state) {
  (void)state;
  check_chip("GH100");
}

static void test_ga100(void **state) {
  (void)state;
  check_chip("GA100");
}

static void test_unknown_metric(void **state) {
  (void)state;
  hx_err e;
  size_t passes = 0;
  /* a typo in the base name: the list of close names holds the right one */
  const char *bad[] = {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "dram__byte_read.sum.per_second"};
  assert_int_equal(hx_counters_validate("GH100", bad, 2, &passes, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "dram__byte_read.sum.per_second"));
  assert_non_null(strstr(e.msg, "dram__bytes_read"));
  /* a wrong suffix on a real base name: close names are valid submetrics of it */
  const char *bad2[] = {"gpu__time_duration.summ"};
  assert_int_equal(hx_counters_validate("GA100", bad2, 1, &passes, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "gpu__time_duration.sum"));
  /* the GMMA cycles metric does not exist on either chip (harness-cupti.md section 2) */
  const char *bad3[] = {"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"};
  assert_int_equal(hx_counters_validate("GH100", bad3, 1, &passes, &e), HX_EINVAL);
  /* an unknown chip */
  size_t n;
  const char *const *names = hx_counters_default_names(&n);
  assert_int_equal(hx_counters_validate("NOSUCHCHIP", names, n, &passes, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "GH100")); /* the list of supported chips */
}

static void test_table(void **state) {
  (void)state;
  const hx_metric_info *m = hx_metric_lookup("dram__bytes_read.sum.per_second");
  assert_non_null(m);
  assert_string_equal(m->short_name, "dram_read_bw");
  assert_string_equal(m->unit, "B/s");
  assert_ptr_equal(hx_metric_lookup("sm_active"), hx_metric_lookup(hx_metric_lookup("sm_active")->name));
  assert_null(hx_metric_lookup("nope"));
  char list[] = "sm_active, gpu__time_duration.sum,tensor_active";
  const char *names[8];
  size_t n;
  hx_err e;
  assert_int_equal(hx_counters_split(list, names, 8, &n, &e), HX_OK);
  assert_true(n == 3);
  assert_string_equal(names[0], "sm__cycles_active.avg.pct_of_peak_sustained_elapsed");
  assert_string_equal(names[1], "gpu__time_duration.sum");
  assert_string_equal(names[2], "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active");
  char empty[] = " , ";
  assert_int_equal(hx_counters_split(empty, names, 8, &n, &e), HX_EINVAL);
}

int main(void) {
  size_t n, passes;
  const char *const *names = hx_counters_default_names(&n);
  if (hx_counters_validate("GH100", names, n, &passes, NULL) == HX_EUNSUPPORTED)
    return 77; /* built without CUPTI (the stub): nothing to validate against */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gh100),
      cmocka_unit_test(test_ga100),
      cmocka_unit_test(test_unknown_metric),
      cmocka_unit_test(test_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
