/*
 * test_stats.c - statistics of the regression gate against known answers: quantiles, the Mann-Whitney U
 * statistic and its p-values (SciPy's documented example, published critical-value tables, a hand-worked
 * tie-corrected normal approximation), no false alarms on identical distributions, a 10% shift detected;
 * the GPU measurement's host-side rules (stopping, rows that never carry a non-finite value).
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

#include "harness/harness.h"
#include "tests/harness/test_run_util.h"

static void test_describe(void **state) {
  (void)state;
  const double x[] = {4.0, 1.0, 3.0, 2.0, 5.0};
  hx_stats_desc d;
  assert_int_equal(hx_stats_describe(&d, x, 5, NULL), HX_OK);
  assert_true(d.n == 5);
  assert_true(fabs(d.median - 3.0) < 1e-12);
  assert_true(fabs(d.q1 - 2.0) < 1e-12);
  assert_true(fabs(d.q3 - 4.0) < 1e-12);
  assert_true(fabs(d.mean - 3.0) < 1e-12);
  assert_true(fabs(d.std - sqrt(2.5)) < 1e-12);
  assert_true(d.min == 1.0 && d.max == 5.0);
  /* even count: type-7 median is the mean of the middle two; quantile 0.1 of {1,2,3,4} is 1.3 */
  const double y[] = {4.0, 2.0, 1.0, 3.0};
  assert_true(fabs(hx_stats_median(y, 4) - 2.5) < 1e-12);
  const double ys[] = {1.0, 2.0, 3.0, 4.0};
  assert_true(fabs(hx_stats_quantile_sorted(ys, 4, 0.1) - 1.3) < 1e-12);
  assert_true(isnan(hx_stats_median(y, 0)));
  const double bad[] = {1.0, NAN};
  hx_err e;
  assert_int_equal(hx_stats_describe(&d, bad, 2, &e), HX_EINVAL);
}

/* SciPy's mannwhitneyu documentation example: U1 = 17, exact two-sided p = 1/9. */
static void test_mwu_scipy_example(void **state) {
  (void)state;
  const double males[] = {19, 22, 16, 29, 24};
  const double females[] = {20, 11, 17, 12};
  hx_stats_mwu_result r;
  assert_int_equal(hx_stats_mwu(&r, males, 5, females, 4, NULL), HX_OK);
  assert_true(r.exact);
  assert_true(fabs(r.u_a - 17.0) < 1e-12);
  assert_true(fabs(r.u_a + r.u_b - 20.0) < 1e-12);
  assert_true(fabs(r.p - 1.0 / 9.0) < 1e-12);
  /* swapping the samples gives the same two-sided p */
  assert_int_equal(hx_stats_mwu(&r, females, 4, males, 5, NULL), HX_OK);
  assert_true(fabs(r.u_a - 3.0) < 1e-12);
  assert_true(fabs(r.p - 1.0 / 9.0) < 1e-12);
}

/* Published two-tailed critical values of U (reject when U <= crit): the exact p at crit is at most
 * alpha and at crit + 1 it exceeds alpha. */
static void test_mwu_critical_tables(void **state) {
  (void)state;
  const struct {
    size_t n1, n2;
    double alpha;
    double crit;
  } t[] = {
      {5, 5, 0.05, 2},   {5, 5, 0.01, 0},   {8, 8, 0.05, 13},    {8, 8, 0.01, 7},
      {10, 10, 0.05, 23}, {10, 10, 0.01, 16}, {20, 20, 0.05, 127}, {20, 20, 0.01, 105},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    double p_at, p_above;
    assert_int_equal(hx_stats_mwu_exact_p(&p_at, t[i].n1, t[i].n2, t[i].crit, NULL), HX_OK);
    assert_int_equal(hx_stats_mwu_exact_p(&p_above, t[i].n1, t[i].n2, t[i].crit + 1, NULL), HX_OK);
    assert_true(p_at <= t[i].alpha);
    assert_true(p_above > t[i].alpha);
  }
  /* n1 = n2 = 3: P(U = 0) = 1 / C(6,3) = 1/20, two-sided 0.1; the centre gives p = 1 */
  double p;
  assert_int_equal(hx_stats_mwu_exact_p(&p, 3, 3, 0, NULL), HX_OK);
  assert_true(fabs(p - 0.1) < 1e-12);
  assert_int_equal(hx_stats_mwu_exact_p(&p, 3, 3, 4.5, NULL), HX_OK);
  assert_true(fabs(p - 1.0) < 1e-12);
  assert_int_equal(hx_stats_mwu_exact_p(&p, 101, 3, 0, NULL), HX_EINVAL);
}

