/*
 * test_measure_gpu.c - the NVBench-style measurement on a real GPU: a 200 us kernel measures 200 us (the
 * blocking kernel hides launch cost) with the noise target reached and a plausible SM clock per sample;
 * an L2-resident copy is faster hot than cold (the flush works); a run() that synchronizes is detected
 * and still measured; the paper preset keeps 19 of 20 runs; a counter pass between two timing passes
 * does not move the timed median by more than the noise; the ceilings are plausible. No false sync
 * detection: not for a kernel whose first launch (lazy module loading) happens inside the measurement,
 * nor for hot batches of many launches; a synchronizing run() still gets >= 2 samples and a finite
 * noise under a wall-time cap shorter than the hold time-out.
 * Exits 77 without a CUDA device.
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

#include "gpu_test_kernels.h"
#include "harness/harness.h"
#include "tests/harness/test_run_util.h"

static hx_meter *meter;
static float *d_a, *d_b;
static size_t copy_n;

static hx_status run_spin(void *arg, void *stream, hx_err *err) {
  (void)arg, (void)err;
  return tk_spin(200000, stream);
}
static hx_status run_copy(void *arg, void *stream, hx_err *err) {
  (void)arg, (void)err;
  return tk_copy(d_b, d_a, copy_n, stream);
}
static hx_status run_syncing(void *arg, void *stream, hx_err *err) {
  (void)arg, (void)err;
  hx_status st = tk_spin(20000, stream);
  return st == HX_OK ? tk_sync() : st; /* waits for the stream: would deadlock a held stream */
}

static hx_status run_spin_fresh(void *arg, void *stream, hx_err *err) {
  (void)arg, (void)err;
  return tk_spin_fresh(200000, stream);
}
/* 16 launches of ~6 us per run: hot batches of ~200 runs queue ~3200 launches behind the hold */
static hx_status run_many(void *arg, void *stream, hx_err *err) {
  (void)arg, (void)err;
  for (int i = 0; i < 16; i++) {
    hx_status st = tk_spin(6000, stream);
    if (st != HX_OK) return st;
  }
  return HX_OK;
}

static void show(const char *what, const hx_measurement *r) {
  hx_stats_desc d;
  if (r->n_cold && hx_stats_describe(&d, r->cold_ms, r->n_cold, NULL) == HX_OK)
    printf("%-10s cold: n=%zu median %.4f ms noise %.3f%% (%s) throttled %zu, SM %.0f MHz (rated %.0f)\n", what,
           r->n_cold, d.median, 100.0 * r->noise, hx_measure_stop_str(r->stop), r->n_throttled,
           r->cold_sm_mhz[0], r->rated_sm_mhz);
  if (r->n_hot)
    printf("%-10s hot:  %zu batches of %zu, median %.4f ms\n", what, r->n_hot, r->hot_batch_size,
           hx_stats_median(r->hot_ms, r->n_hot));
}

static void test_spin_accuracy(void **state) {
  (void)state;
  hx_measure_opts o = hx_measure_defaults();
  o.min_time_s = 0.05;
  o.max_noise = 0.01;
  hx_closure c = {run_spin, NULL, NULL, 0.0, 0.0};
  hx_measurement r;
  hx_err e;
  assert_int_equal(hx_meter_measure(meter, &o, &c, &r, &e), HX_OK);
  show("spin200us", &r);
  double med = hx_stats_median(r.cold_ms, r.n_cold);
  assert_true(med > 0.199 && med < 0.23);
  assert_true(r.noise_reached);
  assert_false(r.sync_detected);
  size_t clocked = 0;
  for (size_t i = 0; i < r.n_cold; i++)
    if (isfinite(r.cold_sm_mhz[i])) {
      clocked++;
      assert_true(r.cold_sm_mhz[i] > 200.0 && r.cold_sm_mhz[i] < 4000.0);
    }
  assert_true(clocked * 2 > r.n_cold); /* SM 0 was probed for most samples */
  assert_true(r.n_hot == o.hot_batches);
  hx_measurement_free(&r);
}

static void test_l2_flush(void **state) {
  (void)state;
  copy_n = (size_t)1 << 20; /* 4 MiB in, 4 MiB out: fits the 40-60 MB L2 of A100/H100/H200 */
  hx_measure_opts o = hx_measure_defaults();
  o.min_time_s = 0.02;
  o.max_noise = 0.02;
  hx_closure c = {run_copy, NULL, NULL, 0.0, 0.0};
  hx_measurement r;
  hx_err e;
  assert_int_equal(hx_meter_measure(meter, &o, &c, &r, &e), HX_OK);
  show("copy4MiB", &r);
  double cold = hx_stats_median(r.cold_ms, r.n_cold), hot = hx_stats_median(r.hot_ms, r.n_hot);
  assert_true(hot < cold);
  hx_measurement_free(&r);
}

