/*
 * plot.c - figures and REPORT.md from result directories only (never from stdout): data files for the
 * gnuplot scripts in plots/ (lines.gp, stacked.gp, treemap.gp, fit.gp, bars.gp, tiles.gp), PNG and SVG
 * rendered by gnuplot (started without a shell, each process told to the caller's hx_child_watch), and a
 * markdown report with the figures, headline tables, a summary table and, for several runs (devices), a ratio
 * table. What is specific to a study (its pipelines and their headline stages, legends, comparison
 * figures, headline tables and their notes) comes in as data (hx_study, harness.h); this file knows only
 * the sweep's conventions: the metrics, the kernel "total", variant "all" and "cpu" variants.
 *
 * Figures (each skipped, and said so in the report, when the runs hold no rows for it):
 *   latency      time_mean +- time_std vs n_points per pipeline/kernel/variant (kernel "total" only when
 *                a pipeline reports one)
 *   <study>      each comparison figure of the study: time vs n_points of the series its patterns select,
 *                log scale
 *   sm           sm_active and sm_issue (%) vs n_points          tensor   tensor_active (%) vs n_points
 *   dram         dram_read_bw (GB/s) vs n_points                  memory   mem_peak (arena, solid) and
 *                                                                         mem_used (cudaMemGetInfo, dashed),
 *                                                                         MiB, of each pipeline's total
 *   stages       stacked time_mean per stage at the largest size  treemap  the same as squarified areas
 * A study may add a section of its own before the headline (hx_study.section): its text, then its figures
 * (hx_study_plot: a metric vs n_points per pipeline/kernel/variant with optional least-squares lines through
 * fit.gp, or a breakdown at each model's largest size as stacked bars, bars.gp, and treemaps, tiles.gp), each
 * with the study's text under it. Pipelines marked own_section are left out of every generic figure and table.
 * Several runs: every series is labelled with its run's device, so the same figure compares devices.
 * Data files name each series in full (pipeline/kernel/variant workload), legends by a short title (the
 * study's legend rules). A linear y axis of non-negative values starts at 0.
 * REPORT.md's headline adds the peak device memory per pipeline and the study's ratio of two of them.
 * The treemap layout is the squarified algorithm of Bruls, Huizing and van Wijk: rows of rectangles
 * along the shorter side, a row closed when adding the next (largest remaining) item would worsen its
 * worst aspect ratio. Invariant: rectangle i has area proportional to weight i and all lie inside the
 * given box without overlapping.
 */
#define _GNU_SOURCE /* pipe2 */
#include "harness/harness.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PL_PATH 4096

extern char **environ;

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
  int all;                   /* --all-series: every series, as recorded */
  int *mem_totals;           /* per run: 1 when it has pipeline totals of mem_peak (the arena) */
  int many_workloads;        /* rows of more than one workload: legends name it */
  const hx_study *study;     /* never NULL (an empty study stands in) */
  const hx_study_figure *fig; /* the comparison figure being drawn (want_figure) */
  const int *fig_ok;          /* per run: 1 when each of fig's patterns selects a series of it */
  const hx_child_watch *watch; /* told of each gnuplot process, or NULL */
} plot_ctx;

static int cmp_rowp(const void *x, const void *y) {
  return hx_run_row_key_cmp(*(const hx_run_row *const *)x, *(const hx_run_row *const *)y);
}

static int same_series(const hx_run_row *a, const hx_run_row *b) {
  return !strcmp(a->pipeline, b->pipeline) && !strcmp(a->kernel, b->kernel) && !strcmp(a->variant, b->variant) &&
         !strcmp(a->workload, b->workload) && a->batch == b->batch;
}
/* same (pipeline, kernel, workload, batch): the variants of one kernel compete for one headline series */
static int same_kernel(const hx_run_row *a, const hx_run_row *b) {
  return !strcmp(a->pipeline, b->pipeline) && !strcmp(a->kernel, b->kernel) && !strcmp(a->workload, b->workload) &&
         a->batch == b->batch;
}

static int metric_match(const char *pattern, const char *metric) {
  size_t n = strlen(pattern);
  if (n && pattern[n - 1] == '*') return strncmp(pattern, metric, n - 1) == 0;
  return strcmp(pattern, metric) == 0;
}

static int is_cpu_variant(const char *v) { return strncmp(v, "cpu", 3) == 0; }

/* 1 when the run had no CUDA device (the sweep writes device "none" and runs its CPU references). */
static int cpu_only(const hx_run *r) {
  const char *d = hx_run_context(r, "device");
  return d && !strcmp(d, "none");
}

/* Appends printf text to the string in buf (cap bytes), truncating. */
static void cat(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t cap, const char *fmt, ...) {
  const size_t at = strlen(buf);
  if (at + 1 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + at, cap - at, fmt, ap);
  va_end(ap);
}

/* A series' rank among the variants of its kernel: sizes it covers, and the geometric mean over those sizes
 * of its time_median (time_mean where a run has no medians). The geometric mean weighs each size's ratio
 * alike; the median over three sizes had picked a variant 1% faster at one size and 16% slower at another. */
static double series_score(const hx_run *r, const hx_run_row *k, size_t *n_sizes) {
  double v[256];
  size_t n = 0, nm = 0;
  for (size_t i = 0; i < r->n_rows && n < 256; i++)
    if (same_series(&r->rows[i], k) && !strcmp(r->rows[i].metric, "time_median")) v[n++] = r->rows[i].value;
  if (n == 0)
    for (size_t i = 0; i < r->n_rows && n < 256; i++)
      if (same_series(&r->rows[i], k) && !strcmp(r->rows[i].metric, "time_mean")) v[n++] = r->rows[i].value;
  for (size_t i = 0; i < r->n_rows; i++)
    if (same_series(&r->rows[i], k) && !strcmp(r->rows[i].metric, "time_mean")) nm++;
  *n_sizes = nm;
  if (n == 0) return INFINITY;
  double ls = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (!(v[i] > 0.0)) return INFINITY; /* a zero or NaN time ranks last rather than poisoning the log */
    ls += log(v[i]);
  }
  return exp(ls / (double)n);
}

/* The fastest variant of k's kernel: GPU variants before "cpu" ones, then the variant timed at the most
 * sizes (a baseline run on the small cases only ranks after one run on all), then the lowest median over sizes. A CUDA-graph
 * replay and the direct launches of the same variant are two variants here, so the faster one wins.
 * Returns a time_mean row of the winner, NULL when the kernel has none. */
static const hx_run_row *best_variant(const hx_run *r, const hx_run_row *k) {
  const hx_run_row *best = NULL;
  double best_s = INFINITY;
  size_t best_n = 0;
  int best_cpu = 1;
  const char *done[128];
  size_t n_done = 0;
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (strcmp(w->metric, "time_mean") != 0 || !same_kernel(w, k)) continue;
    int seen = 0; /* each variant scored once */
    for (size_t j = 0; j < n_done && !seen; j++) seen = !strcmp(done[j], w->variant);
    if (seen) continue;
    if (n_done < 128) done[n_done++] = w->variant;
    size_t n;
    double s = series_score(r, w, &n);
    int cpu = is_cpu_variant(w->variant);
    int better = !best || (cpu != best_cpu ? !cpu : n != best_n ? n > best_n : s < best_s);
    if (better) {
      best = w;
      best_s = s;
      best_n = n;
      best_cpu = cpu;
    }
  }
  return best;
}
static int is_best_variant(const hx_run *r, const hx_run_row *k) {
  const hx_run_row *b = best_variant(r, k);
  return b && !strcmp(b->variant, k->variant);
}

static const hx_study_pipeline *study_pipeline(const plot_ctx *p, const char *name) {
  for (size_t i = 0; i < p->study->n_pipelines; i++)
    if (!strcmp(p->study->pipelines[i].name, name)) return &p->study->pipelines[i];
  return NULL;
}

/* 1 when the study shows the pipeline in its own section only (hx_study_pipeline.own_section). */
static int own_section(const plot_ctx *p, const char *pipeline) {
  const hx_study_pipeline *sp = study_pipeline(p, pipeline);
  return sp && sp->own_section;
}

static int has_kernel(const hx_run *r, const char *pipeline, const char *kernel) {
  for (size_t i = 0; i < r->n_rows; i++)
    if (!strcmp(r->rows[i].pipeline, pipeline) && !strcmp(r->rows[i].kernel, kernel) &&
        !strcmp(r->rows[i].metric, "time_mean"))
      return 1;
  return 0;
}

/* Position of k's kernel among its pipeline's main stages (the study's list), -1 when it is not one. Stage i
 * sits at 64 i; a part of stage i (hx_study_part) stands in at 64 i + 1 + j where the run has no row of stage i,
 * so a run that times the stage in parts still shows all of its work, in the stage's place. */
static int main_stage(const plot_ctx *p, const hx_run *r, const hx_run_row *k) {
  const hx_study_pipeline *sp = study_pipeline(p, k->pipeline);
  if (sp && (sp->host_only || sp->own_section)) return -1; /* host work, or shown in the study's section */
  const char *const *list = sp ? sp->stages : NULL;
  const size_t n = list ? sp->n_stages : 0;
  int any = 0;
  for (size_t i = 0; i < n && i < 64; i++) {
    if (!strcmp(list[i], k->kernel)) return 64 * (int)i;
    const int have = has_kernel(r, k->pipeline, list[i]);
    any |= have;
    for (size_t j = 0, q = 0; !have && j < sp->n_parts; j++) {
      if (strcmp(sp->parts[j].whole, list[i])) continue;
      q++;
      if (q < 64 && !strcmp(sp->parts[j].part, k->kernel)) return 64 * (int)i + (int)q;
      any |= has_kernel(r, k->pipeline, sp->parts[j].part);
    }
  }
  if (any) return -1;
  return strcmp(k->kernel, "total") ? 64 * 64 : -1; /* unknown pipeline (or none of its stages): every kernel */
}

static int pipeline_has_total(const hx_run *r, const char *pipeline) { return has_kernel(r, pipeline, "total"); }

/* A kernel family (the name up to its first '.': "total", or "a" of "a.x" and "a.y") that more than one
 * pipeline of these runs uses: the legend names the pipeline too. */
static int kernel_shared(const plot_ctx *p, const hx_run_row *k) {
  const char *dot = strchr(k->kernel, '.');
  const size_t n = dot ? (size_t)(dot - k->kernel) : strlen(k->kernel);
  for (size_t r = 0; r < p->n_runs; r++)
    for (size_t i = 0; i < p->runs[r].n_rows; i++) {
      const hx_run_row *w = &p->runs[r].rows[i];
      if (strcmp(w->pipeline, k->pipeline) && !strncmp(w->kernel, k->kernel, n) &&
          (w->kernel[n] == '\0' || w->kernel[n] == '.') && !own_section(p, w->pipeline))
        return 1;
    }
  return 0;
}

static const char *pipeline_display(const plot_ctx *p, const char *pipeline) {
  const hx_study_pipeline *sp = study_pipeline(p, pipeline);
  return sp && sp->display ? sp->display : pipeline;
}

/* A legend rule's label for k: "{v}" the variant, "{k}" the kernel past the rule's prefix (plen bytes). */
static void legend_label(char *buf, size_t cap, const hx_study_legend *l, size_t plen, const hx_run_row *k) {
  size_t n = 0;
  buf[0] = '\0';
  for (const char *c = l->label; *c && n + 1 < cap; c++) {
    const char *ins = NULL;
    if (c[0] == '{' && (c[1] == 'v' || c[1] == 'k') && c[2] == '}') ins = c[1] == 'v' ? k->variant : k->kernel + plen;
    if (ins) {
      n += (size_t)snprintf(buf + n, cap - n, "%s", ins);
      if (n >= cap) n = cap - 1;
      c += 2;
    } else {
      buf[n++] = *c;
      buf[n] = '\0';
    }
  }
  if (l->variant_has && l->tag && strstr(k->variant, l->variant_has) && n < cap)
    snprintf(buf + n, cap - n, "%s", l->tag);
}

/* The study's first legend rule for k's kernel, NULL when none; *plen = the length of its prefix. */
static const hx_study_legend *legend_rule(const plot_ctx *p, const hx_run_row *k, size_t *plen) {
  for (size_t i = 0; i < p->study->n_legends; i++) {
    const hx_study_legend *l = &p->study->legends[i];
    const size_t n = strlen(l->kernel);
    if (n && l->kernel[n - 1] == '*' ? !strncmp(l->kernel, k->kernel, n - 1) : !strcmp(l->kernel, k->kernel)) {
      *plen = n && l->kernel[n - 1] == '*' ? n - 1 : strlen(k->kernel);
      return l;
    }
  }
  return NULL;
}