/* Ties: a = {1,2,2,3}, b = {2,3,4,5}. Mid-ranks give R_a = 12.5, U_a = 2.5; tie groups of 3 and 2
 * give var = 16/12 * (9 - 30/56) = 11.2857; p = erfc((|2.5 - 8| - 0.5) / sqrt(var) / sqrt 2) = 0.136658. */
static void test_mwu_ties_normal(void **state) {
  (void)state;
  const double a[] = {1, 2, 2, 3};
  const double b[] = {2, 3, 4, 5};
  hx_stats_mwu_result r;
  assert_int_equal(hx_stats_mwu(&r, a, 4, b, 4, NULL), HX_OK);
  assert_false(r.exact);
  assert_true(r.ties == 2);
  assert_true(fabs(r.u_a - 2.5) < 1e-12);
  assert_true(fabs(r.p - 0.13665824773814753) < 1e-9);
  /* all values equal: no evidence */
  const double c[] = {1, 1, 1};
  assert_int_equal(hx_stats_mwu(&r, c, 3, c, 3, NULL), HX_OK);
  assert_true(fabs(r.p - 1.0) < 1e-12);
}

/* The normal approximation on large samples (no ties, > HX_MWU_EXACT_MAX values) agrees with the exact
 * distribution's tail at the largest exact size: check monotone, sane values instead of a table. */
static void test_mwu_large_samples(void **state) {
  (void)state;
  enum { N = 150 };
  double a[N], b[N];
  for (int i = 0; i < N; i++) {
    a[i] = (double)(2 * i);     /* evens */
    b[i] = (double)(2 * i + 1); /* odds: b_j > a_i in just over half of the pairs */
  }
  hx_stats_mwu_result r;
  assert_int_equal(hx_stats_mwu(&r, a, N, b, N, NULL), HX_OK);
  assert_false(r.exact);
  assert_true(r.p > 0.8); /* U_a = N(N-1)/2 vs mean N^2/2: z ~ -0.04 */
  for (int i = 0; i < N; i++) b[i] += 60.0; /* shift by 30 ranks of 300 */
  assert_int_equal(hx_stats_mwu(&r, a, N, b, N, NULL), HX_OK);
  assert_true(r.p < 1e-3);
}

/* Multiplicative noise of relative size sigma around `centre`: the product of uniform draws, i.e. a
 * roughly log-normal kernel-time distribution with a right tail. */
static void draw(double *x, size_t n, double centre, double sigma, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    double s = 0.0;
    for (int k = 0; k < 4; k++) s += hx_rng_unit(seed, i, (uint64_t)k) - 0.5;
    x[i] = centre * exp(sigma * s * sqrt(3.0));
  }
}

static void test_no_false_alarm(void **state) {
  (void)state;
  enum { N = 20, TRIALS = 400 };
  double a[N], b[N];
  int slower = 0, faster = 0, p05 = 0;
  for (int t = 0; t < TRIALS; t++) {
    draw(a, N, 1.0, 0.02, 1000u + (uint64_t)t);
    draw(b, N, 1.0, 0.02, 5000u + (uint64_t)t);
    double rel, p;
    hx_stats_verdict v = hx_stats_compare(a, N, b, N, 0.01, 0.03, &rel, &p);
    slower += v == HX_VERDICT_SLOWER;
    faster += v == HX_VERDICT_FASTER;
    p05 += p < 0.05;
  }
  assert_int_equal(slower, 0);
  assert_int_equal(faster, 0);
  /* the test itself is calibrated: about 5% of p-values fall under 0.05 under the null */
  assert_true(p05 >= 4 && p05 <= 45);
}

