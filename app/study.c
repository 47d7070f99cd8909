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
 * The section "Backbones" (before the headline) holds the whole networks, pipelines "ptv3-net" and "flash3d-net"
 * (pipe_net.c), which stay out of the per-stage figures and tables: per run, PTv3-m1 against Flash3D-46m in one
 * sentence that says plainly when Flash3D is slower and where its time goes; the paper's table (equal parameters,
 * equal memory) with one column group per run and the paper's ratios beside ours; latency vs points with a
 * least-squares line per configuration and the R^2 target; SM, TensorCore, DRAM and peak memory vs points; the
 * components at the largest size as stacked bars and treemaps, with each component's floor (GEMM FLOPs at the
 * cuBLAS rate, attention FLOPs at the attention kernel's rate, bytes at the copy bandwidth, all measured in the
 * run) where the run has cost rows, the measured components and the reason otherwise.
 */
#include "app/study.h"
#include "kernels/kernels.h"
#include "nets/nets.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PTv3 starts from the grid coordinates (grid), which PSH computes inside itself from the points: the grid is
 * PTv3's work in the stage figures too. A run without a `serialize` row (the CPU references time its parts,
 * pipe_ptv3.c's run_cpu: encode_all, then sort, which also writes the inverse) shows the parts in its place, so
 * the figures never stack PTv3's gather alone against Flash3D's PSH. */
static const char *const ptv3_stages[] = {"grid", "serialize", "gather_qkv_C64", "attn.patch1024", "gather_out_C64",
                                          "pool"};
static const hx_study_part ptv3_parts[] = {{"serialize", "encode_all"}, {"serialize", "sort"}};
static const char *const flash3d_stages[] = {"psh.xor-div", "attn.plain", "pool"};

/* the backbone pipelines (pipe_net.c) are whole networks: the section "Backbones" shows them, not the
 * per-stage figures and tables */
static const hx_study_pipeline pipelines[] = {
    {"workload", NULL, NULL, 0, 1, 0, NULL, 0},
    {"ptv3", "PTv3", ptv3_stages, sizeof ptv3_stages / sizeof *ptv3_stages, 0, 0, ptv3_parts,
     sizeof ptv3_parts / sizeof *ptv3_parts},
    {"flash3d", "Flash3D", flash3d_stages, sizeof flash3d_stages / sizeof *flash3d_stages, 0, 0, NULL, 0},
    {"ptv3-net", "PTv3", NULL, 0, 0, 1, NULL, 0},
    {"flash3d-net", "Flash3D", NULL, 0, 0, 1, NULL, 0},
};

/* Why a run lacks PTv3's whole serialization (the figure and table compare it whole with PSH, never a part). */
#define NO_SERIALIZE                                                                                                  \
  "the sweep times PTv3's whole serialization on a CUDA device; the CPU references time its parts, `encode_all` "   \
  "and `sort`, which the per-stage figures stack beside PSH"

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
    {"serial_psh", "PTv3 serialization vs Flash3D PSH (log scale)", serial_psh_series, 2, serial_psh_all, 2,
     NO_SERIALIZE},
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
     floor_note, NO_SERIALIZE},
    {attn_cols, 2, 0, NULL, HX_CELL_TFLOPS, NULL,
     "Attention throughput (TFLOP/s; flash3d in place over PSH buckets, ptv3 over padded patches; cuBLAS {dtype} GEMM "
     "ceiling in TFLOP/s: {ctx}).",
     "ceiling_gemm_{dtype}_tflops", scope_note,
     "the sweep runs attention on a CUDA device only, as its CPU path, the double-precision reference, is too slow "
     "for a sweep; `f3dbench attn --variant cpu --rows 4k` runs it on one small case"},
    {gather_cols, 1, 0, NULL, HX_CELL_GBS, NULL,
     "PTv3 gathers: bytes moved / median time (GB/s) and % of the measured copy ceiling (in GB/s: {ctx}).",
     "ceiling_copy_gbs", NULL,
     "the CPU references time the gather without declaring its bytes, so it has no bandwidth; its time is in the "
     "figures and the table of every row"},
};

/* ---- the backbones: PTv3-m1 against Flash3D, whole forwards (pipe_net.c's rows) -------------------------------
 * Rows: pipeline ptv3-net / flash3d-net, variant = the configuration; kernel "forward" (time_*, the counters over
 * the forward, mem_peak, params, check, skipped_bytes_needed) and its CUDA-graph replay "<variant>.graph"; one
 * kernel per component (time_* over the breakdown forwards, share; with counters on, the forward's counter rows for
 * that component, "other" for work outside the components, and counter_ranges on "forward"), and, where the sweep
 * records them, cost rows per component and on "forward": gemm_flops, attn_flops (FLOP), floor_bytes (B). */

typedef struct net_model {
  const char *pipeline, *variant, *display, *role;
} net_model;
/* the paper's table: its three rows, then the public code's configuration (--ladder); then flash3d-46m with its
 * buckets filled alike at every size, on the public code's layout and over scopes of 2 buckets (not rows of the
 * paper's table: the same network under another bucket rule, without re-hashing, and attending to PTv3's 1024 keys a
 * query where the paper's attends to 4096); then PTv3-m1 over patches of 4096, the scope at which the paper's Table 2
 * fixes every model (rows of their own under the paper's table: its PTv3 attends to 4096 keys a query) */
static const net_model net_models[] = {
    {"ptv3-net", "ptv3", "PTv3-m1", "PTv3"},
    {"flash3d-net", "flash3d-46m", "Flash3D-46m", "equal parameters"},
    {"flash3d-net", "flash3d-129m", "Flash3D-129m", "equal memory"},
    {"flash3d-net", "flash3d-public", "Flash3D public", "the public code's configuration"},
    {"flash3d-net", "flash3d-46m-fill75", "Flash3D-46m-fill75", "equal parameters, buckets 75% full"},
    {"flash3d-net", "flash3d-46m-windows", "Flash3D-46m-windows", "equal parameters, the public code's windows"},
    {"flash3d-net", "flash3d-46m-scope2", "Flash3D-46m-scope2", "equal parameters, PTv3's attention span"},
    {"ptv3-net", "ptv3-patch4096", "PTv3-m1-patch4096", "the paper's attention scope"},
};
enum { NM_PTV3, NM_EQ_PARAMS, NM_EQ_MEMORY, NM_PUBLIC, NM_FILL, NM_WINDOWS, NM_SPAN, NM_SCOPE4096, NM_COUNT };
_Static_assert(NM_COUNT == sizeof net_models / sizeof *net_models, "one enum entry per configuration");

/* The paper's Table 2 (A100, nuScenes, attention scopes of 4096; its text: "2.25x inference speed", "PTv3 uses
 * 2.4x amount of memory", "even with 2.8x model parameters, Flash3D inference latency is still 1.88x faster"):
 * params (M), memory (G), latency (ms) of PTv3, Flash3D at equal parameters and at equal memory. 45 / 20 ms =
 * 2.25x, 1.2 / 0.5 G = 2.4x, 45 / 24 ms = 1.875x, printed 1.88x. Its H100 appendix table: 30.2, 13.4 and 15.1 ms
 * (2.25x and 2.00x) with the same memory. */
static const struct {
  const char *params, *mem;
  double ms_a100, ms_h100;
} paper_rows[3] = {{"46.2M", "1.2G", 45.0, 30.2}, {"46.2M", "0.5G", 20.0, 13.4}, {"129.4M", "1.2G", 24.0, 15.1}};

/* Keys a query of configuration m attends to, from its net_config (PTv3: its patch; Flash3D: scope x bucket rows,
 * *scope and *bucket set); 0 when the name is not a configuration. */
static int keys_a_query(const net_model *m, int *scope, int *bucket) {
  net_config cfg;
  hx_err e;
  *scope = *bucket = 0;
  if (net_config_named(&cfg, m->variant, &e) != HX_OK) return 0;
  if (cfg.kind == 0) return cfg.patch;
  *scope = cfg.scope, *bucket = cfg.bucket;
  return cfg.scope * cfg.bucket;
}

/* The component rows that time each network's attention kernel on its own (the floors' attention rate); PTv3's
 * pattern (NULL) is attn.patch<K> of the configuration's patch K (1024 or 4096: the ptv3 pipeline times both). */
static const struct {
  const char *net, *pipeline, *kernel_pattern;
} net_attn_rates[] = {{"ptv3-net", "ptv3", NULL}, {"flash3d-net", "flash3d", "attn.*"}};

/* The row (pipeline, kernel, variant, workload, n, batch 1, metric); NAN when absent. */
static double nrow(const hx_run *r, const char *pipeline, const char *kernel, const char *variant, const char *workload,
                   uint64_t n, const char *metric) {
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (w->n_points == n && w->batch == 1 && !strcmp(w->metric, metric) && !strcmp(w->kernel, kernel) &&
        !strcmp(w->variant, variant) && !strcmp(w->pipeline, pipeline) && !strcmp(w->workload, workload))
      return w->value;
  }
  return NAN;
}
static double fwd(const hx_run *r, const net_model *m, const char *wl, uint64_t n, const char *metric) {
  return nrow(r, m->pipeline, "forward", m->variant, wl, n, metric);
}
static double fwd_graph(const hx_run *r, const net_model *m, const char *wl, uint64_t n, const char *metric) {
  char v[96];
  snprintf(v, sizeof v, "%s.graph", m->variant);
  return nrow(r, m->pipeline, "forward", v, wl, n, metric);
}

static int is_net(const char *pipeline) { return !strcmp(pipeline, "ptv3-net") || !strcmp(pipeline, "flash3d-net"); }

/* The first workload with backbone rows; NULL when the run has none. */
static const char *net_workload(const hx_run *r) {
  for (size_t i = 0; i < r->n_rows; i++)
    if (is_net(r->rows[i].pipeline)) return r->rows[i].workload;
  return NULL;
}

/* The largest size with a timed forward of PTv3 and Flash3D-46m (the comparison), else with any timed forward,
 * else with any backbone row (a forward that failed its check or did not fit leaves only those). */
static uint64_t net_size(const hx_run *r, const char *wl) {
  uint64_t both = 0, any = 0, rows = 0;
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (!is_net(w->pipeline) || strcmp(w->workload, wl) || w->batch != 1) continue;
    if (w->n_points > rows) rows = w->n_points;
    if (strcmp(w->kernel, "forward") || strcmp(w->metric, "time_mean")) continue;
    if (w->n_points > any) any = w->n_points;
    if (w->n_points > both && isfinite(fwd(r, &net_models[NM_PTV3], wl, w->n_points, "time_mean")) &&
        isfinite(fwd(r, &net_models[NM_EQ_PARAMS], wl, w->n_points, "time_mean")))
      both = w->n_points;
  }
  return both ? both : any ? any : rows;
}

/* "NVIDIA H100 80GB HBM3" -> "H100 80GB HBM3" */
static const char *short_dev(const char *label) { return strncmp(label, "NVIDIA ", 7) ? label : label + 7; }

/* Why a configuration has no timed forward at n: its check failed, it did not fit, or the run has no rows; a clause
 * that starts with the configuration's name, so it can open a sentence. */
