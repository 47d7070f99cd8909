/*
 * plot.c - figures and REPORT.md from result directories only (never from stdout): data files for the
 * gnuplot scripts in plots/ (lines.gp, stacked.gp, treemap.gp), PNG and SVG rendered by gnuplot, and a
 * markdown report with the figures, a summary table and, for several runs (devices), a ratio table.
 *
 * Figures (each skipped, and said so in the report, when the runs hold no rows for it):
 *   latency      time_mean +- time_std vs n_points per pipeline/kernel/variant (kernel "total" only when
 *                a pipeline reports one)
 *   serial_psh   PTv3 serialization vs Flash3D PSH, log scale (kernels named *serial* or *psh*)
 *   sm           sm_active and sm_issue (%) vs n_points          tensor   tensor_active (%) vs n_points
 *   dram         dram_read_bw (GB/s) vs n_points                  memory   mem* rows (MiB) vs n_points
 *   stages       stacked time_mean per stage at the largest size  treemap  the same as squarified areas
 * Several runs: every series is labelled with its run's device, so the same figure compares devices.
 * The treemap layout is the squarified algorithm of Bruls, Huizing and van Wijk: rows of rectangles
 * along the shorter side, a row closed when adding the next (largest remaining) item would worsen its
 * worst aspect ratio. Invariant: rectangle i has area proportional to weight i and all lie inside the
 * given box without overlapping.
 */
#include "harness/harness.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PL_PATH 4096

/* ---- squarified treemap ---------------------------------------------------------------------------- */

static double worst_ratio(const double *a, size_t n, double side) {
  double s = 0.0, mx = 0.0, mn = INFINITY;
  for (size_t i = 0; i < n; i++) {
    s += a[i];
    if (a[i] > mx) mx = a[i];
    if (a[i] < mn) mn = a[i];
  }
  if (s <= 0.0 || mn <= 0.0) return INFINITY;
  double s2 = s * s, w2 = side * side;
  return fmax(w2 * mx / s2, s2 / (w2 * mn));
}

typedef struct wi {
  double w;
  size_t i;
} wi;

static int cmp_wi_desc(const void *x, const void *y) {
  double a = ((const wi *)x)->w, b = ((const wi *)y)->w;
  return (a < b) - (a > b);
}

hx_status hx_treemap_squarify(hx_rect *out, const double *weights, size_t n, double x, double y, double w,
                              double h) {
  if (n == 0) return HX_OK;
  if (!(w > 0.0 && h > 0.0)) return HX_EINVAL;
  double total = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (!(weights[i] >= 0.0) || !isfinite(weights[i])) return HX_EINVAL;
    total += weights[i];
    out[i] = (hx_rect){x, y, 0.0, 0.0};
  }
  if (total <= 0.0) return HX_OK;
  wi *s = malloc(n * sizeof *s);
  double *area = malloc(n * sizeof *area);
  if (!s || !area) {
    free(s);
    free(area);
    return HX_ENOMEM;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (weights[i] > 0.0) s[m++] = (wi){weights[i], i};
  qsort(s, m, sizeof *s, cmp_wi_desc);
  for (size_t k = 0; k < m; k++) area[k] = s[k].w / total * w * h;
  size_t start = 0;
  while (start < m) {
    double side = fmin(w, h);
    size_t end = start + 1;
    while (end < m && worst_ratio(area + start, end + 1 - start, side) <= worst_ratio(area + start, end - start, side))
      end++;
    double row = 0.0;
    for (size_t k = start; k < end; k++) row += area[k];
    if (end == m) row = w * h; /* the last row takes what is left (absorbs rounding) */
    if (w >= h) {              /* a column at the left, items stacked top to bottom */
      double cw = row / h, cy = y;
      for (size_t k = start; k < end; k++) {
        double ih = (end == m && k == end - 1) ? y + h - cy : area[k] / cw;
        out[s[k].i] = (hx_rect){x, cy, cw, ih};
        cy += ih;
      }
      x += cw;
      w -= cw;
    } else { /* a row at the bottom, items left to right */
      double rh = row / w, cx = x;
      for (size_t k = start; k < end; k++) {
        double iw = (end == m && k == end - 1) ? x + w - cx : area[k] / rh;
        out[s[k].i] = (hx_rect){cx, y, iw, rh};
        cx += iw;
      }
      y += rh;
      h -= rh;
    }
    start = end;
  }
  free(s);
  free(area);
  return HX_OK;
}

