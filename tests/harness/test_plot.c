/*
 * test_plot.c - figures from a small fixture run: the squarified treemap tiles its box with areas
 * proportional to the weights; `hx_plot` renders non-empty PNG and SVG files for every figure the fixture
 * has rows for (latency, serialization vs PSH, SM active/issue, tensor, DRAM, memory, stages, treemap) and
 * a REPORT.md linking them; two runs give one figure with both devices and a ratio table; the headline
 * selection keeps one series per kernel (fastest GPU variant), all series in <figure>_all.dat; the report's
 * peak memory table (arena totals, PTv3 / Flash3D) and the memory figure's totals; a linear y axis of
 * small positive values starts at 0; legends use short names, data files full ones; everything specific to
 * the study comes from the tables handed in (app/study.c here, none, or a made-up one). The rendering
 * cases are skipped when gnuplot is missing (said so on stdout).
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

#include "app/study.h"

#ifndef F3D_PLOTS_DIR
#define F3D_PLOTS_DIR "plots"
#endif

static double inter(const hx_rect *a, const hx_rect *b) {
  double w = fmin(a->x + a->w, b->x + b->w) - fmax(a->x, b->x);
  double h = fmin(a->y + a->h, b->y + b->h) - fmax(a->y, b->y);
  return w > 0 && h > 0 ? w * h : 0.0;
}

static void check_treemap(const double *w, size_t n, double bw, double bh) {
  hx_rect r[16];
  assert_int_equal(hx_treemap_squarify(r, w, n, 1.0, 2.0, bw, bh), HX_OK);
  double total = 0.0;
  for (size_t i = 0; i < n; i++) total += w[i];
  for (size_t i = 0; i < n; i++) {
    assert_true(fabs(r[i].w * r[i].h - w[i] / total * bw * bh) < 1e-9 * bw * bh);
    assert_true(r[i].x >= 1.0 - 1e-12 && r[i].y >= 2.0 - 1e-12);
    assert_true(r[i].x + r[i].w <= 1.0 + bw + 1e-9 && r[i].y + r[i].h <= 2.0 + bh + 1e-9);
    for (size_t j = 0; j < i; j++) assert_true(inter(&r[i], &r[j]) < 1e-9);
  }
}

static void test_treemap(void **state) {
  (void)state;
  const double a[] = {6, 6, 4, 3, 2, 2, 1}; /* the example of Bruls et al. */
  check_treemap(a, 7, 6.0, 4.0);
  const double b[] = {1, 50, 0.5, 10, 3};
  check_treemap(b, 5, 1.0, 1.0);
  check_treemap(b, 5, 3.0, 0.5);
  /* four equal weights in a square: four squares */
  const double c[] = {1, 1, 1, 1};
  hx_rect r[4];
  assert_int_equal(hx_treemap_squarify(r, c, 4, 0, 0, 2, 2), HX_OK);
  for (int i = 0; i < 4; i++) assert_true(fabs(r[i].w - 1.0) < 1e-12 && fabs(r[i].h - 1.0) < 1e-12);
  /* zero weights get empty rectangles; negative is an error */
  const double d[] = {0, 2, 0};
  assert_int_equal(hx_treemap_squarify(r, d, 3, 0, 0, 1, 1), HX_OK);
  assert_true(r[0].w * r[0].h == 0.0 && fabs(r[1].w * r[1].h - 1.0) < 1e-12);
  const double e[] = {1, -1};
  assert_int_equal(hx_treemap_squarify(r, e, 2, 0, 0, 1, 1), HX_EINVAL);
}

static char root[256];

static int setup(void **state) {
  (void)state;
  snprintf(root, sizeof root, "/tmp/f3d-test-plot-XXXXXX");
  return mkdtemp(root) ? 0 : -1;
}
static int teardown(void **state) {
  (void)state;
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  return system(cmd) == 0 ? 0 : -1;
}

/* Two pipelines (ptv3: serialize + attention + total; flash3d: psh + attention + total) over three sizes
 * with counters and memory rows; `speed` scales every time (a second "device"). */