static void why_missing(FILE *f, const hx_run *r, const net_model *m, const char *wl, uint64_t n) {
  const double chk = fwd(r, m, wl, n, "check"), need = fwd(r, m, wl, n, "skipped_bytes_needed");
  if (isfinite(need))
    fprintf(f, "%s was skipped at %llu points: it needs %.0f MiB of device memory", m->display,
            (unsigned long long)n, need / 1048576.0);
  else if (chk == 0.0)
    fprintf(f, "%s failed its check against the CPU forward at %llu points and was not timed", m->display,
            (unsigned long long)n);
  else
    fprintf(f, "%s has no forward in the run (`%s`) at %llu points", m->display, m->variant, (unsigned long long)n);
}

/* The component with the largest time_median of a configuration at n; its share of the summed components. */
static const char *top_component(const hx_run *r, const net_model *m, const char *wl, uint64_t n, double *share,
                                 double *ms) {
  const char *best = NULL;
  double bt = 0.0, sum = 0.0;
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (w->n_points != n || w->batch != 1 || strcmp(w->metric, "time_median") || strcmp(w->pipeline, m->pipeline) ||
        strcmp(w->variant, m->variant) || strcmp(w->workload, wl) || !strcmp(w->kernel, "forward") ||
        !(w->value > 0.0))
      continue;
    sum += w->value;
    if (w->value > bt) bt = w->value, best = w->kernel;
  }
  *share = best ? bt / sum : (double)NAN;
  *ms = bt;
  return best;
}

/* The best tflops of the component rows timing configuration m's attention kernel at n (any size when none at n);
 * *at gets the size it came from, *kernel and *variant its row. NAN when the run has none. */
static double attn_rate(const hx_run *r, const net_model *m, const char *wl, uint64_t n, uint64_t *at,
                        const char **kernel, const char **variant) {
  const char *pipe = NULL, *pat = NULL;
  char patch[32];
  for (size_t i = 0; i < sizeof net_attn_rates / sizeof *net_attn_rates; i++)
    if (!strcmp(net_attn_rates[i].net, m->pipeline)) pipe = net_attn_rates[i].pipeline, pat = net_attn_rates[i].kernel_pattern;
  if (pipe && !pat) {
    int unused;
    snprintf(patch, sizeof patch, "attn.patch%d", keys_a_query(m, &unused, &unused));
    pat = patch;
  }
  double best = NAN;
  for (int any = 0; any < 2 && !isfinite(best); any++)
    for (size_t i = 0; pipe && i < r->n_rows; i++) {
      const hx_run_row *w = &r->rows[i];
      if (strcmp(w->metric, "tflops") || strcmp(w->pipeline, pipe) || strcmp(w->workload, wl) || w->batch != 1 ||
          (!any && w->n_points != n) || fnmatch(pat, w->kernel, 0) || !(w->value > 0.0))
        continue;
      if (!(w->value <= best)) best = w->value, *at = w->n_points, *kernel = w->kernel, *variant = w->variant;
    }
  return best;
}

/* "46,159,312" */
static void with_commas(char *buf, size_t cap, double v) {
  char raw[32];
  snprintf(raw, sizeof raw, "%.0f", v);
  const size_t len = strlen(raw);
  size_t o = 0;
  for (size_t i = 0; i < len && o + 2 < cap; i++) {
    if (i && (len - i) % 3 == 0 && raw[i - 1] != '-') buf[o++] = ',';
    buf[o++] = raw[i];
  }
  buf[o] = '\0';
}

/* "1.59x faster" or "1.59x SLOWER" for a / b of latencies (a: PTv3, b: Flash3D) */
static void speed_words(char *buf, size_t cap, double ptv3_ms, double f3d_ms) {
  if (ptv3_ms >= f3d_ms)
    snprintf(buf, cap, "%.2fx faster than", ptv3_ms / f3d_ms);
  else
    snprintf(buf, cap, "%.2fx SLOWER than", f3d_ms / ptv3_ms);
}

static void nets_targets(FILE *f, const hx_run *runs, size_t n_runs, const char *const *labels);

/* Where the peak memory goes: the forwards' estimate by kind (mem_<kind> rows, net_gpu_memory) in the first run
 * that has them, at its size, with the kind that differs most from PTv3's per configuration. */
static void nets_memory(FILE *f, const hx_run *runs, size_t n_runs, size_t nrows) {
  /* what each net_mem_kind holds, in the enum's order */
  static const char *const what[NET_MEM_KINDS] = {
      "parameters in the dtype", "input points and features, logits",
      "per level: codes, orders, kernel maps, buckets, pooling plans, indices",
      "activations: per level the skips the decoder reads back; the streams, one buffer for the levels",
      "work buffers shared by the levels, each sized for the largest level that uses it",
      "the launchers' scratch (sorts, scans, partial sums)"};
  enum { NK = NET_MEM_KINDS, NMOD = sizeof net_models / sizeof net_models[0] };
  for (size_t ri = 0; ri < n_runs; ri++) {
    const char *wl = net_workload(&runs[ri]);
    if (!wl) continue;
    const uint64_t n = net_size(&runs[ri], wl);
    double v[NMOD][NK], tot[NMOD];
    int have = 0, with[NMOD];
    for (size_t mi = 0; mi < nrows; mi++) {
      tot[mi] = 0.0, with[mi] = 1;
      for (size_t k = 0; k < NK; k++) {
        char metric[32];
        snprintf(metric, sizeof metric, "mem_%s", net_mem_kind_name((net_mem_kind)k));
        v[mi][k] = fwd(&runs[ri], &net_models[mi], wl, n, metric);
        if (!isfinite(v[mi][k])) with[mi] = 0;
        else tot[mi] += v[mi][k];
      }
      have |= with[mi];
    }
    if (!have || !with[NM_PTV3]) continue;
    fprintf(f, "### Where the memory goes\n\nThe forwards' device memory at %llu points (`%s`) by kind of buffer, in "
            "MiB: the estimate each forward is checked against before any allocation (`f3dbench net --memory` "
            "lists every buffer), which the arena's peak above reaches. One buffer policy for both networks "
            "(docs/nets.md, \"Memory\").\n\n| kind | what |", (unsigned long long)n, wl);
    for (size_t mi = 0; mi < nrows; mi++)
      if (with[mi]) fprintf(f, " %s |", net_models[mi].display);
    fputs("\n|---|---|", f);
    for (size_t mi = 0; mi < nrows; mi++)
      if (with[mi]) fputs("---:|", f);
    fputc('\n', f);
    for (size_t k = 0; k < NK; k++) {
      fprintf(f, "| %s | %s |", net_mem_kind_name((net_mem_kind)k), what[k]);
      for (size_t mi = 0; mi < nrows; mi++)
        if (with[mi])
          fprintf(f, " %.1f (%.0f%%) |", v[mi][k] / 1048576.0, tot[mi] > 0 ? 100.0 * v[mi][k] / tot[mi] : 0.0);
      fputc('\n', f);
    }
    fputs("| **total** | |", f);
    for (size_t mi = 0; mi < nrows; mi++)
      if (with[mi]) fprintf(f, " **%.1f** |", tot[mi] / 1048576.0);
    fputs("\n\n", f);
    for (size_t mi = 0; mi < nrows; mi++) {
      if (mi == NM_PTV3 || !with[mi]) continue;
      size_t kb = 0;
      for (size_t k = 1; k < NK; k++)
        if (fabs(v[mi][k] - v[NM_PTV3][k]) > fabs(v[mi][kb] - v[NM_PTV3][kb])) kb = k;
      fprintf(f, "- %s: %+.0f MiB against PTv3 (%.0f against %.0f MiB); the kind that differs most: %s, %+.0f MiB.\n",
              net_models[mi].display, (tot[mi] - tot[NM_PTV3]) / 1048576.0, tot[mi] / 1048576.0,
              tot[NM_PTV3] / 1048576.0, net_mem_kind_name((net_mem_kind)kb), (v[mi][kb] - v[NM_PTV3][kb]) / 1048576.0);
    }
    fputc('\n', f);
    return; /* the buffers do not depend on the device: one run's table */
  }
}

/* Whether w is configuration m's eager forward time (time_mean) of batch 1 on wl. */
static int is_fwd_time(const hx_run_row *w, const net_model *m, const char *wl) {
  return w->batch == 1 && !strcmp(w->metric, "time_mean") && !strcmp(w->kernel, "forward") &&
         !strcmp(w->variant, m->variant) && !strcmp(w->pipeline, m->pipeline) && !strcmp(w->workload, wl);
}

/* The largest size at which m has a timed forward; 0 when none. */
static uint64_t fwd_largest(const hx_run *r, const net_model *m, const char *wl) {
  uint64_t at = 0;
  for (size_t i = 0; i < r->n_rows; i++)
    if (r->rows[i].n_points > at && is_fwd_time(&r->rows[i], m, wl)) at = r->rows[i].n_points;
  return at;
}

/* The paper's scope for both networks: PTv3-m1 over patches of 4096 (the scope at which its Table 2 fixes every
 * model), against Flash3D-46m (t46) and Flash3D-129m (t129) at n; nothing when the run has no such forward. The sweep
 * records it at its largest size only, so when the comparison's size n is smaller (Flash3D-46m skipped or failed at
 * the largest), the sentence says why there is none. */
static void scope4096_sentence(FILE *f, const hx_run *r, const char *wl, uint64_t n, double t46, double t129) {
  const net_model *m = &net_models[NM_SCOPE4096];
  const double t = fwd(r, m, wl, n, "time_mean"), a = nrow(r, m->pipeline, "attn", m->variant, wl, n, "time_median");
  const double mem = fwd(r, m, wl, n, "mem_peak");
  int unused;
  const int keys = keys_a_query(m, &unused, &unused);
  if (keys <= 0) return;
  if (!isfinite(t)) {
    const uint64_t at = fwd_largest(r, m, wl);
    if (!at) return;
    fprintf(f, " %s (the paper's scope, %d keys a query) has a forward at %llu points only, where ", m->display, keys,
            (unsigned long long)at);
    const net_model *other = isfinite(fwd(r, &net_models[NM_EQ_PARAMS], wl, at, "time_mean"))
                                 ? &net_models[NM_PTV3]
                                 : &net_models[NM_EQ_PARAMS];
    why_missing(f, r, other, wl, at);
    fputs(": no comparison at the paper's scope.", f);
    return;
  }
  char sp[64];
  fprintf(f, " At the scope the paper's Table 2 fixes for every model (%d keys a query), %s (the same network over "
             "patches of %d) takes %.2f ms",
          keys, m->display, keys, t);
  if (isfinite(a)) fprintf(f, ", its attention %.2f ms", a);
  if (isfinite(mem)) fprintf(f, ", %.0f MiB", mem / 1048576.0);
  if (isfinite(t46)) {
    speed_words(sp, sizeof sp, t, t46);
    fprintf(f, ": %s is %s it", net_models[NM_EQ_PARAMS].display, sp);
    if (isfinite(t129)) {
      speed_words(sp, sizeof sp, t, t129);
      fprintf(f, " and %s %s it", net_models[NM_EQ_MEMORY].display, sp);
    }
    fputs(isfinite(t129) ? " (the paper: 2.25x and 1.88x faster)" : " (the paper: 2.25x faster)", f);
  }
  fputc('.', f);
}

