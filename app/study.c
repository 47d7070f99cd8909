/*
 * study.c - the f3dbench study as data for harness/plot.c (hx_study): PTv3 against Flash3D.
 *
 * Pipelines: "workload" is input preparation on the host (never a stage of the figures); "ptv3" and
 * "flash3d" each name the stages that tell their story (the paper's figures), in pipeline order: PTv3's
 * serialization, qkv gather, attention over patches of 1024, output gather and pooling; Flash3D's PSH of
 * the default hash (xor-div, psh_params_default; pipe_flash3d.c), attention in place over PSH buckets and
 * in-bucket pooling. Pipelines not listed show every kernel but "total".
 * Headline tables, per run and workload: PTv3 serialization vs Flash3D PSH per hash (the paper's bucketing
 * claim; the psh.floor row, which is no PSH, in the last column with a note), attention throughput (with a
 * note that Flash3D's scopes and PTv3's patches are different work), PTv3's gathers against the measured
 * copy ceiling; then peak memory per pipeline with PTv3 / Flash3D (the paper reports 2.4x less memory for
 * Flash3D, for a whole network in training; these are the benchmark pipelines' own buffers).
 */
#include "app/study.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const ptv3_stages[] = {"serialize", "gather_qkv_C64", "attn.patch1024", "gather_out_C64", "pool"};
static const char *const flash3d_stages[] = {"psh.xor-div", "attn.plain", "pool"};

static const hx_study_pipeline pipelines[] = {
    {"workload", NULL, NULL, 0, 1},
    {"ptv3", "PTv3", ptv3_stages, sizeof ptv3_stages / sizeof *ptv3_stages, 0},
    {"flash3d", "Flash3D", flash3d_stages, sizeof flash3d_stages / sizeof *flash3d_stages, 0},
};

/* psh.floor is no PSH: the legend says what it is (pipe_flash3d.c); a PSH legend reads "PSH v4 xor-mod". */
static const hx_study_legend legends[] = {
    {"psh.floor", "floor (v10's launch, data movement only)", ".graph", " graph"},
    {"psh.*", "PSH {v} {k}", NULL, NULL},
};

/* PTv3's serialize and each PSH hash (the floor included), fastest variant each; --all-series: every
 * kernel whose name holds "serial" or "psh" */
static const char *const serial_psh_series[] = {"*/serialize", "*/psh*"};
static const char *const serial_psh_all[] = {"*/*serial*", "*/*psh*"};
static const hx_study_figure figures[] = {
    {"serial_psh", "PTv3 serialization vs Flash3D PSH (log scale)", serial_psh_series, 2, serial_psh_all, 2},
};

/* Under the serialization table: what the floor is and, at size n, how far the fastest PSH is above it.
 * Returns 1 when it wrote the note (the run has a floor row at n). */
static int floor_note(FILE *f, const hx_run *r, const char *workload, uint64_t n, const hx_study_col *cols, size_t nc) {
  const char *fv = NULL, *bv = NULL, *bk = NULL;
  const double tf = hx_plot_best_value(r, "flash3d", "psh.floor", workload, n, "time_mean", &fv); /* fv unused */
  if (!isfinite(tf) || tf <= 0.0) return 0;
  double best = NAN;
  for (size_t c = 0; c < nc; c++) {
    const char *v = NULL;
    if (strcmp(cols[c].pipeline, "flash3d") || strncmp(cols[c].kernel, "psh.", 4) || !strcmp(cols[c].kernel, "psh.floor"))
      continue;
    const double t = hx_plot_best_value(r, cols[c].pipeline, cols[c].kernel, workload, n, "time_mean", &v);
    if (isfinite(t) && (!isfinite(best) || t < best)) best = t, bv = v, bk = cols[c].kernel;
  }
  /* the outputs' size from the row's own bytes (12 B of coordinates read per point): 28 B per point while
   * psh_gpu asked for the per-point (bucket, offset), 20 B since it asks for none */
  const char *bytes_v = NULL;
  const double by = hx_plot_best_value(r, "flash3d", "psh.floor", workload, n, "bytes", &bytes_v);
  char outs[64] = "its outputs";
  if (isfinite(by) && n > 0 && by > 12.0 * (double)n)
    snprintf(outs, sizeof outs, "the %.0f B of outputs per point", by / (double)n - 12.0);
  fprintf(f,
          "`psh.floor` is not a PSH: the one-launch variants' launch (v10's tiles, shared memory and cooperative "
          "launch) reading the coordinates, passing two grid barriers and then writing %s coalesced, with nothing "
          "computed. No PSH of that shape (outputs stored after the second barrier, as v9 and v10 do) beats it, so "
          "its column's ratio is the most such a PSH can gain over the serialization on this device.",
          outs);
  if (isfinite(best))
    fprintf(f, " At %llu points the fastest PSH (`%s` %s) takes %.2fx the floor.", (unsigned long long)n, bk, bv,
            best / tf);
  fputs("\n\n", f);
  return 1;
}