static void make_fixture(const char *id, const char *device, double speed) {
  hx_results *r;
  hx_err e;
  assert_int_equal(hx_results_open(&r, root, id, &e), HX_OK);
  assert_int_equal(hx_results_context(r, "device", device, &e), HX_OK);
  /* the keys the sweep writes (cmd_sweep.c), shown in the report's run table */
  assert_int_equal(hx_results_context(r, "date_utc", "2026-11-21T22:43:20Z", &e), HX_OK);
  assert_int_equal(hx_results_context(r, "git_commit", "abc1234", &e), HX_OK);
  static const char *const pipes[2] = {"ptv3", "flash3d"};
  static const char *const stages[2][2] = {{"serialize", "attention"}, {"psh", "attention"}};
  for (int n = 1; n <= 3; n++) {
    for (int p = 0; p < 2; p++) {
      double total = 0.0;
      for (int s = 0; s < 2; s++) {
        hx_key k = {"lidar", (uint64_t)n * 100000u, 1, pipes[p], stages[p][s], "v1"};
        double t = speed * n * (p ? 0.4 : 1.0) * (s ? 2.0 : 0.7);
        total += t;
        assert_int_equal(hx_results_add(r, &k, "time_mean", t, "ms", &e), HX_OK);
        assert_int_equal(hx_results_add(r, &k, "time_std", 0.05 * t, "ms", &e), HX_OK);
        assert_int_equal(hx_results_add(r, &k, "sm_active", 40.0 + 10 * s + n, "%", &e), HX_OK);
        assert_int_equal(hx_results_add(r, &k, "sm_issue", 20.0 + 5 * s, "%", &e), HX_OK);
        assert_int_equal(hx_results_add(r, &k, "tensor_active", s ? 30.0 + p * 30 : 0.0, "%", &e), HX_OK);
        assert_int_equal(hx_results_add(r, &k, "dram_read_bw", (1.0 + s) * 1e12 / speed, "B/s", &e), HX_OK);
      }
      hx_key k = {"lidar", (uint64_t)n * 100000u, 1, pipes[p], "total", "v1"};
      assert_int_equal(hx_results_add(r, &k, "time_mean", total, "ms", &e), HX_OK);
      assert_int_equal(hx_results_add(r, &k, "time_std", 0.03 * total, "ms", &e), HX_OK);
      assert_int_equal(hx_results_add(r, &k, "mem_peak", (double)n * 64e6 * (p ? 0.5 : 1.0), "B", &e), HX_OK);
    }
  }
  assert_int_equal(hx_results_commit(r, &e), HX_OK);
  hx_results_close(r);
}

static long file_size(const char *dir, const char *name) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  struct stat st;
  return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static int has_png_magic(const char *dir, const char *name) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "rb");
  unsigned char b[8] = {0};
  size_t n = f ? fread(b, 1, 8, f) : 0;
  if (f) fclose(f);
  return n == 8 && b[0] == 0x89 && b[1] == 'P' && b[2] == 'N' && b[3] == 'G';
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *b = calloc(1, 1 << 20);
  if (b) (void)fread(b, 1, (1 << 20) - 1, f);
  fclose(f);
  return b;
}

static void test_render_one(void **state) {
  (void)state;
  if (hx_plot_have_gnuplot(NULL) != HX_OK) {
    printf("gnuplot not found: rendering not tested\n");
    skip();
  }
  make_fixture("h100", "NVIDIA H100 80GB HBM3", 1.0);
  char dir[400], plots[500];
  snprintf(dir, sizeof dir, "%s/h100", root);
  snprintf(plots, sizeof plots, "%s/plots", dir);
  hx_run run;
  hx_err e;
  assert_int_equal(hx_run_load(&run, dir, &e), HX_OK);
  hx_status st = hx_plot(&run, 1, f3d_study(), F3D_PLOTS_DIR, dir, &e);
  if (st != HX_OK) print_error("%s\n", e.msg);
  assert_int_equal(st, HX_OK);
  static const char *const figs[] = {"latency", "serial_psh", "sm", "tensor", "dram", "memory", "stages", "treemap"};
  for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) {
    char png[64], svg[64];
    snprintf(png, sizeof png, "%s.png", figs[i]);
    snprintf(svg, sizeof svg, "%s.svg", figs[i]);
    assert_true(file_size(plots, png) > 1000);
    assert_true(has_png_magic(plots, png));
    assert_true(file_size(plots, svg) > 1000);
  }
  char rp[600];
  snprintf(rp, sizeof rp, "%s/REPORT.md", dir);
  char *rep = slurp(rp);
  assert_non_null(rep);
  assert_non_null(strstr(rep, "![treemap](plots/treemap.png)"));
  assert_non_null(strstr(rep, "| ptv3/total/v1 | lidar | 300000 | 1 |"));
  assert_non_null(strstr(rep, "| abc1234 | 2026-11-21T22:43:20Z |")); /* run table: commit and date */
  /* peak memory per pipeline and PTv3 / Flash3D: 64e6 B and 32e6 B per 100k points */
  assert_non_null(strstr(rep, "| n_points | PTv3 peak | Flash3D peak | PTv3 / Flash3D |\n"));
  assert_non_null(strstr(rep, "| 100000 | 61.0 | 30.5 | 2.00x |\n"));
  assert_non_null(strstr(rep, "| 300000 | 183.1 | 91.6 | 2.00x |\n"));
  free(rep);
  /* the memory figure: the pipeline totals of the arena's peak (MiB), not the stages */
  snprintf(rp, sizeof rp, "%s/memory.dat", plots);
  char *mem = slurp(rp);
  assert_non_null(mem);
  assert_non_null(strstr(mem, "\"ptv3/total/v1 lidar mem_peak\" \"PTv3 total arena peak\"\n100000 61.03515625 0\n"));
  assert_non_null(strstr(mem, "\"flash3d/total/v1 lidar mem_peak\""));
  assert_null(strstr(mem, "serialize"));
  free(mem);
  /* the latency figure shows the totals only (pipelines that report one): 2 series */
  snprintf(rp, sizeof rp, "%s/latency.dat", plots);
  char *dat = slurp(rp);
  assert_non_null(dat);
  assert_non_null(strstr(dat, "\"flash3d/total/v1 lidar\""));
  assert_null(strstr(dat, "attention"));
  free(dat);
  hx_run_free(&run);
}