/* A configuration's cells of the paper's table at n: peak memory (B), eager and graph latency (ms); NAN when absent. */
static void table_cells(const hx_run *r, const net_model *m, const char *wl, uint64_t n, double v[3]) {
  v[0] = fwd(r, m, wl, n, "mem_peak"), v[1] = fwd(r, m, wl, n, "time_mean"), v[2] = fwd_graph(r, m, wl, n, "time_mean");
}

/* One ratio row of the paper's table: base / m (params, then per run peak memory, eager and graph latency) with the
 * paper's ratio text last. */
static void ratio_row(FILE *f, const hx_run *runs, size_t n_runs, const net_model *base, const char *base_name,
                      const net_model *m, const char *paper) {
  double pp = NAN, pm = NAN;
  for (size_t ri = 0; ri < n_runs && !(isfinite(pp) && isfinite(pm)); ri++) {
    const char *wl = net_workload(&runs[ri]);
    if (!wl) continue;
    const uint64_t n = net_size(&runs[ri], wl);
    pp = fwd(&runs[ri], base, wl, n, "params"), pm = fwd(&runs[ri], m, wl, n, "params");
  }
  if (isfinite(pp) && isfinite(pm) && pm > 0.0)
    fprintf(f, "| %s / %s | %.2fx |", base_name, m->display, pp / pm);
  else
    fprintf(f, "| %s / %s | - |", base_name, m->display);
  for (size_t ri = 0; ri < n_runs; ri++) {
    const char *wl = net_workload(&runs[ri]);
    if (!wl) continue;
    const uint64_t n = net_size(&runs[ri], wl);
    double a[3], b[3];
    table_cells(&runs[ri], base, wl, n, a);
    table_cells(&runs[ri], m, wl, n, b);
    for (int c = 0; c < 3; c++)
      if (isfinite(a[c]) && isfinite(b[c]) && b[c] > 0.0) fprintf(f, " %.2fx |", a[c] / b[c]);
      else fputs(" - |", f);
  }
  fprintf(f, " %s |\n", paper);
}

/* One configuration's row of the paper's table: params, then per run peak memory, eager and graph latency; the
 * paper's cell last. */
static void config_row(FILE *f, const hx_run *runs, size_t n_runs, const net_model *m, int named_role,
                       const char *paper) {
  double params = NAN;
  for (size_t ri = 0; ri < n_runs && !isfinite(params); ri++) {
    const char *wl = net_workload(&runs[ri]);
    if (wl) params = fwd(&runs[ri], m, wl, net_size(&runs[ri], wl), "params");
  }
  char pc[40] = "-";
  if (isfinite(params)) with_commas(pc, sizeof pc, params);
  if (named_role)
    fprintf(f, "| %s (`%s`), %s | %s |", m->display, m->variant, m->role, pc);
  else
    fprintf(f, "| %s (`%s`) | %s |", m->display, m->variant, pc);
  for (size_t ri = 0; ri < n_runs; ri++) {
    const char *wl = net_workload(&runs[ri]);
    if (!wl) continue;
    const uint64_t n = net_size(&runs[ri], wl);
    double v[3];
    table_cells(&runs[ri], m, wl, n, v);
    for (int c = 0; c < 3; c++)
      if (isfinite(v[c])) fprintf(f, c ? " %.2f |" : " %.1f |", c ? v[c] : v[c] / 1048576.0);
      else fputs(" - |", f);
  }
  fprintf(f, " %s |\n", paper);
}

/* Per run: the equal-parameter comparison in one sentence, where the time goes when Flash3D is not faster, the
 * memory and the equal-memory configuration; then the paper's table with one column group per run, where the memory
 * goes and the targets. */
static void nets_summary(FILE *f, const hx_run *runs, size_t n_runs, const char *const *labels) {
  size_t with = 0;
  for (size_t ri = 0; ri < n_runs; ri++) {
    const hx_run *r = &runs[ri];
    const char *wl = net_workload(r);
    if (!wl) continue;
    with++;
    const uint64_t n = net_size(r, wl);
    const net_model *mp = &net_models[NM_PTV3], *m46 = &net_models[NM_EQ_PARAMS], *m129 = &net_models[NM_EQ_MEMORY];
    const double tp = fwd(r, mp, wl, n, "time_mean"), t46 = fwd(r, m46, wl, n, "time_mean");
    fprintf(f, "- %s, %llu points (`%s`): ", short_dev(labels[ri]), (unsigned long long)n, wl);
    if (!isfinite(tp) || !isfinite(t46)) {
      why_missing(f, r, isfinite(tp) ? m46 : mp, wl, n);
      fputs(": no comparison.\n", f);
      continue;
    }
    char sp[64];
    speed_words(sp, sizeof sp, tp, t46);
    fprintf(f, "**%s is %s %s** at equal parameters (%.2f ms against %.2f ms, eager forward; the paper: 2.25x faster).",
            m46->display, sp, mp->display, t46, tp);
    if (t46 > tp) { /* where the time goes */
      double s46, sp3, ms46, msp;
      const char *c46 = top_component(r, m46, wl, n, &s46, &ms46), *cp = top_component(r, mp, wl, n, &sp3, &msp);
      int scope, bucket, unused;
      const int keys = keys_a_query(m46, &scope, &bucket), patch = keys_a_query(mp, &unused, &unused);
      if (c46 && !strcmp(c46, "attn") && keys > 0 && patch > 0) {
        const double pa = nrow(r, mp->pipeline, "attn", mp->variant, wl, n, "time_median");
        fprintf(f, " Its attention (scopes of %d x %d = %d keys per query, against PTv3's %d-point patches) is %.0f%% "
                   "of its components' time: %.2f ms",
                scope, bucket, keys, patch, 100.0 * s46, ms46);
        if (isfinite(pa)) fprintf(f, " against PTv3's %.2f ms", pa);
        fputc('.', f);
        uint64_t a1 = 0, a2 = 0;
        const char *k1 = "", *v1 = "", *k2 = "", *v2 = "";
        const double rf = attn_rate(r, m46, wl, n, &a1, &k1, &v1);
        const double rp = attn_rate(r, mp, wl, n, &a2, &k2, &v2);
        if (isfinite(rf) && isfinite(rp) && a1 == n && a2 == n)
          fprintf(f, " The attention kernels alone run at %.0f (Flash3D `%s` %s) and %.0f TFLOP/s (PTv3 `%s` %s) at "
                     "this size: each query attends to %dx the keys.",
                  rf, k1, v1, rp, k2, v2, keys / patch);
      } else if (c46) {
        fprintf(f, " Its largest component is %s, %.0f%% of its components' time (%.2f ms).", c46, 100.0 * s46, ms46);
      }
      if (cp) fprintf(f, " PTv3's largest component is %s (%.0f%%).", cp, 100.0 * sp3);
    }
    const net_model *msp = &net_models[NM_SPAN];
    const double tsp = fwd(r, msp, wl, n, "time_mean");
    int sscope, sbucket;
    const int skeys = keys_a_query(msp, &sscope, &sbucket);
    if (isfinite(tsp) && skeys > 0) { /* the same weights at PTv3's attention span: what the span alone is worth */
      const double asp = nrow(r, msp->pipeline, "attn", msp->variant, wl, n, "time_median");
      speed_words(sp, sizeof sp, tp, tsp);
      fprintf(f, " At PTv3's attention span (scopes of %d x %d = %d keys a query; not the paper's configuration), %s "
                 "is %s PTv3 (%.2f ms",
              sscope, sbucket, skeys, msp->display, sp, tsp);
      if (isfinite(asp)) fprintf(f, ", its attention %.2f ms", asp);
      fputs(").", f);
    }
    const double mpk = fwd(r, mp, wl, n, "mem_peak"), m46k = fwd(r, m46, wl, n, "mem_peak");
    if (isfinite(mpk) && isfinite(m46k) && m46k > 0.0) {
      if (mpk >= m46k)
        fprintf(f, " Peak memory: PTv3 holds %.2fx Flash3D-46m's (%.0f against %.0f MiB; the paper: 2.4x).", mpk / m46k,
                mpk / 1048576.0, m46k / 1048576.0);
      else
        fprintf(f, " Peak memory: Flash3D-46m holds %.2fx PTv3's (%.0f against %.0f MiB), where the paper reports "
                   "2.4x less.",
                m46k / mpk, m46k / 1048576.0, mpk / 1048576.0);
    }
    const double t129 = fwd(r, m129, wl, n, "time_mean"), m129k = fwd(r, m129, wl, n, "mem_peak");
    if (isfinite(t129)) {
      speed_words(sp, sizeof sp, tp, t129);
      fprintf(f, " At the paper's equal memory, %s is %s PTv3 (%.2f ms)", m129->display, sp, t129);
      if (isfinite(m129k) && isfinite(mpk) && mpk > 0.0)
        fprintf(f, " and holds %.2fx PTv3's memory", m129k / mpk);
      fputs(" (the paper: 1.88x faster, with 2.8x the parameters, at the same 1.2G).", f);
    } else {
      fputc(' ', f);
      why_missing(f, r, m129, wl, n);
      fputc('.', f);
    }
    scope4096_sentence(f, r, wl, n, t46, t129);
    fputc('\n', f);
  }
  if (!with) {
    fputs("No backbone rows (pipelines `ptv3-net`, `flash3d-net`) in the run(s): `f3dbench sweep` runs both by default "
          "on a GPU.\n\n",
          f);
    return;
  }
  fputc('\n', f);

  /* the paper's table: one column group (peak memory, eager and graph latency) per run */
  fputs("### The paper's table: equal parameters and equal memory\n\n", f);
  fputs("Each run at the size above; params counted by the network; peak memory = the arena's peak over the forward "
        "(every buffer and weight it holds); latency = time_mean of the forward, eager (stream launches) and "
        "replayed as one CUDA graph. The ratio rows are PTv3 / Flash3D, the paper's direction: above 1, "
        "Flash3D is smaller or faster; below 1, PTv3 is.\n\n| configuration | params |",
        f);
  for (size_t ri = 0; ri < n_runs; ri++)
    if (net_workload(&runs[ri]))
      fprintf(f, " %s peak (MiB) | %s eager (ms) | %s graph (ms) |", short_dev(labels[ri]), short_dev(labels[ri]),
              short_dev(labels[ri]));
  fputs(" the paper (A100, Table 2) |\n|---|---:|", f);
  for (size_t ri = 0; ri < n_runs; ri++)
    if (net_workload(&runs[ri])) fputs("---:|---:|---:|", f);
  fputs("---|\n", f);
  int public_rows = 0;
  for (size_t ri = 0; ri < n_runs; ri++) {
    const char *wl = net_workload(&runs[ri]);
    if (wl && isfinite(fwd(&runs[ri], &net_models[NM_PUBLIC], wl, net_size(&runs[ri], wl), "time_mean")))
      public_rows = 1;
  }
  const size_t nrows = public_rows ? NM_PUBLIC + 1 : NM_EQ_MEMORY + 1;
  char cell[64];
  for (size_t mi = 0; mi < nrows; mi++) {
    if (mi <= NM_EQ_MEMORY)
      snprintf(cell, sizeof cell, "%s, %s, %.0f ms", paper_rows[mi].params, paper_rows[mi].mem, paper_rows[mi].ms_a100);
    config_row(f, runs, n_runs, &net_models[mi], mi != NM_PTV3, mi <= NM_EQ_MEMORY ? cell : "-");
  }
  static const char *const paper_ratio[2] = {"2.4x less memory, 2.25x faster",
                                             "the same memory (the budget), 1.88x faster with 2.8x the parameters"};
  for (size_t mi = NM_EQ_PARAMS; mi <= NM_EQ_MEMORY; mi++)
    ratio_row(f, runs, n_runs, &net_models[NM_PTV3], "PTv3", &net_models[mi], paper_ratio[mi - NM_EQ_PARAMS]);
  int scope_rows = 0; /* PTv3 at the paper's scope: its row and ratios under the paper's three */
  for (size_t ri = 0; ri < n_runs; ri++) {
    const char *wl = net_workload(&runs[ri]);
    if (wl && isfinite(fwd(&runs[ri], &net_models[NM_SCOPE4096], wl, net_size(&runs[ri], wl), "time_mean")))
      scope_rows = 1;
  }
  if (scope_rows) {
    config_row(f, runs, n_runs, &net_models[NM_SCOPE4096], 1, "PTv3's row above: its scopes are 4096");
    for (size_t mi = NM_EQ_PARAMS; mi <= NM_EQ_MEMORY; mi++)
      ratio_row(f, runs, n_runs, &net_models[NM_SCOPE4096], "PTv3-patch4096", &net_models[mi],
                paper_ratio[mi - NM_EQ_PARAMS]);
  }
  fputs("\nThe paper's numbers: its Table 2 on an A100 (nuScenes scenes, whose point count it does not state; attention "
        "scopes of 4096): PTv3 45 ms and 1.2G; Flash3D at equal parameters 20 ms and 0.5G (45 / 20 = 2.25x faster, "
        "1.2 / 0.5 = 2.4x less memory); Flash3D-129.4M within the same 1.2G 24 ms (45 / 24 = 1.88x faster, with 2.8x "
        "the parameters). Its H100 appendix table: 30.2, 13.4 and 15.1 ms (2.25x and 2.00x), the same memory. The "
        "runs above time clouds of their own workload (named in each line above) at the stated size, not nuScenes "
        "scenes.",
        f);
  if (scope_rows)
    fputs(" Table 2 fixes every model's attention scope at 4096, so its PTv3 row is, like for like, PTv3-m1-patch4096 "
          "(the same network and weights over patches of 4096); PTv3-m1 is Pointcept's nuScenes configuration, "
          "patches of 1024.",
          f);
  fputs("\n\n", f);
  for (size_t ri = 0; ri < n_runs; ri++) { /* cudaMemGetInfo beside the arena (mem_used rows, where recorded) */
    const char *wl = net_workload(&runs[ri]);
    if (!wl) continue;
    const uint64_t n = net_size(&runs[ri], wl);
    int any = 0;
    for (size_t mi = 0; mi < nrows; mi++) {
      const double u = fwd(&runs[ri], &net_models[mi], wl, n, "mem_used");
      if (!isfinite(u)) continue;
      fprintf(f, "%s %s %.0f MiB", any ? "," : "Device memory in use by cudaMemGetInfo after the forward, beyond the "
              "sweep's start (the arena's cache of earlier cases and the CUDA libraries' workspaces included; the "
              "arena's peak above is the forward's own):", net_models[mi].display, u / 1048576.0);
      any = 1;
    }
    if (any) fprintf(f, "%s%s.\n\n", n_runs > 1 ? " on " : "", n_runs > 1 ? short_dev(labels[ri]) : "");
  }
  nets_memory(f, runs, n_runs, nrows);
  nets_targets(f, runs, n_runs, labels);
}

