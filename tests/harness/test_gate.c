/*
 * test_gate.c - the regression gate (harness/compare.c hx_gate_runs, the calibration file, stats.c's batch spread)
 * on synthetic runs this test writes: result directories whose samples come from chosen distributions.
 *
 * What it checks:
 *   - hx_stats_batch_spread on exact values;
 *   - A/A: pairs of runs of one process with large n (1000 samples a key): independent noise, and a drift that
 *     wanders as a random walk from the same start in each run (as clocks and heat do). The U test alone calls
 *     most drifting keys different and the old fixed 3% still many; the gate calls none slower or faster;
 *   - a 10% shift of a key is caught (independent noise and a small drift), and the table names the rule;
 *   - CPU stages are not gated by default in runs that timed GPU stages (include_cpu adds them), are gated in runs
 *     without a GPU and in runs of CPU stages alone made with one; `keys` globs gate a subset;
 *   - normalize: a machine 5% slower as a whole (its copy ceiling) is not a regression of a memory-bound key, but
 *     a key that declares FLOPs is held to the GEMM ceiling; runs without ceilings are refused;
 *   - calibration: runs whose level differs from run to run (invisible inside a run) fail the plain gate; the A/A
 *     calibration of other runs of the process covers them; the file round-trips, is refused for another device,
 *     and damaged files are refused with their record named;
 *   - output: the verdict line first, then the table header and rows, the totals line last; the CSV.
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

#include "harness/harness.h"
#include "tests/harness/test_run_util.h"

#define NS 1000 /* samples per key: "large n", where the U test alone finds every drift significant */

typedef struct key_spec {
  const char *pipeline, *kernel, *variant;
  double centre; /* level of the process */
  double scale;  /* this run's factor (a planted shift, a machine's level) */
  double noise;  /* relative sd of independent noise per sample */
  double step;   /* relative sd of the random walk's step per sample (0: no drift) */
  uint64_t stream;
  int flops;     /* write a flops row (a tensor-core stage) */
  size_t n;
} key_spec;

static char root[256];

static int setup(void **state) {
  (void)state;
  return t_tmpdir(root, sizeof root, "gate");
}

static int teardown(void **state) {
  (void)state;
  return t_rm_rf(root);
}

/* A centred draw of unit variance: the sum of 4 uniforms (close to normal, bounded). */
static double unit_draw(uint64_t seed, uint64_t stream, uint64_t counter) {
  double g = 0.0;
  for (uint64_t k = 0; k < 4; k++) g += hx_rng_unit(seed, stream, 4 * counter + k) - 0.5;
  return g * sqrt(3.0);
}

/* The samples of one key in one run: level x (1 + walk) x (1 + noise), the walk starting at 0. */
static void draw(double *x, const key_spec *k, uint64_t seed) {
  double walk = 0.0;
  for (size_t i = 0; i < k->n; i++) {
    walk += k->step * unit_draw(seed, 2 * k->stream, i);
    x[i] = k->centre * k->scale * (1.0 + walk) * (1.0 + k->noise * unit_draw(seed, 2 * k->stream + 1, i));
  }
}

/* Run `id` under root: context (device, build, optional ceilings), then samples (and a time_median row) per key.
 * dtype "bf16": the run's GEMM ceiling is ceiling_gemm_bf16_tflops, and its fp16 one a constant 700 beside it. */
static void make_run_dt(const char *id, const char *device, const key_spec *keys, size_t nk, double copy_gbs,
                        double gemm_tflops, uint64_t seed, const char *dtype) {
  hx_results *r;
  hx_err e;
  assert_int_equal(hx_results_open(&r, root, id, &e), HX_OK);
  assert_int_equal(hx_results_context(r, "device", device, &e), HX_OK);
  assert_int_equal(hx_results_context(r, "build_type", "release", &e), HX_OK);
  const int bf16 = dtype && strcmp(dtype, "bf16") == 0;
  if (dtype) assert_int_equal(hx_results_context(r, "dtype", dtype, &e), HX_OK);
  if (copy_gbs > 0.0) {
    assert_int_equal(hx_results_contextf(r, &e, "ceiling_copy_gbs", "%.1f", copy_gbs), HX_OK);
    assert_int_equal(hx_results_contextf(r, &e, "ceiling_gemm_fp16_tflops", "%.1f", bf16 ? 700.0 : gemm_tflops), HX_OK);
    if (bf16) assert_int_equal(hx_results_contextf(r, &e, "ceiling_gemm_bf16_tflops", "%.1f", gemm_tflops), HX_OK);
  }
  double *x = malloc(NS * sizeof *x);
  assert_non_null(x);
  for (size_t i = 0; i < nk; i++) {
    const key_spec *k = &keys[i];
    assert_true(k->n <= NS);
    hx_key key = {"lidar", 100000, 1, k->pipeline, k->kernel, k->variant};
    draw(x, k, seed);
    assert_int_equal(hx_results_add(r, &key, "time_median", hx_stats_median(x, k->n), "ms", &e), HX_OK);
    if (k->flops) assert_int_equal(hx_results_add(r, &key, "flops", 1e12, "FLOP", &e), HX_OK);
    assert_int_equal(hx_results_add_samples(r, &key, "time", x, k->n, "ms", &e), HX_OK);
  }
  free(x);
  assert_int_equal(hx_results_commit(r, &e), HX_OK);
  hx_results_close(r);
}