static void test_shift_detected(void **state) {
  (void)state;
  enum { N = 20 };
  double a[N], b[N];
  int detected = 0;
  for (int t = 0; t < 50; t++) {
    draw(a, N, 1.0, 0.02, 100u + (uint64_t)t);
    draw(b, N, 1.1, 0.02, 900u + (uint64_t)t);
    double rel, p;
    hx_stats_verdict v = hx_stats_compare(a, N, b, N, 0.01, 0.03, &rel, &p);
    detected += v == HX_VERDICT_SLOWER;
    if (v == HX_VERDICT_SLOWER) assert_true(rel > 0.05 && rel < 0.15);
    assert_int_equal(hx_stats_compare(b, N, a, N, 0.01, 0.03, NULL, NULL), HX_VERDICT_FASTER);
  }
  assert_int_equal(detected, 50);
  /* a real but tiny (1%) shift is significant yet under the minimum effect: "same" */
  draw(a, N, 1.0, 0.001, 7);
  draw(b, N, 1.01, 0.001, 8);
  double p;
  assert_int_equal(hx_stats_compare(a, N, b, N, 0.01, 0.03, NULL, &p), HX_VERDICT_SAME);
  assert_true(p < 0.01);
  /* too few samples: unknown */
  assert_int_equal(hx_stats_compare(a, 2, b, 2, 0.01, 0.03, NULL, NULL), HX_VERDICT_UNKNOWN);
}

static void test_edit_distance(void **state) {
  (void)state;
  assert_true(hx_edit_distance("kitten", "sitting") == 3);
  assert_true(hx_edit_distance("", "abc") == 3);
  assert_true(hx_edit_distance("dram__bytes_read.sum", "dram__bytes_read.sum") == 0);
  assert_true(hx_edit_distance("dram__byte_read.sum", "dram__bytes_read.sum") == 1);
}

/* The stopping rule of the GPU measurement (host-side, measure_common.c). */
static void test_stop_rule(void **state) {
  (void)state;
  hx_measure_opts o = hx_measure_defaults();
  assert_int_equal(hx_measure_should_stop(&o, 5, 1.0, 1.0, 0.0001), HX_STOP_NO);     /* < min samples */
  assert_int_equal(hx_measure_should_stop(&o, 50, 0.1, 1.0, 0.0001), HX_STOP_NO);    /* < min time */
  assert_int_equal(hx_measure_should_stop(&o, 50, 0.6, 1.0, 0.01), HX_STOP_NO);      /* too noisy */
  assert_int_equal(hx_measure_should_stop(&o, 50, 0.6, 1.0, 0.004), HX_STOP_NOISE);
  assert_int_equal(hx_measure_should_stop(&o, 1000, 0.6, 1.0, 0.5), HX_STOP_MAX_SAMPLES);
  assert_int_equal(hx_measure_should_stop(&o, 50, 0.6, 15.0, 0.5), HX_STOP_MAX_TIME);
  /* the wall-time cap waits for a second sample (noise needs two), unless one is all it may keep */
  assert_int_equal(hx_measure_should_stop(&o, 1, 20.0, 20.0, INFINITY), HX_STOP_NO);
  assert_int_equal(hx_measure_should_stop(&o, 2, 20.0, 20.0, 0.5), HX_STOP_MAX_TIME);
  hx_measure_opts one = o;
  one.min_samples = one.max_samples = 1;
  assert_int_equal(hx_measure_should_stop(&one, 0, 0.0, 20.0, INFINITY), HX_STOP_MAX_TIME);
  hx_measure_opts p = hx_measure_paper();
  assert_true(p.warmup + p.max_samples == 20); /* 20 runs, the first discarded */
  assert_int_equal(hx_measure_should_stop(&p, 18, 10.0, 1.0, 0.0), HX_STOP_NO); /* never on noise */
  assert_int_equal(hx_measure_should_stop(&p, 19, 10.0, 1.0, 0.0), HX_STOP_MAX_SAMPLES);
  assert_string_equal(hx_measure_stop_str(HX_STOP_NOISE), "noise");
}

/* Rows of one measurement never carry a non-finite value: an undefined statistic is left out and a row
 * says why (one kept cold sample: noise_undefined; a counter range without a kernel: counters_undefined). */
