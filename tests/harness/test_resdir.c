/*
 * test_resdir.c - result directories read back: a run written by hx_results_* loads with the same rows,
 * samples and context; the regression gate flags a 10% slower kernel and nothing else; runs from
 * different devices are refused; shards merge into one run and overlaps are refused; the JSON export is
 * produced with every sample; damaged directories (no context, no status, non-finite values) are refused.
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
#include <sys/stat.h>
#include <unistd.h>

#include "harness/harness.h"
#include "tests/harness/test_run_util.h"

#define N 20

/* A run with two kernels over two sizes; kernel "b" is `slow` times slower, device `dev`. */
static void make_run(const char *root, const char *id, double slow, const char *dev, const char *shard,
                     uint64_t seed, int sizes_from) {
  hx_results *r;
  hx_err e;
  assert_int_equal(hx_results_open(&r, root, id, &e), HX_OK);
  assert_int_equal(hx_results_context(r, "device_name", dev, &e), HX_OK);
  assert_int_equal(hx_results_context(r, "build_type", "release", &e), HX_OK);
  assert_int_equal(hx_results_context(r, "git_commit", "abc123", &e), HX_OK);
  if (shard) assert_int_equal(hx_results_context(r, "shard", shard, &e), HX_OK);
  for (int s = sizes_from; s < 2; s++) {
    for (int k = 0; k < 2; k++) {
      hx_key key = {"lidar", (uint64_t)(100000 * (s + 1)), 1, "flash3d", k ? "b,quoted" : "a", "v1"};
      double x[N];
      for (int i = 0; i < N; i++) {
        double u = hx_rng_unit(seed, (uint64_t)(s * 2 + k), (uint64_t)i) - 0.5;
        x[i] = (1.0 + 0.5 * k) * (1.0 + 0.02 * u) * (k ? slow : 1.0);
      }
      hx_stats_desc d;
      assert_int_equal(hx_stats_describe(&d, x, N, &e), HX_OK);
      assert_int_equal(hx_results_add(r, &key, "time_median", d.median, "ms", &e), HX_OK);
      assert_int_equal(hx_results_add(r, &key, "time_mean", d.mean, "ms", &e), HX_OK);
      assert_int_equal(hx_results_add_samples(r, &key, "time", x, N, "ms", &e), HX_OK);
    }
  }
  assert_int_equal(hx_results_commit(r, &e), HX_OK);
  hx_results_close(r);
}

static char root[256];

static int setup(void **state) {
  (void)state;
  return t_tmpdir(root, sizeof root, "resdir");
}

static int teardown(void **state) {
  (void)state;
  return t_rm_rf(root);
}

static void path(char *buf, size_t cap, const char *id) { snprintf(buf, cap, "%s/%s", root, id); }

static void test_round_trip(void **state) {
  (void)state;
  make_run(root, "rt", 1.0, "NVIDIA H100", NULL, 1, 0);
  char p[512];
  path(p, sizeof p, "rt");
  hx_run r;
  hx_err e;
  assert_int_equal(hx_run_load(&r, p, &e), HX_OK);
  assert_false(r.incomplete);
  assert_true(r.n_rows == 2 * 2 * 2);
  assert_true(r.n_samples == 2 * 2 * N);
  assert_string_equal(hx_run_context(&r, "device_name"), "NVIDIA H100");
  assert_string_equal(hx_run_context(&r, "status"), "complete");
  int quoted = 0;
  for (size_t i = 0; i < r.n_rows; i++) quoted += strcmp(r.rows[i].kernel, "b,quoted") == 0;
  assert_int_equal(quoted, 4);
  assert_int_equal(hx_run_groups(&r, &e), HX_OK);
  assert_true(r.n_groups == 4);
  for (size_t g = 0; g < r.n_groups; g++) {
    assert_true(r.groups[g].count == N);
    for (size_t i = 0; i < N; i++) assert_true(r.samples[r.groups[g].first + i].sample == (int64_t)i);
  }
  /* JSON: parse-free checks that every sample and summary is there */
  char jp[600];
  snprintf(jp, sizeof jp, "%s/results.json", p);
  assert_int_equal(hx_run_write_json(&r, jp, &e), HX_OK);
  FILE *f = fopen(jp, "rb");
  assert_non_null(f);
  char *buf = calloc(1, 1 << 20);
  size_t len = fread(buf, 1, (1 << 20) - 1, f);
  fclose(f);
  assert_true(len > 100);
  assert_non_null(strstr(buf, "\"benchmarks\""));
  assert_non_null(strstr(buf, "\"name\": \"flash3d/b,quoted/v1\""));
  assert_non_null(strstr(buf, "\"tag\": \"f3d/time_median\""));
  size_t nvals = 0;
  for (char *q = buf; (q = strstr(q, "\"values\": [")) != NULL; q++) nvals++;
  assert_true(nvals == 4);
  int braces = 0;
  for (size_t i = 0; i < len; i++) braces += buf[i] == '{' ? 1 : buf[i] == '}' ? -1 : 0;
  assert_int_equal(braces, 0);
  free(buf);
  hx_run_free(&r);
  path(p, sizeof p, "does-not-exist");
  assert_int_equal(hx_run_load(&r, p, &e), HX_EIO);
}