static void make_run(const char *id, const char *device, const key_spec *keys, size_t nk, double copy_gbs,
                     double gemm_tflops, uint64_t seed) {
  make_run_dt(id, device, keys, nk, copy_gbs, gemm_tflops, seed, NULL);
}

static void load(hx_run *r, const char *id) {
  char p[512];
  hx_err e;
  snprintf(p, sizeof p, "%s/%s", root, id);
  assert_int_equal(hx_run_load(r, p, &e), HX_OK);
}

static hx_compare_counts gate(const char *base_id, const char *new_id, const hx_gate_opts *o) {
  hx_run a, b;
  hx_err e;
  load(&a, base_id);
  load(&b, new_id);
  hx_compare_counts n;
  assert_int_equal(hx_gate_runs(&a, &b, o, NULL, &n, &e), HX_OK);
  hx_run_free(&a);
  hx_run_free(&b);
  return n;
}

/* The verdicts of the old gate (U test + a fixed minimum effect) over every shared key. */
static size_t old_gate_flags(const char *base_id, const char *new_id, double min_effect) {
  hx_run a, b;
  hx_err e;
  load(&a, base_id);
  load(&b, new_id);
  assert_int_equal(hx_run_groups(&a, &e), HX_OK);
  assert_int_equal(hx_run_groups(&b, &e), HX_OK);
  assert_int_equal(a.n_groups, b.n_groups);
  double *x = malloc(NS * sizeof *x), *y = malloc(NS * sizeof *y);
  size_t flagged = 0;
  for (size_t g = 0; g < a.n_groups; g++) {
    assert_int_equal(hx_run_row_key_cmp(&a.samples[a.groups[g].first], &b.samples[b.groups[g].first]), 0);
    for (size_t i = 0; i < a.groups[g].count; i++) x[i] = a.samples[a.groups[g].first + i].value;
    for (size_t i = 0; i < b.groups[g].count; i++) y[i] = b.samples[b.groups[g].first + i].value;
    flagged += hx_stats_compare(x, a.groups[g].count, y, b.groups[g].count, 0.01, min_effect, NULL, NULL) !=
               HX_VERDICT_SAME;
  }
  free(x);
  free(y);
  hx_run_free(&a);
  hx_run_free(&b);
  return flagged;
}

static void test_batch_spread(void **state) {
  (void)state;
  double x[10];
  for (int i = 0; i < 10; i++) x[i] = i + 1.0;
  /* batches {1,2} {3,4} ... {9,10}: medians 1.5 .. 9.5, overall median 5.5 */
  assert_true(fabs(hx_stats_batch_spread(x, 10, 5) - 8.0 / 5.5) < 1e-12);
  /* the order matters: the same values interleaved have equal batch medians */
  double y[10] = {1, 10, 2, 9, 3, 8, 4, 7, 5, 6};
  assert_true(fabs(hx_stats_batch_spread(y, 10, 2) - (7.0 - 4.0) / 5.5) < 1e-12);
  /* fewer samples than batches: each sample its own batch */
  double z[3] = {1.0, 2.0, 3.0};
  assert_true(fabs(hx_stats_batch_spread(z, 3, 5) - 1.0) < 1e-12);
  double c[6] = {2, 2, 2, 2, 2, 2};
  assert_true(hx_stats_batch_spread(c, 6, 5) == 0.0);
  assert_true(isnan(hx_stats_batch_spread(z, 1, 5)));
  assert_true(isnan(hx_stats_batch_spread(z, 3, 1)));
  double neg[4] = {-1, -1, -1, -1};
  assert_true(isnan(hx_stats_batch_spread(neg, 4, 2)));
}

#define NK 60