/* A configuration's eager forwards of batch 1 on wl as (points, time_mean) pairs, in the order recorded, and the
 * least and most points among them (*lo, *hi; 0 when there are none). */
static size_t fit_points(const hx_run *r, const net_model *m, const char *wl, double *x, double *y, size_t cap,
                         double *lo, double *hi) {
  size_t k = 0;
  *lo = *hi = 0.0;
  for (size_t i = 0; i < r->n_rows && k < cap; i++) {
    const hx_run_row *w = &r->rows[i];
    if (is_fwd_time(w, m, wl)) {
      x[k] = (double)w->n_points, y[k] = w->value;
      *lo = k ? fmin(*lo, x[k]) : x[k], *hi = k ? fmax(*hi, x[k]) : x[k];
      k++;
    }
  }
  return k;
}

/* Where a configuration's line bends, over its forwards' sizes x (y their time_mean, k of them): *rw the R^2 of its
 * attention's work (attn_flops of its attn component: the FLOPs of the real query-key pairs, which the layout
 * decides), *rr the R^2 of y less the attention's time_mean, and the attention's least and most rate (attn_flops /
 * its time_mean, TFLOP/s). 0 when a size lacks those rows or a fit fails. */
static int line_bend(const hx_run *r, const net_model *m, const char *wl, const double *x, const double *y, size_t k,
                     double *rw, double *rr, double *rmin, double *rmax) {
  double w[256], rest[256], b, a;
  if (k < 3 || k > 256) return 0;
  *rmin = INFINITY, *rmax = 0.0;
  for (size_t i = 0; i < k; i++) {
    const double fl = nrow(r, m->pipeline, "attn", m->variant, wl, (uint64_t)x[i], "attn_flops");
    const double ms = nrow(r, m->pipeline, "attn", m->variant, wl, (uint64_t)x[i], "time_mean");
    if (!(isfinite(fl) && fl > 0.0 && isfinite(ms) && ms > 0.0)) return 0;
    w[i] = fl, rest[i] = y[i] - ms;
    *rmin = fmin(*rmin, fl / ms * 1e-9), *rmax = fmax(*rmax, fl / ms * 1e-9); /* FLOP per ms -> TFLOP/s */
  }
  return hx_plot_linear_fit(x, w, k, &b, &a, rw) == HX_OK && hx_plot_linear_fit(x, rest, k, &b, &a, rr) == HX_OK;
}

/* Under the linearity table: line_bend's numbers per configuration, and a sentence for each whose attention's work
 * alone bends (its R^2 under the target beside a linear rest): the layout then gives the attention a work per point
 * that moves with the size, which no kernel would straighten. */
static void nets_bends(FILE *f, const hx_run *runs, size_t n_runs, const char *const *labels) {
  int head = 0;
  char said[1024] = "";
  size_t sl = 0;
  for (size_t ri = 0; ri < n_runs; ri++) {
    const hx_run *r = &runs[ri];
    const char *wl = net_workload(r);
    if (!wl) continue;
    for (size_t mi = 0; mi < NM_COUNT; mi++) {
      const net_model *m = &net_models[mi];
      double x[256], y[256], lo, hi, rw, rr, rmin, rmax;
      const size_t k = fit_points(r, m, wl, x, y, 256, &lo, &hi);
      if (!line_bend(r, m, wl, x, y, k, &rw, &rr, &rmin, &rmax)) continue;
      if (!head) {
        fputs("Where each line bends: over the same sizes, the R^2 of the attention's work (its FLOPs over the real "
              "query-key pairs, which the layout decides), of the forward's time less the attention's, and the "
              "attention's rate.\n\n| configuration | device | attention FLOPs: R^2 | forward less attention: R^2 | "
              "attention (TFLOP/s), least to most |\n|---|---|---:|---:|---|\n",
              f);
        head = 1;
      }
      fprintf(f, "| %s | %s | %.4f | %.4f | %.0f-%.0f |\n", m->display, short_dev(labels[ri]), rw, rr, rmin, rmax);
      if (rw < 0.99 && rr >= 0.99 && sl < sizeof said)
        sl += (size_t)snprintf(said + sl, sizeof said - sl,
                               " %s%s%s: its attention's work per point moves with the size (R^2 %.4f), while the "
                               "rest of its forward is linear (%.4f) and its attention runs at %.0f-%.0f TFLOP/s, so "
                               "the layout bends its line, not the kernels.",
                               m->display, n_runs > 1 ? " on " : "", n_runs > 1 ? short_dev(labels[ri]) : "", rw, rr,
                               rmin, rmax);
    }
  }
  if (head) fprintf(f, "\n%s%s", said + (said[0] == ' '), said[0] ? "\n\n" : "");
}

/* Under the latency figure: the least-squares line of each configuration's forward time_mean over the sizes, and
 * the linearity target for Flash3D (R^2 >= 0.99 over 100k..600k). */
static void nets_fits(FILE *f, const hx_run *runs, size_t n_runs, const char *const *labels) {
  int head = 0;
  char target[2048] = "", fill[512] = "", fixed[256] = "", windows[256] = "";
  size_t tl = 0;
  for (size_t ri = 0; ri < n_runs; ri++) {
    const hx_run *r = &runs[ri];
    const char *wl = net_workload(r);
    if (!wl) continue;
    for (size_t mi = 0; mi < NM_COUNT; mi++) {
      const net_model *m = &net_models[mi];
      double x[256], y[256], lo, hi, b, a, r2;
      const size_t k = fit_points(r, m, wl, x, y, 256, &lo, &hi);
      if (k == 0) continue;
      if (!head) {
        fputs("Least-squares line of the forward's time_mean over the run's sizes, per configuration (the dashed lines "
              "above).\n\n| configuration | device | sizes | slope (ms per 100k points) | intercept (ms) | R^2 |\n"
              "|---|---|---:|---:|---:|---:|\n",
              f);
        head = 1;
      }
      if (k >= 3 && hx_plot_linear_fit(x, y, k, &b, &a, &r2) == HX_OK) {
        if (fabs(a) < 1e-9 * fabs(b * hi)) a = 0.0; /* rounding of an exact line through 0: no "-0.00" */
        fprintf(f, "| %s | %s | %zu (%.0fk to %.0fk) | %.3f | %.2f | %.4f |\n", m->display, short_dev(labels[ri]), k,
                lo / 1e3, hi / 1e3, b * 1e5, a, r2);
        if (!strcmp(m->pipeline, "flash3d-net") && tl < sizeof target)
          tl += (size_t)snprintf(target + tl, sizeof target - tl, "%s%s on %s R^2 %.4f: %s", tl ? "; " : "",
                                 m->display, short_dev(labels[ri]), r2, r2 >= 0.99 ? "met" : "NOT met");
        net_config cfg;
        hx_err cerr;
        const int f3d = !strcmp(m->pipeline, "flash3d-net") && net_config_named(&cfg, m->variant, &cerr) == HX_OK &&
                        cfg.bucket > 0;
        if (f3d && cfg.bucket_fill > 0.0 && !fixed[0])
          snprintf(fixed, sizeof fixed, " %s is the same network with ceil(n / (%d x %.2f)) buckets per cloud at every "
                   "hashed level instead, %.0f%% full at every size: its line is the latency at a fixed fill.",
                   m->display, cfg.bucket, cfg.bucket_fill, 100.0 * cfg.bucket_fill);
        if (f3d && !cfg.rehash && !windows[0])
          snprintf(windows, sizeof windows, " %s is the same network on the public code's layout past level 0: no "
                   "PSH there, fixed windows of %d rows per cloud (`--rehash off`).", m->display, cfg.bucket);
        if (f3d && cfg.rehash && cfg.bucket_fill == 0.0 && !fill[0]) { /* clouds of batch 1: level 0 holds x[i] rows */
          size_t fl = (size_t)snprintf(fill, sizeof fill, "level 0's buckets (the next power of two of n / %d per "
                                       "cloud, the public code's rule) are", cfg.bucket);
          for (size_t i = 0; i < k && fl < sizeof fill; i++) {
            const double cap = (double)net_f3d_buckets((size_t)x[i], (uint32_t)cfg.bucket, 0.0) * cfg.bucket;
            fl += (size_t)snprintf(fill + fl, sizeof fill - fl, "%s %.0f%% full at %.0fk", i ? "," : "",
                                   100.0 * x[i] / cap, x[i] / 1e3);
          }
        }
      } else {
        fprintf(f, "| %s | %s | %zu | - | - | - (fewer than 3 sizes) |\n", m->display, short_dev(labels[ri]), k);
      }
    }
  }
  if (!head) return;
  if (tl)
    fprintf(f,
            "\nTarget: Flash3D's latency grows linearly with points, R^2 >= 0.99 over 100k to 600k: %s.%s%s%s%s%s\n\n",
            target, fill[0] ? " Its attention per point follows the fill of its buckets, and " : "", fill,
            fill[0] ? " (docs/nets.md)." : "", fixed, windows);
  else
    fputs("\nTarget: Flash3D's latency grows linearly with points (R^2 >= 0.99): no Flash3D configuration was timed "
          "at 3 sizes or more.\n\n",
          f);
  nets_bends(f, runs, n_runs, labels);
}