static void test_gate(void **state) {
  (void)state;
  make_run(root, "base", 1.0, "NVIDIA H100", NULL, 11, 0);
  make_run(root, "same", 1.0, "NVIDIA H100", NULL, 12, 0);
  make_run(root, "slow", 1.1, "NVIDIA H100", NULL, 13, 0);
  make_run(root, "other", 1.0, "NVIDIA A100", NULL, 14, 0);
  char p[512];
  hx_run base, same, slow, other;
  hx_err e;
  path(p, sizeof p, "base");
  assert_int_equal(hx_run_load(&base, p, &e), HX_OK);
  path(p, sizeof p, "same");
  assert_int_equal(hx_run_load(&same, p, &e), HX_OK);
  path(p, sizeof p, "slow");
  assert_int_equal(hx_run_load(&slow, p, &e), HX_OK);
  path(p, sizeof p, "other");
  assert_int_equal(hx_run_load(&other, p, &e), HX_OK);
  hx_compare_counts n;
  assert_int_equal(hx_compare_runs(&base, &same, 0.01, 0.03, NULL, &n, &e), HX_OK);
  assert_true(n.slower == 0 && n.faster == 0 && n.same == 4 && n.unknown == 0);
  assert_int_equal(hx_compare_runs(&base, &slow, 0.01, 0.03, NULL, &n, &e), HX_OK);
  assert_true(n.slower == 2 && n.same == 2);
  assert_int_equal(hx_compare_runs(&slow, &base, 0.01, 0.03, NULL, &n, &e), HX_OK);
  assert_true(n.faster == 2 && n.slower == 0);
  assert_int_equal(hx_run_check_compatible(&base, &slow, 0, &e), HX_OK);
  assert_int_equal(hx_run_check_compatible(&base, &other, 0, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "different devices"));
  hx_run_free(&base);
  hx_run_free(&same);
  hx_run_free(&slow);
  hx_run_free(&other);
}

/* Runs of different 16-bit types (sweep --dtype) measure different things under the same keys: compare and merge
 * refuse them. A run without the key was made in fp16. */
