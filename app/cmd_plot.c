/*
 * cmd_plot.c - `f3dbench plot RESULTS_DIR...`: the paper's figures (PNG + SVG via gnuplot) and REPORT.md
 * from one run, or the same figures with one series per device plus a ratio table from several runs
 * (hx_plot_sel with the study's tables, app/study.c: by default a few headline series per figure,
 * --all-series every one). Figures go to
 * OUT/plots/, the report to OUT/REPORT.md; OUT is the run directory itself for one run. Without gnuplot the report is still written and the command says so (exit 0).
 * An incomplete run (interrupted, killed, failed: hx_run_incomplete_why says which) is refused, naming why,
 * unless --partial: then it is drawn from what it holds and REPORT.md says so under its title (hx_plot_sel writes
 * that line with the report, all or nothing).
 */
#include "app/cli.h"
#include "app/stop.h"
#include "app/study.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef F3D_SOURCE_ROOT
#define F3D_SOURCE_ROOT "."
#endif

static void usage(FILE *f) {
  fputs("usage: f3dbench plot [options] RESULTS_DIR...\n"
        "Figures (latency, serialization vs PSH, SM active/issue, tensor active, DRAM read bandwidth,\n"
        "memory, per-stage stacked bars and treemap) as PNG and SVG, and REPORT.md. With several result\n"
        "directories (e.g. A100, H100, H200 runs) every figure shows each device and the report adds a\n"
        "ratio table against the first.\n"
        "  -o, --out DIR        where plots/ and REPORT.md go (default: the run directory when there is\n"
        "                       one, required for several)\n"
        "  -s, --scripts DIR    gnuplot scripts (default " F3D_SOURCE_ROOT "/plots, or where that tree\n"
        "                       has moved, the plots/ two folders above this binary: build/app/../../plots)\n"
        "  -j, --json           also write results.json (NVBench-like schema) into each run directory\n"
        "  -a, --all-series     draw every recorded series (every variant of every kernel); by default each\n"
        "                       figure shows the fastest variant of each main stage (all series stay in\n"
        "                       plots/<figure>_all.dat)\n"
        "  -p, --partial        draw an incomplete run (e.g. a sweep stopped by Ctrl-C) from the cases it\n"
        "                       holds, REPORT.md saying so at its top; without it such a run is refused\n"
        "  -h, --help           this text\n",
        f);
}

int f3d_cmd_plot(int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                       {"scripts", required_argument, NULL, 's'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"all-series", no_argument, NULL, 'a'},
                                       {"partial", no_argument, NULL, 'p'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *out = NULL, *scripts = F3D_SOURCE_ROOT "/plots";
  int user_scripts = 0;
  int json = 0, all = 0, partial = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:s:japh", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 's': scripts = optarg, user_scripts = 1; break;
    case 'j': json = 1; break;
    case 'a': all = 1; break;
    case 'p': partial = 1; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  size_t n = (size_t)(argc - optind);
  if (n == 0) {
    f3d_fail("plot", "no result directory given");
    usage(stderr);
    return 2;
  }
  if (n > 1 && !out) {
    f3d_fail("plot", "several result directories need -o OUT_DIR");
    return 2;
  }
  if (!out) out = argv[optind];
  char moved[4200], probe[4300];
  snprintf(probe, sizeof probe, "%s/lines.gp", scripts);
  if (!user_scripts && access(probe, R_OK) != 0) {
    /* the tree was moved or copied since the build: its scripts beside this binary's, build/app/../../plots */
    char exe[4096];
    const ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = NULL;
    if (k > 0) exe[k] = '\0', slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      snprintf(moved, sizeof moved, "%s/../../plots", exe);
      snprintf(probe, sizeof probe, "%s/lines.gp", moved);
      if (access(probe, R_OK) == 0) scripts = moved;
    }
  }
  snprintf(probe, sizeof probe, "%s/lines.gp", scripts);
  const int no_scripts = access(probe, R_OK) != 0 ? errno : 0;
  hx_err gerr;
  if (no_scripts && hx_plot_have_gnuplot(&gerr) == HX_OK) { /* without gnuplot no script is read */
    f3d_fail("plot", "no gnuplot scripts in %s (its lines.gp: %s): name the repository's plots/ with -s DIR", scripts,
             strerror(no_scripts));
    return 2;
  }
  hx_run *runs = f3d_runs_load("plot", argv + optind, n);
  if (!runs) return 1;
  hx_err err;
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    if (!runs[i].incomplete) continue;
    char why[512];
    hx_run_incomplete_why(&runs[i], why, sizeof why);
    if (partial) {
      fprintf(stderr, "f3dbench: plot: warning: %s: %s: drawing what it holds (--partial)\n", runs[i].dir, why);
    } else {
      f3d_fail("plot", "%s: %s; --partial draws what it holds", runs[i].dir, why);
      rc = 1;
    }
  }
  if (rc == 0 && json) {
    for (size_t i = 0; i < n && rc == 0; i++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/results.json", runs[i].dir);
      char tmp[4200]; /* hx_write_file_atomic's temporary: removed if a signal ends the program (stop.h) */
      hx_tmp_path(tmp, sizeof tmp, path);
      (void)f3d_tmp_add(tmp, F3D_TMP_FILE);
      if (hx_run_write_json(&runs[i], path, &err) != HX_OK) {
        f3d_fail_msg("plot", err.msg);
        rc = 1;
      }
      f3d_tmp_drop(tmp);
    }
  }
  if (rc == 0) {
    /* what hx_plot makes before its renames (plots.tmp.<pid>/, REPORT.md.tmp.<pid>, and OUT_DIR when it creates it)
     * is removed if a signal ends the program (stop.h): files first, then the folders, after the gnuplot drawing into
     * plots.tmp.<pid>/ is killed and reaped (f3d_child_watch) */
    char out_tmp[3][4200];
    struct stat sb;
    snprintf(out_tmp[0], sizeof out_tmp[0], "%s", stat(out, &sb) == 0 ? "" : out);
    char final[4100];
    snprintf(final, sizeof final, "%s/plots", out);
    hx_tmp_path(out_tmp[1], sizeof out_tmp[1], final);
    snprintf(final, sizeof final, "%s/REPORT.md", out);
    hx_tmp_path(out_tmp[2], sizeof out_tmp[2], final);
    if (out_tmp[0][0]) (void)f3d_tmp_add(out_tmp[0], F3D_TMP_EMPTY_DIR);
    (void)f3d_tmp_add(out_tmp[1], F3D_TMP_DIR);
    (void)f3d_tmp_add(out_tmp[2], F3D_TMP_FILE);
    hx_status st = hx_plot_sel(runs, n, f3d_study(), scripts, out, all, &f3d_child_watch, &err);
    for (int k = 2; k >= 0; k--)
      if (out_tmp[k][0]) f3d_tmp_drop(out_tmp[k]);
    if (st == HX_EUNSUPPORTED) {
      fprintf(stderr, "f3dbench: plot: %s; wrote %s/REPORT.md without figures\n", err.msg, out);
    } else if (st != HX_OK) {
      f3d_fail_msg("plot", err.msg);
      rc = 1;
    } else {
      printf("figures in %s/plots, report %s/REPORT.md\n", out, out);
    }
  }
  f3d_runs_free(runs, n);
  return rc;
}