/* The components of a configuration at n in the order the run recorded them (time_median rows). */
static size_t net_components(const hx_run *r, const char *pipeline, const char *variant, const char *wl, uint64_t n,
                             const char **out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < r->n_rows && k < cap; i++) {
    const hx_run_row *w = &r->rows[i];
    if (w->n_points != n || w->batch != 1 || strcmp(w->metric, "time_median") || strcmp(w->pipeline, pipeline) ||
        strcmp(w->variant, variant) || strcmp(w->workload, wl) || !strcmp(w->kernel, "forward"))
      continue;
    size_t q = 0;
    while (q < k && strcmp(out[q], w->kernel)) q++;
    if (q == k) out[k++] = w->kernel;
  }
  return k;
}

static int has_cost_rows(const hx_run *r, const char *wl, uint64_t n) {
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (is_net(w->pipeline) && w->n_points == n && !strcmp(w->workload, wl) &&
        (!strcmp(w->metric, "gemm_flops") || !strcmp(w->metric, "attn_flops") || !strcmp(w->metric, "floor_bytes")))
      return 1;
  }
  return 0;
}

/* The floor of one kernel's cost rows (ms): the most of GEMM FLOPs at the cuBLAS rate, attention FLOPs at the
 * attention kernel's rate and bytes at the copy bandwidth; NAN when it has none of them. *bound names the term. */
static double floor_ms(double gemm, double attn, double bytes, double gemm_tflops, double attn_tflops, double copy_gbs,
                       const char **bound) {
  const double t[3] = {gemm / (gemm_tflops * 1e9), attn / (attn_tflops * 1e9), bytes / (copy_gbs * 1e6)};
  static const char *const names[3] = {"GEMM", "attention", "memory"};
  double best = NAN;
  *bound = "";
  for (int i = 0; i < 3; i++)
    if (isfinite(t[i]) && t[i] >= 0.0 && !(t[i] <= best)) best = t[i], *bound = names[i];
  return best;
}

/* The rates a configuration's floors take: the run's cuBLAS ceiling in its dtype and its copy ceiling (NAN without
 * them) and its network's attention kernel's best rate (attn_rate). */
typedef struct net_rates {
  const char *gemm_s, *copy_s; /* the context values as written; NULL when absent */
  double gemm, attn, copy;
  uint64_t attn_at;
  const char *attn_kernel, *attn_variant;
} net_rates;

static net_rates rates_of(const hx_run *r, const net_model *m, const char *wl, uint64_t n) {
  char gk[64];
  net_rates q = {hx_run_context(r, hx_run_gemm_ceiling_key(r, gk, sizeof gk)), hx_run_context(r, "ceiling_copy_gbs"),
                 NAN, NAN, NAN, 0, "", ""};
  q.gemm = q.gemm_s ? strtod(q.gemm_s, NULL) : (double)NAN;
  q.copy = q.copy_s ? strtod(q.copy_s, NULL) : (double)NAN;
  q.attn = attn_rate(r, m, wl, n, &q.attn_at, &q.attn_kernel, &q.attn_variant);
  return q;
}

/* Whether the run's cost rows carry the floors summed operation by operation (floor_gemm_ms, floor_mem_ms). */
static int has_op_floors(const hx_run *r, const net_model *m, const char *wl, uint64_t n) {
  return isfinite(fwd(r, m, wl, n, "floor_gemm_ms")) && isfinite(fwd(r, m, wl, n, "floor_mem_ms"));
}

/* One component's median (*t) and floor (ms; NAN without cost rows), *bound naming the floor's largest term. With the
 * rows of net_costs.c's per-operation floors: the operations bound by GEMM and by memory (each the more of its GEMM
 * time and its memory time, at the run's ceilings) plus the attention operations at the more of their FLOPs at the
 * attention rate and their bytes at the copy bandwidth. Without them (a run before those rows): the most of the
 * component's summed GEMM, attention and memory times, which can hide an operation bound by memory under another bound
 * by GEMM, so a lower floor. */
static double comp_floor(const hx_run *r, const net_model *m, const char *comp, const char *wl, uint64_t n,
                         const net_rates *q, double *t, const char **bound) {
  *t = nrow(r, m->pipeline, comp, m->variant, wl, n, "time_median");
  const double og = nrow(r, m->pipeline, comp, m->variant, wl, n, "floor_gemm_ms");
  const double om = nrow(r, m->pipeline, comp, m->variant, wl, n, "floor_mem_ms");
  if (isfinite(og) && isfinite(om)) {
    const double af = nrow(r, m->pipeline, comp, m->variant, wl, n, "attn_flops");
    const double ab = nrow(r, m->pipeline, comp, m->variant, wl, n, "attn_bytes");
    double ta = 0.0;
    const char *ta_name = "attention";
    if (af > 0.0 || ab > 0.0) { /* the more of FLOPs and bytes (no GEMM term); without an attention rate, the bytes */
      ta = floor_ms(0.0, af, ab, NAN, q->attn, q->copy, &ta_name);
      if (!isfinite(ta)) return NAN;
    }
    const double part[3] = {og, om, ta};
    const char *const names[3] = {"GEMM", "memory", ta_name};
    int big = 0;
    for (int i = 1; i < 3; i++)
      if (part[i] > part[big]) big = i;
    *bound = names[big];
    return og + om + ta;
  }
  return floor_ms(nrow(r, m->pipeline, comp, m->variant, wl, n, "gemm_flops"),
                  nrow(r, m->pipeline, comp, m->variant, wl, n, "attn_flops"),
                  nrow(r, m->pipeline, comp, m->variant, wl, n, "floor_bytes"), q->gemm, q->attn, q->copy, bound);
}

/* A ratio against a target's limit, to two decimals, or to as many more (up to six) as it takes not to read as the
 * limit itself unless it is the limit: 1.4996 and 1.5003 both print 1.50 in two, one met and one not. */
static const char *ratio_text(char *buf, size_t cap, double ratio, double limit) {
  char lim[32];
  for (int d = 2; d <= 6; d++) {
    snprintf(buf, cap, "%.*f", d, ratio);
    snprintf(lim, sizeof lim, "%.*f", d, limit);
    if (strcmp(buf, lim) != 0 || ratio == limit) break;
  }
  return buf;
}

/* How far the forward lies from the limit in ms, "0.16 ms under" or "0.02 ms over", with as many decimals (2 to 4)
 * as it takes not to read as zero: the margin a regression may eat before the target reads the other way. */
static const char *margin_text(char *buf, size_t cap, double fw, double limit_ms) {
  const double d = fabs(fw - limit_ms);
  int k = 2;
  while (k < 4 && d > 0.0 && d < 0.5 * pow(10.0, -k)) k++;
  snprintf(buf, cap, "%.*f ms %s", k, d, fw <= limit_ms ? "under" : "over");
  return buf;
}

/* Whether the 1.5x limit on forward / floors lies within the forward's median +- std (sd <= 0 or not finite: no),
 * and the ratio's range over that spread into lo, hi. */
static int within_spread(double fw, double sd, double floors, double limit, double *lo, double *hi) {
  *lo = (fw - sd) / floors, *hi = (fw + sd) / floors;
  return isfinite(sd) && sd > 0.0 && fabs(fw - limit * floors) <= sd;
}

/* A configuration's components against their floors at n: the sums (components without a floor add to sum_m
 * only), the time by which components exceed their floors (over) and the component that exceeds its floor most. */
typedef struct net_floor_sum {
  double sum_m, sum_f, over, gap, gap_m, gap_f;
  const char *gap_c, *gap_b; /* gap_c NULL when no component exceeds its floor */
} net_floor_sum;

static net_floor_sum floor_sum(const hx_run *r, const net_model *m, const char *wl, uint64_t n, const net_rates *q) {
  const char *comps[32];
  const size_t nc = net_components(r, m->pipeline, m->variant, wl, n, comps, 32);
  net_floor_sum s = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, NULL, ""};
  for (size_t i = 0; i < nc; i++) {
    double t;
    const char *bound;
    const double fl = comp_floor(r, m, comps[i], wl, n, q, &t, &bound);
    s.sum_m += isfinite(t) ? t : 0.0;
    if (!(isfinite(fl) && fl > 0.0)) continue;
    s.sum_f += fl;
    if (t - fl > s.gap) s.gap = t - fl, s.gap_c = comps[i], s.gap_m = t, s.gap_f = fl, s.gap_b = bound;
    if (t > fl) s.over += t - fl;
  }
  return s;
}