static size_t count(const char *hay, const char *needle);

static void test_render_devices(void **state) {
  (void)state;
  if (hx_plot_have_gnuplot(NULL) != HX_OK) skip();
  make_fixture("a100", "NVIDIA A100-SXM4-80GB", 2.0);
  make_fixture("h200", "NVIDIA H200", 0.8);
  hx_run runs[2];
  hx_err e;
  char d0[400], d1[400], out[400];
  snprintf(d0, sizeof d0, "%s/a100", root);
  snprintf(d1, sizeof d1, "%s/h200", root);
  snprintf(out, sizeof out, "%s/side-by-side", root);
  assert_int_equal(hx_run_load(&runs[0], d0, &e), HX_OK);
  assert_int_equal(hx_run_load(&runs[1], d1, &e), HX_OK);
  assert_int_equal(hx_plot(runs, 2, f3d_study(), F3D_PLOTS_DIR, out, &e), HX_OK);
  char p[600];
  snprintf(p, sizeof p, "%s/plots", out);
  assert_true(has_png_magic(p, "latency.png"));
  snprintf(p, sizeof p, "%s/REPORT.md", out);
  char *rep = slurp(p);
  assert_non_null(rep);
  assert_non_null(strstr(rep, "## Ratios against NVIDIA A100-SXM4-80GB"));
  assert_non_null(strstr(rep, "| 0.400 |")); /* 0.8 / 2.0 */
  /* the headline device table comes before the figures and holds the totals */
  const char *hl = strstr(rep, "## Devices: headline stages against NVIDIA A100-SXM4-80GB");
  const char *figs = strstr(rep, "## Figures");
  assert_non_null(hl);
  assert_non_null(figs);
  assert_true(hl < figs);
  const char *tot = strstr(hl, "| flash3d/total/v1 lidar | 100000 | 0.400 |");
  assert_non_null(tot);
  assert_true(tot < figs);
  free(rep);
  snprintf(p, sizeof p, "%s/plots/latency.dat", out);
  char *dat = slurp(p);
  assert_non_null(dat);
  assert_non_null(strstr(dat, "(NVIDIA H200)"));
  assert_non_null(strstr(dat, "(NVIDIA A100-SXM4-80GB)"));
  /* one colour per series across devices, one dash per device: the two totals on two GPUs */
  assert_int_equal(count(dat, "# colour "), 4);
  assert_non_null(strstr(dat, "# colour 1 dash 1\n"));
  assert_non_null(strstr(dat, "# colour 1 dash 2\n"));
  assert_non_null(strstr(dat, "# colour 2 dash 1\n"));
  assert_non_null(strstr(dat, "# colour 2 dash 2\n"));
  free(dat);
  hx_run_free(&runs[0]);
  hx_run_free(&runs[1]);
}

/* Selection: ptv3 serialize with a cpu variant (fastest, but a GPU variant exists) and three GPU
 * variants (v1 fastest), flash3d PSH direct and ".graph" (graph faster), no totals: the latency figure
 * shows one series per kernel, the fastest GPU variant; every series stays in latency_all.dat. */
static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *q = strstr(hay, needle); q; q = strstr(q + 1, needle)) n++;
  return n;
}

/* Commits r as run `name` under root, loads it into *run and plots it (gnuplot required); dir gets its folder. */
static void commit_and_plot(hx_results *r, const char *name, char *dir, size_t dir_size, hx_run *run) {
  hx_err e;
  assert_int_equal(hx_results_commit(r, &e), HX_OK);
  hx_results_close(r);
  snprintf(dir, dir_size, "%s/%s", root, name);
  assert_int_equal(hx_run_load(run, dir, &e), HX_OK);
  assert_int_equal(hx_plot(run, 1, f3d_study(), F3D_PLOTS_DIR, dir, &e), HX_OK);
}

/* The file dir/rel, which must exist (free it). */
static char *slurp_at(const char *dir, const char *rel) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  char *d = slurp(p);
  assert_non_null(d);
  return d;
}

/* A timing row: time_mean and time_median both t. */
static void add_time(hx_results *r, const hx_key *k, double t) {
  hx_err e;
  assert_int_equal(hx_results_add(r, k, "time_mean", t, "ms", &e), HX_OK);
  assert_int_equal(hx_results_add(r, k, "time_median", t, "ms", &e), HX_OK);
}