static void test_sync_detected(void **state) {
  (void)state;
  hx_measure_opts o = hx_measure_defaults();
  o.min_samples = 5;
  o.max_samples = 5;
  o.sync_timeout_s = 0.2;
  o.hot = 0;
  hx_closure c = {run_syncing, NULL, NULL, 0.0, 0.0};
  hx_measurement r;
  hx_err e;
  assert_int_equal(hx_meter_measure(meter, &o, &c, &r, &e), HX_OK);
  show("syncing", &r);
  assert_true(r.sync_detected);
  assert_true(r.n_cold == 5);
  double med = hx_stats_median(r.cold_ms, r.n_cold);
  assert_true(med > 0.019 && med < 0.1); /* the discarded sample (held ~0.2 s) is not among them */
  hx_measurement_free(&r);
}

/* Lazy loading makes a kernel's first launch wait for the device to idle, which a held stream never
 * is: that first launch must not be taken for a synchronizing run(). */
static void test_first_launch_not_sync(void **state) {
  (void)state;
  hx_measure_opts o = hx_measure_defaults();
  o.min_time_s = 0.02;
  o.max_noise = 0.01;
  o.sync_timeout_s = 0.5;
  hx_closure c = {run_spin_fresh, NULL, NULL, 0.0, 0.0};
  hx_measurement r;
  hx_err e;
  assert_int_equal(hx_meter_measure(meter, &o, &c, &r, &e), HX_OK);
  show("fresh", &r);
  assert_false(r.sync_detected);
  double med = hx_stats_median(r.cold_ms, r.n_cold);
  assert_true(med > 0.199 && med < 0.23);
  hx_measurement_free(&r);
}

/* Hot batches of many launches may fill the launch queue behind the hold (a time-out): that is not a
 * sync; the batches are still measured. */
static void test_many_launches_not_sync(void **state) {
  (void)state;
  hx_measure_opts o = hx_measure_defaults();
  o.min_time_s = 0.02;
  o.max_noise = 0.02;
  o.sync_timeout_s = 0.5;
  hx_closure c = {run_many, NULL, NULL, 0.0, 0.0};
  hx_measurement r;
  hx_err e;
  assert_int_equal(hx_meter_measure(meter, &o, &c, &r, &e), HX_OK);
  show("16 launches", &r);
  assert_false(r.sync_detected);
  assert_true(r.n_hot == o.hot_batches);
  double hot = hx_stats_median(r.hot_ms, r.n_hot);
  assert_true(hot > 0.095 && hot < 0.4); /* 16 x 6 us plus the gaps between launches */
  hx_measurement_free(&r);
}

/* A syncing run() under a cap shorter than the hold time-out (the sweep's --max-time 0.3 against 2 s):
 * the time-out does not eat the cap, so >= 2 samples, a finite noise, and rows that record. */
static void test_sync_short_cap(void **state) {
  (void)state;
  hx_measure_opts o = hx_measure_defaults();
  o.max_time_s = 0.05;
  o.sync_timeout_s = 0.3;
  hx_closure c = {run_syncing, NULL, NULL, 0.0, 0.0};
  hx_measurement r;
  hx_err e;
  assert_int_equal(hx_meter_measure(meter, &o, &c, &r, &e), HX_OK);
  show("sync+cap", &r);
  assert_true(r.sync_detected);
  assert_true(r.n_cold >= 2);
  assert_true(isfinite(r.noise));
  double med = hx_stats_median(r.cold_ms, r.n_cold);
  assert_true(med > 0.019 && med < 0.1);
  assert_true(r.n_hot == o.hot_batches);
  hx_measurement_free(&r);
}

static void test_paper_preset(void **state) {
  (void)state;
  hx_measure_opts o = hx_measure_paper();
  hx_closure c = {run_spin, NULL, NULL, 0.0, 0.0};
  hx_measurement r;
  hx_err e;
  assert_int_equal(hx_meter_measure(meter, &o, &c, &r, &e), HX_OK);
  show("paper", &r);
  assert_true(r.n_cold + r.n_throttled == 19);
  assert_true(r.n_hot == 0);
  hx_measurement_free(&r);
}

/* Timing pass, counter pass, timing pass: the two timed medians agree within the noise. */
static void test_counters_do_not_perturb(void **state) {
  (void)state;
  size_t nn;
  const char *const *names = hx_counters_default_names(&nn);
  hx_counters *ctr = NULL;
  hx_err e;
  hx_status st = hx_counters_open(&ctr, 0, names, nn, 4, 1, &e);
  if (st == HX_EUNSUPPORTED) {
    printf("counters unavailable, not checked: %s\n", e.msg);
    skip();
  }
  assert_int_equal(st, HX_OK);
  copy_n = (size_t)16 << 20; /* 64 MiB: DRAM-bound */
  hx_measure_opts o = hx_measure_defaults();
  o.min_time_s = 0.1;
  o.hot = 0;
  hx_closure c = {run_copy, NULL, NULL, 0.0, 0.0};
  hx_measurement r1, r2;
  assert_int_equal(hx_meter_measure(meter, &o, &c, &r1, &e), HX_OK);
  double v[8];
  assert_int_equal(hx_counters_profile(ctr, "copy", &c, hx_meter_stream(meter), v, &e), HX_OK);
  assert_int_equal(hx_meter_measure(meter, &o, &c, &r2, &e), HX_OK);
  show("before", &r1);
  show("after", &r2);
  double m1 = hx_stats_median(r1.cold_ms, r1.n_cold), m2 = hx_stats_median(r2.cold_ms, r2.n_cold);
  double noise = fmax(r1.noise, r2.noise);
  printf("timed median moved by %.3f%% (noise %.3f%%)\n", 100.0 * fabs(m2 - m1) / m1, 100.0 * noise);
  assert_true(fabs(m2 - m1) / m1 <= fmax(3.0 * noise, 0.02));
  hx_measurement_free(&r1);
  hx_measurement_free(&r2);
  hx_counters_close(ctr);
}