/* What a legend shows for a series (the data files keep the full pipeline/kernel/variant name): the study's
 * legend rule, else the kernel with spaces and the variant ("a b C64 v3"); the pipeline's display name before
 * a total and a kernel family two pipelines share; the workload only when the runs have several, the batch
 * when it is not 1, the device with several runs. */
static void short_title(char *buf, size_t cap, const plot_ctx *p, size_t run, const hx_run_row *k,
                        const char *suffix) {
  char kern[160], var[64] = "";
  const int total = !strcmp(k->kernel, "total");
  size_t plen = 0;
  const hx_study_legend *rule = legend_rule(p, k, &plen);
  if (rule) {
    legend_label(kern, sizeof kern, rule, plen, k);
  } else {
    snprintf(kern, sizeof kern, "%s", k->kernel);
    for (char *c = kern; *c; c++)
      if (*c == '_' || *c == '.') *c = ' ';
    if (!total && strcmp(k->variant, "all")) snprintf(var, sizeof var, " %s", k->variant);
  }
  const int prefix = total || kernel_shared(p, k);
  char batch[32] = "", dev[160] = "";
  if (k->batch != 1) snprintf(batch, sizeof batch, " batch %u", (unsigned)k->batch);
  if (p->n_runs > 1) {
    const char *d = p->label[run];
    if (!strncmp(d, "NVIDIA ", 7)) d += 7;
    snprintf(dev, sizeof dev, " (%s)", d);
  }
  snprintf(buf, cap, "%s%s%s%s%s%s%s%s%s", prefix ? pipeline_display(p, k->pipeline) : "", prefix ? " " : "", kern, var,
           p->many_workloads ? " " : "", p->many_workloads ? k->workload : "", batch, suffix ? suffix : "", dev);
}

typedef int (*series_filter)(const plot_ctx *p, size_t run, const hx_run_row *r);

/* latency: a pipeline's total when it reports one, else its main stages; fastest variant each */
static int want_latency(const plot_ctx *p, size_t run, const hx_run_row *r) {
  const hx_run *rr = &p->runs[run];
  if (own_section(p, r->pipeline)) return 0;
  if (p->all) return !strcmp(r->kernel, "total") || !pipeline_has_total(rr, r->pipeline);
  if (!strcmp(r->kernel, "total")) return is_best_variant(rr, r);
  if (pipeline_has_total(rr, r->pipeline)) return 0;
  return main_stage(p, rr, r) >= 0 && is_best_variant(rr, r);
}
/* 1 when "pipeline/kernel" of r matches one of n fnmatch patterns. */
static int key_matches(const char *const *patterns, size_t n, const hx_run_row *r) {
  char key[512];
  snprintf(key, sizeof key, "%s/%s", r->pipeline, r->kernel);
  for (size_t i = 0; i < n; i++)
    if (fnmatch(patterns[i], key, 0) == 0) return 1;
  return 0;
}
/* a study's comparison figure (p->fig): the kernels its patterns select, fastest variant each, in the runs where
 * every pattern selects one (a comparison with one side missing is no comparison) */
static int want_figure(const plot_ctx *p, size_t run, const hx_run_row *r) {
  if (own_section(p, r->pipeline) || (p->fig_ok && !p->fig_ok[run])) return 0;
  if (p->all) return key_matches(p->fig->all_series, p->fig->n_all, r);
  return key_matches(p->fig->series, p->fig->n_series, r) && is_best_variant(&p->runs[run], r);
}
/* counters and memory: the main stages (a total is no kernel and has no counters), fastest variant each */
static int want_stages(const plot_ctx *p, size_t run, const hx_run_row *r) {
  if (own_section(p, r->pipeline)) return 0;
  if (p->all) return 1;
  return main_stage(p, &p->runs[run], r) >= 0 && is_best_variant(&p->runs[run], r);
}
/* Write one gnuplot index block per series holding `metric` (value x scale, error from err_metric);
 * *lo and *hi track the smallest positive and the largest value, *neg is set when a value is negative.
 * Each block opens with two quoted fields: the full series name and the legend's short one (short_suffix
 * after it). Returns the number of blocks written. */
/* Line styles of a figure with several runs (devices): one colour per series key (pipeline/kernel and
 * metric, whatever variant won on each device) and one dash and point type per run, so the same stage on
 * two GPUs reads as one colour, solid and dashed, instead of colours recycled at random. Space-separated
 * per block, for lines.gp (word(cols, i+1)). */
typedef struct block_style {
  char cols[2048], dts[1024], pts[1024];
  char keys[64][160];
  size_t nkeys;
} block_style;

/* Appends one block's style; returns its colour. */
static size_t style_add(block_style *st, const hx_run_row *k, const char *suffix, size_t run) {
  static const int pt_of_run[5] = {7, 5, 9, 11, 13}; /* filled circle, square, triangles, diamond */
  char key[160];
  snprintf(key, sizeof key, "%s/%s/%s %s", k->pipeline, k->kernel, k->workload, suffix ? suffix : "");
  size_t c = 0;
  while (c < st->nkeys && strcmp(st->keys[c], key)) c++;
  if (c == st->nkeys && st->nkeys < 64) snprintf(st->keys[st->nkeys++], sizeof st->keys[0], "%s", key);
  size_t n = strlen(st->cols), m = strlen(st->dts), q = strlen(st->pts);
  snprintf(st->cols + n, sizeof st->cols - n, "%zu ", c % 64 + 1);
  snprintf(st->dts + m, sizeof st->dts - m, "%zu ", run % 5 + 1);
  snprintf(st->pts + q, sizeof st->pts - q, "%d ", pt_of_run[run % 5]);
  return c % 64 + 1;
}

/* The sizes a figure draws, for its x axis: up to PL_XTICS of them each get a tick labelled "20k", so a run of
 * one size reads "20k" once (gnuplot's own ticks around a single x value read "20k 20k 20k", and sizes closer
 * than its format resolves read "99k 99k 100k"); with more, gnuplot picks the ticks. */
#define PL_XTICS 12
typedef struct xsizes {
  uint64_t v[PL_XTICS];
  size_t n;
  int over;
} xsizes;
static void xsizes_add(xsizes *x, uint64_t n) {
  if (!x) return;
  for (size_t i = 0; i < x->n; i++)
    if (x->v[i] == n) return;
  if (x->n < PL_XTICS) x->v[x->n++] = n;
  else x->over = 1;
}
static void size_text(char *buf, size_t cap, uint64_t n);
static int cmp_u64(const void *x, const void *y);
/* "; xt='100000 200000'; xtl='100k 200k'" (ascending) for lines.gp and fit.gp, "" with none or too many */
static void xsizes_param(char *buf, size_t cap, xsizes *x) {
  buf[0] = '\0';
  if (x->n == 0 || x->over) return;
  qsort(x->v, x->n, sizeof *x->v, cmp_u64);
  char xt[PL_XTICS * 24] = "", xtl[PL_XTICS * 24] = "";
  for (size_t i = 0, a = 0, b = 0; i < x->n; i++) {
    char t[24];
    size_text(t, sizeof t, x->v[i]);
    a += (size_t)snprintf(xt + a, sizeof xt - a, "%s%llu", i ? " " : "", (unsigned long long)x->v[i]);
    b += (size_t)snprintf(xtl + b, sizeof xtl - b, "%s%s", i ? " " : "", t);
  }
  snprintf(buf, cap, "; xt='%s'; xtl='%s'", xt, xtl);
}

static size_t write_series(FILE *f, const plot_ctx *p, const char *metric, const char *err_metric, double scale,
                           const char *suffix, const char *short_suffix, series_filter want, double *lo, double *hi,
                           int *neg, block_style *st, xsizes *xs) {
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
        char stitle[512];
        short_title(stitle, sizeof stitle, p, r, k, short_suffix);
        for (char *c = title; *c; c++)
          if (*c == '"') *c = '\''; /* keep the quoted fields well formed */
        for (char *c = stitle; *c; c++)
          if (*c == '"') *c = '\'';
        fprintf(f, "\"%s\" \"%s\"\n", title, stitle);
        if (st) { /* a comment line: gnuplot skips it, readers and tests see the style */
          const size_t colour = style_add(st, k, suffix, r);
          fprintf(f, "# colour %zu dash %zu\n", colour, r % 5 + 1);
        }
        for (size_t q = i; q < j; q++) {
          if (!metric_match(metric, rows[q]->metric)) continue;
          double e = 0.0;
          for (size_t t = i; t < j && err_metric; t++)
            if (rows[t]->n_points == rows[q]->n_points && !strcmp(rows[t]->metric, err_metric)) e = rows[t]->value;
          double v = rows[q]->value * scale;
          fprintf(f, "%llu %.10g %.10g\n", (unsigned long long)rows[q]->n_points, v, e * scale);
          xsizes_add(xs, rows[q]->n_points);
          if (v < 0.0) *neg = 1;
          if (v > 0.0 && v < *lo) *lo = v;
          if (v > *hi) *hi = v;
        }
        fputs("\n\n", f);
        blocks++;
      }
      i = j;
    }
  }
  return blocks;
}

/* memory: each pipeline's total where the sweep recorded it (the arena's peak over the pipeline, the
 * paper's comparison; every stage stays in memory_all.dat), else the main stages as for the counters */
static int want_memory(const plot_ctx *p, size_t run, const hx_run_row *r) {
  if (own_section(p, r->pipeline)) return 0;
  if (p->all) return 1;
  if (p->mem_totals[run]) return !strcmp(r->kernel, "total");
  return want_stages(p, run, r);
}

/* ---- rendering ------------------------------------------------------------------------------------- */

static int safe_for_shell(const char *s) { return strchr(s, '\'') == NULL && strchr(s, '"') == NULL; }

/* Run argv[0] (searched on PATH) with argv as a child, standard input /dev/null, reading its standard output, and its
 * standard error unless drop_stderr (then /dev/null), into out (cut at cap, always terminated); *status gets its wait
 * status. Without a watch the child stays in the caller's process group (a Ctrl-C to it reaches the child too). With
 * one, the child leads a process group of its own (kill(-pid, ...) ends it and anything it started) and the watch is
 * told of it once it exists and again once it has exited but before it is reaped (until then its pid names no other
 * process), each time with every signal blocked on this thread: a signal handler that ends the watched children never
 * misses one that is running, nor kills a reused pid. HX_EIO when it cannot be started (why, from errno). */
static hx_status run_child(char *const argv[], int drop_stderr, char *out, size_t cap, int *status,
                           const hx_child_watch *watch, hx_err *err) {
  int fds[2];
  /* close-on-exec from the start: the child has only its dup2'ed copies, and no other thread's exec inherits them */
  if (pipe2(fds, O_CLOEXEC) != 0) return hx_errf(err, HX_EIO, "plot: cannot run %s: %s", argv[0], strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t all, old;
  sigfillset(&all);
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0); /* never the terminal (a group of
                                                                                  * its own would stop on reading it) */
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  if (drop_stderr) posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  else posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setsigmask(&at, &old); /* the child runs with the mask this thread had, not the full one */
  posix_spawnattr_setflags(&at, (short)(POSIX_SPAWN_SETSIGMASK | (watch ? POSIX_SPAWN_SETPGROUP : 0)));
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
  if (rc == 0 && watch && watch->started) watch->started(watch->arg, pid);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return hx_errf(err, HX_EIO, "plot: cannot run %s: %s", argv[0], strerror(rc));
  }
  size_t n = 0;
  char buf[256];
  for (;;) {
    const ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    for (ssize_t i = 0; i < got && n + 1 < cap; i++) out[n++] = buf[i];
  }
  if (cap) out[n] = '\0';
  close(fds[0]);
  siginfo_t si;
  while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  int ws = 0;
  pthread_sigmask(SIG_BLOCK, &all, &old);
  if (watch && watch->ended) watch->ended(watch->arg, pid);
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  *status = ws;
  return HX_OK;
}

static hx_status have_gnuplot(const hx_child_watch *watch, hx_err *err) {
  char *const argv[] = {"gnuplot", "--version", NULL};
  char buf[128] = "";
  int ws = 0;
  hx_err ignored;
  if (run_child(argv, 1, buf, sizeof buf, &ws, watch, &ignored) != HX_OK || strncmp(buf, "gnuplot", 7) != 0)
    return hx_errf(err, HX_EUNSUPPORTED, "gnuplot not found (install gnuplot-nox): figures skipped");
  return HX_OK;
}

hx_status hx_plot_have_gnuplot(hx_err *err) { return have_gnuplot(NULL, err); }

/* Close a figure's data file, checking every write it took: a full disk fails the buffered writes at the flush,
 * and an unchecked one showed as a gnuplot error about a cut-short .dat instead of its cause. */
static hx_status dat_close(FILE *f, const char *path, hx_err *err) {
  errno = 0;
  int bad = fflush(f) != 0 || ferror(f);
  int e = errno;
  if (fclose(f) != 0 && !bad) bad = 1, e = errno;
  if (bad) return hx_errf(err, HX_EIO, "%s: write failed: %s", path, strerror(e ? e : EIO));
  return HX_OK;
}