static void test_select(void **state) {
  (void)state;
  if (hx_plot_have_gnuplot(NULL) != HX_OK) skip();
  hx_results *r;
  hx_err e;
  assert_int_equal(hx_results_open(&r, root, "sel", &e), HX_OK);
  static const char *const sv[4] = {"cpu", "v0", "v1", "v2"};
  static const double st[4] = {0.1, 3.0, 1.0, 2.0};
  static const char *const pv[2] = {"v4", "v4.graph"};
  static const double pt[2] = {0.9, 0.7};
  for (int n = 1; n <= 3; n++) {
    for (int v = 0; v < 4; v++) {
      hx_key k = {"lidar", (uint64_t)n * 100000u, 1, "ptv3", "serialize", sv[v]};
      add_time(r, &k, st[v] * n);
    }
    for (int v = 0; v < 2; v++) {
      hx_key k = {"lidar", (uint64_t)n * 100000u, 1, "flash3d", "psh.xor-div", pv[v]};
      add_time(r, &k, pt[v] * n);
    }
  }
  char dir[400], p[600];
  hx_run run;
  commit_and_plot(r, "sel", dir, sizeof dir, &run);
  snprintf(p, sizeof p, "%s/plots/latency.dat", dir);
  char *dat = slurp(p);
  assert_non_null(dat);
  assert_int_equal(count(dat, "\"ptv3/serialize/"), 1);
  assert_non_null(strstr(dat, "\"ptv3/serialize/v1 lidar\""));
  assert_int_equal(count(dat, "\"flash3d/psh.xor-div/"), 1);
  assert_non_null(strstr(dat, "\"flash3d/psh.xor-div/v4.graph lidar\""));
  assert_null(strstr(dat, "/cpu"));
  free(dat);
  snprintf(p, sizeof p, "%s/plots/latency_all.dat", dir);
  dat = slurp(p);
  assert_non_null(dat);
  assert_int_equal(count(dat, "\"ptv3/serialize/"), 4);
  free(dat);
  snprintf(p, sizeof p, "%s/REPORT.md", dir); /* headline: serialize v1 vs PSH v4.graph, ratio 1/0.7 */
  dat = slurp(p);
  assert_non_null(dat);
  assert_non_null(strstr(dat, "| 100000 | 1 (v1) | 0.7 (v4.graph, 1.43x) |"));
  free(dat);
  hx_run_free(&run);
  assert_int_equal(hx_run_load(&run, dir, &e), HX_OK); /* --all-series: every variant drawn */
  assert_int_equal(hx_plot_sel(&run, 1, f3d_study(), F3D_PLOTS_DIR, dir, 1, &e), HX_OK);
  snprintf(p, sizeof p, "%s/plots/latency.dat", dir);
  dat = slurp(p);
  assert_non_null(dat);
  assert_int_equal(count(dat, "\"ptv3/serialize/"), 4);
  free(dat);
  hx_run_free(&run);
}

/* Selection across sizes by the geometric mean of the medians: v8 is 1-2% faster than v9 at 100k and 16% slower
 * at 600k (the H100 sweep of d6da59e, PSH xor-div); the median over three sizes picked v8, by its 100k figure
 * alone. The figure and the headline must show v9. */
static void test_select_geomean(void **state) {
  (void)state;
  if (hx_plot_have_gnuplot(NULL) != HX_OK) skip();
  hx_results *r;
  hx_err e;
  assert_int_equal(hx_results_open(&r, root, "selg", &e), HX_OK);
  static const char *const vv[2] = {"v8", "v9"};
  static const double t[2][3] = {{0.0800, 0.0556, 0.1182}, {0.0814, 0.0525, 0.1019}};
  for (int n = 0; n < 3; n++) {
    const uint64_t np = n ? 300000u * (uint64_t)n : 100000u;
    for (int v = 0; v < 2; v++) {
      hx_key k = {"lidar", np, 1, "flash3d", "psh.xor-div", vv[v]};
      add_time(r, &k, t[v][n]);
    }
    hx_key ks = {"lidar", np, 1, "ptv3", "serialize", "v2"}; /* the headline table's first column */
    add_time(r, &ks, 0.3);
  }
  char dir[400];
  hx_run run;
  commit_and_plot(r, "selg", dir, sizeof dir, &run);
  char *dat = slurp_at(dir, "plots/latency.dat");
  assert_int_equal(count(dat, "\"flash3d/psh.xor-div/"), 1);
  assert_non_null(strstr(dat, "\"flash3d/psh.xor-div/v9 lidar\""));
  free(dat);
  dat = slurp_at(dir, "REPORT.md");
  assert_non_null(strstr(dat, "| 600000 | 0.3 (v2) | 0.1019 (v9, 2.94x) |"));
  assert_null(strstr(dat, "(v8"));
  free(dat);
  hx_run_free(&run);
}

/* Peak memory in REPORT.md is taken from the fastest variant of each headline stage: a slow baseline
 * that holds far more (the unfused attention v0 and its GiB of scores) does not count there, only in
 * the "all variants" columns, which are the pipeline totals. */