static void test_dtype_compat(void **state) {
  (void)state;
  static const char *const ids[3] = {"dt-none", "dt-fp16", "dt-bf16"}, *const dts[3] = {NULL, "fp16", "bf16"};
  hx_run runs[3];
  hx_err e;
  for (int i = 0; i < 3; i++) {
    hx_results *r;
    assert_int_equal(hx_results_open(&r, root, ids[i], &e), HX_OK);
    assert_int_equal(hx_results_context(r, "device_name", "NVIDIA H200", &e), HX_OK);
    if (dts[i]) assert_int_equal(hx_results_context(r, "dtype", dts[i], &e), HX_OK);
    hx_key key = {"lidar", 100000u, 1, "ptv3-net", "forward", "ptv3"};
    assert_int_equal(hx_results_add(r, &key, "time_median", 20.0 + i, "ms", &e), HX_OK);
    assert_int_equal(hx_results_commit(r, &e), HX_OK);
    hx_results_close(r);
    char p[512];
    path(p, sizeof p, ids[i]);
    assert_int_equal(hx_run_load(&runs[i], p, &e), HX_OK);
  }
  assert_int_equal(hx_run_check_compatible(&runs[0], &runs[1], 1, &e), HX_OK);
  assert_int_equal(hx_run_check_compatible(&runs[1], &runs[2], 0, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "dtype = \"fp16\""));
  assert_non_null(strstr(e.msg, "\"bf16\""));
  assert_int_equal(hx_run_check_compatible(&runs[2], &runs[0], 0, &e), HX_EINVAL);
  /* the ceiling a run's floors take: its dtype's, fp16's where it has none */
  char k[64];
  assert_string_equal(hx_run_dtype(&runs[0]), "fp16");
  assert_string_equal(hx_run_gemm_ceiling_key(&runs[0], k, sizeof k), "ceiling_gemm_fp16_tflops");
  assert_string_equal(hx_run_gemm_ceiling_key(&runs[2], k, sizeof k), "ceiling_gemm_bf16_tflops");
  for (int i = 0; i < 3; i++) hx_run_free(&runs[i]);
}

static void test_merge(void **state) {
  (void)state;
  /* shard 0 holds size index 0 only (sizes_from = 1 means size 1 only): build disjoint shards by hand */
  make_run(root, "s1", 1.0, "NVIDIA H100", "1/2", 21, 1); /* size 200000 */
  hx_results *r;
  hx_err e;
  assert_int_equal(hx_results_open(&r, root, "s0", &e), HX_OK);
  assert_int_equal(hx_results_context(r, "device_name", "NVIDIA H100", &e), HX_OK);
  assert_int_equal(hx_results_context(r, "build_type", "release", &e), HX_OK);
  assert_int_equal(hx_results_context(r, "git_commit", "abc123", &e), HX_OK);
  assert_int_equal(hx_results_context(r, "shard", "0/2", &e), HX_OK);
  hx_key key = {"lidar", 100000, 1, "flash3d", "a", "v1"};
  const double x[3] = {1.0, 1.1, 0.9};
  assert_int_equal(hx_results_add(r, &key, "time_median", 1.0, "ms", &e), HX_OK);
  assert_int_equal(hx_results_add_samples(r, &key, "time", x, 3, "ms", &e), HX_OK);
  assert_int_equal(hx_results_commit(r, &e), HX_OK);
  hx_results_close(r);

  hx_run runs[2];
  char p[512], out[512];
  path(p, sizeof p, "s0");
  assert_int_equal(hx_run_load(&runs[0], p, &e), HX_OK);
  path(p, sizeof p, "s1");
  assert_int_equal(hx_run_load(&runs[1], p, &e), HX_OK);
  path(out, sizeof out, "merged");
  assert_int_equal(hx_run_merge(runs, 2, out, 0, &e), HX_OK);
  /* never into an existing directory (an input, another run), even with --force */
  assert_int_equal(hx_run_merge(runs, 2, out, 1, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "already exists"));
  path(p, sizeof p, "s0");
  assert_int_equal(hx_run_merge(runs, 2, p, 0, &e), HX_EINVAL);
  /* a shard whose samples.csv is missing would lose its samples */
  hx_run nosamp[2] = {runs[0], runs[1]};
  nosamp[1].n_samples = 0;
  path(p, sizeof p, "merged2");
  assert_int_equal(hx_run_merge(nosamp, 2, p, 0, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "samples"));
  /* one shard alone is refused */
  path(p, sizeof p, "half");
  assert_int_equal(hx_run_merge(runs, 1, p, 0, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "1 of 2 shards"));
  /* the same shard twice is refused */
  hx_run twice[2] = {runs[1], runs[1]};
  assert_int_equal(hx_run_merge(twice, 2, p, 0, &e), HX_EINVAL);
  hx_run m;
  assert_int_equal(hx_run_load(&m, out, &e), HX_OK);
  assert_true(m.n_rows == runs[0].n_rows + runs[1].n_rows);
  assert_true(m.n_samples == runs[0].n_samples + runs[1].n_samples);
  assert_null(hx_run_context(&m, "shard"));
  assert_non_null(hx_run_context(&m, "merged_from"));
  assert_string_equal(hx_run_context(&m, "device_name"), "NVIDIA H100");
  hx_run_free(&m);
  hx_run_free(&runs[0]);
  hx_run_free(&runs[1]);
}