/* ---- data extraction ------------------------------------------------------------------------------ */

typedef struct plot_ctx {
  hx_run *runs;
  size_t n_runs;
  const hx_run_row **sorted; /* per run: row pointers sorted by key */
  const char **label;        /* per run: device name or directory */
} plot_ctx;

static int cmp_rowp(const void *x, const void *y) {
  return hx_run_row_key_cmp(*(const hx_run_row *const *)x, *(const hx_run_row *const *)y);
}

static int same_series(const hx_run_row *a, const hx_run_row *b) {
  return !strcmp(a->pipeline, b->pipeline) && !strcmp(a->kernel, b->kernel) && !strcmp(a->variant, b->variant) &&
         !strcmp(a->workload, b->workload) && a->batch == b->batch;
}

static int metric_match(const char *pattern, const char *metric) {
  size_t n = strlen(pattern);
  if (n && pattern[n - 1] == '*') return strncmp(pattern, metric, n - 1) == 0;
  return strcmp(pattern, metric) == 0;
}

typedef int (*series_filter)(const plot_ctx *p, size_t run, const hx_run_row *r);

static int want_latency(const plot_ctx *p, size_t run, const hx_run_row *r) {
  /* a pipeline that reports a "total" is shown by its total only */
  const hx_run *rr = &p->runs[run];
  if (!strcmp(r->kernel, "total")) return 1;
  for (size_t i = 0; i < rr->n_rows; i++)
    if (!strcmp(rr->rows[i].pipeline, r->pipeline) && !strcmp(rr->rows[i].kernel, "total")) return 0;
  return 1;
}
static int want_serial_psh(const plot_ctx *p, size_t run, const hx_run_row *r) {
  (void)p, (void)run;
  return strstr(r->kernel, "serial") != NULL || strstr(r->kernel, "psh") != NULL;
}
static int want_all(const plot_ctx *p, size_t run, const hx_run_row *r) {
  (void)p, (void)run, (void)r;
  return 1;
}

/* Write one gnuplot index block per series holding `metric` (value x scale, error from err_metric).
 * Returns the number of blocks written. */
static size_t write_series(FILE *f, const plot_ctx *p, const char *metric, const char *err_metric, double scale,
                           const char *suffix, series_filter want) {
  size_t blocks = 0, off = 0;
  for (size_t r = 0; r < p->n_runs; off += p->runs[r].n_rows, r++) {
    const hx_run_row **rows = p->sorted + off;
    size_t n = p->runs[r].n_rows;
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j < n && same_series(rows[i], rows[j])) j++;
      const hx_run_row *k = rows[i];
      int any = 0;
      for (size_t q = i; q < j; q++) any |= metric_match(metric, rows[q]->metric);
      if (any && want(p, r, k)) {
        /* gnuplot takes the block's title from the first field of its first line: one quoted string */
        char title[512], batch[32] = "";
        if (k->batch != 1) snprintf(batch, sizeof batch, " batch %u", (unsigned)k->batch);
        snprintf(title, sizeof title, "%s/%s/%s %s%s%s%s%s%s%s", k->pipeline, k->kernel, k->variant, k->workload,
                 batch, suffix ? " " : "", suffix ? suffix : "", p->n_runs > 1 ? " (" : "",
                 p->n_runs > 1 ? p->label[r] : "", p->n_runs > 1 ? ")" : "");
        for (char *c = title; *c; c++)
          if (*c == '"') *c = '\''; /* keep the quoted field well formed */
        fprintf(f, "\"%s\"\n", title);
        for (size_t q = i; q < j; q++) {
          if (!metric_match(metric, rows[q]->metric)) continue;
          double e = 0.0;
          for (size_t t = i; t < j && err_metric; t++)
            if (rows[t]->n_points == rows[q]->n_points && !strcmp(rows[t]->metric, err_metric)) e = rows[t]->value;
          fprintf(f, "%llu %.10g %.10g\n", (unsigned long long)rows[q]->n_points, rows[q]->value * scale, e * scale);
        }
        fputs("\n\n", f);
        blocks++;
      }
      i = j;
    }
  }
  return blocks;
}