static void test_memory_fastest(void **state) {
  (void)state;
  hx_results *r;
  hx_err e;
  assert_int_equal(hx_results_open(&r, root, "mem", &e), HX_OK);
  static const struct {
    const char *pipe, *kernel, *variant;
    double ms, bytes;
  } rows[] = {
      {"ptv3", "serialize", "v2", 1.0, 100e6},   {"ptv3", "serialize", "v0", 5.0, 900e6},
      {"flash3d", "psh.xor-div", "v4", 0.5, 50e6}, {"flash3d", "attn.plain", "v6", 2.0, 80e6},
      {"flash3d", "attn.plain", "v0", 9.0, 700e6},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    hx_key k = {"lidar", 100000u, 1, rows[i].pipe, rows[i].kernel, rows[i].variant};
    assert_int_equal(hx_results_add(r, &k, "time_mean", rows[i].ms, "ms", &e), HX_OK);
    assert_int_equal(hx_results_add(r, &k, "mem_peak", rows[i].bytes, "B", &e), HX_OK);
  }
  hx_key t1 = {"lidar", 100000u, 1, "ptv3", "total", "all"}, t2 = {"lidar", 100000u, 1, "flash3d", "total", "all"};
  assert_int_equal(hx_results_add(r, &t1, "mem_peak", 900e6, "B", &e), HX_OK);
  assert_int_equal(hx_results_add(r, &t2, "mem_peak", 700e6, "B", &e), HX_OK);
  assert_int_equal(hx_results_commit(r, &e), HX_OK);
  hx_results_close(r);
  char dir[400], p[600];
  snprintf(dir, sizeof dir, "%s/mem", root);
  hx_run run;
  assert_int_equal(hx_run_load(&run, dir, &e), HX_OK);
  /* REPORT.md's tables do not need gnuplot: without it hx_plot still writes them and says why the
   * figures are missing (HX_EUNSUPPORTED) */
  hx_status ps = hx_plot(&run, 1, f3d_study(), F3D_PLOTS_DIR, dir, &e);
  if (hx_plot_have_gnuplot(NULL) == HX_OK)
    assert_int_equal(ps, HX_OK);
  else
    assert_int_equal(ps, HX_EUNSUPPORTED);
  snprintf(p, sizeof p, "%s/REPORT.md", dir);
  char *rep = slurp(p);
  assert_non_null(rep);
  assert_non_null(strstr(rep, "| n_points | PTv3 peak | Flash3D peak | PTv3 / Flash3D | PTv3 all variants | "
                              "Flash3D all variants |\n"));
  /* 100e6 B (serialize v2) and 80e6 B (attn.plain v6) peaks, 900e6 and 700e6 over every variant */
  assert_non_null(strstr(rep, "| 100000 | 95.4 | 76.3 | 1.25x | 858.3 | 667.6 |\n"));
  free(rep);
  hx_run_free(&run);
}

/* The floor row (psh.floor) in the headline: recorded first (the sweep measures it before the hashes), its
 * column comes after every PSH hash's; the note names the fastest PSH at the largest size and its multiple of the
 * floor (xor-mod v10 0.030 ms against 0.015: 2.00x, not xor-div's); the series says it is no PSH (with gnuplot: the
 * figures' .dat files exist only then). Without a floor row there is no note. The report is written with or without
 * gnuplot. */
static void test_floor_report(void **state) {
  (void)state;
  for (int with_floor = 0; with_floor < 2; with_floor++) {
    hx_results *r;
    hx_err e;
    const char *id = with_floor ? "floor" : "no-floor";
    assert_int_equal(hx_results_open(&r, root, id, &e), HX_OK);
    for (uint64_t n = 100000; n <= 600000; n += 500000) {
      const double sc = n == 600000 ? 1.0 : 0.5;
      hx_key ks = {"lidar", n, 1, "ptv3", "serialize", "v2"};
      add_time(r, &ks, 0.3 * sc);
      if (with_floor) {
        hx_key kf = {"lidar", n, 1, "flash3d", "psh.floor", "movement"};
        add_time(r, &kf, 0.015 * sc);
        hx_err eb;
        if (n == 600000) /* the outputs' size comes from the row's bytes: 32 B moved, 12 of them read */
          assert_int_equal(hx_results_add(r, &kf, "bytes", 32.0 * (double)n, "B", &eb), HX_OK);
      }
      hx_key km = {"lidar", n, 1, "flash3d", "psh.xor-mod", "v10"};
      add_time(r, &km, 0.030 * sc);
      hx_key kd = {"lidar", n, 1, "flash3d", "psh.xor-div", "v10"};
      add_time(r, &kd, 0.090 * sc);
    }
    assert_int_equal(hx_results_commit(r, &e), HX_OK);
    hx_results_close(r);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", root, id);
    hx_run run;
    assert_int_equal(hx_run_load(&run, dir, &e), HX_OK);
    (void)hx_plot(&run, 1, f3d_study(), F3D_PLOTS_DIR, dir, &e);
    char *rep = slurp_at(dir, "REPORT.md");
    if (with_floor) {
      assert_non_null(strstr(rep, "| n_points | PTv3 serialize | psh.xor-mod | psh.xor-div | psh.floor |"));
      assert_non_null(strstr(rep, "| 600000 | 0.3 (v2) | 0.03 (v10, 10.00x) | 0.09 (v10, 3.33x) | 0.015 (movement, 20.00x) |"));
      assert_non_null(strstr(rep, "At 600000 points the fastest PSH (`psh.xor-mod` v10) takes 2.00x the floor."));
      assert_non_null(strstr(rep, "then writing the 20 B of outputs per point coalesced"));
      if (hx_plot_have_gnuplot(NULL) == HX_OK) { /* the figures' data are written only where they are drawn */
        char *dat = slurp_at(dir, "plots/serial_psh.dat");
        assert_non_null(strstr(dat, "\"flash3d/psh.floor/movement lidar\" \"floor (v10's launch, data movement only)\""));
        free(dat);
      }
    } else {
      assert_null(strstr(rep, "psh.floor"));
      assert_null(strstr(rep, "the floor"));
    }
    free(rep);
    hx_run_free(&run);
  }
}