static void test_ceilings(void **state) {
  (void)state;
  hx_ceilings cl;
  hx_err e;
  hx_status st = hx_meter_ceilings(meter, &cl, &e);
  if (st != HX_OK) print_error("%s\n", e.msg);
  assert_int_equal(st, HX_OK);
  printf("ceilings: copy %.0f GB/s, bf16 GEMM %.0f TFLOP/s, fp16 GEMM %.0f TFLOP/s\n", cl.copy_gbs,
         cl.gemm_bf16_tflops, cl.gemm_fp16_tflops);
  assert_true(cl.copy_gbs > 500.0 && cl.copy_gbs < 10000.0);  /* A100 ~1.3 TB/s ... H200 ~4 TB/s r+w */
  assert_true(cl.gemm_bf16_tflops > 50.0 && cl.gemm_bf16_tflops < 2500.0);
  assert_true(cl.gemm_fp16_tflops > 50.0 && cl.gemm_fp16_tflops < 2500.0);
}

/* The sweep's one-call stage measurement: timing rows, counter rows (when allowed), context keys. */
static void test_bench_stage(void **state) {
  (void)state;
  hx_meter_destroy(meter); /* one meter at a time keeps the device state simple */
  meter = NULL;
  char root[] = "/tmp/f3d-test-bench-XXXXXX";
  assert_non_null(mkdtemp(root));
  hx_bench b;
  hx_err e;
  assert_int_equal(hx_bench_open(&b, 0, NULL, 0, 0, stdout, &e), HX_OK);
  b.opts.min_time_s = 0.05;
  hx_results *res;
  assert_int_equal(hx_results_open(&res, root, "run", &e), HX_OK);
  assert_int_equal(hx_bench_context(&b, res, 1, &e), HX_OK);
  copy_n = (size_t)16 << 20;
  hx_key k = {"synthetic", 16u << 20, 1, "test", "copy", "v0"};
  hx_closure c = {run_copy, NULL, NULL, 0.0, 0.0};
  assert_int_equal(hx_bench_stage(&b, res, &k, &c, &e), HX_OK);
  int counters = b.counters != NULL;
  assert_int_equal(hx_results_commit(res, &e), HX_OK);
  hx_results_close(res);
  hx_bench_close(&b);
  char dir[64];
  snprintf(dir, sizeof dir, "%s/run", root);
  hx_run run;
  assert_int_equal(hx_run_load(&run, dir, &e), HX_OK);
  int seen = 0;
  for (size_t i = 0; i < run.n_rows; i++) {
    if (!strcmp(run.rows[i].metric, "time_median")) seen |= 1;
    if (!strcmp(run.rows[i].metric, "time_hot_median")) seen |= 2;
    if (!strcmp(run.rows[i].metric, "dram_read_bw")) seen |= 4;
  }
  printf("bench: counters %s, ceilings copy %s GB/s\n", hx_run_context(&run, "counters"),
         hx_run_context(&run, "ceiling_copy_gbs") ? hx_run_context(&run, "ceiling_copy_gbs") : "?");
  assert_int_equal(seen, counters ? 7 : 3);
  assert_non_null(hx_run_context(&run, "ceiling_gemm_bf16_tflops"));
  assert_true(run.n_samples > 0);
  hx_run_free(&run);
  assert_int_equal(t_rm_rf(root), 0);
}

int main(void) {
  if (tk_device_count() == 0) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  hx_err e;
  if (hx_meter_create(&meter, 0, &e) != HX_OK) {
    fprintf(stderr, "meter: %s\n", e.msg);
    return 1;
  }
  if (tk_malloc((void **)&d_a, (size_t)64 << 20) != HX_OK || tk_malloc((void **)&d_b, (size_t)64 << 20) != HX_OK) {
    fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spin_accuracy), cmocka_unit_test(test_l2_flush),
      cmocka_unit_test(test_sync_detected), cmocka_unit_test(test_first_launch_not_sync),
      cmocka_unit_test(test_many_launches_not_sync), cmocka_unit_test(test_sync_short_cap),
      cmocka_unit_test(test_paper_preset),
      cmocka_unit_test(test_counters_do_not_perturb), cmocka_unit_test(test_ceilings),
      cmocka_unit_test(test_bench_stage), /* last: it releases the shared meter */
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  tk_free(d_a);
  tk_free(d_b);
  hx_meter_destroy(meter);
  return rc;
}