/* ---- rendering ------------------------------------------------------------------------------------- */

static int safe_for_shell(const char *s) { return strchr(s, '\'') == NULL && strchr(s, '"') == NULL; }

hx_status hx_plot_have_gnuplot(hx_err *err) {
  FILE *pp = popen("gnuplot --version 2>/dev/null", "r");
  char buf[128] = "";
  if (pp) {
    if (!fgets(buf, sizeof buf, pp)) buf[0] = '\0';
    pclose(pp);
  }
  if (strncmp(buf, "gnuplot", 7) != 0)
    return hx_errf(err, HX_EUNSUPPORTED, "gnuplot not found (install gnuplot-nox): figures skipped");
  return HX_OK;
}

/* gnuplot -e "<params>; fmt='png'; out='<base>.png'" <script>, then the same for svg. */
static hx_status render(const char *scripts, const char *script, const char *params, const char *outdir,
                        const char *base, hx_err *err) {
  const char *fmts[2] = {"png", "svg"};
  for (int k = 0; k < 2; k++) {
    char cmd[3 * PL_PATH];
    int n = snprintf(cmd, sizeof cmd, "gnuplot -e \"%s; fmt='%s'; out='%s/%s.%s'\" '%s/%s' 2>&1", params, fmts[k],
                     outdir, base, fmts[k], scripts, script);
    if (n < 0 || (size_t)n >= sizeof cmd) return hx_errf(err, HX_EINVAL, "plot: command too long");
    FILE *pp = popen(cmd, "r");
    if (!pp) return hx_errf(err, HX_EIO, "plot: cannot run gnuplot: %s", strerror(errno));
    char msg[1024] = "", line[256];
    while (fgets(line, sizeof line, pp))
      if (strlen(msg) + strlen(line) < sizeof msg) strcat(msg, line);
    int rc = pclose(pp);
    if (rc != 0) return hx_errf(err, HX_EIO, "plot: gnuplot failed on %s (%s.%s): %s", script, base, fmts[k], msg);
  }
  return HX_OK;
}

static hx_status lines_figure(const plot_ctx *p, const char *scripts, const char *outdir, const char *base,
                              const char *title, const char *ylabel, int logy, const char *const *metrics,
                              const char *const *errs, const double *scales, size_t nm, series_filter want,
                              int *made, hx_err *err) {
  char path[PL_PATH + 64];
  snprintf(path, sizeof path, "%s/%s.dat", outdir, base);
  FILE *f = fopen(path, "w");
  if (!f) return hx_errf(err, HX_EIO, "%s: %s", path, strerror(errno));
  size_t blocks = 0;
  for (size_t m = 0; m < nm; m++)
    blocks += write_series(f, p, metrics[m], errs[m], scales[m], nm > 1 ? metrics[m] : NULL, want);
  fclose(f);
  *made = 0;
  if (blocks == 0) {
    remove(path);
    return HX_OK;
  }
  char params[2 * PL_PATH];
  snprintf(params, sizeof params, "datafile='%s'; title='%s'; ylabel='%s'; logy=%d; errors=%d", path, title, ylabel,
           logy, errs[0] != NULL);
  HX_TRY(render(scripts, "lines.gp", params, outdir, base, err));
  *made = 1;
  return HX_OK;
}

/* Stage times (time_mean) of each pipeline at its largest size, per run. Calls fn for each (run,
 * pipeline, n_points) with the stage rows. */
typedef struct stage_set {
  const hx_run_row *rows[64];
  size_t n;
} stage_set;