static void aa_keys(key_spec *k, double step, double noise) {
  static char names[NK][32];
  for (size_t i = 0; i < NK; i++) {
    snprintf(names[i], sizeof names[i], "stage%02zu", i);
    k[i] = (key_spec){"flash3d", names[i], "v1", 0.05 + 0.01 * (double)i, 1.0, noise, step, i, 0, NS};
  }
}

/* The failure the gate exists for: A/A runs with thousands of samples. */
static void test_aa_no_false_alarm(void **state) {
  (void)state;
  key_spec k[NK];
  hx_gate_opts o = hx_gate_defaults();
  size_t u_alone = 0, fixed3 = 0, gated = 0;
  for (int pair = 0; pair < 4; pair++) {
    /* pair 0: independent noise only; pairs 1-3: a random-walk drift from the same start, up to ~2-6% over a run */
    aa_keys(k, pair == 0 ? 0.0 : 0.0005 * pair, 0.01);
    char a[32], b[32];
    snprintf(a, sizeof a, "aa%d-a", pair);
    snprintf(b, sizeof b, "aa%d-b", pair);
    make_run(a, "NVIDIA H100", k, NK, 0, 0, 100u + (uint64_t)pair);
    make_run(b, "NVIDIA H100", k, NK, 0, 0, 200u + (uint64_t)pair);
    hx_compare_counts n = gate(a, b, &o);
    assert_int_equal(n.slower, 0);
    assert_int_equal(n.faster, 0);
    assert_int_equal(n.same, NK);
    assert_int_equal(n.unknown, 0);
    gated += n.same;
    if (pair > 0) {
      u_alone += old_gate_flags(a, b, 0.0);
      fixed3 += old_gate_flags(a, b, 0.03);
      assert_true(n.by_rule[1] > 0); /* the batch noise set thresholds */
    } else {
      assert_int_equal(n.by_rule[0], NK); /* independent noise at n = 1000: the minimum effect everywhere */
      assert_true(fabs(n.largest_change) < 0.005);
    }
  }
  assert_int_equal(gated, 4 * NK);
  /* the same runs under the U test alone and with a fixed 3%: most, and many, keys "changed" */
  assert_true(u_alone > 3 * NK / 2);
  assert_true(fixed3 >= 20);
}

static void test_shift_caught(void **state) {
  (void)state;
  key_spec k[NK];
  aa_keys(k, 0.0002, 0.01); /* a small drift: thresholds stay under the shift */
  make_run("shift-base", "NVIDIA H100", k, NK, 0, 0, 31);
  for (size_t i = 0; i < NK; i++) k[i].scale = 1.10;
  make_run("shift-new", "NVIDIA H100", k, NK, 0, 0, 32);
  hx_gate_opts o = hx_gate_defaults();
  hx_compare_counts n = gate("shift-base", "shift-new", &o);
  assert_int_equal(n.slower, NK);
  assert_true(n.largest_change > 0.05 && n.largest_change < 0.16);
  n = gate("shift-new", "shift-base", &o);
  assert_int_equal(n.faster, NK);
  assert_int_equal(n.slower, 0);
  /* a 10% shift of one key among quiet ones: only that key */
  aa_keys(k, 0.0, 0.01);
  make_run("one-base", "NVIDIA H100", k, NK, 0, 0, 41);
  k[7].scale = 1.10;
  make_run("one-new", "NVIDIA H100", k, NK, 0, 0, 42);
  n = gate("one-base", "one-new", &o);
  assert_int_equal(n.slower, 1);
  assert_int_equal(n.same, NK - 1);
  assert_non_null(strstr(n.largest_key, "flash3d/stage07/v1 lidar 100000 time"));
  /* a threshold set above the shift lets it pass: --min-effect 0.2 */
  o.min_effect = 0.2;
  n = gate("one-base", "one-new", &o);
  assert_int_equal(n.slower, 0);
}