/* Shard si of 3 as the sweep writes it: one case (lidar at 1000 (si + 1) points) and its context keys. */
static void make_shard(const char *id, unsigned si) {
  hx_results *r;
  hx_err e;
  char v[64];
  assert_int_equal(hx_results_open(&r, root, id, &e), HX_OK);
  assert_int_equal(hx_results_context(r, "device_name", "NVIDIA H100", &e), HX_OK);
  assert_int_equal(hx_results_contextf(r, &e, "shard", "%u/3", si), HX_OK);
  assert_int_equal(hx_results_context(r, "cases_total", "1", &e), HX_OK);
  assert_int_equal(hx_results_context(r, "cases_done", "1", &e), HX_OK);
  snprintf(v, sizeof v, "lidar:%u", 1000 * (si + 1));
  assert_int_equal(hx_results_context(r, "cases_finished", v, &e), HX_OK);
  hx_key key = {"lidar", 1000 * (si + 1), 1, "workload", "generate", "cpu"};
  const double x[3] = {1.0, 1.1, 0.9};
  assert_int_equal(hx_results_add(r, &key, "time_median", 1.0, "ms", &e), HX_OK);
  assert_int_equal(hx_results_add_samples(r, &key, "time", x, 3, "ms", &e), HX_OK);
  assert_int_equal(hx_results_commit(r, &e), HX_OK);
  hx_results_close(r);
}

/* The merged context counts every shard's cases, not the first shard's (it said cases_total 1 for 3 cases); a
 * merge that --force let through without every shard is marked incomplete (status partial, an INCOMPLETE file
 * naming the missing shard) instead of complete. */
static void test_merge_context(void **state) {
  (void)state;
  hx_run runs[3];
  hx_err e;
  char p[512], out[512];
  for (unsigned si = 0; si < 3; si++) {
    char id[16];
    snprintf(id, sizeof id, "cs%u", si);
    make_shard(id, si);
    path(p, sizeof p, id);
    assert_int_equal(hx_run_load(&runs[si], p, &e), HX_OK);
  }
  path(out, sizeof out, "cs-all");
  assert_int_equal(hx_run_merge(runs, 3, out, 0, &e), HX_OK);
  hx_run m;
  assert_int_equal(hx_run_load(&m, out, &e), HX_OK);
  assert_false(m.incomplete);
  assert_string_equal(hx_run_context(&m, "status"), "complete");
  assert_string_equal(hx_run_context(&m, "cases_total"), "3");
  assert_string_equal(hx_run_context(&m, "cases_done"), "3");
  assert_string_equal(hx_run_context(&m, "cases_finished"), "lidar:1000 lidar:2000 lidar:3000");
  hx_run_free(&m);

  /* shards 0 and 2 of 3: refused without --force, marked incomplete with it */
  hx_run two[2] = {runs[0], runs[2]};
  path(out, sizeof out, "cs-part");
  assert_int_equal(hx_run_merge(two, 2, out, 0, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "2 of 3 shards given, missing 1/3"));
  assert_int_equal(hx_run_merge(two, 2, out, 1, &e), HX_OK);
  assert_int_equal(hx_run_load(&m, out, &e), HX_OK);
  assert_true(m.incomplete);
  assert_string_equal(hx_run_context(&m, "status"), "partial");
  assert_non_null(strstr(hx_run_context(&m, "status_reason"), "2 of 3 shards, missing 1/3"));
  assert_null(hx_run_context(&m, "cases_total")); /* the whole sweep's total is not known without shard 1 */
  assert_string_equal(hx_run_context(&m, "cases_done"), "2");
  assert_string_equal(hx_run_context(&m, "cases_finished"), "lidar:1000 lidar:3000");
  hx_run_free(&m);
  char q[600];
  snprintf(q, sizeof q, "%s/INCOMPLETE", out);
  assert_int_equal(access(q, F_OK), 0);
  for (int k = 0; k < 3; k++) hx_run_free(&runs[k]);
}