/* gnuplot -e "<params>; fmt='png'; out='<base>.png'" <script>, then the same for svg; no shell between (the watch
 * sees gnuplot itself: run_child). */
static hx_status render(const plot_ctx *p, const char *scripts, const char *script, const char *params,
                        const char *outdir, const char *base, hx_err *err) {
  const char *fmts[2] = {"png", "svg"};
  for (int k = 0; k < 2; k++) {
    char expr[3 * PL_PATH], path[PL_PATH + 64];
    int n = snprintf(expr, sizeof expr, "%s; fmt='%s'; out='%s/%s.%s'", params, fmts[k], outdir, base, fmts[k]);
    int m = snprintf(path, sizeof path, "%s/%s", scripts, script);
    if (n < 0 || (size_t)n >= sizeof expr || m < 0 || (size_t)m >= sizeof path)
      return hx_errf(err, HX_EINVAL, "plot: command too long");
    char *const argv[] = {"gnuplot", "-e", expr, path, NULL};
    char msg[1024];
    int ws = 0;
    HX_TRY(run_child(argv, 0, msg, sizeof msg, &ws, p->watch, err));
    if (ws != 0) { /* gnuplot's lines (its caret line too) as one line: " | " between them, no blank ones */
      char one[1024];
      size_t o = 0;
      for (const char *c = msg; *c && o + 4 < sizeof one; c++) {
        if (*c != '\n') one[o++] = *c;
        else if (o > 0 && c[1] && c[1] != '\n' && o + 3 < sizeof one) one[o++] = ' ', one[o++] = '|', one[o++] = ' ';
      }
      one[o] = '\0';
      return hx_errf(err, HX_EIO, "plot: gnuplot failed on %s (%s.%s): %s", script, base, fmts[k], one);
    }
  }
  return HX_OK;
}

/* One "metric vs size" figure: base.dat holds the series drawn (the headline selection, or everything
 * under --all-series) and, for the headline figure, base_all.dat every series for those who want them.
 * logy < 0: log scale when the values span more than two decades. Two metrics with the same series
 * (SM active / issue) share a colour per series, the second dashed. */
static hx_status lines_figure(const plot_ctx *p, const char *scripts, const char *outdir, const char *base,
                              const char *title, const char *ylabel, int logy, const char *const *metrics,
                              const char *const *errs, const double *scales, const char *const *short_suffix,
                              size_t nm, series_filter want, int *made, hx_err *err) {
  char path[PL_PATH + 64];
  *made = 0;
  if (!p->all) { /* everything, not drawn */
    plot_ctx every = *p;
    every.all = 1;
    snprintf(path, sizeof path, "%s/%s_all.dat", outdir, base);
    FILE *f = fopen(path, "w");
    if (!f) return hx_errf(err, HX_EIO, "%s: %s", path, strerror(errno));
    size_t blocks = 0;
    double lo = INFINITY, hi = 0.0;
    int neg = 0;
    for (size_t m = 0; m < nm; m++)
      blocks += write_series(f, &every, metrics[m], errs[m], scales[m], nm > 1 ? metrics[m] : NULL,
                             nm > 1 ? short_suffix[m] : NULL, want, &lo, &hi, &neg, NULL, NULL);
    HX_TRY(dat_close(f, path, err));
    if (blocks == 0) remove(path);
  }
  snprintf(path, sizeof path, "%s/%s.dat", outdir, base);
  FILE *f = fopen(path, "w");
  if (!f) return hx_errf(err, HX_EIO, "%s: %s", path, strerror(errno));
  size_t blocks = 0, per[2] = {0, 0};
  double lo = INFINITY, hi = 0.0;
  int neg = 0;
  block_style *st = p->n_runs > 1 ? calloc(1, sizeof *st) : NULL; /* ~13 KB: not on the stack */
  xsizes xs = {{0}, 0, 0};
  for (size_t m = 0; m < nm; m++) {
    size_t b = write_series(f, p, metrics[m], errs[m], scales[m], nm > 1 ? metrics[m] : NULL,
                            nm > 1 ? short_suffix[m] : NULL, want, &lo, &hi, &neg, st, &xs);
    if (m < 2) per[m] = b;
    blocks += b;
  }
  const hx_status cs = dat_close(f, path, err);
  if (cs != HX_OK) {
    free(st);
    return cs;
  }
  if (blocks == 0) {
    remove(path);
    free(st);
    return HX_OK;
  }
  if (logy < 0) logy = hi > 100.0 * lo;
  size_t paired = nm == 2 && per[0] == per[1] ? per[0] : 0;
  /* every metric drawn here is a time, a percentage, a rate or a size: a linear axis starts at 0 (gnuplot's
   * autoscale with the margins of lines.gp went below it, to -200 GB/s on a real run) */
  const int ymin0 = !logy && !neg;
  char params[2 * PL_PATH + 4096], xt[PL_XTICS * 50];
  xsizes_param(xt, sizeof xt, &xs);
  int at = snprintf(params, sizeof params,
                    "datafile='%s'; title='%s'; ylabel='%s'; logy=%d; errors=%d; paired=%zu; ymin0=%d%s", path, title,
                    ylabel, logy, errs[0] != NULL, paired, ymin0, xt);
  if (st && !paired && at > 0 && (size_t)at < sizeof params)
    snprintf(params + at, sizeof params - (size_t)at, "; cols='%s'; dts='%s'; pts='%s'", st->cols, st->dts, st->pts);
  free(st);
  HX_TRY(render(p, scripts, "lines.gp", params, outdir, base, err));
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
        strcmp(w->kernel, "total") != 0 && !own_section(p, w->pipeline) && (p->all || want_stages(p, run, w)))
      out->rows[out->n++] = w;
  }
  if (!p->all) /* pipeline order of the main stages (insertion sort: a handful of rows) */
    for (size_t i = 1; i < out->n; i++)
      for (size_t j = i; j > 0 && main_stage(p, r, out->rows[j]) < main_stage(p, r, out->rows[j - 1]); j--) {
        const hx_run_row *t = out->rows[j];
        out->rows[j] = out->rows[j - 1];
        out->rows[j - 1] = t;
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

/* one colour per stage name; the variant is in the treemap's value label (and in the name under --all-series) */
static void stage_label(char *buf, size_t cap, const plot_ctx *p, const hx_run_row *w) {
  if (p->all)
    snprintf(buf, cap, "%s/%s", w->kernel, w->variant);
  else
    snprintf(buf, cap, "%s", w->kernel);
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
        stage_label(l, sizeof l, p, s.rows[i]);
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
          stage_label(l, sizeof l, p, s.rows[i]);
          if (!strcmp(l, labels[q])) v = s.rows[i]->value;
        }
        fprintf(f, " %.10g", v);
      }
      fputc('\n', f);
      for (size_t i = 0; i < s.n; i++) {
        w[i] = s.rows[i]->value > 0.0 ? s.rows[i]->value : 0.0;
        total += w[i];
        char l[128];
        stage_label(l, sizeof l, p, s.rows[i]);
        colour[i] = 0;
        while (colour[i] < nl && strcmp(labels[colour[i]], l)) colour[i]++;
      }
      hx_rect rect[64];
      if (total > 0.0 && hx_treemap_squarify(rect, w, s.n, panel, 0.0, 1.0, 1.0) == HX_OK) {
        fprintf(t, "%.6f %.6f %.6f %.6f -1 \"%s n=%llu\" \"%s\"\n", panel + 0.5, panel + 0.5, 1.08, 1.08,
                pipes[k], (unsigned long long)s.rows[0]->n_points, p->n_runs > 1 ? p->label[r] : "");
        for (size_t i = 0; i < s.n; i++) {
          char l[128];
          stage_label(l, sizeof l, p, s.rows[i]);
          fprintf(t, "%.6f %.6f %.6f %.6f %zu \"%s\" \"%s%s%.3g ms (%.0f%%)\"\n", rect[i].x,
                  rect[i].x + rect[i].w, rect[i].y, rect[i].y + rect[i].h, colour[i] + 1, l,
                  p->all ? "" : s.rows[i]->variant, p->all ? "" : " ", s.rows[i]->value, 100.0 * w[i] / total);
        }
        panel += 1.1;
      }
    }
  }
  const hx_status cs = dat_close(f, path, err), ct = dat_close(t, tpath, cs == HX_OK ? err : NULL);
  if (cs != HX_OK) return cs;
  if (ct != HX_OK) return ct;
  char params[2 * PL_PATH];
  snprintf(params, sizeof params, "datafile='%s'; title='time per stage at the largest size'; ylabel='ms'; ncols=%zu",
           path, nl + 1);
  HX_TRY(render(p, scripts, "stacked.gp", params, outdir, "stages", err));
  *made_bars = 1;
  if (panel > 0.0) {
    snprintf(params, sizeof params, "datafile='%s'; title='share of each stage (area = time) at the largest size'",
             tpath);
    HX_TRY(render(p, scripts, "treemap.gp", params, outdir, "treemap", err));
    *made_tree = 1;
  }
  return HX_OK;
}

/* ---- the study's section: its own figures (hx_study_plot) ----------------------------------------------- */

hx_status hx_plot_linear_fit(const double *x, const double *y, size_t n, double *slope, double *intercept,
                             double *r2) {
  if (n < 2) return HX_EINVAL;
  double mx = 0.0, my = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i]) || !isfinite(y[i])) return HX_EINVAL;
    mx += x[i];
    my += y[i];
  }
  mx /= (double)n;
  my /= (double)n;
  double sxx = 0.0, sxy = 0.0, syy = 0.0;
  for (size_t i = 0; i < n; i++) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (!(sxx > 0.0)) return HX_EINVAL;
  const double b = sxy / sxx, a = my - b * mx;
  double res = 0.0;
  for (size_t i = 0; i < n; i++) res += (y[i] - (a + b * x[i])) * (y[i] - (a + b * x[i]));
  *slope = b;
  *intercept = a;
  *r2 = syy > 0.0 ? 1.0 - res / syy : 1.0; /* every y equal: the flat line meets them all */
  return HX_OK;
}

/* 1 when "pipeline/kernel/variant" of r matches an include pattern of sp and no exclude pattern. */
static int plot_matches(const hx_study_plot *sp, const hx_run_row *r) {
  char key[512];
  snprintf(key, sizeof key, "%s/%s/%s", r->pipeline, r->kernel, r->variant);
  int in = 0;
  for (size_t i = 0; i < sp->n_include && !in; i++) in = fnmatch(sp->include[i], key, 0) == 0;
  for (size_t i = 0; i < sp->n_exclude && in; i++) in = fnmatch(sp->exclude[i], key, 0) != 0;
  return in;
}

/* "600k" for 600000, "1M" for 1000000, the number otherwise */
static void size_text(char *buf, size_t cap, uint64_t n) {
  if (n >= 1000000u && n % 1000000u == 0)
    snprintf(buf, cap, "%lluM", (unsigned long long)(n / 1000000u));
  else if (n >= 1000u && n % 1000u == 0)
    snprintf(buf, cap, "%lluk", (unsigned long long)(n / 1000u));
  else
    snprintf(buf, cap, "%llu", (unsigned long long)n);
}

/* A series', bar's or panel's name: the plot's label with "{p}", "{k}", "{v}" filled in, then the workload
 * (several in the runs), the batch (not 1), the size (n > 0) and the device (several runs); quotes become
 * apostrophes so that the data file's quoted fields stay whole. */
static void plot_label(char *buf, size_t cap, const plot_ctx *p, size_t run, const hx_study_plot *sp,
                       const hx_run_row *k, uint64_t n) {
  size_t at = 0;
  buf[0] = '\0';
  for (const char *c = sp->label; *c && at + 1 < cap; c++) {
    const char *ins = NULL;
    if (c[0] == '{' && c[1] && c[2] == '}') {
      if (c[1] == 'p') ins = pipeline_display(p, k->pipeline);
      if (c[1] == 'k') ins = k->kernel;
      if (c[1] == 'v') ins = k->variant;
    }
    if (ins) {
      at += (size_t)snprintf(buf + at, cap - at, "%s", ins);
      c += 2;
    } else {
      buf[at++] = *c;
      buf[at] = '\0';
    }
    if (at >= cap) at = cap - 1;
  }
  char sz[32] = "";
  if (n) size_text(sz, sizeof sz, n);
  const char *d = p->n_runs > 1 ? p->label[run] : "";
  if (!strncmp(d, "NVIDIA ", 7)) d += 7;
  char batch[32] = "";
  if (k->batch != 1) snprintf(batch, sizeof batch, " batch %u", (unsigned)k->batch);
  snprintf(buf + at, cap - at, "%s%s%s%s%s%s%s%s", p->many_workloads ? " " : "", p->many_workloads ? k->workload : "",
           batch, n ? " " : "", sz, *d ? " (" : "", d, *d ? ")" : "");
  for (char *c = buf; *c; c++)
    if (*c == '"') *c = '\'';
}