static void test_cpu_and_keys(void **state) {
  (void)state;
  key_spec k[3] = {
      {"flash3d", "psh.xor-div", "v9", 0.1, 1.0, 0.01, 0.0, 1, 0, 200},
      {"ptv3", "gather_qkv_C64", "v3", 0.05, 1.0, 0.01, 0.0, 2, 0, 200},
      {"flash3d", "psh.xor-div", "cpu", 3.0, 1.0, 0.01, 0.0, 3, 0, 200},
  };
  make_run("gpu-base", "NVIDIA H100", k, 3, 0, 0, 51);
  make_run("cpu-base", "none", k, 3, 0, 0, 51);
  k[2].scale = 1.3; /* the CPU reference 30% slower, as a busy host makes it */
  make_run("gpu-new", "NVIDIA H100", k, 3, 0, 0, 52);
  make_run("cpu-new", "none", k, 3, 0, 0, 52);
  hx_gate_opts o = hx_gate_defaults();
  hx_compare_counts n = gate("gpu-base", "gpu-new", &o);
  assert_int_equal(n.slower, 0);
  assert_int_equal(n.same, 2);
  assert_int_equal(n.not_gated_cpu, 1);
  o.include_cpu = 1;
  n = gate("gpu-base", "gpu-new", &o);
  assert_int_equal(n.slower, 1);
  assert_int_equal(n.not_gated_cpu, 0);
  /* runs without a GPU measured CPU stages only: gated by default */
  o = hx_gate_defaults();
  n = gate("cpu-base", "cpu-new", &o);
  assert_int_equal(n.slower, 1);
  o.include_cpu = 0;
  n = gate("cpu-base", "cpu-new", &o);
  assert_int_equal(n.slower + n.same + n.faster + n.unknown, 2);
  /* a GPU machine's run of CPU stages alone (a workload sweep) measured nothing else: gated by default */
  key_spec cs = k[2];
  cs.scale = 1.0;
  make_run("gpu-cpu-base", "NVIDIA H100", &cs, 1, 0, 0, 51);
  cs.scale = 1.3;
  make_run("gpu-cpu-new", "NVIDIA H100", &cs, 1, 0, 0, 52);
  o = hx_gate_defaults();
  n = gate("gpu-cpu-base", "gpu-cpu-new", &o);
  assert_int_equal(n.slower, 1);
  assert_int_equal(n.not_gated_cpu, 0);
  o.include_cpu = 0;
  n = gate("gpu-cpu-base", "gpu-cpu-new", &o);
  assert_int_equal(n.not_gated_cpu, 1);
  assert_int_equal(n.slower + n.same + n.faster + n.unknown, 0);
  /* --keys: a subset */
  o = hx_gate_defaults();
  o.include_cpu = 1;
  o.keys = "ptv3/*";
  n = gate("gpu-base", "gpu-new", &o);
  assert_int_equal(n.same, 1);
  assert_int_equal(n.slower, 0);
  assert_int_equal(n.not_gated_keys, 2);
  o.keys = "nothing/*,flash3d/psh.*/cpu";
  n = gate("gpu-base", "gpu-new", &o);
  assert_int_equal(n.slower, 1);
  assert_int_equal(n.same, 0);
  assert_int_equal(n.not_gated_keys, 2);
  o.keys = "nothing/*";
  n = gate("gpu-base", "gpu-new", &o);
  assert_int_equal(n.slower + n.same + n.faster + n.unknown, 0);
}

static void test_normalize(void **state) {
  (void)state;
  key_spec k[2] = {
      {"ptv3", "gather_qkv_C64", "v3", 0.05, 1.0, 0.005, 0.0, 1, 0, 300},
      {"flash3d", "attn.swin", "v9", 0.5, 1.0, 0.005, 0.0, 2, 1, 300},
  };
  make_run("norm-base", "NVIDIA H100", k, 2, 3000.0, 700.0, 61);
  make_run("norm-bare", "NVIDIA H100", k, 2, 0, 0, 63);
  /* NEW's machine copies 5% slower (its ceiling) and every stage takes 1/0.95 as long */
  k[0].scale = k[1].scale = 1.0 / 0.95;
  make_run("norm-new", "NVIDIA H100", k, 2, 2850.0, 700.0, 62);
  hx_gate_opts o = hx_gate_defaults();
  hx_compare_counts n = gate("norm-base", "norm-new", &o);
  assert_int_equal(n.slower, 2);
  o.normalize = 1;
  n = gate("norm-base", "norm-new", &o);
  /* the gather is held to the copy ceiling (which moved with it); attention to the GEMM ceiling (which did not) */
  assert_int_equal(n.slower, 1);
  assert_int_equal(n.same, 1);
  assert_non_null(strstr(n.largest_key, "flash3d/attn.swin/v9"));
  /* bf16 runs are held to the bf16 ceiling: it fell 5% with the attention, the fp16 one beside it did not */
  k[0].scale = 1.0;
  k[1].scale = 1.0;
  make_run_dt("norm-bf16-base", "NVIDIA H100", k, 2, 3000.0, 800.0, 64, "bf16");
  k[1].scale = 1.0 / 0.95;
  make_run_dt("norm-bf16-new", "NVIDIA H100", k, 2, 3000.0, 760.0, 65, "bf16");
  n = gate("norm-bf16-base", "norm-bf16-new", &o);
  assert_int_equal(n.slower, 0);
  assert_int_equal(n.same, 2);
  o.normalize = 0;
  n = gate("norm-bf16-base", "norm-bf16-new", &o);
  assert_int_equal(n.slower, 1); /* not normalized, the attention is 5% slower */
  o.normalize = 1;
  /* a run without ceilings cannot be normalized */
  hx_run a, b;
  hx_err e;
  load(&a, "norm-base");
  load(&b, "norm-bare");
  assert_int_equal(hx_gate_runs(&a, &b, &o, NULL, &n, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "ceiling_copy_gbs"));
  hx_run_free(&a);
  hx_run_free(&b);
}