/* REPORT.md says under the attention table that Flash3D's and PTv3's attention rows are different work (scope
 * 4096 against patches of 1024), with the FLOP ratio and the like-for-like pair, from the run's own rows at the
 * largest size that has them; a run without PTv3's attention rows gets no such note. */
static void test_scope_note(void **state) {
  (void)state;
  /* with_ptv3: 0 none, 1 at both sizes, 2 only at the smaller size (the note then takes that one) */
  for (int with_ptv3 = 0; with_ptv3 < 3; with_ptv3++) {
    hx_results *r;
    hx_err e;
    const char *id = with_ptv3 == 2 ? "scope-small" : with_ptv3 ? "scope" : "scope-f3d";
    assert_int_equal(hx_results_open(&r, root, id, &e), HX_OK);
    static const struct {
      const char *pipe, *kernel;
      double ms, gflop;
    } rows[] = {
        {"flash3d", "attn.plain", 4.0, 500.0}, {"ptv3", "attn.patch1024", 1.0, 125.0}, {"ptv3", "attn.patch4096", 5.0, 600.0}};
    for (uint64_t n = 100000; n <= 200000; n += 100000)
      for (size_t i = 0; i < (with_ptv3 == 1 || (with_ptv3 == 2 && n == 100000) ? 3u : 1u); i++) {
        hx_key k = {"lidar", n, 1, rows[i].pipe, rows[i].kernel, "v9"};
        const double sc = n == 200000 ? 1.0 : 0.5; /* the note must take the largest size */
        assert_int_equal(hx_results_add(r, &k, "time_mean", rows[i].ms * sc, "ms", &e), HX_OK);
        assert_int_equal(hx_results_add(r, &k, "flops", rows[i].gflop * 1e9 * sc, "FLOP", &e), HX_OK);
        assert_int_equal(hx_results_add(r, &k, "tflops", rows[i].gflop / rows[i].ms, "TFLOP/s", &e), HX_OK);
      }
    assert_int_equal(hx_results_commit(r, &e), HX_OK);
    hx_results_close(r);
    char dir[400], p[600];
    snprintf(dir, sizeof dir, "%s/%s", root, id);
    hx_run run;
    assert_int_equal(hx_run_load(&run, dir, &e), HX_OK);
    (void)hx_plot(&run, 1, f3d_study(), F3D_PLOTS_DIR, dir, &e); /* the report is written with or without gnuplot */
    snprintf(p, sizeof p, "%s/REPORT.md", dir);
    char *rep = slurp(p);
    assert_non_null(rep);
    if (with_ptv3 == 2) {
      assert_non_null(strstr(rep, "at 100000 points Flash3D's `attn.plain`"));
      assert_non_null(strstr(rep, "(4.00x the FLOPs)")); /* both halved at 100000 */
    } else if (with_ptv3) {
      assert_non_null(strstr(rep, "at 200000 points Flash3D's `attn.plain` (scopes of PSH buckets, up to 4096 rows in "
                                  "the sweep) counts 500 GFLOP in 4 ms, PTv3's `attn.patch1024` 125 GFLOP in 1 ms (4.00x "
                                  "the FLOPs)"));
      assert_non_null(strstr(rep, "(`attn.patch4096`, after its gather) takes 5 ms: Flash3D / PTv3 0.80."));
    } else {
      assert_null(strstr(rep, "not the same work"));
    }
    free(rep);
    hx_run_free(&run);
  }
}

/* The y tick labels of a gnuplot SVG (right-aligned texts left of the axis): their smallest value and
 * how many there are. */
static size_t y_ticks(const char *svg, double *lowest) {
  size_t n = 0;
  *lowest = INFINITY;
  const char *key = "text-anchor=\"end\">";
  for (const char *q = strstr(svg, key); q; q = strstr(q + 1, key)) {
    const char *t = strstr(q, "<text>");
    if (!t) break;
    char *end;
    double v = strtod(t + 6, &end);
    if (end == t + 6 || *end != '<') continue; /* not a number */
    if (v < *lowest) *lowest = v;
    n++;
  }
  return n;
}

/* Small positive values on a linear axis (DRAM read bandwidth of 0.2 to 0.5 GB/s, and one series that
 * stays at ~0 as PSH did on the H200): the y axis starts at 0, never below it (a real run showed -200
 * GB/s), and a negative metric would still get its own range. Legends use the short names, the data
 * file keeps the full ones. */