/* One configuration's floor table at n (the run has cost rows). */
static void floor_table(FILE *f, const hx_run *r, const char *label, const net_model *m, const char *wl, uint64_t n) {
  const char *comps[32];
  const size_t nc = net_components(r, m->pipeline, m->variant, wl, n, comps, 32);
  const double fw = fwd(r, m, wl, n, "time_median");
  if (nc == 0 && !isfinite(fw)) return;
  const net_rates q = rates_of(r, m, wl, n);
  fprintf(f, "**%s** (`%s`), %s, %llu points: floors at cuBLAS %s %s TFLOP/s, attention %.1f TFLOP/s", m->display,
          m->variant, label, (unsigned long long)n, hx_run_dtype(r), q.gemm_s ? q.gemm_s : "(no ceiling in the run)",
          q.attn);
  if (isfinite(q.attn))
    fprintf(f, " (`%s` %s at %llu points%s)", q.attn_kernel, q.attn_variant, (unsigned long long)q.attn_at,
            q.attn_at == n ? "" : ", the best in the run");
  fprintf(f, ", copy %s GB/s.\n\n", q.copy_s ? q.copy_s : "(no ceiling in the run)");
  fputs("| component | measured median (ms) | GEMM (GFLOP) | attention (GFLOP) | bytes (MB) | floor (ms) | bound by | "
        "measured / floor |\n|---|---:|---:|---:|---:|---:|---|---:|\n",
        f);
  double below_x[32];
  const char *no_cost[32], *below[32];
  size_t nn = 0, nb = 0;
  for (size_t i = 0; i < nc; i++) {
    double t;
    const char *bound;
    const double fl = comp_floor(r, m, comps[i], wl, n, &q, &t, &bound);
    fprintf(f, "| %s | %.3f |", comps[i], t);
    const double v[3] = {nrow(r, m->pipeline, comps[i], m->variant, wl, n, "gemm_flops") / 1e9,
                         nrow(r, m->pipeline, comps[i], m->variant, wl, n, "attn_flops") / 1e9,
                         nrow(r, m->pipeline, comps[i], m->variant, wl, n, "floor_bytes") / 1e6};
    for (int k = 0; k < 3; k++)
      if (isfinite(v[k])) fprintf(f, " %.4g |", v[k]);
      else fputs(" - |", f);
    if (isfinite(fl) && fl > 0.0) {
      fprintf(f, " %.3f | %s | %.2fx |\n", fl, bound, t / fl);
      if (t < fl) below_x[nb] = t / fl, below[nb++] = comps[i];
    } else {
      fputs(" - | - | - |\n", f);
      no_cost[nn++] = comps[i];
    }
  }
  const net_floor_sum s = floor_sum(r, m, wl, n, &q);
  if (s.sum_f > 0.0)
    fprintf(f, "| sum of components | %.3f | | | | %.3f | | %.2fx |\n", s.sum_m, s.sum_f, s.sum_m / s.sum_f);
  else
    fprintf(f, "| sum of components | %.3f | | | | - | | - |\n", s.sum_m);
  char rt[32];
  if (isfinite(fw) && s.sum_f > 0.0)
    fprintf(f, "| **whole forward** (eager, median) | %.3f | | | | %.3f | | **%sx** |\n", fw, s.sum_f,
            ratio_text(rt, sizeof rt, fw / s.sum_f, 1.5));
  else if (isfinite(fw))
    fprintf(f, "| **whole forward** (eager, median) | %.3f | | | | - | | - |\n", fw);
  const char *bound;
  const double ff = floor_ms(fwd(r, m, wl, n, "gemm_flops"), fwd(r, m, wl, n, "attn_flops"),
                             fwd(r, m, wl, n, "floor_bytes"), q.gemm, q.attn, q.copy, &bound);
  if (isfinite(ff) && ff > 0.0 && isfinite(fw))
    fprintf(f, "| whole forward against its own cost rows | %.3f | %.3g | %.3g | %.3g | %.3f | %s | %.2fx |\n", fw,
            fwd(r, m, wl, n, "gemm_flops") / 1e9, fwd(r, m, wl, n, "attn_flops") / 1e9,
            fwd(r, m, wl, n, "floor_bytes") / 1e6, ff, bound, fw / ff);
  fputc('\n', f);
  if (isfinite(fw) && s.sum_f > 0.0) {
    char mt[48];
    fprintf(f, "Target: the whole forward within 1.5x of the sum of its components' floors: %sx, %s (%s the limit of "
               "%.2f ms).",
            ratio_text(rt, sizeof rt, fw / s.sum_f, 1.5), fw / s.sum_f <= 1.5 ? "met" : "NOT met",
            margin_text(mt, sizeof mt, fw, 1.5 * s.sum_f), 1.5 * s.sum_f);
    double lo, hi;
    if (within_spread(fw, fwd(r, m, wl, n, "time_std"), s.sum_f, 1.5, &lo, &hi))
      fprintf(f, " The limit lies within the forward's median +- std (%.4f-%.4fx): another run can read the other way.",
              lo, hi);
  }
  if (s.gap_c)
    fprintf(f, " Largest gap: `%s`, %.3f ms measured against a %.3f ms floor (%s-bound), %.3f of the %.3f ms by "
               "which components exceed their floors.",
            s.gap_c, s.gap_m, s.gap_f, s.gap_b, s.gap, s.over);
  if (nb) { /* a floor's rate is a ceiling measured on other shapes (the sweep's stages), not a bound on every shape */
    fputs(" Faster than its floor's rate allows (that rate is measured on the sweep's own shapes):", f);
    for (size_t i = 0; i < nb; i++) fprintf(f, "%s `%s` %.2fx", i ? "," : "", below[i], below_x[i]);
    fputc('.', f);
  }
  if (nn) {
    fputs(" Without cost rows (no floor, left out of the sum):", f);
    for (size_t i = 0; i < nn; i++) fprintf(f, "%s `%s`", i ? "," : "", no_cost[i]);
    fputc('.', f);
  }
  if (!isfinite(q.attn)) fputs(" The run has no attention rows to take a rate from: attention FLOPs have no floor.", f);
  fputs("\n\n", f);
}

/* The measured components of every configuration side by side (a run without cost rows). */
static void measured_table(FILE *f, const hx_run *r, const char *wl, uint64_t n) {
  const net_model *ms[NM_COUNT];
  size_t nm = 0;
  const char *comps[48];
  size_t nc = 0;
  for (size_t mi = 0; mi < NM_COUNT; mi++) {
    const char *c[32];
    const size_t k = net_components(r, net_models[mi].pipeline, net_models[mi].variant, wl, n, c, 32);
    if (k == 0) continue;
    ms[nm++] = &net_models[mi];
    for (size_t i = 0; i < k; i++) {
      size_t q = 0;
      while (q < nc && strcmp(comps[q], c[i])) q++;
      if (q == nc && nc < 48) comps[nc++] = c[i];
    }
  }
  if (nm == 0) {
    fputs("No component rows at this size.\n\n", f);
    return;
  }
  double sum[NM_COUNT] = {0};
  for (size_t j = 0; j < nm; j++)
    for (size_t i = 0; i < nc; i++) {
      const double t = nrow(r, ms[j]->pipeline, comps[i], ms[j]->variant, wl, n, "time_median");
      if (isfinite(t)) sum[j] += t;
    }
  fputs("| component |", f);
  for (size_t j = 0; j < nm; j++) fprintf(f, " %s (ms) | share |", ms[j]->display);
  fputs("\n|---|", f);
  for (size_t j = 0; j < nm; j++) fputs("---:|---:|", f);
  fputc('\n', f);
  for (size_t i = 0; i < nc; i++) {
    fprintf(f, "| %s |", comps[i]);
    for (size_t j = 0; j < nm; j++) {
      const double t = nrow(r, ms[j]->pipeline, comps[i], ms[j]->variant, wl, n, "time_median");
      if (isfinite(t) && sum[j] > 0.0) fprintf(f, " %.3f | %.1f%% |", t, 100.0 * t / sum[j]);
      else fputs(" - | - |", f);
    }
    fputc('\n', f);
  }
  fputs("| sum of components |", f);
  for (size_t j = 0; j < nm; j++) fprintf(f, " %.3f | |", sum[j]);
  fputs("\n| whole forward (eager, median) |", f);
  for (size_t j = 0; j < nm; j++) {
    const double t = fwd(r, ms[j], wl, n, "time_median");
    if (isfinite(t)) fprintf(f, " %.3f | |", t);
    else fputs(" - | |", f);
  }
  fputs("\n\n", f);
}

/* A configuration's components by part of the network at n (pipe_net.c's "part:<part>" rows: the stem, each
 * encoder and decoder level, the head), parts as rows in the order recorded, components as columns; nothing when
 * the run has no such rows. */
static void part_table(FILE *f, const hx_run *r, const net_model *m, const char *wl, uint64_t n) {
  const char *part[32], *comp[32];
  size_t np = 0;
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (w->n_points != n || w->batch != 1 || strncmp(w->metric, "part:", 5) || strcmp(w->pipeline, m->pipeline) ||
        strcmp(w->variant, m->variant) || strcmp(w->workload, wl))
      continue;
    size_t q = 0;
    while (q < np && strcmp(part[q], w->metric + 5)) q++;
    if (q == np && np < 32) part[np++] = w->metric + 5;
  }
  if (!np) return;
  const size_t nc = net_components(r, m->pipeline, m->variant, wl, n, comp, 32); /* the columns: the components */
  fprintf(f, "**%s** (`%s`) by part of the network at %llu points (ms, median over the breakdown forwards): where "
             "each component's time goes, level by level.\n\n| part |",
          m->display, m->variant, (unsigned long long)n);
  for (size_t k = 0; k < nc; k++) fprintf(f, " %s |", comp[k]);
  fputs(" sum |\n|---|", f);
  for (size_t k = 0; k <= nc; k++) fputs("---:|", f);
  fputc('\n', f);
  for (size_t q = 0; q < np; q++) {
    char metric[48];
    snprintf(metric, sizeof metric, "part:%s", part[q]);
    double sum = 0.0;
    fprintf(f, "| %s |", part[q]);
    for (size_t k = 0; k < nc; k++) {
      const double v = nrow(r, m->pipeline, comp[k], m->variant, wl, n, metric);
      if (isfinite(v)) fprintf(f, " %.3f |", v), sum += v;
      else fputs(" |", f);
    }
    fprintf(f, " %.3f |\n", sum);
  }
  fputc('\n', f);
}

/* Under the breakdown figure: per run, at its comparison size, each configuration's components against their
 * floors (the sweep's cost rows and the run's measured ceilings), or the measured components only with the reason
 * the floors are missing. */