static const hx_run_row *find_row(const hx_run *run, const char *kernel, const char *metric) {
  for (size_t i = 0; i < run->n_rows; i++)
    if (strcmp(run->rows[i].kernel, kernel) == 0 && strcmp(run->rows[i].metric, metric) == 0) return &run->rows[i];
  return NULL;
}

static void test_record_undefined(void **state) {
  (void)state;
  char root[] = "/tmp/f3d-test-record-XXXXXX";
  assert_non_null(mkdtemp(root));
  hx_results *res = NULL;
  hx_err e;
  assert_int_equal(hx_results_open(&res, root, "rec", &e), HX_OK);
  double one_ms = 0.25, clk = NAN;
  hx_measurement m;
  memset(&m, 0, sizeof m);
  m.cold_ms = &one_ms;
  m.cold_sm_mhz = &clk;
  m.n_cold = 1;
  m.noise = NAN; /* as measure.cu leaves it with one kept sample */
  m.sync_detected = 1;
  hx_key k = {"uniform", 1000, 1, "ptv3", "dedup", "v0"};
  assert_int_equal(hx_measure_record(res, &k, &m, &e), HX_OK);
  const char *names[] = {"sm_active", "dram_read_bw", "gpu_time"};
  const double vals[] = {NAN, 1e9, INFINITY};
  hx_key kc = {"uniform", 1000, 1, "ptv3", "copy", "memcpy"};
  assert_int_equal(hx_counters_record(res, &kc, names, vals, 3, &e), HX_OK);
  assert_int_equal(hx_results_commit(res, &e), HX_OK);
  hx_results_close(res);
  char dir[sizeof root + 8];
  snprintf(dir, sizeof dir, "%s/rec", root);
  hx_run run;
  assert_int_equal(hx_run_load(&run, dir, &e), HX_OK);
  assert_non_null(find_row(&run, "dedup", "time_median"));
  assert_null(find_row(&run, "dedup", "time_noise"));
  assert_non_null(find_row(&run, "dedup", "noise_undefined"));
  assert_null(find_row(&run, "dedup", "sm_clock")); /* SM 0 never probed */
  assert_non_null(find_row(&run, "dedup", "sync_detected"));
  assert_null(find_row(&run, "copy", "sm_active"));
  assert_null(find_row(&run, "copy", "gpu_time"));
  assert_non_null(find_row(&run, "copy", "dram_read_bw"));
  const hx_run_row *u = find_row(&run, "copy", "counters_undefined");
  assert_non_null(u);
  assert_true(u->value == 2.0);
  for (size_t i = 0; i < run.n_rows; i++) assert_true(isfinite(run.rows[i].value));
  hx_run_free(&run);
  assert_int_equal(t_rm_rf(root), 0);
}

/* NVTX/CUPTI range bookkeeping without a counter pass: pairs must match. */
static void test_ranges(void **state) {
  (void)state;
  hx_ranges r;
  hx_err e;
  hx_ranges_init(&r, "flash3d-test", NULL);
  assert_int_equal(hx_range_push(&r, "case", &e), HX_OK);
  assert_int_equal(hx_range_push(&r, "stage", &e), HX_OK);
  assert_int_equal(r.depth, 2);
  assert_int_equal(hx_range_pop(&r, &e), HX_OK);
  assert_int_equal(hx_range_pop(&r, &e), HX_OK);
  assert_int_equal(hx_range_pop(&r, &e), HX_EINVAL);
  assert_int_equal(r.depth, 0);
  hx_ranges_fini(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_describe),          cmocka_unit_test(test_mwu_scipy_example),
      cmocka_unit_test(test_mwu_critical_tables), cmocka_unit_test(test_mwu_ties_normal),
      cmocka_unit_test(test_mwu_large_samples), cmocka_unit_test(test_no_false_alarm),
      cmocka_unit_test(test_shift_detected),    cmocka_unit_test(test_edit_distance),
      cmocka_unit_test(test_stop_rule),         cmocka_unit_test(test_ranges),
      cmocka_unit_test(test_record_undefined),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