/* A fitted series: its line from the smallest to the largest size, drawn in its data block's colour. */
typedef struct plot_fit {
  double x0, x1, slope, icept;
  size_t colour;
  char name[300];
} plot_fit;

/* One block per matching series of sp (and, with metric2, the same series' second metric after them, in the
 * same order); *nser counts the first. Fits of 3 sizes or more go to fits (at most cap). Returns the blocks. */
static size_t plot_series(FILE *f, const plot_ctx *p, const hx_study_plot *sp, int second, size_t *nser,
                          plot_fit *fits, size_t *nfit, size_t cap, xsizes *xs) {
  const char *metric = second ? sp->metric2 : sp->metric;
  size_t blocks = 0, off = 0;
  for (size_t r = 0; r < p->n_runs; off += p->runs[r].n_rows, r++) {
    const hx_run_row **rows = p->sorted + off;
    const size_t n = p->runs[r].n_rows;
    for (size_t i = 0, j; i < n; i = j) {
      for (j = i; j < n && same_series(rows[i], rows[j]); j++) {}
      const hx_run_row *k = rows[i];
      if (!plot_matches(sp, k)) continue;
      int has1 = 0, has2 = !sp->metric2;
      for (size_t q = i; q < j; q++) {
        has1 |= !strcmp(rows[q]->metric, sp->metric);
        if (sp->metric2) has2 |= !strcmp(rows[q]->metric, sp->metric2);
      }
      if (!has1 || !has2) continue;
      double x[256], y[256];
      size_t m = 0;
      for (size_t q = i; q < j && m < 256; q++)
        if (!strcmp(rows[q]->metric, metric) && isfinite(rows[q]->value))
          x[m] = (double)rows[q]->n_points, y[m] = rows[q]->value * sp->scale, m++;
      char name[256], legend[512];
      plot_label(name, sizeof name, p, r, sp, k, 0);
      snprintf(legend, sizeof legend, "%s", name);
      double b, a, r2;
      if (!second && sp->fit && m >= 3 && hx_plot_linear_fit(x, y, m, &b, &a, &r2) == HX_OK && *nfit < cap) {
        snprintf(legend, sizeof legend, "%s: %.3g %s per 100k points, R² %.4f", name, b * 1e5,
                 sp->unit ? sp->unit : "", r2);
        plot_fit *ft = &fits[(*nfit)++];
        *ft = (plot_fit){x[0], x[m - 1], b, a, blocks + 1, ""};
        snprintf(ft->name, sizeof ft->name, "%s fit", name);
      }
      fprintf(f, "\"%s/%s/%s %s %s\" \"%s\"\n", k->pipeline, k->kernel, k->variant, k->workload, metric, legend);
      for (size_t q = 0; q < m; q++) {
        double e = 0.0;
        for (size_t t = i; t < j && sp->err_metric && !second; t++)
          if ((double)rows[t]->n_points == x[q] && !strcmp(rows[t]->metric, sp->err_metric)) e = rows[t]->value;
        fprintf(f, "%.0f %.10g %.10g\n", x[q], y[q], e * sp->scale);
        xsizes_add(xs, (uint64_t)x[q]);
      }
      fputs("\n\n", f);
      blocks++;
      if (!second) (*nser)++;
    }
  }
  return blocks;
}

static hx_status plot_lines(const plot_ctx *p, const hx_study_plot *sp, const char *scripts, const char *outdir,
                            int *made, hx_err *err) {
  char path[PL_PATH + 64];
  snprintf(path, sizeof path, "%s/%s.dat", outdir, sp->name);
  FILE *f = fopen(path, "w");
  if (!f) return hx_errf(err, HX_EIO, "%s: %s", path, strerror(errno));
  plot_fit fits[64];
  size_t nser = 0, nfit = 0;
  xsizes xs = {{0}, 0, 0};
  size_t blocks = plot_series(f, p, sp, 0, &nser, fits, &nfit, 64, &xs);
  if (sp->metric2 && blocks) blocks += plot_series(f, p, sp, 1, &nser, fits, &nfit, 0, &xs);
  char fcols[512] = "";
  for (size_t i = 0; i < nfit; i++) { /* after the data: two points of each line */
    fprintf(f, "\"%s\" \"\"\n%.0f %.10g 0\n%.0f %.10g 0\n\n\n", fits[i].name, fits[i].x0,
            fits[i].icept + fits[i].slope * fits[i].x0, fits[i].x1, fits[i].icept + fits[i].slope * fits[i].x1);
    const size_t at = strlen(fcols);
    snprintf(fcols + at, sizeof fcols - at, "%zu ", fits[i].colour);
  }
  HX_TRY(dat_close(f, path, err));
  if (blocks == 0) {
    remove(path);
    return HX_OK;
  }
  char params[2 * PL_PATH + 2048], xt[PL_XTICS * 50];
  xsizes_param(xt, sizeof xt, &xs);
  if (sp->fit)
    snprintf(params, sizeof params, "datafile='%s'; title='%s'; ylabel='%s'; errors=%d; nser=%zu; fcols='%s'%s", path,
             sp->title, sp->ylabel, sp->err_metric != NULL, nser, fcols, xt);
  else
    snprintf(params, sizeof params,
             "datafile='%s'; title='%s'; ylabel='%s'; logy=0; errors=%d; paired=%zu; ymin0=1%s", path, sp->title,
             sp->ylabel, sp->err_metric != NULL, sp->metric2 ? nser : (size_t)0, xt);
  HX_TRY(render(p, scripts, sp->fit ? "fit.gp" : "lines.gp", params, outdir, sp->name, err));
  *made = 1;
  return HX_OK;
}

/* A bar (or treemap panel): one (run, pipeline, variant, workload) at batch 1, at its largest size n. */
typedef struct plot_bar {
  size_t run;
  const hx_run_row *k;
  uint64_t n;
  size_t pattern; /* the first of the plot's include patterns that it matches (plot_pattern) */
} plot_bar;

/* The index of sp's first include pattern that row r matches (n_include when none). */
static size_t plot_pattern(const hx_study_plot *sp, const hx_run_row *r) {
  char key[512];
  snprintf(key, sizeof key, "%s/%s/%s", r->pipeline, r->kernel, r->variant);
  size_t i = 0;
  while (i < sp->n_include && fnmatch(sp->include[i], key, 0) != 0) i++;
  return i;
}

/* The bars of sp and their stacks (kernels, in the order the runs recorded them). Bars follow the runs, then the
 * include patterns they match (a study lists one pattern a pipeline: its configurations stand together however the
 * sizes interleaved them), then the order recorded. */
static size_t plot_bars(const plot_ctx *p, const hx_study_plot *sp, plot_bar *bars, size_t cap, const char **stacks,
                        size_t *nst, size_t scap) {
  size_t nb = 0;
  *nst = 0;
  for (size_t r = 0; r < p->n_runs; r++)
    for (size_t i = 0; i < p->runs[r].n_rows; i++) {
      const hx_run_row *w = &p->runs[r].rows[i];
      if (w->batch != 1 || strcmp(w->metric, sp->metric) || !plot_matches(sp, w)) continue;
      size_t b = 0;
      while (b < nb && !(bars[b].run == r && !strcmp(bars[b].k->pipeline, w->pipeline) &&
                         !strcmp(bars[b].k->variant, w->variant) && !strcmp(bars[b].k->workload, w->workload)))
        b++;
      if (b == nb && nb < cap) bars[nb++] = (plot_bar){r, w, 0, plot_pattern(sp, w)};
      if (b < nb && w->n_points > bars[b].n) bars[b].n = w->n_points;
      size_t s = 0;
      while (s < *nst && strcmp(stacks[s], w->kernel)) s++;
      if (s == *nst && *nst < scap) stacks[(*nst)++] = w->kernel;
    }
  for (size_t i = 1; i < nb; i++) { /* stable insertion sort by (run, pattern) */
    const plot_bar b = bars[i];
    size_t j = i;
    while (j > 0 && (bars[j - 1].run > b.run || (bars[j - 1].run == b.run && bars[j - 1].pattern > b.pattern))) {
      bars[j] = bars[j - 1];
      j--;
    }
    bars[j] = b;
  }
  return nb;
}

/* metric x scale of a bar's stack (0 when the bar has none) */
static double bar_value(const plot_ctx *p, const hx_study_plot *sp, const plot_bar *b, const char *kernel) {
  const hx_run *r = &p->runs[b->run];
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (w->batch == 1 && w->n_points == b->n && !strcmp(w->kernel, kernel) && !strcmp(w->metric, sp->metric) &&
        !strcmp(w->pipeline, b->k->pipeline) && !strcmp(w->variant, b->k->variant) &&
        !strcmp(w->workload, b->k->workload) && isfinite(w->value) && w->value > 0.0)
      return w->value * sp->scale;
  }
  return 0.0;
}

static hx_status plot_breakdown(const plot_ctx *p, const hx_study_plot *sp, const char *scripts, const char *outdir,
                                int *made, hx_err *err) {
  plot_bar bars[32];
  const char *stacks[32];
  size_t nst;
  const size_t nb = plot_bars(p, sp, bars, 32, stacks, &nst, 32);
  if (nb == 0) return HX_OK;
  char path[PL_PATH + 64];
  snprintf(path, sizeof path, "%s/%s.dat", outdir, sp->name);
  FILE *f = fopen(path, "w");
  if (!f) return hx_errf(err, HX_EIO, "%s: %s", path, strerror(errno));
  size_t panels = 0;
  if (sp->kind == HX_PLOT_STACKED) {
    fputs("\"bar\"", f);
    for (size_t s = 0; s < nst; s++) fprintf(f, " \"%s\"", stacks[s]);
    fputs(" \"total\"\n", f);
  }
  for (size_t b = 0; b < nb; b++) {
    char name[256];
    plot_label(name, sizeof name, p, bars[b].run, sp, bars[b].k, bars[b].n);
    double v[32], total = 0.0;
    for (size_t s = 0; s < nst; s++) total += v[s] = bar_value(p, sp, &bars[b], stacks[s]);
    if (sp->kind == HX_PLOT_STACKED) {
      fprintf(f, "\"%s\"", name);
      for (size_t s = 0; s < nst; s++) fprintf(f, " %.10g", v[s]);
      fprintf(f, " %.10g\n", total);
      continue;
    }
    hx_rect rect[32];
    if (!(total > 0.0) || hx_treemap_squarify(rect, v, nst, 1.1 * (double)panels, 0.0, 1.0, 1.0) != HX_OK) continue;
    fprintf(f, "%.6f %.6f %.6f %.6f -1 \"%s\" \"%.4g %s in all\" \"\"\n", 1.1 * (double)panels + 0.5,
            1.1 * (double)panels + 0.5, 1.09, 1.09, name, total, sp->unit ? sp->unit : "");
    for (size_t s = 0; s < nst; s++)
      if (v[s] > 0.0)
        fprintf(f, "%.6f %.6f %.6f %.6f %zu \"%s\" \"%.3g %s\" \"%.0f%%\"\n", rect[s].x, rect[s].x + rect[s].w,
                rect[s].y, rect[s].y + rect[s].h, s + 1, stacks[s], v[s], sp->unit ? sp->unit : "", 100.0 * v[s] / total);
    panels++;
  }
  HX_TRY(dat_close(f, path, err));
  if (sp->kind == HX_PLOT_TREEMAP && panels == 0) {
    remove(path);
    return HX_OK;
  }
  /* the treemap's legend: one word per colour (a name with a space or quote is left out: its word would split) */
  char names[1024] = "";
  for (size_t s = 0, at = 0; s < nst && at < sizeof names; s++)
    at += (size_t)snprintf(names + at, sizeof names - at, "%s ",
                           strpbrk(stacks[s], " \t'\"") || !stacks[s][0] ? "?" : stacks[s]);
  char params[2 * PL_PATH + 2048];
  if (sp->kind == HX_PLOT_STACKED)
    snprintf(params, sizeof params, "datafile='%s'; title='%s'; ylabel='%s'; ncols=%zu", path, sp->title, sp->ylabel,
             nst + 1);
  else
    snprintf(params, sizeof params, "datafile='%s'; title='%s'; panels=%zu; names='%s'", path, sp->title, panels, names);
  HX_TRY(render(p, scripts, sp->kind == HX_PLOT_STACKED ? "bars.gp" : "tiles.gp", params, outdir, sp->name, err));
  *made = 1;
  return HX_OK;
}