static size_t collect_stages(const plot_ctx *p, size_t run, const char *pipeline, stage_set *out) {
  const hx_run *r = &p->runs[run];
  uint64_t nmax = 0;
  for (size_t i = 0; i < r->n_rows; i++)
    if (!strcmp(r->rows[i].pipeline, pipeline) && !strcmp(r->rows[i].metric, "time_mean") &&
        r->rows[i].n_points > nmax && r->rows[i].batch == 1)
      nmax = r->rows[i].n_points;
  out->n = 0;
  for (size_t i = 0; i < r->n_rows && out->n < 64; i++) {
    const hx_run_row *w = &r->rows[i];
    if (!strcmp(w->pipeline, pipeline) && !strcmp(w->metric, "time_mean") && w->n_points == nmax && w->batch == 1 &&
        strcmp(w->kernel, "total") != 0)
      out->rows[out->n++] = w;
  }
  return out->n;
}

/* Distinct pipelines of a run, in first-seen order. */
static size_t pipelines_of(const hx_run *r, const char **names, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_rows; i++) {
    size_t k = 0;
    while (k < n && strcmp(names[k], r->rows[i].pipeline)) k++;
    if (k == n && n < cap) names[n++] = r->rows[i].pipeline;
  }
  return n;
}

static void stage_label(char *buf, size_t cap, const hx_run_row *w) {
  snprintf(buf, cap, "%s/%s", w->kernel, w->variant);
}

static hx_status stages_figures(const plot_ctx *p, const char *scripts, const char *outdir, int *made_bars,
                                int *made_tree, hx_err *err) {
  /* union of stage labels */
  char labels[128][128];
  size_t nl = 0;
  const char *pipes[32];
  for (size_t r = 0; r < p->n_runs; r++) {
    size_t np = pipelines_of(&p->runs[r], pipes, 32);
    for (size_t k = 0; k < np; k++) {
      stage_set s;
      collect_stages(p, r, pipes[k], &s);
      for (size_t i = 0; i < s.n; i++) {
        char l[128];
        stage_label(l, sizeof l, s.rows[i]);
        size_t q = 0;
        while (q < nl && strcmp(labels[q], l)) q++;
        if (q == nl && nl < 128) snprintf(labels[nl++], sizeof labels[0], "%s", l);
      }
    }
  }
  *made_bars = *made_tree = 0;
  if (nl == 0) return HX_OK;
  char path[PL_PATH + 64], tpath[PL_PATH + 64];
  snprintf(path, sizeof path, "%s/stages.dat", outdir);
  snprintf(tpath, sizeof tpath, "%s/treemap.dat", outdir);
  FILE *f = fopen(path, "w"), *t = fopen(tpath, "w");
  if (!f || !t) {
    if (f) fclose(f);
    if (t) fclose(t);
    return hx_errf(err, HX_EIO, "%s: %s", path, strerror(errno));
  }
  fputs("pipeline", f);
  for (size_t q = 0; q < nl; q++) fprintf(f, " \"%s\"", labels[q]);
  fputc('\n', f);
  double panel = 0.0;
  for (size_t r = 0; r < p->n_runs; r++) {
    size_t np = pipelines_of(&p->runs[r], pipes, 32);
    for (size_t k = 0; k < np; k++) {
      stage_set s;
      if (collect_stages(p, r, pipes[k], &s) == 0) continue;
      if (p->n_runs > 1)
        fprintf(f, "\"%s n=%llu (%s)\"", pipes[k], (unsigned long long)s.rows[0]->n_points, p->label[r]);
      else
        fprintf(f, "\"%s n=%llu\"", pipes[k], (unsigned long long)s.rows[0]->n_points);
      double w[64], total = 0.0;
      size_t colour[64];
      for (size_t q = 0; q < nl; q++) {
        double v = 0.0;
        for (size_t i = 0; i < s.n; i++) {
          char l[128];
          stage_label(l, sizeof l, s.rows[i]);
          if (!strcmp(l, labels[q])) v = s.rows[i]->value;
        }
        fprintf(f, " %.10g", v);
      }
      fputc('\n', f);
      for (size_t i = 0; i < s.n; i++) {
        w[i] = s.rows[i]->value > 0.0 ? s.rows[i]->value : 0.0;
        total += w[i];
        char l[128];
        stage_label(l, sizeof l, s.rows[i]);
        colour[i] = 0;
        while (colour[i] < nl && strcmp(labels[colour[i]], l)) colour[i]++;
      }
      hx_rect rect[64];
      if (total > 0.0 && hx_treemap_squarify(rect, w, s.n, panel, 0.0, 1.0, 1.0) == HX_OK) {
        fprintf(t, "%.6f %.6f %.6f %.6f -1 \"%s n=%llu\" \"%s\"\n", panel + 0.5, panel + 0.5, 1.08, 1.08,
                pipes[k], (unsigned long long)s.rows[0]->n_points, p->n_runs > 1 ? p->label[r] : "");
        for (size_t i = 0; i < s.n; i++) {
          char l[128];
          stage_label(l, sizeof l, s.rows[i]);
          fprintf(t, "%.6f %.6f %.6f %.6f %zu \"%s\" \"%.3g ms (%.0f%%)\"\n", rect[i].x, rect[i].x + rect[i].w,
                  rect[i].y, rect[i].y + rect[i].h, colour[i] + 1, l, s.rows[i]->value, 100.0 * w[i] / total);
        }
        panel += 1.1;
      }
    }
  }
  fclose(f);
  fclose(t);
  char params[2 * PL_PATH];
  snprintf(params, sizeof params, "datafile='%s'; title='time per stage at the largest size'; ylabel='ms'; ncols=%zu",
           path, nl + 1);
  HX_TRY(render(scripts, "stacked.gp", params, outdir, "stages", err));
  *made_bars = 1;
  if (panel > 0.0) {
    snprintf(params, sizeof params, "datafile='%s'; title='share of each stage (area = time) at the largest size'",
             tpath);
    HX_TRY(render(scripts, "treemap.gp", params, outdir, "treemap", err));
    *made_tree = 1;
  }
  return HX_OK;
}