static void nets_floors(FILE *f, const hx_run *runs, size_t n_runs, const char *const *labels) {
  for (size_t ri = 0; ri < n_runs; ri++) {
    const hx_run *r = &runs[ri];
    const char *wl = net_workload(r);
    if (!wl) continue;
    const uint64_t n = net_size(r, wl);
    if (n_runs > 1) fprintf(f, "#### %s\n\n", labels[ri]);
    if (!has_cost_rows(r, wl, n)) {
      fprintf(f, "Components at %llu points (median over the breakdown forwards, ms, and share of their sum). No cost "
                 "rows in this run (gemm_flops, attn_flops, floor_bytes per component; the sweep that wrote it did not "
                 "record them), so the floors and the target (the whole forward within 1.5x of the sum of its "
                 "components' floors) cannot be computed here.\n\n",
              (unsigned long long)n);
      measured_table(f, r, wl, n);
      for (size_t mi = 0; mi < NM_COUNT; mi++) part_table(f, r, &net_models[mi], wl, n);
      continue;
    }
    int op = 0;
    for (size_t mi = 0; mi < NM_COUNT && !op; mi++) op = has_op_floors(r, &net_models[mi], wl, n);
    if (op)
      fputs("Each component's floor sums its operations' floors, each the more of its GEMM FLOPs at the run's cuBLAS "
            "rate in its dtype and its bytes at the measured copy bandwidth (an attention operation: the more of its "
            "FLOPs at the attention kernel's rate measured in the same run and its bytes): the operations run as "
            "separate kernels, so one bound by memory is not hidden under another bound by GEMM. \"bound by\" names "
            "the largest part.\n\n",
            f);
    else
      fputs("Each component's floor is the most of its GEMM FLOPs at the run's cuBLAS rate in its dtype, its attention "
            "FLOPs at the attention kernel's rate measured in the same run and its bytes at the measured copy bandwidth. "
            "This run's cost rows predate the floors summed operation by operation, which later runs record: "
            "summed over a component, an operation bound by memory can hide under another bound by GEMM, so these "
            "floors are lower.\n\n",
            f);
    for (size_t mi = 0; mi < NM_COUNT; mi++) floor_table(f, r, labels[ri], &net_models[mi], wl, n);
    for (size_t mi = 0; mi < NM_COUNT; mi++) part_table(f, r, &net_models[mi], wl, n);
  }
}

/* Under the DRAM figure: per run, at its comparison size, each configuration's counters per component (pipe_net.c's
 * component counter pass: one forward, its hook ranges flattened into user ranges, each component's ranges summed)
 * beside the whole forward's own counter pass. Nothing for a run without component counters. */
static void nets_counters(FILE *f, const hx_run *runs, size_t n_runs, const char *const *labels) {
  int head = 0;
  for (size_t ri = 0; ri < n_runs; ri++) {
    const hx_run *r = &runs[ri];
    const char *wl = net_workload(r);
    if (!wl) continue;
    const uint64_t n = net_size(r, wl);
    for (size_t mi = 0; mi < NM_COUNT; mi++) {
      const net_model *m = &net_models[mi];
      const char *comps[48];
      size_t nc = net_components(r, m->pipeline, m->variant, wl, n, comps, 40);
      for (size_t i = 0; i < r->n_rows && nc < 48; i++) { /* components timed by counters only ("other") */
        const hx_run_row *w = &r->rows[i];
        if (w->n_points != n || w->batch != 1 || strcmp(w->metric, "gpu_time") || strcmp(w->pipeline, m->pipeline) ||
            strcmp(w->variant, m->variant) || strcmp(w->workload, wl) || !strcmp(w->kernel, "forward"))
          continue;
        size_t q = 0;
        while (q < nc && strcmp(comps[q], w->kernel)) q++;
        if (q == nc) comps[nc++] = w->kernel;
      }
      double sum = 0.0;
      for (size_t i = 0; i < nc; i++) {
        const double t = nrow(r, m->pipeline, comps[i], m->variant, wl, n, "gpu_time");
        if (isfinite(t)) sum += t;
      }
      if (!(sum > 0.0)) continue;
      if (!head) {
        fputs("### Counters per component\n\nOne more forward of each configuration under the CUPTI range profiler, its "
              "levels, blocks and components flattened into one level of ranges so that one replay pass gives each "
              "kernel to one component; a component's ranges summed (shares and rates weighted by each range's GPU "
              "time). Share = the component's GPU time over the sum in that pass; `other` = work of a level or block "
              "outside its components. The whole forward is its own counter pass, one range.\n\n",
              f);
        head = 1;
      }
      fprintf(f, "**%s** (`%s`), %s, %llu points:\n\n| component | GPU time (ms) | share | SM active (%%) | TensorCore "
                 "active (%%) | DRAM read (GB/s) |\n|---|---:|---:|---:|---:|---:|\n",
              m->display, m->variant, short_dev(labels[ri]), (unsigned long long)n);
      for (size_t i = 0; i < nc; i++) {
        const double t = nrow(r, m->pipeline, comps[i], m->variant, wl, n, "gpu_time");
        if (!isfinite(t)) continue;
        const double v[3] = {nrow(r, m->pipeline, comps[i], m->variant, wl, n, "sm_active"),
                             nrow(r, m->pipeline, comps[i], m->variant, wl, n, "tensor_active"),
                             nrow(r, m->pipeline, comps[i], m->variant, wl, n, "dram_read_bw") / 1e9};
        fprintf(f, "| %s | %.3f | %.1f%% |", comps[i], t / 1e6, 100.0 * t / sum);
        for (int q = 0; q < 3; q++)
          if (isfinite(v[q])) fprintf(f, q < 2 ? " %.1f |" : " %.0f |", v[q]);
          else fputs(" - |", f);
        fputc('\n', f);
      }
      fprintf(f, "| sum of components | %.3f | 100%% | | | |\n", sum / 1e6);
      const double w[4] = {fwd(r, m, wl, n, "gpu_time") / 1e6, fwd(r, m, wl, n, "sm_active"),
                           fwd(r, m, wl, n, "tensor_active"), fwd(r, m, wl, n, "dram_read_bw") / 1e9};
      fputs("| **whole forward** (one range) |", f);
      for (int q = 0; q < 4; q++) {
        if (q == 1) fputs(" |", f); /* no share */
        if (isfinite(w[q])) fprintf(f, q == 0 ? " %.3f |" : q < 3 ? " %.1f |" : " %.0f |", w[q]);
        else fputs(" - |", f);
      }
      fputs("\n\n", f);
    }
  }
}

/* The workload of the first sparse convolution rows timed alone (pipe_spconv.c: kernels "spconv.*" of ptv3-net)
 * and their largest size *n; NULL when the run has none. */
static const char *spconv_case(const hx_run *r, uint64_t *n) {
  const char *wl = NULL;
  *n = 0;
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (strcmp(w->pipeline, "ptv3-net") || strncmp(w->kernel, "spconv.", 7) || strcmp(w->metric, "check") ||
        w->batch != 1 || (wl && strcmp(w->workload, wl)))
      continue;
    wl = w->workload;
    if (w->n_points > *n) *n = w->n_points;
  }
  return wl;
}

/* Under the treemap: PTv3's k = 3 sparse convolution timed alone (pipe_spconv.c, kernels "spconv.k3_C<C>" of ptv3-net
 * at the run's largest size) against its roofline: the most of its real pairs' FLOPs at the run's cuBLAS ceiling in its
 * dtype and the bytes a fused kernel must move (each input row once per tile, each output row once, the map, the
 * weights) at the copy ceiling; the target for v1 is >= 50% of it at C >= 64 and 600k points. */
static void spconv_alone(FILE *f, const hx_run *runs, size_t n_runs, const char *const *labels) {
  int head = 0;
  for (size_t ri = 0; ri < n_runs; ri++) {
    const hx_run *r = &runs[ri];
    uint64_t n;
    const char *wl = spconv_case(r, &n);
    if (!wl) continue;
    if (!head) {
      fputs("### Sparse convolution alone\n\nPTv3's k = 3 submanifold convolution (xCPE's) timed on its own on the "
            "case's level-0 map at the run's largest size, in = out = C, in the run's dtype, checked first on 2048 "
            "sampled rows against the CPU reference. Roofline = the most of 2 x pairs x C^2 FLOPs at the run's cuBLAS "
            "ceiling in that dtype "
            "and, at its copy ceiling, the bytes a fused kernel must move: each input row once per output tile of v1 "
            "(256 rows; 128 on maps under 16384 rows or where 256 do not fit the device) it is a neighbour of, each "
            "output row once, the map (27 x 4 B a "
            "row) and the weights. Target "
            "(issue #36, for v1): at least 50% of the roofline at C >= 64 and 600k points.\n\n",
            f);
      head = 1;
    }
    char gk[64];
    const char *g = hx_run_context(r, hx_run_gemm_ceiling_key(r, gk, sizeof gk));
    const char *c = hx_run_context(r, "ceiling_copy_gbs");
    const double gemm = g ? strtod(g, NULL) : (double)NAN, copy = c ? strtod(c, NULL) : (double)NAN;
    if (n_runs > 1) fprintf(f, "**%s**, ", short_dev(labels[ri]));
    fprintf(f, "%llu points, %s, ceilings: cuBLAS %s %s TFLOP/s, copy %s GB/s.\n\n| kernel | variant | median (ms) | "
               "TFLOP/s | GB/s | roofline (ms) | bound by | share of roofline | target 50%% |\n"
               "|---|---|---:|---:|---:|---:|---|---:|---|\n",
            (unsigned long long)n, hx_run_dtype(r), hx_run_dtype(r), g ? g : "(none in the run)",
            c ? c : "(none in the run)");
    const char *kv[32][2];
    size_t nk = 0;
    for (size_t i = 0; i < r->n_rows && nk < 32; i++) { /* (kernel, variant) in the order recorded */
      const hx_run_row *w = &r->rows[i];
      if (w->n_points != n || w->batch != 1 || strcmp(w->pipeline, "ptv3-net") || strncmp(w->kernel, "spconv.", 7) ||
          strcmp(w->metric, "check") || strcmp(w->workload, wl))
        continue;
      kv[nk][0] = w->kernel, kv[nk][1] = w->variant, nk++;
    }
    for (size_t k = 0; k < nk; k++) {
      const char *kn = kv[k][0], *vn = kv[k][1];
      const int best = nrow(r, "ptv3-net", kn, vn, wl, n, "best_entry") == 1.0;
      fprintf(f, "| %s | %s%s |", kn, vn, best ? " (best)" : "");
      if (nrow(r, "ptv3-net", kn, vn, wl, n, "check") != 1.0) {
        fputs(" failed its check, not timed | | | | | | |\n", f);
        continue;
      }
      const double t = nrow(r, "ptv3-net", kn, vn, wl, n, "time_median");
      const double v[3] = {t, nrow(r, "ptv3-net", kn, vn, wl, n, "tflops"), nrow(r, "ptv3-net", kn, vn, wl, n, "bandwidth")};
      for (int q = 0; q < 3; q++)
        if (isfinite(v[q])) fprintf(f, q == 0 ? " %.4f |" : q == 1 ? " %.1f |" : " %.0f |", v[q]);
        else fputs(" - |", f);
      const double roof = nrow(r, "ptv3-net", kn, vn, wl, n, "roofline_ms");
      const double share = nrow(r, "ptv3-net", kn, vn, wl, n, "roofline_share");
      const double tf = nrow(r, "ptv3-net", kn, vn, wl, n, "flops") / (gemm * 1e9);
      const double tb = nrow(r, "ptv3-net", kn, vn, wl, n, "bytes") / (copy * 1e6);
      if (isfinite(roof)) fprintf(f, " %.4f |", roof);
      else fputs(" - |", f);
      fprintf(f, " %s |", isfinite(tf) && isfinite(tb) ? (tf >= tb ? "FLOPs" : "bytes") : "-");
      if (isfinite(share)) fprintf(f, " %.1f%% | %s |\n", 100.0 * share, share >= 0.5 ? "met" : "**not met**");
      else fputs(" - | - |\n", f);
    }
    const char *k0 = nk ? kv[0][0] : NULL;
    const double pairs = k0 ? nrow(r, "ptv3-net", k0, kv[0][1], wl, n, "pairs") : (double)NAN;
    const double halo = k0 ? nrow(r, "ptv3-net", k0, kv[0][1], wl, n, "halo") : (double)NAN;
    const double tile = k0 ? nrow(r, "ptv3-net", k0, kv[0][1], wl, n, "tile_rows") : (double)NAN;
    fputc('\n', f);
    if (isfinite(pairs) && n > 0)
      fprintf(f, "The map: %.0f real pairs (%.1f a row of 27); tiles of %.0f rows read each input row %.2f times on "
                 "average (1 would be no row shared between tiles).\n\n",
              pairs, pairs / (double)n, tile, halo);
    if (!g || !c)
      fputs("No roofline: the run has no measured ceilings in its context (the sweep measures them with "
            "--timing nvbench or paper, not basic).\n\n",
            f);
  }
}