/* A hand-made measurement and counter values recorded as rows, read back. */
static void test_record_measurement(void **state) {
  (void)state;
  hx_results *r;
  hx_err e;
  assert_int_equal(hx_results_open(&r, root, "rec", &e), HX_OK);
  double cold[4] = {1.0, 1.2, 1.1, 1.3}, mhz[4] = {1980, NAN, 1970, 1975}, hot[2] = {0.8, 0.9};
  hx_measurement m = {0};
  m.cold_ms = cold;
  m.cold_sm_mhz = mhz;
  m.n_cold = 4;
  m.noise = 0.1;
  m.hot_ms = hot;
  m.n_hot = 2;
  m.hot_batch_size = 100;
  hx_key key = {"lidar", 1000, 1, "flash3d", "psh", "v1"};
  assert_int_equal(hx_measure_record(r, &key, &m, &e), HX_OK);
  size_t n;
  const char *const *names = hx_counters_default_names(&n);
  double v[5] = {50, 20, 0, 1e12, 12345};
  assert_int_equal(hx_counters_record(r, &key, names, v, n, &e), HX_OK);
  assert_int_equal(hx_results_commit(r, &e), HX_OK);
  hx_results_close(r);
  char p[512];
  path(p, sizeof p, "rec");
  hx_run run;
  assert_int_equal(hx_run_load(&run, p, &e), HX_OK);
  int seen = 0;
  for (size_t i = 0; i < run.n_rows; i++) {
    const hx_run_row *w = &run.rows[i];
    if (!strcmp(w->metric, "time_median")) seen |= 1, assert_true(fabs(w->value - 1.15) < 1e-9);
    if (!strcmp(w->metric, "sm_clock")) seen |= 2, assert_true(fabs(w->value - 1975) < 1e-9);
    if (!strcmp(w->metric, "time_hot_mean")) seen |= 4, assert_true(fabs(w->value - 0.85) < 1e-9);
    if (!strcmp(w->metric, "dram_read_bw")) seen |= 8, assert_string_equal(w->unit, "B/s");
    if (!strcmp(w->metric, "sm_active")) seen |= 16, assert_string_equal(w->unit, "%");
  }
  assert_int_equal(seen, 31);
  assert_true(run.n_samples == 6); /* 4 cold "time" + 2 "time_hot" */
  hx_run_free(&run);
}

/* Replace the file dir/name with text. */
static void put_file(const char *dir, const char *name, const char *text) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
}

/* A damaged run directory is refused with a message that names what is wrong: no context.csv, a
 * context.csv without its status key, a NaN or infinite value or a NUL byte in results.csv or samples.csv. Before, the
 * first two loaded as complete runs (compare then blamed "different devices") and NaN values were taken. */