/* The per-stage figures stack the paper's configurations: PTv3 attends within patches of 1024 points, Flash3D
 * within scopes of PSH buckets (the sweep's: 8 buckets of S = 512, up to 4096 rows), so their attention rows are
 * different amounts of work. Say so under the attention table with the run's own numbers at size n, and give
 * the like-for-like pair (PTv3 at Flash3D's scope, attn.patch4096) when the run has it. Returns 0 (and writes
 * nothing) when a row is missing at n. */
static int scope_note(FILE *f, const hx_run *r, const char *workload, uint64_t n, const hx_study_col *cols, size_t nc) {
  (void)cols, (void)nc;
  const char *v1, *v2, *v3;
  const double tf = hx_plot_best_value(r, "flash3d", "attn.plain", workload, n, "time_mean", &v1);
  const double ff = hx_plot_best_value(r, "flash3d", "attn.plain", workload, n, "flops", &v1);
  const double t1 = hx_plot_best_value(r, "ptv3", "attn.patch1024", workload, n, "time_mean", &v2);
  const double f1 = hx_plot_best_value(r, "ptv3", "attn.patch1024", workload, n, "flops", &v2);
  const double t4 = hx_plot_best_value(r, "ptv3", "attn.patch4096", workload, n, "time_mean", &v3);
  if (!(isfinite(tf) && isfinite(ff) && isfinite(t1) && isfinite(f1)) || f1 <= 0.0) return 0;
  fprintf(f, "The attention rows are not the same work: at %llu points Flash3D's `attn.plain` (scopes of PSH buckets, "
             "up to 4096 rows in the sweep) counts %.3g GFLOP in %.4g ms, PTv3's `attn.patch1024` %.3g GFLOP in "
             "%.4g ms (%.2fx the FLOPs). The per-stage figures stack these, the paper's configurations.",
          (unsigned long long)n, ff / 1e9, tf, f1 / 1e9, t1, ff / f1);
  if (isfinite(t4) && t4 > 0.0)
    fprintf(f, " At Flash3D's scope PTv3's attention (`attn.patch4096`, after its gather) takes %.4g ms: Flash3D / PTv3 "
               "%.2f.",
            t4, tf / t4);
  fputs("\n\n", f);
  return 1;
}

static const hx_study_col serial_psh_cols[] = {{"ptv3", "serialize"}, {"flash3d", "psh"}};
static const hx_study_col attn_cols[] = {{"flash3d", "attn."}, {"ptv3", "attn."}};
static const hx_study_col gather_cols[] = {{"ptv3", "gather_"}};

static const hx_study_table tables[] = {
    {serial_psh_cols, 2, 1, "psh.floor", HX_CELL_VS_FIRST, "PTv3",
     "PTv3 serialization vs Flash3D PSH per hash: time_mean (ms), and PTv3 serialize / PSH (> 1: PSH faster).", NULL,
     floor_note},
    {attn_cols, 2, 0, NULL, HX_CELL_TFLOPS, NULL,
     "Attention throughput (TFLOP/s; flash3d in place over PSH buckets, ptv3 over padded patches; cuBLAS fp16 GEMM "
     "ceiling {ctx}).",
     "ceiling_gemm_fp16_tflops", scope_note},
    {gather_cols, 1, 0, NULL, HX_CELL_GBS, NULL,
     "PTv3 gathers: bytes moved / median time (GB/s) and % of the measured copy ceiling ({ctx} GB/s).",
     "ceiling_copy_gbs", NULL},
};

static const hx_study study = {
    "flash3d-bench report",
    pipelines, sizeof pipelines / sizeof *pipelines,
    legends, sizeof legends / sizeof *legends,
    figures, sizeof figures / sizeof *figures,
    tables, sizeof tables / sizeof *tables,
    {"ptv3", "flash3d"},
    "baselines such as the unfused attention v0 included",
};

const hx_study *f3d_study(void) { return &study; }