/* Under the paper's table: the three targets for the backbones, one row per configuration (or kernel) and
 * one column per run, each cell the measured value and whether it meets the target; a row only where some run has
 * its value. */
enum { TG_FLOORS, TG_LINEAR, TG_SPCONV, TG_COUNT };

/* Run r's cell of target t for configuration m (TG_FLOORS, TG_LINEAR) or spconv kernel kn (TG_SPCONV) into buf;
 * 0 when the run has no value for it. */
static int target_cell(char *buf, size_t cap, int t, const hx_run *r, const net_model *m, const char *kn) {
  const char *wl = net_workload(r);
  if (t == TG_FLOORS) {
    if (!wl) return 0;
    const uint64_t n = net_size(r, wl);
    const double fw = fwd(r, m, wl, n, "time_median");
    const net_rates q = rates_of(r, m, wl, n);
    /* without one of the three rates a floor drops its term and is too low (floor_table says so): no verdict */
    if (!isfinite(q.gemm) || !isfinite(q.attn) || !isfinite(q.copy)) return 0;
    const net_floor_sum s = floor_sum(r, m, wl, n, &q);
    if (!isfinite(fw) || !(s.sum_f > 0.0)) return 0;
    char rt[32];
    double lo, hi;
    const int close = within_spread(fw, fwd(r, m, wl, n, "time_std"), s.sum_f, 1.5, &lo, &hi);
    char mt[48];
    int w = snprintf(buf, cap, "%sx at %.0fk: %s, %s the limit of %.2f ms%s", ratio_text(rt, sizeof rt, fw / s.sum_f, 1.5),
                     (double)n / 1e3, fw / s.sum_f <= 1.5 ? "met" : "**NOT met**",
                     margin_text(mt, sizeof mt, fw, 1.5 * s.sum_f), 1.5 * s.sum_f,
                     close ? " (1.5x within the forward's +- std)" : "");
    if (s.gap_c && w > 0 && (size_t)w < cap)
      snprintf(buf + w, cap - (size_t)w, "; largest gap `%s`, %.2f ms against a %.2f ms floor", s.gap_c, s.gap_m,
               s.gap_f);
    return 1;
  }
  if (t == TG_LINEAR) {
    double x[256], y[256], lo, hi, b, a, r2;
    const size_t k = wl ? fit_points(r, m, wl, x, y, 256, &lo, &hi) : 0;
    if (k < 3 || hx_plot_linear_fit(x, y, k, &b, &a, &r2) != HX_OK) return 0;
    const int w = snprintf(buf, cap, "%.4f over %zu sizes, %.0fk to %.0fk: %s", r2, k, lo / 1e3, hi / 1e3,
                           r2 >= 0.99 ? "met" : "**NOT met**");
    double rw, rr, rmin, rmax; /* where a missed line bends (the table under the latency figure) */
    if (r2 < 0.99 && w > 0 && (size_t)w < cap && line_bend(r, m, wl, x, y, k, &rw, &rr, &rmin, &rmax))
      snprintf(buf + w, cap - (size_t)w, "; its attention's work R^2 %.4f, the rest of its forward %.4f", rw, rr);
    return 1;
  }
  uint64_t n;
  const char *swl = spconv_case(r, &n);
  if (!swl) return 0;
  const char *bv = NULL;
  double share = NAN;
  for (size_t i = 0; i < r->n_rows; i++) { /* the best entry's share; without one, the best share */
    const hx_run_row *w = &r->rows[i];
    if (w->n_points != n || w->batch != 1 || strcmp(w->pipeline, "ptv3-net") || strcmp(w->kernel, kn) ||
        strcmp(w->workload, swl) || strcmp(w->metric, "roofline_share") ||
        nrow(r, "ptv3-net", kn, w->variant, swl, n, "check") != 1.0)
      continue;
    const int best = nrow(r, "ptv3-net", kn, w->variant, swl, n, "best_entry") == 1.0;
    if (best || !(w->value <= share)) share = w->value, bv = w->variant;
    if (best) break;
  }
  if (!bv) return 0;
  snprintf(buf, cap, "%s %.1f%% at %.0fk: %s", bv, 100.0 * share, (double)n / 1e3,
           share >= 0.5 ? "met" : "**not met**");
  return 1;
}

static void nets_targets(FILE *f, const hx_run *runs, size_t n_runs, const char *const *labels) {
  static const char *const names[TG_COUNT] = {
      "whole forward within 1.5x of the sum of its components' floors (the target: at 600k points)",
      "latency linear in points: R^2 >= 0.99 (the target: over 100k to 600k)",
      "k = 3 sparse convolution alone at >= 50% of its roofline, C >= 64 (the target: at 600k points)"};
  const char *kernels[16]; /* the spconv kernels at C >= 64 of every run, in the order first recorded */
  size_t nk = 0;
  for (size_t ri = 0; ri < n_runs; ri++)
    for (size_t i = 0; i < runs[ri].n_rows && nk < 16; i++) {
      const hx_run_row *w = &runs[ri].rows[i];
      int c = 0;
      if (strcmp(w->pipeline, "ptv3-net") || strcmp(w->metric, "check") ||
          sscanf(w->kernel, "spconv.k3_C%d", &c) != 1 || c < 64)
        continue;
      size_t q = 0;
      while (q < nk && strcmp(kernels[q], w->kernel)) q++;
      if (q == nk) kernels[nk++] = w->kernel;
    }
  int head = 0;
  char cell[256];
  for (int t = 0; t < TG_COUNT; t++) {
    const size_t rows = t == TG_SPCONV ? nk : NM_COUNT;
    int first = 1;
    for (size_t j = 0; j < rows; j++) {
      const net_model *m = t == TG_SPCONV ? NULL : &net_models[j];
      const char *kn = t == TG_SPCONV ? kernels[j] : NULL;
      if (t == TG_LINEAR && strcmp(m->pipeline, "flash3d-net")) continue; /* the target is Flash3D's */
      int any = 0;
      for (size_t ri = 0; ri < n_runs && !any; ri++) any = target_cell(cell, sizeof cell, t, &runs[ri], m, kn);
      if (!any) continue;
      if (!head) {
        fputs("### Targets\n\nThe backbones' targets as each run measured them, at the sizes each cell names (the "
              "sections below give the numbers they come from; docs/nets.md what bounds each and what would close "
              "the gaps). A floor needs the run's ceilings and attention rate: without them a cell is empty.\n\n| "
              "target | configuration |",
              f);
        for (size_t ri = 0; ri < n_runs; ri++) fprintf(f, " %s |", short_dev(labels[ri]));
        fputs("\n|---|---|", f);
        for (size_t ri = 0; ri < n_runs; ri++) fputs("---|", f);
        fputc('\n', f);
        head = 1;
      }
      if (m) fprintf(f, "| %s | %s |", first ? names[t] : "", m->display);
      else fprintf(f, "| %s | `%s` |", first ? names[t] : "", kn);
      first = 0;
      for (size_t ri = 0; ri < n_runs; ri++)
        fprintf(f, " %s |", target_cell(cell, sizeof cell, t, &runs[ri], m, kn) ? cell : "-");
      fputc('\n', f);
    }
  }
  if (head) fputc('\n', f);
}

/* The section's figures: every configuration's eager forward (the graph replay is in the table), the components
 * of each at its largest size. */
static const char *const net_fwd[] = {"ptv3-net/forward/*", "flash3d-net/forward/*"};
static const char *const net_graph[] = {"*.graph"};
static const char *const net_comp[] = {"ptv3-net/*/*", "flash3d-net/*/*"};
static const char *const net_not_comp[] = {"*/forward/*", "ptv3-net/spconv.*/*"}; /* spconv: timed alone */
#define NET_FWD net_fwd, 2, net_graph, 1
static const hx_study_plot net_plots[] = {
    {HX_PLOT_LINES, "net_latency", "Backbone forward latency vs points (mean +- std; dashed: least-squares line)",
     "time (ms)", "ms", "time_mean", NULL, "time_std", 1.0, NET_FWD, "{v}", 1, nets_fits},
    {HX_PLOT_LINES, "net_sm", "Backbones: SM active (solid) and SM issue (dashed) over the forward", "% of peak", "%",
     "sm_active", "sm_issue", NULL, 1.0, NET_FWD, "{v}", 0, NULL},
    {HX_PLOT_LINES, "net_tensor", "Backbones: TensorCore active over the forward", "% of peak", "%", "tensor_active",
     NULL, NULL, 1.0, NET_FWD, "{v}", 0, NULL},
    {HX_PLOT_LINES, "net_dram", "Backbones: DRAM read bandwidth over the forward", "GB/s", "GB/s", "dram_read_bw",
     NULL, NULL, 1e-9, NET_FWD, "{v}", 0, nets_counters},
    {HX_PLOT_LINES, "net_memory", "Backbones: peak device memory of the forward (arena)", "MiB", "MiB", "mem_peak",
     NULL, NULL, 1.0 / 1048576.0, NET_FWD, "{v}", 0, NULL},
    {HX_PLOT_STACKED, "net_stages", "Backbone components at the largest size (median over the breakdown forwards)",
     "time (ms)", "ms", "time_median", NULL, NULL, 1.0, net_comp, 2, net_not_comp, 2, "{v}", 0, nets_floors},
    {HX_PLOT_TREEMAP, "net_treemap", "Backbone components at the largest size (area = time)", "time (ms)", "ms",
     "time_median", NULL, NULL, 1.0, net_comp, 2, net_not_comp, 2, "{v}", 0, spconv_alone},
};

static const hx_study study = {
    "flash3d-bench report",
    pipelines, sizeof pipelines / sizeof *pipelines,
    legends, sizeof legends / sizeof *legends,
    figures, sizeof figures / sizeof *figures,
    tables, sizeof tables / sizeof *tables,
    {"ptv3", "flash3d"},
    "baselines such as the unfused attention v0 included",
    "Backbones: PTv3 vs Flash3D, whole forward passes",
    nets_summary,
    net_plots, sizeof net_plots / sizeof *net_plots,
};

const hx_study *f3d_study(void) { return &study; }