static void test_damaged_runs(void **state) {
  (void)state;
  char p[512], q[600];
  hx_run r;
  hx_err e;
  make_run(root, "dmg-ctx", 1.0, "NVIDIA H100", NULL, 21, 0);
  path(p, sizeof p, "dmg-ctx");
  assert_int_equal(hx_run_load(&r, p, &e), HX_OK); /* whole, it loads */
  hx_run_free(&r);
  snprintf(q, sizeof q, "%s/context.csv", p);
  assert_int_equal(unlink(q), 0);
  assert_int_equal(hx_run_load(&r, p, &e), HX_EFORMAT);
  assert_non_null(strstr(e.msg, "no context.csv"));
  put_file(p, "context.csv", "");
  assert_int_equal(hx_run_load(&r, p, &e), HX_EFORMAT);
  assert_non_null(strstr(e.msg, "no status key"));
  put_file(p, "context.csv", "key,value\ndevice_name,NVIDIA H100\n");
  assert_int_equal(hx_run_load(&r, p, &e), HX_EFORMAT);
  assert_non_null(strstr(e.msg, "no status key"));

  const char *bad[] = {"nan", "NaN", "inf", "-inf", "1e999", "0x10", " 1.5", "infinity"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char id[32], row[256];
    snprintf(id, sizeof id, "dmg-val%zu", i);
    make_run(root, id, 1.0, "NVIDIA H100", NULL, 22 + i, 0);
    path(p, sizeof p, id);
    snprintf(row, sizeof row, "%s\nlidar,100000,1,flash3d,a,v1,time_median,%s,ms\n", HX_RESULTS_HEADER, bad[i]);
    put_file(p, "results.csv", row);
    assert_int_equal(hx_run_load(&r, p, &e), HX_EFORMAT);
    assert_non_null(strstr(e.msg, "results.csv:2: bad number"));
    snprintf(row, sizeof row, "%s\nlidar,100000,1,flash3d,a,v1,time_median,1.5,ms\n", HX_RESULTS_HEADER);
    put_file(p, "results.csv", row);
    assert_int_equal(hx_run_load(&r, p, &e), HX_OK); /* the same file with a finite value loads */
    hx_run_free(&r);
    snprintf(row, sizeof row, "%s\nlidar,100000,1,flash3d,a,v1,time,0,%s,ms\n", HX_SAMPLES_HEADER, bad[i]);
    put_file(p, "samples.csv", row);
    assert_int_equal(hx_run_load(&r, p, &e), HX_EFORMAT);
    assert_non_null(strstr(e.msg, "samples.csv:2: bad number"));
  }
  /* A NUL byte inside a value ("0.09\0" "30500016") once read as 0.09; in the header, the rows or the context, it is
   * refused naming the file and line. */
  static const char *const nul_files[] = {"results.csv", "samples.csv", "context.csv"};
  static const char *const nul_text[] = {HX_RESULTS_HEADER "\nlidar,100000,1,flash3d,a,v1,time_median,0.09@3,ms\n",
                                         HX_SAMPLES_HEADER "\nlidar,100000,1,flash3d,a,v1,time,0,0.09@3,ms\n",
                                         "key,value\nstatus,complete\nschema_version,1\nbuild_type,rel@ease\n"};
  static const char *const nul_line[] = {"results.csv:2: ", "samples.csv:2: ", "context.csv:4: "};
  for (int i = 0; i < 4; i++) {
    char id[32];
    snprintf(id, sizeof id, "dmg-nul%d", i);
    make_run(root, id, 1.0, "NVIDIA H100", NULL, 30 + (uint64_t)i, 0);
    path(p, sizeof p, id);
    /* i = 3: the NUL in results.csv's header */
    char text[512];
    snprintf(text, sizeof text, "%s", i < 3 ? nul_text[i] : HX_RESULTS_HEADER "@\n");
    const char *name = nul_files[i < 3 ? i : 0];
    size_t len = strlen(text);
    *strchr(text, '@') = '\0';
    snprintf(q, sizeof q, "%s/%s", p, name);
    FILE *f = fopen(q, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    e.msg[0] = '\0';
    assert_int_equal(hx_run_load(&r, p, &e), HX_EFORMAT);
    if (!strstr(e.msg, i < 3 ? nul_line[i] : "results.csv:1: ") || !strstr(e.msg, "NUL byte"))
      fail_msg("NUL in %s: %s", name, e.msg);
  }
  /* Files that disagree with themselves once loaded silently (the first of two status keys won, so an interrupted run
   * read as complete; an unknown or missing schema_version was taken; a header-only results.csv gave an empty report;
   * a repeated row was listed twice): each is refused naming the file and line. */
  static const struct {
    const char *file, *text, *want;
  } incons[] = {
      {"context.csv", "key,value\nstatus,complete\nschema_version,1\nstatus,interrupted\n",
       "context.csv:4: key \"status\" given twice (first on line 2)"},
      {"context.csv", "key,value\nstatus,complete\nschema_version,99\n",
       "context.csv:3: schema_version \"99\" is not the one this build reads (1)"},
      {"context.csv", "key,value\nstatus,complete\n", "context.csv: no schema_version key (this build reads"},
      {"results.csv", HX_RESULTS_HEADER "\n", "results.csv: no rows"},
      {"results.csv", HX_RESULTS_HEADER "\nlidar,100000,1,flash3d,a,v1,time_median,-5,ms\n",
       "results.csv:2: time_median -5 ms is negative"},
      {"results.csv", HX_RESULTS_HEADER "\nlidar,100000,1,flash3d,a,v1,bandwidth,-1e9,B/s\n",
       "results.csv:2: bandwidth -1e9 B/s is negative"},
      {"results.csv", HX_RESULTS_HEADER "\nlidar,18446744073709551615,1,flash3d,a,v1,time_median,1,ms\n",
       "results.csv:2: n_points 18446744073709551615 is more than any cloud"},
      {"results.csv", HX_RESULTS_HEADER "\nlidar, 100000,1,flash3d,a,v1,time_median,1,ms\n", "results.csv:2: bad number"},
      {"results.csv", HX_RESULTS_HEADER "\nlidar,+100000,1,flash3d,a,v1,time_median,1,ms\n", "results.csv:2: bad number"},
      {"context.csv", "key,value\nstatus,complete\nschema_version,1\ncases_total, 2\ncases_done,2\n",
       "context.csv: cases_total \" 2\" is not a count of cases"},
      {"context.csv", "key,value\nstatus,complete\nschema_version,1\ncases_total,abc\ncases_done,1\n",
       "context.csv: cases_total \"abc\" is not a count of cases"},
      {"context.csv", "key,value\nstatus,complete\nschema_version,1\ncases_total,2\ncases_done,-1\n",
       "context.csv: cases_done \"-1\" is not a count of cases"},
      {"context.csv", "key,value\nstatus,interrupted\nschema_version,1\ncases_total,2\ncases_done,7\n",
       "context.csv: cases_done 7 is more than cases_total 2"},
      {"context.csv", "key,value\nstatus,complete\nschema_version,1\ncases_total,2\ncases_done,1\n",
       "context.csv: a complete run with 1 of 2 cases done"},
      {"results.csv",
       HX_RESULTS_HEADER "\nlidar,100000,1,flash3d,a,v1,time_median,1.5,ms\n"
                         "lidar,100000,1,flash3d,a,v1,time_mean,1.5,ms\n"
                         "lidar,100000,1,flash3d,a,v1,time_median,1.5,ms\n",
       "results.csv:4: the same row as line 2 (lidar,100000,1,flash3d,a,v1,time_median twice)"},
      {"samples.csv",
       HX_SAMPLES_HEADER "\nlidar,100000,1,flash3d,a,v1,time,0,1.5,ms\nlidar,100000,1,flash3d,a,v1,time,1,1.5,ms\n"
                         "lidar,100000,1,flash3d,a,v1,time,0,1.6,ms\n",
       "samples.csv:4: the same row as line 2 (lidar,100000,1,flash3d,a,v1,time sample 0 twice)"},
  };
  for (size_t i = 0; i < sizeof incons / sizeof *incons; i++) {
    char id[32];
    snprintf(id, sizeof id, "dmg-incons%zu", i);
    make_run(root, id, 1.0, "NVIDIA H100", NULL, 50 + i, 0);
    path(p, sizeof p, id);
    put_file(p, incons[i].file, incons[i].text);
    e.msg[0] = '\0';
    assert_int_equal(hx_run_load(&r, p, &e), HX_EFORMAT);
    if (!strstr(e.msg, incons[i].want) || !strstr(e.msg, p)) fail_msg("case %zu: %s", i, e.msg);
  }
  path(p, sizeof p, "dmg-val0/results.csv"); /* a file, not a directory */
  assert_int_equal(hx_run_load(&r, p, &e), HX_EIO);
  assert_non_null(strstr(e.msg, "not a directory"));
}

/* hx_parse_dec_u64, the counts' one parser (run files, calibrations, the command line): digits only, up to max. */
static void test_parse_dec(void **state) {
  (void)state;
  uint64_t v = 7;
  assert_int_equal(hx_parse_dec_u64("0", UINT64_MAX, &v), 0);
  assert_true(v == 0);
  assert_int_equal(hx_parse_dec_u64("18446744073709551615", UINT64_MAX, &v), 0);
  assert_true(v == UINT64_MAX);
  static const char *const bad[] = {"18446744073709551616", "99999999999999999999", " 1", "+1", "-1", "1 ", "0x10",
                                    "1e3", "", "1.0"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    v = 7;
    if (hx_parse_dec_u64(bad[i], UINT64_MAX, &v) != -1 || v != 7) fail_msg("'%s' taken as %llu", bad[i], (unsigned long long)v);
  }
  assert_int_equal(hx_parse_dec_u64("5", 5, &v), 0);
  assert_int_equal(hx_parse_dec_u64("7", 5, &v), -1); /* a digit above a small max */
  assert_int_equal(hx_parse_dec_u64("10", 9, &v), -1);
  assert_int_equal(hx_parse_dec_u64("1000000", 1000000, &v), 0);
  assert_int_equal(hx_parse_dec_u64("1000001", 1000000, &v), -1);
}

/* A value read from a file reaches stderr printable: every error message (hx_errf) and an incomplete run's reason
 * show control bytes and UTF-8 C1 controls as \xNN, keep other UTF-8 whole, and cut at a whole character. */
static void test_printable(void **state) {
  (void)state;
  const char *raw = "a\x1b[2Jb\x7f c\xc2\x9b" "d\t\xc2\xb2";
  const char *want = "a\\x1b[2Jb\\x7f c\\x9bd\\x09\xc2\xb2";
  char out[64];
  hx_str_printable(out, sizeof out, raw);
  assert_string_equal(out, want);
  hx_err e;
  assert_int_equal(hx_errf(&e, HX_EFORMAT, "key %s given twice", raw), HX_EFORMAT);
  assert_non_null(strstr(e.msg, want));
  assert_null(strchr(e.msg, 0x1b));
  hx_str_printable(out, 6, "ab\xc2\xb2\xc2\xb2"); /* room for 5 bytes: the second character would be cut */
  assert_string_equal(out, "ab\xc2\xb2");
  hx_str_printable(out, 6, "ab\x1b"); /* an escape does not fit whole: left out */
  assert_string_equal(out, "ab");
  hx_str_printable(out, sizeof out, "a\x9b" "b\xc2" "c\xe2\x82\xac"); /* a raw C1 byte, a lead byte cut short, a euro */
  assert_string_equal(out, "a\\x9bb\\xc2c\xe2\x82\xac");
  char *keys[2] = {"status", "status_reason"}, *vals[2] = {"failed", "x\x1b]0;owned\x07y"};
  hx_run r;
  memset(&r, 0, sizeof r);
  r.incomplete = 1;
  r.ctx_keys = keys;
  r.ctx_vals = vals;
  r.n_ctx = 2;
  char why[256];
  hx_run_incomplete_why(&r, why, sizeof why);
  assert_string_equal(why, "incomplete run (failed: x\\x1b]0;owned\\x07y)");
}

/* A run file that is not a regular file (a FIFO with no writer, a directory) is refused at once as "not a regular
 * file" naming it: a FIFO results.csv once made plot and compare wait forever for a writer. alarm() turns such a
 * hang into a failed test. */
static void test_not_regular_files(void **state) {
  (void)state;
  static const char *const names[] = {"results.csv", "samples.csv", "context.csv"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char id[32], p[512], q[600];
    snprintf(id, sizeof id, "special%zu", i);
    make_run(root, id, 1.0, "NVIDIA H100", NULL, 40 + i, 0);
    path(p, sizeof p, id);
    snprintf(q, sizeof q, "%s/%s", p, names[i]);
    for (int kind = 0; kind < 2; kind++) {
      assert_int_equal(unlink(q), 0); /* the file, then the FIFO */
      assert_int_equal(kind ? mkdir(q, 0700) : mkfifo(q, 0600), 0);
      hx_run r;
      hx_err e = {0};
      alarm(20);
      hx_status st = hx_run_load(&r, p, &e);
      alarm(0);
      if (st != HX_EIO) fail_msg("%s as a %s: status %d (%s)", names[i], kind ? "directory" : "FIFO", st, e.msg);
      assert_non_null(strstr(e.msg, q));
      assert_non_null(strstr(e.msg, "not a regular file"));
    }
    assert_int_equal(rmdir(q), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_gate),
      cmocka_unit_test(test_dtype_compat),
      cmocka_unit_test(test_merge),
      cmocka_unit_test(test_merge_context),
      cmocka_unit_test(test_record_measurement),
      cmocka_unit_test(test_damaged_runs),
      cmocka_unit_test(test_printable),
      cmocka_unit_test(test_parse_dec),
      cmocka_unit_test(test_not_regular_files),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