#define NC 20

/* Offsets that differ from run to run but not inside a run: what only an A/A calibration sees. */
static void offset_keys(key_spec *k, const double *offset) {
  static char names[NC][32];
  for (size_t i = 0; i < NC; i++) {
    snprintf(names[i], sizeof names[i], "stage%02zu", i);
    k[i] = (key_spec){"flash3d", names[i], "v1", 0.1, 1.0 + offset[i], 0.005, 0.0, i, 0, 500};
  }
}

static void write_text(const char *name, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", root, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_calibration(void **state) {
  (void)state;
  /* per key, the level of the process moves between runs by up to +-2.5%: runs c0..c7 calibrate, with levels
   * spread evenly over -2.5% .. +2.5% (jittered; sd 1.75%); the pair gated afterwards sits inside that range */
  enum { CAL = 8 };
  key_spec k[NC];
  double off[NC];
  for (int r = 0; r < CAL; r++) {
    for (size_t i = 0; i < NC; i++)
      off[i] = -0.025 + 0.05 * (double)((r + (int)i) % CAL) / (CAL - 1) + 0.002 * (hx_rng_unit(7, (uint64_t)r, i) - 0.5);
    offset_keys(k, off);
    char id[16];
    snprintf(id, sizeof id, "c%d", r);
    make_run(id, "NVIDIA H100", k, NC, 0, 0, 70u + (uint64_t)r);
  }
  for (int r = 0; r < 2; r++) {
    for (size_t i = 0; i < NC; i++) off[i] = (r ? 0.024 : -0.024) * (i % 2 ? 1.0 : -1.0);
    offset_keys(k, off);
    make_run(r ? "p-new" : "p-base", "NVIDIA H100", k, NC, 0, 0, 80u + (uint64_t)r);
  }
  make_run("other-dev", "NVIDIA A100", k, NC, 0, 0, 90);
  /* the plain gate calls the 4.8% level changes slower or faster: the drift between runs is invisible inside one */
  hx_gate_opts o = hx_gate_defaults();
  hx_compare_counts n = gate("p-base", "p-new", &o);
  assert_int_equal(n.slower, NC / 2);
  assert_int_equal(n.faster, NC / 2);

  hx_run runs[CAL];
  for (int r = 0; r < CAL; r++) {
    char id[16];
    snprintf(id, sizeof id, "c%d", r);
    load(&runs[r], id);
  }
  char cal[512];
  snprintf(cal, sizeof cal, "%s/cal.csv", root);
  hx_err e;
  assert_int_equal(hx_gate_calibrate(runs, 1, cal, &e), HX_EINVAL);
  assert_int_equal(hx_gate_calibrate(runs, CAL, cal, &e), HX_OK);
  hx_gate_calib c;
  assert_int_equal(hx_gate_calib_load(&c, cal, &e), HX_OK);
  assert_int_equal(c.runs, CAL);
  assert_int_equal(c.n_keys, NC);
  /* each key's aa_sigma: the sd of its 8 run medians (1.75% +- the jitter and the noise of a median of 500
   * samples) times the 90% bound for 8 runs, 1.572 */
  assert_true(fabs(hx_gate_sigma_bound(CAL) - 1.5724) < 1e-3);
  for (size_t i = 0; i < c.n_keys; i++) {
    assert_int_equal(c.keys[i].sample, CAL);
    if (!(c.keys[i].value > 1.572 * 0.0165 && c.keys[i].value < 1.572 * 0.0185))
      fail_msg("key %zu: aa_sigma %g, expected 1.572 x 1.75%%", i, c.keys[i].value);
  }
  for (int r = 0; r < CAL; r++) hx_run_free(&runs[r]);
  o.calib = &c;
  n = gate("p-base", "p-new", &o);
  assert_int_equal(n.slower, 0);
  assert_int_equal(n.faster, 0);
  assert_int_equal(n.same, NC);
  assert_int_equal(n.by_rule[2], NC); /* every threshold from the calibration */
  /* a real 20% regression still stands out of the calibrated noise (threshold 3.72 x sqrt(2) x 2.75% = 14.5%) */
  for (size_t i = 0; i < NC; i++) off[i] = 0.20;
  offset_keys(k, off);
  make_run("p-slow", "NVIDIA H100", k, NC, 0, 0, 85);
  n = gate("p-base", "p-slow", &o);
  assert_int_equal(n.slower, NC);
  /* the calibration belongs to its device and build */
  hx_run other;
  load(&other, "other-dev");
  assert_int_equal(hx_gate_calib_check(&c, &other, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "different devices"));
  hx_run_free(&other);
  load(&other, "p-base");
  assert_int_equal(hx_gate_calib_check(&c, &other, &e), HX_OK);
  hx_run_free(&other);
  hx_gate_calib_free(&c);
  /* runs of different devices do not make one calibration */
  load(&runs[0], "c0");
  load(&runs[1], "other-dev");
  assert_int_equal(hx_gate_calibrate(runs, 2, cal, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "different devices"));
  hx_run_free(&runs[0]);
  hx_run_free(&runs[1]);
  /* runs whose keys have too few samples to gate calibrate nothing: refused, no file written */
  key_spec few[1] = {{"ptv3", "serialize", "v2", 0.1, 1.0, 0.01, 0.0, 9, 0, HX_COMPARE_MIN_SAMPLES - 1}};
  make_run("few-a", "NVIDIA H100", few, 1, 3000.0, 700.0, 71);
  make_run("few-b", "NVIDIA H100", few, 1, 3000.0, 700.0, 72);
  load(&runs[0], "few-a");
  load(&runs[1], "few-b");
  char few_cal[512];
  snprintf(few_cal, sizeof few_cal, "%s/few.cal", root);
  assert_int_equal(hx_gate_calibrate(runs, 2, few_cal, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "nothing to calibrate"));
  assert_int_equal(access(few_cal, F_OK), -1);
  hx_run_free(&runs[0]);
  hx_run_free(&runs[1]);
  /* a calibration written by hand in format 3 loads: the records the damaged ones below break */
#define CAL_HEAD "f3dbench-gate-calibration,3,3\nrun,a\nrun,b\nrun,c\ncontext,device,H200\n"
#define CAL_KEY "key,a,b,v1,lidar,100,1,time,3,0.1\n"
  write_text("good.csv", CAL_HEAD CAL_KEY "end,1\n");
  snprintf(cal, sizeof cal, "%s/good.csv", root);
  assert_int_equal(hx_gate_calib_load(&c, cal, &e), HX_OK);
  assert_int_equal(c.n_keys, 1);
  assert_int_equal(c.runs, 3);
  assert_true(c.keys[0].value == 0.1);
  hx_gate_calib_free(&c);
  write_text("good.csv", CAL_HEAD "key,a,b,v1,lidar,100,1,time,3,5.33\nend,1\n");
  assert_int_equal(hx_gate_calib_load(&c, cal, &e), HX_OK);
  hx_gate_calib_free(&c);
  /* damaged files: refused, naming the problem (a file cut anywhere lacks its end record or miscounts it; the
   * largest aa_sigma 3 runs can give is sigma_bound(3) sqrt(3) = 5.336; 5.33 loads) */
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"", "empty file"},
      {"workload,n_points\n", "not a gate calibration"},
      {"f3dbench-gate-calibration,4,3\n", "not a gate calibration"},
      {"f3dbench-gate-calibration,1,3\nkey,a,b,v1,lidar,100,1,time,3,0.1\n", "format 1"},
      {"f3dbench-gate-calibration,2,3\nrun,a\nrun,b\nrun,c\nkey,a,b,v1,lidar,100,1,time,3,0.1\n", "format 2"},
      {"f3dbench-gate-calibration,3,3\n", "no end record after 0 keys"},
      {CAL_HEAD "end,0\n", "without keys"},
      {CAL_HEAD CAL_KEY, "no end record after 1 keys"},
      {CAL_HEAD "key,a,b,v1,lidar,100,1,time,3,0.0", "no end record"}, /* cut inside its last number */
      {CAL_HEAD CAL_KEY "end,2\n", "the end record counts 2 keys, the file holds 1"},
      {CAL_HEAD CAL_KEY "end,1\n" CAL_KEY, "record 8 after the end record"},
      {CAL_HEAD "key,a,b,v1,lidar,100,1,time,3,nan\nend,1\n", "record 6"},
      {CAL_HEAD "key,a,b,v1,lidar,100,1,time,3,-0.1\nend,1\n", "record 6"},
      {CAL_HEAD "key,a,b,v1,lidar,x,1,time,3,0.1\nend,1\n", "record 6"},
      {CAL_HEAD "key,a,b,v1,lidar, 100,1,time,3,0.1\nend,1\n", "record 6"},
      {CAL_HEAD "key,a,b,v1,lidar,100,1,time,3,0.1\nend, 1\n", "the end record counts  1 keys"},
      {CAL_HEAD "key,a,b,v1,lidar,100,1,time,4,0.1\nend,1\n", "a key of 4 runs in a calibration of 3"},
      {CAL_HEAD "key,a,b,v1,lidar,100,1,time,3,5.34\nend,1\n", "more than 3 runs can give"},
      {CAL_HEAD "what,a\nend,0\n", "record 6"},
      {CAL_HEAD "context,device,H100\n" CAL_KEY "end,1\n", "context key device given twice"},
      {"f3dbench-gate-calibration,3,3\nrun,a\nrun,b\n" CAL_KEY "end,1\n", "2 run records for a calibration of 3"},
      {CAL_HEAD CAL_KEY "key,a,b,v1,lidar,100,1,time,3,0.2\nend,2\n", "given twice"},
  };