/* The study's figures; made[i] = 1 for each drawn (0: no rows). */
static hx_status study_plots(const plot_ctx *p, const char *scripts, const char *outdir, int *made, hx_err *err) {
  for (size_t i = 0; i < p->study->n_plots; i++) {
    const hx_study_plot *sp = &p->study->plots[i];
    made[i] = 0;
    if (sp->kind == HX_PLOT_LINES)
      HX_TRY(plot_lines(p, sp, scripts, outdir, &made[i], err));
    else
      HX_TRY(plot_breakdown(p, sp, scripts, outdir, &made[i], err));
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

/* ---- headline tables ------------------------------------------------------------------------------- */

/* Kernels of `pipeline` named prefix*, in the order the run recorded them (the sweep's order). */
static size_t kernels_like(const hx_run *r, const char *pipeline, const char *prefix, hx_study_col *cols, size_t n,
                           size_t cap) {
  for (size_t i = 0; i < r->n_rows && n < cap; i++) {
    const hx_run_row *w = &r->rows[i];
    if (strcmp(w->pipeline, pipeline) || strncmp(w->kernel, prefix, strlen(prefix)) || strcmp(w->metric, "time_mean"))
      continue;
    size_t k = 0;
    while (k < n && !(!strcmp(cols[k].pipeline, pipeline) && !strcmp(cols[k].kernel, w->kernel))) k++;
    if (k == n) cols[n++] = (hx_study_col){w->pipeline, w->kernel};
  }
  return n;
}

double hx_plot_best_value(const hx_run *r, const char *pipeline, const char *kernel, const char *workload,
                          uint64_t n_points, const char *metric, const char **variant) {
  hx_run_row key = {0};
  key.pipeline = (char *)(uintptr_t)pipeline;
  key.kernel = (char *)(uintptr_t)kernel;
  key.workload = (char *)(uintptr_t)workload;
  key.batch = 1;
  const hx_run_row *b = best_variant(r, &key);
  *variant = b ? b->variant : "";
  if (!b) return NAN;
  for (size_t i = 0; i < r->n_rows; i++)
    if (same_series(&r->rows[i], b) && r->rows[i].n_points == n_points && !strcmp(r->rows[i].metric, metric))
      return r->rows[i].value;
  return NAN;
}

static double best_value(const hx_run *r, const hx_study_col *c, const char *workload, uint64_t n_points,
                         const char *metric, const char **variant) {
  return hx_plot_best_value(r, c->pipeline, c->kernel, workload, n_points, metric, variant);
}

/* The column of kernel `last` (a reference, not a contender: the run may record it first) goes after the others. */
static void column_last(hx_study_col *cols, size_t n, const char *last) {
  for (size_t k = 0; k + 1 < n; k++)
    if (!strcmp(cols[k].kernel, last)) {
      const hx_study_col c = cols[k];
      memmove(cols + k, cols + k + 1, (n - k - 1) * sizeof *cols);
      cols[n - 1] = c;
      break;
    }
}

/* A cell's number (NAN when its rows are missing; *v names the variant): time_mean, tflops, or bytes /
 * time_median in GB/s. */
static double cell_value(const hx_run *r, const hx_study_col *c, const char *workload, uint64_t n, hx_study_cell kind,
                         const char **v) {
  if (kind == HX_CELL_TFLOPS) return best_value(r, c, workload, n, "tflops", v);
  if (kind != HX_CELL_GBS) return best_value(r, c, workload, n, "time_mean", v);
  const double t = best_value(r, c, workload, n, "time_median", v), b = best_value(r, c, workload, n, "bytes", v);
  const double gbs = b / (t * 1e-3) * 1e-9;
  return isfinite(gbs) && t > 0.0 ? gbs : (double)NAN;
}

/* text with each "{ctx}" replaced by value and each "{dtype}" by dtype */
static void put_with(FILE *f, const char *text, const char *value, const char *dtype) {
  for (const char *c = text; *c; c++) {
    if (!strncmp(c, "{ctx}", 5)) {
      fputs(value, f);
      c += 4;
    } else if (!strncmp(c, "{dtype}", 7)) {
      fputs(dtype, f);
      c += 6;
    } else {
      fputc(*c, f);
    }
  }
}

/* One table: a row per size of the workload, a column per kernel (fastest variant, named in the cell). */
static void headline_table(FILE *f, const hx_run *r, const char *workload, const uint64_t *sizes, size_t ns,
                           const hx_study_col *cols, size_t nc, hx_study_cell kind, const char *first_head) {
  if (nc == 0) return;
  fputs("| n_points |", f);
  for (size_t c = 0; c < nc; c++)
    fprintf(f, " %s%s%s |", c == 0 && first_head ? first_head : "", c == 0 && first_head ? " " : "", cols[c].kernel);
  fputs("\n|---:|", f);
  for (size_t c = 0; c < nc; c++) fputs("---:|", f);
  fputc('\n', f);
  const char *cc = hx_run_context(r, "ceiling_copy_gbs");
  double ceil_gbs = cc ? strtod(cc, NULL) : (double)NAN;
  for (size_t s = 0; s < ns; s++) {
    fprintf(f, "| %llu |", (unsigned long long)sizes[s]);
    double first = NAN;
    for (size_t c = 0; c < nc; c++) {
      const char *v = "";
      const double t = cell_value(r, &cols[c], workload, sizes[s], kind, &v);
      if (c == 0) first = t;
      if (!isfinite(t))
        fputs(" - |", f);
      else if (kind == HX_CELL_TFLOPS)
        fprintf(f, " %.1f (%s) |", t, v);
      else if (kind == HX_CELL_GBS && isfinite(ceil_gbs) && ceil_gbs > 0.0)
        fprintf(f, " %.0f (%.0f%%, %s) |", t, 100.0 * t / ceil_gbs, v);
      else if (kind == HX_CELL_GBS)
        fprintf(f, " %.0f (%s) |", t, v);
      else if (kind == HX_CELL_VS_FIRST && c > 0 && isfinite(first) && t > 0.0)
        fprintf(f, " %.4g (%s, %.2fx) |", t, v, first / t);
      else
        fprintf(f, " %.4g (%s) |", t, v);
    }
    fputc('\n', f);
  }
  fputc('\n', f);
}

/* The value of a pipeline total (kernel "total") at one size; NAN when absent. */
static double total_value(const hx_run *r, const char *pipeline, const char *workload, uint64_t n_points,
                          const char *metric) {
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (!strcmp(w->kernel, "total") && !strcmp(w->pipeline, pipeline) && !strcmp(w->workload, workload) &&
        w->n_points == n_points && w->batch == 1 && !strcmp(w->metric, metric))
      return w->value;
  }
  return NAN;
}

/* A pipeline's peak device memory as it would be built, from its fastest variants: the most that any
 * mem_peak row of a headline stage (main_stage) run by its fastest variant shows. Each such row is the
 * arena's high-water mark while that stage ran, what earlier stages still held included. NAN when the
 * run has no per-stage memory rows for the pipeline (older runs: the pipeline total stands in). */
static double stages_peak(const plot_ctx *p, const hx_run *r, const char *pipeline, const char *workload,
                          uint64_t n_points) {
  double best = NAN;
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (strcmp(w->metric, "mem_peak") || strcmp(w->pipeline, pipeline) || strcmp(w->workload, workload) ||
        w->n_points != n_points || w->batch != 1 || !strcmp(w->kernel, "total"))
      continue;
    if (main_stage(p, r, w) < 0 || !is_best_variant(r, w)) continue;
    if (!(w->value <= best)) best = w->value; /* also takes the first value over NAN */
  }
  return best;
}

/* Peak device memory per pipeline (MiB): with the fastest variant of each headline stage (stages_peak;
 * the pipeline total where a run has no per-stage rows), the study's ratio of two pipelines' peaks where
 * both ran, the high-water mark over everything the sweep ran in the pipeline (every variant, slow
 * baselines included) when that differs, and cudaMemGetInfo's figure (mem_used) beside them. */
static void memory_table(FILE *f, const plot_ctx *p, const hx_run *r, const char *workload, const uint64_t *sizes,
                         size_t ns) {
  const char *pipes[8];
  size_t np = 0;
  for (size_t i = 0; i < r->n_rows && np < 8; i++) {
    const hx_run_row *w = &r->rows[i];
    if (strcmp(w->kernel, "total") || strcmp(w->metric, "mem_peak") || strcmp(w->workload, workload) ||
        own_section(p, w->pipeline))
      continue;
    size_t k = 0;
    while (k < np && strcmp(pipes[k], w->pipeline)) k++;
    if (k == np) pipes[np++] = w->pipeline;
  }
  if (np == 0) return;
  const char *const *rp = p->study->mem_ratio; /* the pair compared, [0] / [1] */
  int has_num = 0, has_den = 0, used = 0, staged = 0;
  for (size_t k = 0; k < np; k++) {
    has_num |= rp[0] && !strcmp(pipes[k], rp[0]);
    has_den |= rp[1] && !strcmp(pipes[k], rp[1]);
  }
  for (size_t s = 0; s < ns; s++)
    for (size_t k = 0; k < np; k++) {
      used |= isfinite(total_value(r, pipes[k], workload, sizes[s], "mem_used"));
      staged |= isfinite(stages_peak(p, r, pipes[k], workload, sizes[s]));
    }
  const int ratio = has_num && has_den;
  char ratio_head[160] = "";
  if (ratio) snprintf(ratio_head, sizeof ratio_head, "%s / %s", pipeline_display(p, rp[0]), pipeline_display(p, rp[1]));
  const size_t nu = used ? np : 0;   /* cudaMemGetInfo columns (nvbench/paper timing only) */
  const size_t na = staged ? np : 0; /* every-variant columns */
  if (staged)
    fputs("Peak device memory per pipeline (MiB), built from its fastest variants: the most the arena held while "
          "the fastest variant of one of its headline stages ran (its own buffers)",
          f);
  else
    fputs("Peak device memory per pipeline (MiB): the arena's high-water mark over the pipeline (its own "
          "buffers)",
          f);
  if (ratio) fprintf(f, ", %s of those peaks", ratio_head);
  if (staged) {
    fputs(", the arena's high-water mark over every variant the sweep ran in the pipeline", f);
    if (p->study->mem_all) fprintf(f, " (%s)", p->study->mem_all);
  }
  if (used)
    fputs(", and the most cudaMemGetInfo showed in use after a stage beyond the sweep's start (CUDA context, "
          "libraries, caches included)",
          f);
  fputs(".\n\n| n_points |", f);
  for (size_t k = 0; k < np; k++) fprintf(f, " %s peak |", pipeline_display(p, pipes[k]));
  if (ratio) fprintf(f, " %s |", ratio_head);
  for (size_t k = 0; k < na; k++) fprintf(f, " %s all variants |", pipeline_display(p, pipes[k]));
  for (size_t k = 0; k < nu; k++) fprintf(f, " %s cudaMemGetInfo |", pipeline_display(p, pipes[k]));
  fputs("\n|---:|", f);
  for (size_t k = 0; k < np + na + nu + (size_t)ratio; k++) fputs("---:|", f);
  fputc('\n', f);
  for (size_t s = 0; s < ns; s++) {
    fprintf(f, "| %llu |", (unsigned long long)sizes[s]);
    double pk[8];
    for (size_t k = 0; k < np; k++) {
      pk[k] = stages_peak(p, r, pipes[k], workload, sizes[s]);
      if (!isfinite(pk[k])) pk[k] = total_value(r, pipes[k], workload, sizes[s], "mem_peak");
      if (isfinite(pk[k])) fprintf(f, " %.1f |", pk[k] / 1048576.0);
      else fputs(" - |", f);
    }
    if (ratio) {
      double a = NAN, b = NAN;
      for (size_t k = 0; k < np; k++) {
        if (!strcmp(pipes[k], rp[0])) a = pk[k];
        if (!strcmp(pipes[k], rp[1])) b = pk[k];
      }
      if (isfinite(a) && isfinite(b) && b > 0.0) fprintf(f, " %.2fx |", a / b);
      else fputs(" - |", f);
    }
    const char *const cols[2] = {"mem_peak", "mem_used"};
    const size_t ncol[2] = {na, nu};
    for (int c = 0; c < 2; c++)
      for (size_t k = 0; k < ncol[c]; k++) {
        double v = total_value(r, pipes[k], workload, sizes[s], cols[c]);
        if (isfinite(v)) fprintf(f, " %.1f |", v / 1048576.0);
        else fputs(" - |", f);
      }
    fputc('\n', f);
  }
  fputc('\n', f);
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return (a > b) - (a < b);
}

/* Time ratios of the other runs against the first (time_mean, per key and size). headline: only the
 * pipeline totals and the main stages, each by the variant that is fastest in the first run (what the
 * figures draw), under its own heading near the top; otherwise every timed key. */