static void test_yrange(void **state) {
  (void)state;
  if (hx_plot_have_gnuplot(NULL) != HX_OK) skip();
  hx_results *r;
  hx_err e;
  assert_int_equal(hx_results_open(&r, root, "small", &e), HX_OK);
  for (int n = 1; n <= 3; n++) {
    hx_key k = {"lidar", (uint64_t)n * 100000u, 1, "flash3d", "psh.xor-mod", "v4"};
    assert_int_equal(hx_results_add(r, &k, "time_mean", 1.0, "ms", &e), HX_OK);
    assert_int_equal(hx_results_add(r, &k, "dram_read_bw", (0.2 + 0.15 * (n - 1)) * 1e9, "B/s", &e), HX_OK);
    hx_key k2 = {"lidar", (uint64_t)n * 100000u, 1, "ptv3", "serialize", "v2"};
    assert_int_equal(hx_results_add(r, &k2, "time_mean", 2.0, "ms", &e), HX_OK);
    assert_int_equal(hx_results_add(r, &k2, "dram_read_bw", 0.25e9 + 0.01e9 * n, "B/s", &e), HX_OK);
  }
  assert_int_equal(hx_results_commit(r, &e), HX_OK);
  hx_results_close(r);
  char dir[400], p[600];
  snprintf(dir, sizeof dir, "%s/small", root);
  hx_run run;
  assert_int_equal(hx_run_load(&run, dir, &e), HX_OK);
  assert_int_equal(hx_plot(&run, 1, f3d_study(), F3D_PLOTS_DIR, dir, &e), HX_OK);
  snprintf(p, sizeof p, "%s/plots/dram.svg", dir);
  char *svg = slurp(p);
  assert_non_null(svg);
  double lowest;
  assert_true(y_ticks(svg, &lowest) >= 3);
  assert_true(lowest == 0.0);
  /* short legend names in the figure, full names in its data file */
  assert_non_null(strstr(svg, "PSH v4 xor-mod"));
  assert_non_null(strstr(svg, "serialize v2"));
  assert_null(strstr(svg, "flash3d/psh.xor-mod/v4"));
  free(svg);
  snprintf(p, sizeof p, "%s/plots/dram.dat", dir);
  char *dat = slurp(p);
  assert_non_null(dat);
  assert_non_null(strstr(dat, "\"flash3d/psh.xor-mod/v4 lidar\" \"PSH v4 xor-mod\"\n"));
  assert_non_null(strstr(dat, "\"ptv3/serialize/v2 lidar\" \"serialize v2\"\n"));
  free(dat);
  hx_run_free(&run);
}

/* Arguments hx_plot refuses before it touches the file system: no runs, no output directory (a NULL path:
 * found by a -fsanitize=address,undefined build, whose analysis saw the NULL reach snprintf's %s), and quotes,
 * which the gnuplot command line cannot carry. Each names its problem; none creates the directory. */
static void test_plot_args(void **state) {
  (void)state;
  hx_run run;
  memset(&run, 0, sizeof run);
  hx_err e;
  char out[400], quoted[400];
  snprintf(out, sizeof out, "%s/args", root);
  snprintf(quoted, sizeof quoted, "%s/args-q'uote", root);
  assert_int_equal(hx_plot(&run, 0, f3d_study(), F3D_PLOTS_DIR, out, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "no result directories"));
  assert_int_equal(hx_plot(&run, 1, f3d_study(), F3D_PLOTS_DIR, NULL, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "no output directory"));
  assert_int_equal(hx_plot_sel(&run, 1, f3d_study(), NULL, out, 1, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "no scripts directory"));
  assert_int_equal(hx_plot(&run, 1, f3d_study(), F3D_PLOTS_DIR, quoted, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "quote"));
  struct stat st;
  assert_int_not_equal(stat(out, &st), 0);
  assert_int_not_equal(stat(quoted, &st), 0);
}

/* The study is data: the same fixture plotted without one (every kernel a stage, default legends, no
 * comparison figure, no headline table, no memory ratio) and with a made-up one (its title, display names,
 * legend rule, comparison figure, table with a context value in its intro and a note at the largest size,
 * memory ratio) shows that plot.c takes all of it from the tables it is handed. */
static int note_calls;
static int test_note(FILE *f, const hx_run *r, const char *workload, uint64_t n, const hx_study_col *cols, size_t nc) {
  (void)r;
  note_calls++;
  if (n != 300000u) return 0; /* the largest size: the note must be tried there first */
  fprintf(f, "NOTE %s %llu %zu %s\n\n", workload, (unsigned long long)n, nc, nc ? cols[0].kernel : "-");
  return 1;
}