#undef CAL_HEAD
#undef CAL_KEY
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_text("bad.csv", bad[i].text);
    char p[512];
    snprintf(p, sizeof p, "%s/bad.csv", root);
    assert_int_equal(hx_gate_calib_load(&c, p, &e) != HX_OK, 1);
    if (!strstr(e.msg, bad[i].want)) fail_msg("bad calibration %zu: '%s' lacks '%s'", i, e.msg, bad[i].want);
    assert_null(c.keys);
  }
  snprintf(cal, sizeof cal, "%s/no-such-file.csv", root);
  assert_int_equal(hx_gate_calib_load(&c, cal, &e), HX_EIO);
}

/* The proof in the model: keys whose level moves between runs (run-to-run sd 0.1%, 0.3%, 1% or 2% of the
 * key, drawn per run) and never inside one. Calibrated on 8 runs, 20 A/A pairs of fresh runs call no key slower
 * or faster (expected ~0.06 calls in all: ~3e-4 a pair for each of the 10 keys above the minimum effect), while
 * the plain gate, blind to the drift between runs, calls some; a 10% slowdown of a quiet key is still caught. */
static void test_aa_pairs_calibrated(void **state) {
  (void)state;
  enum { CAL = 8, PAIRS = 20 };
  static const double sd[4] = {0.001, 0.003, 0.01, 0.02};
  key_spec k[NC];
  double off[NC];
  hx_run runs[CAL];
  for (int r = 0; r < CAL + PAIRS + 1; r++) {
    for (size_t i = 0; i < NC; i++) off[i] = sd[i % 4] * unit_draw(11, 1000u + i, (uint64_t)r);
    offset_keys(k, off);
    char id[16];
    snprintf(id, sizeof id, r < CAL ? "aa-c%d" : "aa-n%d", r < CAL ? r : r - CAL);
    make_run(id, "NVIDIA H100", k, NC, 0, 0, 200u + (uint64_t)r);
    if (r < CAL) load(&runs[r], id);
  }
  char cal[512];
  snprintf(cal, sizeof cal, "%s/aa-cal.csv", root);
  hx_err e;
  assert_int_equal(hx_gate_calibrate(runs, CAL, cal, &e), HX_OK);
  for (int r = 0; r < CAL; r++) hx_run_free(&runs[r]);
  hx_gate_calib c;
  assert_int_equal(hx_gate_calib_load(&c, cal, &e), HX_OK);
  hx_gate_opts plain = hx_gate_defaults(), calibrated = hx_gate_defaults();
  calibrated.calib = &c;
  size_t cried = 0, plain_cried = 0;
  for (int p = 0; p < PAIRS; p++) {
    char a[16], b[16];
    snprintf(a, sizeof a, "aa-n%d", p);
    snprintf(b, sizeof b, "aa-n%d", p + 1);
    hx_compare_counts n = gate(a, b, &calibrated);
    assert_int_equal(n.same + n.slower + n.faster, NC);
    cried += n.slower + n.faster;
    n = gate(a, b, &plain);
    plain_cried += n.slower + n.faster;
  }
  printf("20 A/A pairs: %zu keys called changed with the calibration, %zu without\n", cried, plain_cried);
  assert_int_equal(cried, 0);
  assert_true(plain_cried >= 5);
  /* key 0 (sd 0.1%) 10% slower in the next run: caught */
  for (size_t i = 0; i < NC; i++) off[i] = sd[i % 4] * unit_draw(11, 1000u + i, (uint64_t)(CAL + PAIRS + 1));
  off[0] += 0.10;
  offset_keys(k, off);
  make_run("aa-slow", "NVIDIA H100", k, NC, 0, 0, 299);
  char last[16];
  snprintf(last, sizeof last, "aa-n%d", PAIRS);
  hx_compare_counts n = gate(last, "aa-slow", &calibrated);
  assert_int_equal(n.slower, 1);
  hx_gate_calib_free(&c);
}