/* ---- report ----------------------------------------------------------------------------------------- */

static double find_value(const hx_run *r, const hx_run_row *k, const char *metric) {
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (same_series(w, k) && w->n_points == k->n_points && !strcmp(w->metric, metric)) return w->value;
  }
  return NAN;
}

static void write_report(FILE *f, const plot_ctx *p, const char *const *figs, const int *made, const char *const *what,
                         size_t nf, const char *gnuplot_note) {
  fputs("# flash3d-bench report\n\n", f);
  fputs("| run | device | git commit | date | status |\n|---|---|---|---|---|\n", f);
  for (size_t r = 0; r < p->n_runs; r++) {
    const char *c = hx_run_context(&p->runs[r], "git_commit"), *d = hx_run_context(&p->runs[r], "date_utc");
    if (!d) d = hx_run_context(&p->runs[r], "date"); /* runs written before the key was date_utc */
    const char *s = hx_run_context(&p->runs[r], "status");
    fprintf(f, "| %s | %s | %s | %s | %s%s |\n", p->runs[r].dir, p->label[r], c ? c : "?", d ? d : "?",
            s ? s : "?", p->runs[r].incomplete ? " (incomplete)" : "");
  }
  for (size_t r = 0; r < p->n_runs; r++) {
    const char *cb = hx_run_context(&p->runs[r], "ceiling_copy_gbs");
    const char *g1 = hx_run_context(&p->runs[r], "ceiling_gemm_bf16_tflops");
    const char *g2 = hx_run_context(&p->runs[r], "ceiling_gemm_fp16_tflops");
    const char *ct = hx_run_context(&p->runs[r], "counters");
    if (cb || g1 || ct)
      fprintf(f, "%s%s: measured ceilings: copy %s GB/s (read + write), cuBLAS GEMM bf16 %s / fp16 %s TFLOP/s; "
                 "counters: %s\n",
              r ? "" : "\n", p->label[r], cb ? cb : "?", g1 ? g1 : "?", g2 ? g2 : "?", ct ? ct : "?");
  }
  fputs("\n## Figures\n\n", f);
  if (gnuplot_note) fprintf(f, "%s\n\n", gnuplot_note);
  for (size_t i = 0; i < nf; i++) {
    if (made[i])
      fprintf(f, "### %s\n\n![%s](plots/%s.png) ([SVG](plots/%s.svg))\n\n", what[i], figs[i], figs[i], figs[i]);
    else if (!gnuplot_note)
      fprintf(f, "### %s\n\nno rows for this figure in the run(s).\n\n", what[i]);
  }
  fputs("## Latency (time_mean +- time_std, ms)\n\n", f);
  for (size_t r = 0; r < p->n_runs; r++) {
    if (p->n_runs > 1) fprintf(f, "### %s\n\n", p->label[r]);
    fputs("| pipeline/kernel/variant | workload | n_points | batch | mean (ms) | std (ms) | median (ms) |\n"
          "|---|---|---:|---:|---:|---:|---:|\n",
          f);
    const hx_run *rr = &p->runs[r];
    for (size_t i = 0; i < rr->n_rows; i++) {
      const hx_run_row *w = &rr->rows[i];
      if (strcmp(w->metric, "time_mean") != 0) continue;
      fprintf(f, "| %s/%s/%s | %s | %llu | %u | %.4g | %.3g | %.4g |\n", w->pipeline, w->kernel, w->variant,
              w->workload, (unsigned long long)w->n_points, (unsigned)w->batch, w->value,
              find_value(rr, w, "time_std"), find_value(rr, w, "time_median"));
    }
    fputc('\n', f);
  }
  if (p->n_runs > 1) {
    fprintf(f, "## Ratios against %s (time_mean of the other run / this one; < 1 = faster)\n\n| key | n_points |",
            p->label[0]);
    for (size_t r = 1; r < p->n_runs; r++) fprintf(f, " %s |", p->label[r]);
    fputs("\n|---|---:|", f);
    for (size_t r = 1; r < p->n_runs; r++) fputs("---:|", f);
    fputc('\n', f);
    const hx_run *b = &p->runs[0];
    for (size_t i = 0; i < b->n_rows; i++) {
      const hx_run_row *w = &b->rows[i];
      if (strcmp(w->metric, "time_mean") != 0) continue;
      fprintf(f, "| %s/%s/%s %s | %llu |", w->pipeline, w->kernel, w->variant, w->workload,
              (unsigned long long)w->n_points);
      for (size_t r = 1; r < p->n_runs; r++) {
        double v = find_value(&p->runs[r], w, "time_mean");
        if (isfinite(v) && w->value > 0.0)
          fprintf(f, " %.3f |", v / w->value);
        else
          fputs(" - |", f);
      }
      fputc('\n', f);
    }
    fputc('\n', f);
  }
}