static void test_study_data(void **state) {
  (void)state;
  make_fixture("study", "NVIDIA H100 80GB HBM3", 1.0);
  char dir[400], out[400];
  snprintf(dir, sizeof dir, "%s/study", root);
  hx_run run;
  hx_err e;
  assert_int_equal(hx_run_load(&run, dir, &e), HX_OK);
  const int gp = hx_plot_have_gnuplot(NULL) == HX_OK;
  /* no study */
  snprintf(out, sizeof out, "%s/study-none", root);
  assert_int_equal(hx_plot(&run, 1, NULL, F3D_PLOTS_DIR, out, &e), gp ? HX_OK : HX_EUNSUPPORTED);
  char *rep = slurp_at(out, "REPORT.md");
  assert_true(strncmp(rep, "# report\n", 9) == 0);
  assert_null(strstr(rep, "serial_psh"));
  assert_null(strstr(rep, "PTv3"));
  assert_null(strstr(rep, "\n| n_points |")); /* no headline or memory table */
  assert_non_null(strstr(rep, "| ptv3/total/v1 | lidar | 300000 | 1 |"));
  free(rep);
  /* a made-up study over the same rows */
  static const char *const a_stages[] = {"attention"};
  static const hx_study_pipeline pipes[] = {{"ptv3", "Alpha", a_stages, 1, 0}, {"flash3d", "Beta", NULL, 0, 0}};
  static const hx_study_legend legs[] = {{"attent*", "att{k} {v}!", "v1", " (first)"}};
  static const char *const cmp_series[] = {"*/attention"}, *const cmp_all[] = {"*/*"};
  static const hx_study_figure figs[] = {{"cmp", "Custom comparison", cmp_series, 1, cmp_all, 1}};
  static const hx_study_col cols[] = {{"ptv3", "ser"}, {"flash3d", "nothing-like-this"}};
  static const hx_study_table tabs[] = {
      {cols, 2, 1, NULL, HX_CELL_TIME, NULL, "never written", NULL, NULL}, /* every group: the second has none */
      {cols, 2, 0, NULL, HX_CELL_TIME, "First", "intro on {ctx}.", "device", test_note},
  };
  static const hx_study custom = {"custom title", pipes, 2, legs, 1, figs, 1, tabs, 2, {"flash3d", "ptv3"}, NULL};
  snprintf(out, sizeof out, "%s/study-custom", root);
  note_calls = 0;
  assert_int_equal(hx_plot(&run, 1, &custom, F3D_PLOTS_DIR, out, &e), gp ? HX_OK : HX_EUNSUPPORTED);
  rep = slurp_at(out, "REPORT.md");
  assert_true(strncmp(rep, "# custom title\n", 15) == 0);
  assert_null(strstr(rep, "never written"));
  assert_non_null(strstr(rep, "intro on NVIDIA H100 80GB HBM3.\n\n| n_points | First serialize |"));
  assert_non_null(strstr(rep, "| 100000 | 0.7 (v1) |"));
  assert_non_null(strstr(rep, "NOTE lidar 300000 1 serialize"));
  assert_int_equal(note_calls, 1);
  assert_non_null(strstr(rep, "| n_points | Alpha peak | Beta peak | Beta / Alpha |"));
  assert_non_null(strstr(rep, "| 100000 | 61.0 | 30.5 | 0.50x |"));
  if (gp) {
    assert_non_null(strstr(rep, "### Custom comparison\n\n![cmp](plots/cmp.png)"));
    assert_null(strstr(rep, "serial_psh"));
    char *dat = slurp_at(out, "plots/cmp.dat");
    assert_non_null(strstr(dat, "\"ptv3/attention/v1 lidar\" \"Alpha attion v1! (first)\"\n"));
    assert_non_null(strstr(dat, "\"flash3d/attention/v1 lidar\" \"Beta attion v1! (first)\"\n"));
    assert_null(strstr(dat, "serialize")); /* only the pattern's kernels */
    free(dat);
    dat = slurp_at(out, "plots/cmp_all.dat");
    assert_non_null(strstr(dat, "\"ptv3/serialize/v1 lidar\""));
    free(dat);
    dat = slurp_at(out, "plots/stages.dat"); /* Alpha's one stage; Beta has no list: every kernel but total */
    assert_non_null(strstr(dat, "pipeline \"attention\" \"psh\"\n"));
    free(dat);
  }
  free(rep);
  /* figures whose names or titles cannot be used: refused before anything is written */
  hx_study_figure bad = figs[0];
  hx_study broken = custom;
  broken.figures = &bad;
  const char *names[] = {"latency", "a/b", "", "x'y"};
  for (size_t i = 0; i < 4; i++) {
    bad.name = names[i];
    snprintf(out, sizeof out, "%s/study-bad", root);
    assert_int_equal(hx_plot(&run, 1, &broken, F3D_PLOTS_DIR, out, &e), HX_EINVAL);
    assert_non_null(strstr(e.msg, "study figure 0"));
  }
  bad.name = "ok", bad.title = "it's";
  assert_int_equal(hx_plot(&run, 1, &broken, F3D_PLOTS_DIR, out, &e), HX_EINVAL);
  struct stat st;
  assert_int_not_equal(stat(out, &st), 0);
  hx_run_free(&run);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_treemap),
      cmocka_unit_test(test_render_one),
      cmocka_unit_test(test_render_devices),
      cmocka_unit_test(test_select),
      cmocka_unit_test(test_yrange),
      cmocka_unit_test(test_select_geomean),
      cmocka_unit_test(test_memory_fastest),
      cmocka_unit_test(test_scope_note),
      cmocka_unit_test(test_floor_report),
      cmocka_unit_test(test_plot_args),
      cmocka_unit_test(test_study_data),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