static void ratio_table(FILE *f, const plot_ctx *p, int headline) {
  const hx_run *b = &p->runs[0];
  if (headline)
    fprintf(f, "## Devices: headline stages against %s (time_mean of the other run / this one; < 1 = faster; "
            "every kernel at the end of this report)\n\n| key | n_points |", p->label[0]);
  else
    fprintf(f, "## Ratios against %s, every kernel (time_mean of the other run / this one; < 1 = faster)\n\n"
            "| key | n_points |", p->label[0]);
  for (size_t r = 1; r < p->n_runs; r++) fprintf(f, " %s |", p->label[r]);
  fputs("\n|---|---:|", f);
  for (size_t r = 1; r < p->n_runs; r++) fputs("---:|", f);
  fputc('\n', f);
  for (size_t i = 0; i < b->n_rows; i++) {
    const hx_run_row *w = &b->rows[i];
    if (strcmp(w->metric, "time_mean") != 0) continue;
    if (headline && (own_section(p, w->pipeline) ||
                     !((!strcmp(w->kernel, "total") || main_stage(p, b, w) >= 0) && is_best_variant(b, w))))
      continue;
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

/* 1 when a headline table of the study names the pipeline: its rows give the workloads and sizes. */
static int table_pipeline(const plot_ctx *p, const char *pipeline) {
  for (size_t t = 0; t < p->study->n_tables; t++)
    for (size_t g = 0; g < p->study->tables[t].n_groups; g++)
      if (!strcmp(p->study->tables[t].groups[g].pipeline, pipeline)) return 1;
  return 0;
}

/* One study table for a run and workload (see hx_study_table). */
static void study_table(FILE *f, const hx_run *rr, const hx_study_table *t, const char *workload, const uint64_t *sizes,
                        size_t ns) {
  hx_study_col cols[16];
  size_t nc = 0;
  int every = 1, any = 0;
  for (size_t g = 0; g < t->n_groups; g++) {
    const size_t before = nc;
    nc = kernels_like(rr, t->groups[g].pipeline, t->groups[g].kernel, cols, nc, 16);
    every &= nc > before;
    any |= nc > before;
  }
  size_t cells = 0;
  for (size_t s = 0; s < ns && (t->every_group ? every : any); s++)
    for (size_t c = 0; c < nc; c++) {
      const char *v;
      if (isfinite(cell_value(rr, &cols[c], workload, sizes[s], t->cell, &v))) cells++;
    }
  if (cells == 0) { /* left out, and why: which group has no rows, or which rows the cells need */
    fputs("Left out: the table of", f);
    for (size_t g = 0; g < t->n_groups; g++)
      fprintf(f, "%s `%s/%s*`", g == 0 ? "" : g + 1 == t->n_groups ? " and" : ",", t->groups[g].pipeline,
              t->groups[g].kernel);
    if (!(t->every_group ? every : any)) {
      fputs(", as this run has no", f);
      hx_study_col probe[16];
      for (size_t g = 0, k = 0; g < t->n_groups; g++)
        if (kernels_like(rr, t->groups[g].pipeline, t->groups[g].kernel, probe, 0, 16) == 0)
          fprintf(f, "%s `%s/%s*`", k++ ? " or" : "", t->groups[g].pipeline, t->groups[g].kernel);
      fputs(" rows", f);
    } else {
      const char *need = t->cell == HX_CELL_GBS      ? "`bytes` and `time_median`"
                         : t->cell == HX_CELL_TFLOPS ? "`tflops`"
                                                     : "`time_mean`";
      fprintf(f, ", as none of its cells has its rows in this run: each needs the %s of its kernel and size", need);
    }
    if (cpu_only(rr))
      fprintf(f, " (a CPU-only run, no CUDA device%s%s)", t->missing ? ": " : "", t->missing ? t->missing : "");
    fputs(".\n\n", f);
    return;
  }
  char key[128] = ""; /* intro_key with its "{dtype}" filled in */
  if (t->intro_key) {
    const char *dt = strstr(t->intro_key, "{dtype}");
    if (dt)
      snprintf(key, sizeof key, "%.*s%s%s", (int)(dt - t->intro_key), t->intro_key, hx_run_dtype(rr), dt + 7);
    else
      snprintf(key, sizeof key, "%s", t->intro_key);
  }
  const char *v = t->intro_key ? hx_run_context(rr, key) : NULL;
  if (t->intro) {
    put_with(f, t->intro, v ? v : cpu_only(rr) ? "not measured (no CUDA device)" : "not measured", hx_run_dtype(rr));
    fputs("\n\n", f);
  }
  if (t->last) column_last(cols, nc, t->last);
  headline_table(f, rr, workload, sizes, ns, cols, nc, t->cell, t->first_head);
  if (t->note)
    for (size_t k = ns; k > 0; k--) /* the largest size the note has its rows at */
      if (t->note(f, rr, workload, sizes[k - 1], cols, nc)) break;
}

/* Per run and workload: the study's headline tables, then the peak memory table; the fastest variant of
 * each kernel per size (the selection the figures use). */
static void write_headline(FILE *f, const plot_ctx *p) {
  fputs("## Headline (fastest variant of each kernel, named in each cell)\n\n", f);
  for (size_t r = 0; r < p->n_runs; r++) {
    const hx_run *rr = &p->runs[r];
    const char *wls[16];
    size_t nw = 0;
    for (size_t i = 0; i < rr->n_rows; i++) {
      const hx_run_row *w = &rr->rows[i];
      if (!table_pipeline(p, w->pipeline)) continue;
      size_t k = 0;
      while (k < nw && strcmp(wls[k], w->workload)) k++;
      if (k == nw && nw < 16) wls[nw++] = w->workload;
    }
    for (size_t iw = 0; iw < nw; iw++) {
      uint64_t sizes[64];
      size_t ns = 0;
      for (size_t i = 0; i < rr->n_rows; i++) {
        const hx_run_row *w = &rr->rows[i];
        if (!table_pipeline(p, w->pipeline) || strcmp(w->workload, wls[iw]) || w->batch != 1 ||
            strcmp(w->metric, "time_mean"))
          continue;
        size_t k = 0;
        while (k < ns && sizes[k] != w->n_points) k++;
        if (k == ns && ns < 64) sizes[ns++] = w->n_points;
      }
      qsort(sizes, ns, sizeof *sizes, cmp_u64);
      if (p->n_runs > 1 || nw > 1) fprintf(f, "### %s, %s\n\n", p->label[r], wls[iw]);
      for (size_t t = 0; t < p->study->n_tables; t++) study_table(f, rr, &p->study->tables[t], wls[iw], sizes, ns);
      if (ns > 0) memory_table(f, p, rr, wls[iw], sizes, ns);
    }
  }
}

/* The study's section: its text, then each of its figures with the text under it. */
static void write_section(FILE *f, const plot_ctx *p, const int *made, const char *gnuplot_note) {
  const hx_study *st = p->study;
  fprintf(f, "## %s\n\n", st->section);
  if (st->section_text) st->section_text(f, p->runs, p->n_runs, p->label);
  if (gnuplot_note && st->n_plots) fprintf(f, "%s\n\n", gnuplot_note);
  for (size_t i = 0; i < st->n_plots; i++) {
    const hx_study_plot *sp = &st->plots[i];
    if (made[i]) /* a figure without rows has no heading: the section's text says what the runs lack */
      fprintf(f, "### %s\n\n![%s](plots/%s.png) ([SVG](plots/%s.svg))\n\n", sp->title, sp->name, sp->name, sp->name);
    else if (gnuplot_note)
      fprintf(f, "### %s\n\n", sp->title);
    if (sp->after) sp->after(f, p->runs, p->n_runs, p->label);
  }
}

static void write_report(FILE *f, const plot_ctx *p, const char *const *figs, const int *made, const char *const *what,
                         const char *const *why, size_t nf, const int *made_own, const char *gnuplot_note) {
  fprintf(f, "# %s\n\n", p->study->title ? p->study->title : "report");
  /* an incomplete run (drawn only when the caller let it through) is said under the title, so the report never
   * passes for a whole run; part of the report itself, so it is written with it, all or nothing */
  for (size_t r = 0; r < p->n_runs; r++)
    if (p->runs[r].incomplete) {
      char inc[512];
      fprintf(f, "> **%s: %s.** Drawn from the cases it holds: the figures and tables show only those.\n\n",
              p->runs[r].dir, hx_run_incomplete_why(&p->runs[r], inc, sizeof inc));
    }
  fputs("| run | device | git commit | date | status |\n|---|---|---|---|---|\n", f);
  for (size_t r = 0; r < p->n_runs; r++) {
    const char *c = hx_run_context(&p->runs[r], "git_commit"), *d = hx_run_context(&p->runs[r], "date_utc");
    if (!d) d = hx_run_context(&p->runs[r], "date"); /* runs written before the key was date_utc */
    const char *s = hx_run_context(&p->runs[r], "status");
    fprintf(f, "| %s | %s | %s | %s | %s%s |\n", p->runs[r].dir, p->label[r], c ? c : "?", d ? d : "?",
            s ? s : "?", p->runs[r].incomplete ? " (incomplete)" : "");
  }
  for (size_t r = 0; r < p->n_runs; r++) {
    const hx_run *rr = &p->runs[r];
    const char *cb = hx_run_context(rr, "ceiling_copy_gbs");
    const char *g1 = hx_run_context(rr, "ceiling_gemm_bf16_tflops");
    const char *g2 = hx_run_context(rr, "ceiling_gemm_fp16_tflops");
    const char *ct = hx_run_context(rr, "counters"), *why_not = hx_run_context(rr, "ceilings");
    const char *nm = "not measured";
    /* a run whose time budget lowered the sampling caps says so on its line, where its numbers are read (the
     * README's block) */
    const char *cut = hx_run_context(rr, "time_budget_cut"), *cap = hx_run_context(rr, "stage_max_time_min_s");
    const char *bud = hx_run_context(rr, "time_budget_s");
    char cutnote[320] = "";
    if (cut && !strcmp(cut, "yes"))
      snprintf(cutnote, sizeof cutnote,
               "**the sweep's time budget (%s s) lowered the GPU stages' sampling cap to %s s**: medians from "
               "fewer cold samples (`noise_reached` 0 where a stage stopped on it; `--time-budget 0` or fewer sizes "
               "sample in full)",
               bud ? bud : "?", cap ? cap : "?");
    if (cb || g1 || g2)
      fprintf(f, "%s%s: measured ceilings: copy %s GB/s (read + write), cuBLAS GEMM bf16 %s / fp16 %s TFLOP/s; "
                 "counters: %s%s%s\n",
              r ? "" : "\n", p->label[r], cb ? cb : nm, g1 ? g1 : nm, g2 ? g2 : nm, ct ? ct : nm,
              cutnote[0] ? "; " : "", cutnote);
    else if (why_not || ct || cpu_only(rr))
      fprintf(f, "%s%s: ceilings not measured (%s); counters: %s%s%s\n", r ? "" : "\n", p->label[r],
              why_not ? why_not : cpu_only(rr) ? "no CUDA device: the run timed the CPU references" : "none in the run",
              ct ? ct : "not recorded", cutnote[0] ? "; " : "", cutnote);
    else if (cutnote[0])
      fprintf(f, "%s%s: %s\n", r ? "" : "\n", p->label[r], cutnote);
  }
  fputc('\n', f);
  if (p->study->section) write_section(f, p, made_own, gnuplot_note);
  write_headline(f, p);
  if (p->n_runs > 1) ratio_table(f, p, 1);
  fputs("## Figures\n\n", f);
  if (gnuplot_note) fprintf(f, "%s\n\n", gnuplot_note);
  for (size_t i = 0; i < nf; i++) {
    if (made[i]) {
      fprintf(f, "### %s\n\n![%s](plots/%s.png) ([SVG](plots/%s.svg))\n\n", what[i], figs[i], figs[i], figs[i]);
      if (why[i][0]) fprintf(f, "Left out of this figure: %s.\n\n", why[i]); /* a run without one side */
    } else if (!gnuplot_note) {
      fprintf(f, "### %s\n\nLeft out: %s.\n\n", what[i], why[i][0] ? why[i] : "the run(s) hold no rows for it");
    }
  }
  fputs("## All rows: latency (time_mean +- time_std, ms)\n\n", f);
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
  if (p->n_runs > 1) ratio_table(f, p, 0);
}

/* What stands at out_dir/plots must be a figures directory plot may replace whole: nothing, or a real directory (not
 * a symbolic link: its target's files would be removed) holding no subdirectory (remove_flat_dir would leave it
 * behind, and with it a stray plots.old.<pid>). Anything else is the user's, never moved or deleted: an error
 * naming it, before anything is drawn. */
static hx_status check_plots_dir(const char *final, hx_err *err) {
  struct stat sb;
  if (lstat(final, &sb) != 0) {
    if (errno == ENOENT) return HX_OK;
    return hx_errf(err, HX_EIO, "%s: %s", final, strerror(errno));
  }
  if (!S_ISDIR(sb.st_mode))
    return hx_errf(err, HX_EIO, "%s: exists and is not a directory (plot replaces plots/ with its figures): move it "
                   "away", final);
  DIR *d = opendir(final);
  if (!d) return hx_errf(err, HX_EIO, "%s: %s", final, strerror(errno));
  hx_status st = HX_OK;
  char path[PL_PATH + 300];
  for (struct dirent *e; st == HX_OK && (e = readdir(d)) != NULL;) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", final, e->d_name);
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
      st = hx_errf(err, HX_EIO, "%s: a directory inside plots/ (plot replaces plots/ whole, and would delete it): "
                   "move it away", path);
  }
  closedir(d);
  return st;
}

/* Remove a directory of plain files (a figures directory: no subdirectories). Best effort. */
static void remove_flat_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    char path[PL_PATH + 300];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      remove(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* Remove the figures directories out_dir/plots.tmp.<pid> left by a plot that was killed (SIGKILL, or a signal to a
 * program that does not remove them): those whose process no longer runs on this host (kill(pid, 0) says ESRCH).
 * One still running (another plot into the same folder) keeps its own. Best effort. */
static void remove_stale_plot_dirs(const char *out_dir) {
  DIR *d = opendir(out_dir);
  if (!d) return;
  const long self = (long)getpid();
  char path[PL_PATH + 300];
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    const char *pid_s = e->d_name + strlen("plots.tmp.");
    if (strncmp(e->d_name, "plots.tmp.", strlen("plots.tmp.")) != 0 || !isdigit((unsigned char)*pid_s)) continue;
    char *end;
    errno = 0;
    const long pid = strtol(pid_s, &end, 10);
    if (*end || errno || pid <= 0 || pid == self || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    snprintf(path, sizeof path, "%s/%s", out_dir, e->d_name);
    /* and untouched for an hour: on a file system shared by hosts the pid may be a live plot's on another one */
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && time(NULL) - sb.st_mtime > 3600) remove_flat_dir(path);
  }
  closedir(d);
}

/* Put the finished figures directory tmp in place of final: the old one (if any) is moved aside to `old` first
 * (*had says so) and stays there until the caller removes it, so swap_back can undo the swap while REPORT.md is put in place,
 * and a failure at any step leaves the previous figures whole. */
static hx_status swap_in(const char *tmp, const char *final, const char *old, int *had, hx_err *err) {
  *had = rename(final, old) == 0;
  if (!*had && errno != ENOENT) return hx_errf(err, HX_EIO, "%s: cannot move the previous figures aside: %s", final, strerror(errno));
  if (rename(tmp, final) != 0) {
    const int e = errno;
    if (*had) rename(old, final);
    return hx_errf(err, HX_EIO, "%s: cannot put the new figures in place: %s", final, strerror(e));
  }
  return HX_OK;
}

/* Undo swap_in: the new figures back to tmp (removed by the caller), the old ones back in place; 1 when that
 * worked, 0 when a rename failed (the new figures may still be at final, the old ones at old). */
static int swap_back(const char *tmp, const char *final, const char *old, int had) {
  if (rename(final, tmp) != 0) return 0;
  return !had || rename(old, final) == 0;
}

/* ---- why a figure is left out ------------------------------------------------------------------------- */

/* 1 when the run has a row of `metric` (metric_match) outside the study's own section whose "pipeline/kernel"
 * matches pattern (fnmatch; NULL: any). */
static int run_has(const plot_ctx *p, const hx_run *r, const char *metric, const char *pattern) {
  for (size_t i = 0; i < r->n_rows; i++) {
    const hx_run_row *w = &r->rows[i];
    if (own_section(p, w->pipeline) || !metric_match(metric, w->metric)) continue;
    if (!pattern || key_matches(&pattern, 1, w)) return 1;
  }
  return 0;
}

/* "this run" with one run, its label with several */
static const char *which_run(const plot_ctx *p, size_t r) { return p->n_runs > 1 ? p->label[r] : "this run"; }

/* When run r holds rows of the study's own-section pipelines only (a sweep of the backbones alone), says so in buf
 * and returns 1: the generic figures have nothing of it to draw. */
static int section_only(char *buf, size_t cap, const plot_ctx *p, size_t r) {
  const hx_run *rr = &p->runs[r];
  if (rr->n_rows == 0) return 0;
  for (size_t i = 0; i < rr->n_rows; i++)
    if (!own_section(p, rr->rows[i].pipeline)) return 0;
  cat(buf, cap, "%s%s holds only pipelines shown in the section \"%s\" above", buf[0] ? "; " : "", which_run(p, r),
      p->study->section ? p->study->section : "");
  return 1;
}

/* A figure of timed stages (latency, stages, treemap) drawn from none of the runs. */
static void why_no_times(char *buf, size_t cap, const plot_ctx *p) {
  for (size_t r = 0; r < p->n_runs; r++)
    if (!section_only(buf, cap, p, r)) cat(buf, cap, "%s%s has no timed stage", buf[0] ? "; " : "", which_run(p, r));
}

/* A counter figure of `metric`: for each run without its rows, the counters' state from the context. */
static void why_no_counters(char *buf, size_t cap, const plot_ctx *p, const char *metric) {
  for (size_t r = 0; r < p->n_runs; r++) {
    if (run_has(p, &p->runs[r], metric, NULL) || section_only(buf, cap, p, r)) continue;
    const char *ct = hx_run_context(&p->runs[r], "counters");
    cat(buf, cap, "%s%s ", buf[0] ? "; " : "", which_run(p, r));
    if (ct && !strncmp(ct, "off", 3)) /* "off (why)" */
      cat(buf, cap, "had its counters %s", ct);
    else if (ct)
      cat(buf, cap, "had its counters %s, but no `%s` rows", ct, metric);
    else
      cat(buf, cap, "has no counter rows%s", cpu_only(&p->runs[r]) ? " (no CUDA device)" : "");
  }
}

/* The memory figure: for each run without mem_peak or mem_used rows, why. */
static void why_no_memory(char *buf, size_t cap, const plot_ctx *p) {
  for (size_t r = 0; r < p->n_runs; r++) {
    if (run_has(p, &p->runs[r], "mem_peak", NULL) || run_has(p, &p->runs[r], "mem_used", NULL) ||
        section_only(buf, cap, p, r))
      continue;
    if (cpu_only(&p->runs[r]))
      cat(buf, cap, "%s%s ran on the CPU only (no CUDA device): device memory is measured on a GPU",
          buf[0] ? "; " : "", which_run(p, r));
    else
      cat(buf, cap, "%s%s has no `mem_peak` or `mem_used` rows", buf[0] ? "; " : "", which_run(p, r));
  }
}

/* A comparison figure: ok[r] = 1 when every pattern of fig selects a timed series of run r; buf lists each
 * run left out and the patterns it lacks, then the study's reason where a CPU-only run is among them. */
static void figure_runs(char *buf, size_t cap, int *ok, const plot_ctx *p, const hx_study_figure *fig) {
  const char *const *pat = p->all ? fig->all_series : fig->series;
  const size_t np = p->all ? fig->n_all : fig->n_series;
  int cpu_left = 0;
  for (size_t r = 0; r < p->n_runs; r++) {
    ok[r] = 1;
    if (section_only(buf, cap, p, r)) {
      ok[r] = 0;
      continue;
    }
    for (size_t i = 0; i < np; i++)
      if (!run_has(p, &p->runs[r], "time_mean", pat[i])) {
        if (ok[r]) {
          if (!buf[0]) {
            cat(buf, cap, "the figure compares");
            for (size_t j = 0; j < np; j++) cat(buf, cap, "%s `%s`", j == 0 ? "" : j + 1 == np ? " with" : ",", pat[j]);
            cat(buf, cap, ", and");
          } else {
            cat(buf, cap, ";");
          }
          cat(buf, cap, " %s has no", which_run(p, r));
        } else {
          cat(buf, cap, " or");
        }
        cat(buf, cap, " `%s`", pat[i]);
        ok[r] = 0;
      }
    if (!ok[r]) cat(buf, cap, " rows%s", cpu_only(&p->runs[r]) ? " (a CPU-only run, no CUDA device)" : "");
    cpu_left |= !ok[r] && cpu_only(&p->runs[r]);
  }
  if (cpu_left && fig->missing) cat(buf, cap, ": %s", fig->missing);
}

hx_status hx_plot(hx_run *runs, size_t n_runs, const hx_study *study, const char *scripts_dir, const char *out_dir,
                  hx_err *err) {
  return hx_plot_sel(runs, n_runs, study, scripts_dir, out_dir, 0, NULL, err);
}

hx_status hx_plot_sel(hx_run *runs, size_t n_runs, const hx_study *study, const char *scripts_dir,
                      const char *out_dir, int all_series, const hx_child_watch *watch, hx_err *err) {
  static const hx_study no_study = {NULL, NULL, 0, NULL, 0, NULL, 0, NULL, 0, {NULL, NULL}, NULL, NULL, NULL, NULL, 0};
  if (!study) study = &no_study;
  if (study->n_figures > HX_STUDY_MAX_FIGURES)
    return hx_errf(err, HX_EINVAL, "plot: the study has %zu comparison figures (at most %d)", study->n_figures,
                   HX_STUDY_MAX_FIGURES);
  for (size_t i = 0; i < study->n_figures; i++) { /* names become file names, titles go on gnuplot's command line */
    const hx_study_figure *fg = &study->figures[i];
    static const char *const taken[] = {"latency", "sm", "tensor", "dram", "memory", "stages", "treemap"};
    int ok = fg->name && fg->name[0] && fg->title && safe_for_shell(fg->title) && fg->series && fg->all_series;
    for (const char *c = ok ? fg->name : ""; *c; c++) ok &= isalnum((unsigned char)*c) || *c == '_' || *c == '-';
    for (size_t t = 0; ok && t < sizeof taken / sizeof *taken; t++) ok = strcmp(fg->name, taken[t]) != 0;
    if (!ok)
      return hx_errf(err, HX_EINVAL, "plot: study figure %zu ('%s'): needs a name of [A-Za-z0-9_-] that no built-in "
                     "figure has, a title without quotes and its series patterns", i, fg->name ? fg->name : "(null)");
  }
  if (study->n_plots > HX_STUDY_MAX_PLOTS || (study->n_plots && !study->section))
    return hx_errf(err, HX_EINVAL, "plot: the study has %zu plots (at most %d, under a section heading)", study->n_plots,
                   HX_STUDY_MAX_PLOTS);
  for (size_t i = 0; i < study->n_plots; i++) { /* the same rules, and no name of a figure or earlier plot */
    const hx_study_plot *sp = &study->plots[i];
    static const char *const taken[] = {"latency", "sm", "tensor", "dram", "memory", "stages", "treemap"};
    int ok = sp->name && sp->name[0] && sp->title && safe_for_shell(sp->title) && sp->ylabel &&
             safe_for_shell(sp->ylabel) && sp->metric && sp->label && sp->n_include > 0 && sp->include &&
             (sp->n_exclude == 0 || sp->exclude) && sp->kind <= HX_PLOT_TREEMAP && !(sp->fit && sp->metric2);
    for (const char *c = ok ? sp->name : ""; *c; c++) ok &= isalnum((unsigned char)*c) || *c == '_' || *c == '-';
    for (size_t t = 0; ok && t < sizeof taken / sizeof *taken; t++) ok = strcmp(sp->name, taken[t]) != 0;
    for (size_t t = 0; ok && t < study->n_figures; t++) ok = strcmp(sp->name, study->figures[t].name) != 0;
    for (size_t t = 0; ok && t < i; t++) ok = strcmp(sp->name, study->plots[t].name) != 0;
    if (!ok)
      return hx_errf(err, HX_EINVAL, "plot: study plot %zu ('%s'): needs a name of [A-Za-z0-9_-] that no other figure "
                     "has, a title and axis label without quotes, a metric (one when fitted), a label and include "
                     "patterns", i, sp->name ? sp->name : "(null)");
  }
  if (n_runs == 0) return hx_errf(err, HX_EINVAL, "plot: no result directories");
  if (!scripts_dir) return hx_errf(err, HX_EINVAL, "plot: no scripts directory");
  if (!out_dir) return hx_errf(err, HX_EINVAL, "plot: no output directory");
  if (!safe_for_shell(scripts_dir) || !safe_for_shell(out_dir))
    return hx_errf(err, HX_EINVAL, "plot: paths with quote characters are not supported");
  /* figures are drawn into plots.tmp.<pid> and replace plots/ only when every one was made: a failed
   * plot (a bad --scripts, a gnuplot error) leaves the previous figures as they were, not half overwritten */
  char plots[PL_PATH], plots_final[PL_PATH];
  snprintf(plots_final, sizeof plots_final, "%s/plots", out_dir);
  hx_tmp_path(plots, sizeof plots, plots_final);
  HX_TRY(check_plots_dir(plots_final, err));
  const int made_out = mkdir(out_dir, 0777) == 0; /* created here: removed again when plot fails */
  if (!made_out && errno != EEXIST) return hx_errf(err, HX_EIO, "%s: %s", out_dir, strerror(errno));
  if (mkdir(plots, 0777) != 0) {
    const hx_status ms = hx_errf(err, HX_EIO, "%s: %s", plots, strerror(errno));
    if (made_out) rmdir(out_dir);
    return ms;
  }
  plot_ctx p = {runs, n_runs, NULL, NULL, all_series != 0, NULL, 0, study, NULL, NULL, watch};
  size_t total = 0;
  for (size_t r = 0; r < n_runs; r++) total += runs[r].n_rows;
  p.sorted = malloc((total ? total : 1) * sizeof *p.sorted);
  p.label = malloc(n_runs * sizeof *p.label);
  p.mem_totals = calloc(n_runs, sizeof *p.mem_totals);
  char(*run_label)[512] = calloc(n_runs, sizeof *run_label); /* each run's name, p.label's unless its directory */
  int *fig_ok = calloc(n_runs, sizeof *fig_ok);
  if (!p.sorted || !p.label || !p.mem_totals || !run_label || !fig_ok) {
    free(p.sorted);
    free((void *)p.label);
    free(p.mem_totals);
    free(run_label);
    free(fig_ok);
    rmdir(plots);
    if (made_out) rmdir(out_dir);
    return hx_errf(err, HX_ENOMEM, "plot: no memory");
  }
  size_t off = 0;
  int any_mem_peak = 0;
  const char *wl0 = NULL;
  for (size_t r = 0; r < n_runs; r++) {
    for (size_t i = 0; i < runs[r].n_rows; i++) {
      const hx_run_row *w = &runs[r].rows[i];
      if (!own_section(&p, w->pipeline) && !strcmp(w->metric, "mem_peak")) any_mem_peak = 1;
      if (!own_section(&p, w->pipeline) && !strcmp(w->metric, "mem_peak") && !strcmp(w->kernel, "total"))
        p.mem_totals[r] = 1;
      if (!wl0) wl0 = w->workload;
      else if (strcmp(wl0, w->workload)) p.many_workloads = 1;
    }
    for (size_t i = 0; i < runs[r].n_rows; i++) p.sorted[off + i] = &runs[r].rows[i];
    qsort(p.sorted + off, runs[r].n_rows, sizeof *p.sorted, cmp_rowp);
    off += runs[r].n_rows;
    /* the device; a run without one names its CPU (the sweep's context device "none", cpu_model) */
    const char *d = hx_run_context(&runs[r], "device"), *cpu = hx_run_context(&runs[r], "cpu_model");
    char base[256];
    if (cpu_only(&runs[r])) {
      if (cpu && *cpu) snprintf(base, sizeof base, "CPU: %s", cpu);
      else snprintf(base, sizeof base, "CPU (no CUDA device)");
      d = base;
    } else if (!d || !*d) {
      d = runs[r].dir;
    }
    /* a run in another 16-bit type than fp16 (sweep --dtype) says so wherever it is named */
    const char *dt = hx_run_dtype(&runs[r]);
    const int other = strcmp(dt, "fp16") != 0;
    p.label[r] = d; /* the context's own string, or the run's directory */
    if (other || d == base) {
      snprintf(run_label[r], sizeof run_label[r], "%s%s%s", d, other ? ", " : "", other ? dt : "");
      p.label[r] = run_label[r];
    }
    for (size_t q = 0; q < r; q++) /* two runs on the same device model and type: tell them apart by directory */
      if (!strcmp(p.label[q], p.label[r])) {
        if (other) snprintf(run_label[r], sizeof run_label[r], "%s, %s", runs[r].dir, dt);
        else p.label[r] = runs[r].dir;
        break;
      }
  }
  hx_status st = HX_OK;
  /* latency, the study's comparison figures, then the counters, memory and stage figures */
  enum { NF = 7 + HX_STUDY_MAX_FIGURES };
  const size_t ns = study->n_figures, nf = 7 + ns;
  const char *figs[NF] = {"latency"}, *what[NF] = {"Latency vs size (mean +- std)"};
  for (size_t i = 0; i < ns; i++) figs[1 + i] = study->figures[i].name, what[1 + i] = study->figures[i].title;
  static const char *const gen_figs[6] = {"sm", "tensor", "dram", "memory", "stages", "treemap"};
  static const char *const gen_what[6] = {"SM active (solid) and SM issue (dashed) vs size",
                                          "TensorCore active vs size",
                                          "DRAM read bandwidth vs size",
                                          "Device memory vs size", /* replaced below by what the runs hold */
                                          "Per-stage breakdown (stacked)",
                                          "Per-stage breakdown (treemap)"};
  for (size_t i = 0; i < 6; i++) figs[1 + ns + i] = gen_figs[i], what[1 + ns + i] = gen_what[i];
  const size_t F_SM = 1 + ns, F_TENSOR = F_SM + 1, F_DRAM = F_SM + 2, F_MEM = F_SM + 3, F_STAGES = F_SM + 4;
  int made[NF] = {0}, made_own[HX_STUDY_MAX_PLOTS] = {0};
  char why[NF][1024]; /* per figure: why it, or a run of it, is left out ("" when nothing is) */
  const char *whyp[NF];
  for (size_t i = 0; i < NF; i++) why[i][0] = '\0', whyp[i] = why[i];
  hx_err gerr;
  const char *note = NULL;
  char note_buf[600];
  if (have_gnuplot(watch, &gerr) != HX_OK) {
    snprintf(note_buf, sizeof note_buf, "**%s**: run `f3dbench plot` on this directory again after installing it.",
             gerr.msg);
    note = note_buf;
  }
  if (!note) {
    const char *m1[] = {"time_mean"}, *e1[] = {"time_std"}, *e0[] = {NULL, NULL};
    const double s1[] = {1.0, 1.0}, sg[] = {1e-9}, smib[] = {1.0 / 1048576.0};
    const char *msm[] = {"sm_active", "sm_issue"}, *mt[] = {"tensor_active"}, *md[] = {"dram_read_bw"},
               *mm[] = {"mem_peak", "mem_used"}, *mm_old[] = {"mem_used"};
    const char *ssm[] = {" active", " issue"}, *smem[] = {" arena peak", " cudaMemGetInfo"}, *snone[] = {NULL, NULL};
    const double smib2[] = {1.0 / 1048576.0, 1.0 / 1048576.0};
    /* memory: the arena's peak (solid) with cudaMemGetInfo (dashed) beside it; runs from before the
     * arena only have the latter */
    what[F_MEM] = any_mem_peak ? "Device memory vs size: arena peak (solid), cudaMemGetInfo in use (dashed)"
                               : "Device memory vs size (cudaMemGetInfo in use; these runs have no arena rows)";
    st = lines_figure(&p, scripts_dir, plots, "latency", what[0], "time (ms)", p.all ? 1 : -1, m1, e1, s1, snone, 1,
                      want_latency, &made[0], err);
    for (size_t i = 0; i < ns && st == HX_OK; i++) {
      p.fig = &study->figures[i];
      figure_runs(why[1 + i], sizeof why[1 + i], fig_ok, &p, p.fig);
      p.fig_ok = fig_ok;
      st = lines_figure(&p, scripts_dir, plots, figs[1 + i], what[1 + i], "time (ms)", 1, m1, e1, s1, snone, 1,
                        want_figure, &made[1 + i], err);
      p.fig_ok = NULL;
    }
    if (st == HX_OK)
      st = lines_figure(&p, scripts_dir, plots, "sm", what[F_SM], "% of peak", 0, msm, e0, s1, ssm, 2, want_stages,
                        &made[F_SM], err);
    if (st == HX_OK)
      st = lines_figure(&p, scripts_dir, plots, "tensor", what[F_TENSOR], "% of peak", 0, mt, e0, s1, snone, 1,
                        want_stages, &made[F_TENSOR], err);
    if (st == HX_OK)
      st = lines_figure(&p, scripts_dir, plots, "dram", what[F_DRAM], "GB/s", 0, md, e0, sg, snone, 1, want_stages,
                        &made[F_DRAM], err);
    if (st == HX_OK)
      st = lines_figure(&p, scripts_dir, plots, "memory", what[F_MEM], "MiB", 0, any_mem_peak ? mm : mm_old, e0,
                        any_mem_peak ? smib2 : smib, smem, any_mem_peak ? 2 : 1, want_memory, &made[F_MEM], err);
    if (st == HX_OK) st = stages_figures(&p, scripts_dir, plots, &made[F_STAGES], &made[F_STAGES + 1], err);
    if (st == HX_OK) st = study_plots(&p, scripts_dir, plots, made_own, err);
    /* the reasons of the generic figures left out (a comparison figure has its own, above) */
    why_no_counters(why[F_SM], sizeof why[F_SM], &p, "sm_active");
    why_no_counters(why[F_TENSOR], sizeof why[F_TENSOR], &p, "tensor_active");
    why_no_counters(why[F_DRAM], sizeof why[F_DRAM], &p, "dram_read_bw");
    why_no_memory(why[F_MEM], sizeof why[F_MEM], &p);
    const size_t timed[3] = {0, F_STAGES, F_STAGES + 1};
    for (size_t i = 0; i < 3; i++)
      if (!made[timed[i]]) why_no_times(why[timed[i]], sizeof why[timed[i]], &p);
  }
  /* All or nothing: REPORT.md is written whole beside its final name (REPORT.md.tmp.<pid>, or beside the file its
   * symbolic link ends at) before anything is replaced; then plots/ is swapped in and REPORT.md renamed over, and a
   * failure of that rename swaps the previous figures back, so the figures and the report on disk always belong
   * together. A REPORT.md that is written in place (a FIFO, a device: hx_out_resolve) is written last, and a failure
   * of that write swaps the figures back the same way. Without gnuplot plots/ is left as it was. */
  char report[PL_PATH + 64], report_dest[PL_PATH + 128], report_tmp[PL_PATH + 128], old[PL_PATH + 64];
  snprintf(report, sizeof report, "%s/REPORT.md", out_dir);
  snprintf(old, sizeof old, "%s.old.%ld", plots_final, (long)getpid());
  report_tmp[0] = '\0';
  char *mem = NULL;
  size_t len = 0;
  int in_place = 0, had_old = 0, swapped = 0;
  if (st == HX_OK) {
    FILE *f = open_memstream(&mem, &len);
    if (!f) {
      st = hx_errf(err, HX_ENOMEM, "plot: open_memstream failed");
    } else {
      write_report(f, &p, figs, made, what, whyp, nf, made_own, note);
      if (fclose(f) != 0) st = hx_errf(err, HX_ENOMEM, "plot: report too large");
    }
  }
  if (st == HX_OK) st = hx_stage_file(report, mem, len, report_tmp, report_dest, sizeof report_tmp, &in_place, err);
  if (st == HX_OK && !note) {
    st = swap_in(plots, plots_final, old, &had_old, err);
    swapped = st == HX_OK;
  }
  if (st == HX_OK) {
    if (in_place) {
      st = hx_write_file_atomic(report, mem, len, err); /* in place: no rename to fail after it */
    } else if (rename(report_tmp, report_dest) != 0) {
      st = hx_errf(err, HX_EIO, "%s: cannot put the new report in place: %s", report, strerror(errno));
    } else {
      report_tmp[0] = '\0';
    }
    if (st != HX_OK && swapped && !swap_back(plots, plots_final, old, had_old)) {
      char said[sizeof err->msg];
      snprintf(said, sizeof said, "%s", err->msg);
      st = hx_errf(err, st, "%s; the figures could not be put back as they were: %s holds the new ones, %s the "
                   "previous ones, if any", said, plots_final, old);
      had_old = 0; /* kept where they are, never removed */
    }
  }
  if (report_tmp[0]) unlink(report_tmp);
  free(mem);
  if (st == HX_OK && swapped && had_old) remove_flat_dir(old);
  if (st == HX_OK) remove_stale_plot_dirs(out_dir);
  if (st != HX_OK || note) remove_flat_dir(plots); /* failed, or no gnuplot: the previous figures stay */
  if (st != HX_OK && made_out) rmdir(out_dir);        /* empty again: nothing of a failed plot is left */
  free(p.sorted);
  free((void *)p.label);
  free(p.mem_totals);
  free(run_label);
  free(fig_ok);
  if (st == HX_OK && note) return hx_errf(err, HX_EUNSUPPORTED, "%s", gerr.msg);
  return st;
}