static void test_output(void **state) {
  (void)state;
  key_spec k[3] = {
      {"flash3d", "psh.xor-div", "v9", 0.1, 1.0, 0.01, 0.0, 1, 0, 200},
      {"ptv3", "gather_qkv_C64", "v3", 0.05, 1.0, 0.01, 0.0, 2, 0, 200},
      {"ptv3", "grid", "v1", 0.02, 1.0, 0.01, 0.0, 3, 0, 200},
  };
  make_run("out-base", "NVIDIA H100", k, 3, 0, 0, 91);
  k[1].scale = 1.1;
  make_run("out-new", "NVIDIA H100", k, 2, 0, 0, 92); /* grid missing in NEW */
  hx_run a, b;
  hx_err e;
  load(&a, "out-base");
  load(&b, "out-new");
  char *text = NULL, *csv = NULL;
  size_t len = 0, clen = 0;
  FILE *f = open_memstream(&text, &len), *cf = open_memstream(&csv, &clen);
  assert_non_null(f);
  assert_non_null(cf);
  hx_gate_opts o = hx_gate_defaults();
  o.csv = cf;
  hx_compare_counts n;
  assert_int_equal(hx_gate_runs(&a, &b, &o, f, &n, &e), HX_OK);
  fclose(f);
  fclose(cf);
  /* line 1: the verdict; line 2: the header; then one row per key; last: the totals */
  assert_true(strncmp(text, "gate: FAIL: 0 faster, 1 slower, 1 same, 1 unknown of 3 keys gated; largest change +",
                      strlen("gate: FAIL: 0 faster, 1 slower, 1 same, 1 unknown of 3 keys gated; largest change +")) == 0);
  const char *l2 = strchr(text, '\n') + 1;
  assert_true(strncmp(l2, "pipeline/kernel/variant", strlen("pipeline/kernel/variant")) == 0);
  assert_non_null(strstr(text, "ptv3/gather_qkv_C64/v3 lidar 100000 time (threshold 3.0%)"));
  const char *slow = strstr(l2, "ptv3/gather_qkv_C64/v3");
  assert_non_null(slow);
  const char *eol = strchr(slow, '\n');
  char row[512];
  snprintf(row, sizeof row, "%.*s", (int)(eol - slow), slow);
  assert_non_null(strstr(row, " min "));
  assert_non_null(strstr(row, "slower"));
  assert_non_null(strstr(text, "(missing in NEW)"));
  size_t lines = 0;
  for (const char *p = text; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, 1 + 1 + 3 + 1);
  const char *last = text + len - 1;
  while (last > text && last[-1] != '\n') last--;
  assert_true(strncmp(last, "0 faster, 1 slower, 1 same, 1 unknown (", strlen("0 faster, 1 slower, 1 same, 1 unknown (")) == 0);
  /* CSV: the header and a row per key */
  assert_true(strncmp(csv, HX_GATE_CSV_HEADER "\n", strlen(HX_GATE_CSV_HEADER) + 1) == 0);
  assert_non_null(strstr(csv, "\nptv3,gather_qkv_C64,v3,lidar,100000,1,time,"));
  assert_non_null(strstr(csv, ",0.03,min,"));
  assert_non_null(strstr(csv, ",slower\n"));
  size_t clines = 0;
  for (const char *p = csv; *p; p++) clines += *p == '\n';
  assert_int_equal(clines, 4);
  /* the verdict line alone */
  char *v = NULL;
  size_t vlen = 0;
  f = open_memstream(&v, &vlen);
  hx_gate_print_verdict(f, &n);
  fclose(f);
  assert_true(strncmp(v, text, vlen) == 0);
  free(v);
  free(text);
  free(csv);
  hx_run_free(&a);
  hx_run_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batch_spread), cmocka_unit_test(test_aa_no_false_alarm),
      cmocka_unit_test(test_shift_caught), cmocka_unit_test(test_cpu_and_keys),
      cmocka_unit_test(test_normalize),    cmocka_unit_test(test_calibration),
      cmocka_unit_test(test_aa_pairs_calibrated),
      cmocka_unit_test(test_output),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