hx_status hx_plot(hx_run *runs, size_t n_runs, const char *scripts_dir, const char *out_dir, hx_err *err) {
  if (n_runs == 0) return hx_errf(err, HX_EINVAL, "plot: no result directories");
  if (!safe_for_shell(scripts_dir) || !safe_for_shell(out_dir))
    return hx_errf(err, HX_EINVAL, "plot: paths with quote characters are not supported");
  char plots[PL_PATH];
  snprintf(plots, sizeof plots, "%s/plots", out_dir);
  if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) return hx_errf(err, HX_EIO, "%s: %s", out_dir, strerror(errno));
  if (mkdir(plots, 0777) != 0 && errno != EEXIST) return hx_errf(err, HX_EIO, "%s: %s", plots, strerror(errno));
  plot_ctx p = {runs, n_runs, NULL, NULL};
  size_t total = 0;
  for (size_t r = 0; r < n_runs; r++) total += runs[r].n_rows;
  p.sorted = malloc((total ? total : 1) * sizeof *p.sorted);
  p.label = malloc(n_runs * sizeof *p.label);
  if (!p.sorted || !p.label) {
    free(p.sorted);
    free((void *)p.label);
    return hx_errf(err, HX_ENOMEM, "plot: no memory");
  }
  size_t off = 0;
  for (size_t r = 0; r < n_runs; r++) {
    for (size_t i = 0; i < runs[r].n_rows; i++) p.sorted[off + i] = &runs[r].rows[i];
    qsort(p.sorted + off, runs[r].n_rows, sizeof *p.sorted, cmp_rowp);
    off += runs[r].n_rows;
    const char *d = hx_run_context(&runs[r], "device");
    if (!d || !*d || !strcmp(d, "none")) d = runs[r].dir;
    p.label[r] = d;
    for (size_t q = 0; q < r; q++) /* two runs on the same device model: tell them apart by directory */
      if (!strcmp(p.label[q], d)) p.label[r] = runs[r].dir;
  }
  hx_status st = HX_OK;
  enum { NF = 8 };
  const char *figs[NF] = {"latency", "serial_psh", "sm", "tensor", "dram", "memory", "stages", "treemap"};
  const char *what[NF] = {"Latency vs size (mean +- std)",
                          "PTv3 serialization vs Flash3D PSH (log scale)",
                          "SM active and SM issue vs size",
                          "TensorCore active vs size",
                          "DRAM read bandwidth vs size",
                          "Device memory vs size",
                          "Per-stage breakdown (stacked)",
                          "Per-stage breakdown (treemap)"};
  int made[NF] = {0};
  hx_err gerr;
  const char *note = NULL;
  char note_buf[600];
  if (hx_plot_have_gnuplot(&gerr) != HX_OK) {
    snprintf(note_buf, sizeof note_buf, "**%s**: run `f3dbench plot` on this directory again after installing it.",
             gerr.msg);
    note = note_buf;
  }
  if (!note) {
    const char *m1[] = {"time_mean"}, *e1[] = {"time_std"}, *e0[] = {NULL, NULL};
    const double s1[] = {1.0, 1.0}, sg[] = {1e-9}, smib[] = {1.0 / 1048576.0};
    const char *msm[] = {"sm_active", "sm_issue"}, *mt[] = {"tensor_active"}, *md[] = {"dram_read_bw"},
               *mm[] = {"mem*"};
    st = lines_figure(&p, scripts_dir, plots, "latency", what[0], "time (ms)", 1, m1, e1, s1, 1, want_latency,
                      &made[0], err);
    if (st == HX_OK)
      st = lines_figure(&p, scripts_dir, plots, "serial_psh", what[1], "time (ms)", 1, m1, e1, s1, 1,
                        want_serial_psh, &made[1], err);
    if (st == HX_OK)
      st = lines_figure(&p, scripts_dir, plots, "sm", what[2], "% of peak", 0, msm, e0, s1, 2, want_all, &made[2],
                        err);
    if (st == HX_OK)
      st = lines_figure(&p, scripts_dir, plots, "tensor", what[3], "% of peak", 0, mt, e0, s1, 1, want_all,
                        &made[3], err);
    if (st == HX_OK)
      st = lines_figure(&p, scripts_dir, plots, "dram", what[4], "GB/s", 0, md, e0, sg, 1, want_all, &made[4], err);
    if (st == HX_OK)
      st = lines_figure(&p, scripts_dir, plots, "memory", what[5], "MiB", 0, mm, e0, smib, 1, want_all, &made[5],
                        err);
    if (st == HX_OK) st = stages_figures(&p, scripts_dir, plots, &made[6], &made[7], err);
  }
  if (st == HX_OK) {
    char path[PL_PATH + 64];
    snprintf(path, sizeof path, "%s/REPORT.md", out_dir);
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    if (!f) {
      st = hx_errf(err, HX_ENOMEM, "plot: open_memstream failed");
    } else {
      write_report(f, &p, figs, made, what, NF, note);
      if (fclose(f) != 0)
        st = hx_errf(err, HX_ENOMEM, "plot: report too large");
      else
        st = hx_write_file_atomic(path, mem, len, err);
      free(mem);
    }
  }
  free(p.sorted);
  free((void *)p.label);
  if (st == HX_OK && note) return hx_errf(err, HX_EUNSUPPORTED, "%s", gerr.msg);
  return st;
}
