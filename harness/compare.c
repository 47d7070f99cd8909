/*
 * compare.c - the regression gate: two runs' raw samples, key by key (pipeline, kernel, variant, workload,
 * n_points, batch, metric), a two-sided Mann-Whitney U test plus a threshold on the relative change of the
 * medians that follows the key's own noise (hx_stats_compare with that threshold as its minimum effect).
 *
 * Why a threshold per key: with hundreds of samples per key the U test finds any shift significant, so the
 * threshold alone decides, and a fixed 3% called 10 of 322 keys slower in two identical H100 sweeps minutes
 * apart (GPU stages 3.1-4.2% apart, CPU references 13-29%; docs/measurement.md, "Regression gate"). The
 * threshold is max(min_effect, noise_k x batch_noise, HX_GATE_AA_Z x sqrt(2) x aa_sigma): the drift the key
 * showed inside each run (the range of its batch medians, hx_stats_batch_spread) and, given a calibration of this
 * device and build, the spread of its median between A/A runs: aa_sigma is the 90% upper confidence bound of the
 * runs' standard deviation (relative), so a pair of runs differs by more than HX_GATE_AA_Z of its own sd at most
 * ~1e-4 of the time when sigma is known, ~3e-4 from 8 calibration runs, ~4e-3 from 3. The largest change between
 * 3 runs, times 2 (the first rule), put the threshold near 3.4 sd of a run and called one key slower in 2 of 14
 * A/A pairs on an H200 (docs/measurement.md, "Regression gate"). The table says which term set it.
 *
 * Direction: a metric whose unit is a time (ns, us, ms, s) or "cycles" is better when lower; a rate (unit
 * ending in "/s", e.g. GB/s, or "%") is better when higher, so "faster" means "improved" in both.
 * Output: the verdict line first (keys gated, faster/slower/same/unknown, the largest change), then one table
 * row per compared key, then the totals line. Keys present on one side only are "unknown" with a note; they
 * never count as slower.
 *
 * Calibration file (hx_gate_calibrate), RFC 4180 CSV, one record type per line, the type first:
 *   f3dbench-gate-calibration,3,<runs>                 (formats 1 and 2 are refused: calibrate again)
 *   run,<directory>                                   (each calibration run: <runs> of them)
 *   context,<key>,<value>                             (the context every calibration run shared, each key once)
 *   key,<pipeline>,<kernel>,<variant>,<workload>,<n_points>,<batch>,<metric>,<runs>,<aa_sigma>   (at least one)
 *   end,<keys>                                        (last: a file cut at a line boundary lacks it or miscounts)
 * With the end record a file cut anywhere is refused, never read as a calibration of fewer keys (the others then
 * gated without their A/A term); formats without it are refused for that reason.
 */
#include "harness/harness.h"

#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { RULE_MIN = 0, RULE_BATCH, RULE_AA };
static const char *const rule_names[3] = {"min", "batch", "aa"};

static int higher_is_better(const char *unit) {
  return hx_unit_is_rate(unit) || strcmp(unit, "%") == 0 || strcmp(unit, "pct") == 0;
}

static void gather(const hx_run *r, size_t g, double *out) {
  for (size_t i = 0; i < r->groups[g].count; i++) out[i] = r->samples[r->groups[g].first + i].value;
}

static void label_of(char *buf, size_t cap, const hx_run_row *k) {
  snprintf(buf, cap, "%s/%s/%s", k->pipeline, k->kernel, k->variant);
}

/* Comma-separated fnmatch patterns; a key is gated when any matches its "pipeline/kernel/variant". */
static int keys_match(const char *patterns, const char *label) {
  if (!patterns) return 1;
  const char *p = patterns;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char pat[256];
    if (len > 0 && len < sizeof pat) {
      memcpy(pat, p, len);
      pat[len] = '\0';
      if (fnmatch(pat, label, 0) == 0) return 1;
    }
    if (!comma) break;
    p = comma + 1;
  }
  return 0;
}

/* 1 when the run was made with a GPU (context device names one; absent or "none": no GPU) and sampled a GPU stage
 * (a key whose variant is not "cpu"). A run of CPU pipelines alone (workload, say) on a GPU machine measured nothing
 * else, so its CPU stages are gated by default, as on a machine without one. */
static int run_timed_gpu(const hx_run *r) {
  const char *d = hx_run_context(r, "device");
  if (!d || !d[0] || strcmp(d, "none") == 0) return 0;
  for (size_t i = 0; i < r->n_samples; i++)
    if (strcmp(r->samples[i].variant, "cpu") != 0) return 1;
  return 0;
}

hx_gate_opts hx_gate_defaults(void) {
  hx_gate_opts o;
  memset(&o, 0, sizeof o);
  o.alpha = 0.01;
  o.min_effect = 0.03;
  o.noise_k = 2.0;
  o.include_cpu = -1;
  return o;
}

/* ---- normalization: ceilings of the run and the keys with declared FLOPs ------------------------------------ */

typedef struct ceilings {
  double copy, gemm; /* context ceiling_copy_gbs, ceiling_gemm_<dtype>_tflops */
} ceilings;

/* The GEMM ceiling is the one of the run's dtype (hx_run_dtype: sweep --dtype). */
static hx_status read_ceilings(const hx_run *r, ceilings *c, hx_err *err) {
  char gk[64];
  const char *names[2] = {"ceiling_copy_gbs", hx_run_gemm_ceiling_key(r, gk, sizeof gk)};
  double *dst[2] = {&c->copy, &c->gemm};
  for (int i = 0; i < 2; i++) {
    const char *v = hx_run_context(r, names[i]);
    char *end = NULL;
    double x = v ? strtod(v, &end) : (double)NAN;
    if (!v || end == v || *end != '\0' || !isfinite(x) || x <= 0.0)
      return hx_errf(err, HX_EINVAL, "--normalize: %s has no %s in its context (ceilings are measured by a GPU sweep)",
                     r->dir, names[i]);
    *dst[i] = x;
  }
  return HX_OK;
}

/* The key's stage declared FLOPs (a flops row in either run): it runs on the tensor cores, the GEMM ceiling is its
 * reference; otherwise the copy ceiling. */
static int same_stage(const hx_run_row *a, const hx_run_row *b) {
  return a->n_points == b->n_points && a->batch == b->batch && strcmp(a->pipeline, b->pipeline) == 0 &&
         strcmp(a->kernel, b->kernel) == 0 && strcmp(a->variant, b->variant) == 0 &&
         strcmp(a->workload, b->workload) == 0;
}

static int declares_flops(const hx_run *r, const hx_run_row *k) {
  for (size_t i = 0; i < r->n_rows; i++)
    if (strcmp(r->rows[i].metric, "flops") == 0 && same_stage(&r->rows[i], k)) return 1;
  return 0;
}

/* ---- one compared key ------------------------------------------------------------------------------------------ */

typedef struct gate_row {
  const hx_run_row *k;
  double mb, mn, rel, thr, p;
  int rule; /* RULE_*, or -1 when no threshold was computed */
  hx_stats_verdict v;
  char note[96];
} gate_row;

static const hx_run_row *calib_find(const hx_gate_calib *c, const hx_run_row *k) {
  if (!c) return NULL;
  size_t lo = 0, hi = c->n_keys;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int cmp = hx_run_row_key_cmp(&c->keys[mid], k);
    if (cmp == 0) return &c->keys[mid];
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static double sum_finite(double a, double b) { return (isfinite(a) ? a : 0.0) + (isfinite(b) ? b : 0.0); }

static void judge(gate_row *row, const hx_gate_opts *o, const double *a, size_t na, double *b, size_t nn,
                  const hx_run_row *kn, double scale, const char *scale_what) {
  for (size_t i = 0; i < nn && scale != 1.0; i++) b[i] *= scale;
  row->mb = hx_stats_median(a, na);
  row->mn = hx_stats_median(b, nn);
  /* each run's median may sit anywhere its batch medians wander, so the two medians may differ by the sum */
  const double batch = sum_finite(hx_stats_batch_spread(a, na, HX_GATE_BATCHES),
                                  hx_stats_batch_spread(b, nn, HX_GATE_BATCHES));
  const hx_run_row *cal = calib_find(o->calib, row->k);
  const double aa = cal ? cal->value : 0.0;
  row->thr = o->min_effect;
  row->rule = RULE_MIN;
  if (o->noise_k * batch > row->thr) row->thr = o->noise_k * batch, row->rule = RULE_BATCH;
  const double aa_thr = HX_GATE_AA_Z * sqrt(2.0) * aa;
  if (aa_thr > row->thr) row->thr = aa_thr, row->rule = RULE_AA;
  row->v = hx_stats_compare(a, na, b, nn, o->alpha, row->thr, &row->rel, &row->p);
  size_t len = 0;
  if (strcmp(row->k->unit, kn->unit) != 0) {
    row->v = HX_VERDICT_UNKNOWN;
    len += (size_t)snprintf(row->note, sizeof row->note, "(units differ)");
  } else if (higher_is_better(row->k->unit)) {
    if (row->v == HX_VERDICT_FASTER) row->v = HX_VERDICT_SLOWER;
    else if (row->v == HX_VERDICT_SLOWER) row->v = HX_VERDICT_FASTER;
  }
  if (row->v == HX_VERDICT_UNKNOWN && !len)
    len += (size_t)(na < HX_COMPARE_MIN_SAMPLES || nn < HX_COMPARE_MIN_SAMPLES
                        ? snprintf(row->note, sizeof row->note, "(fewer than %d samples)", HX_COMPARE_MIN_SAMPLES)
                        : snprintf(row->note, sizeof row->note, "(median not positive)"));
  if (o->calib && !cal && len < sizeof row->note)
    len += (size_t)snprintf(row->note + len, sizeof row->note - len, "%s(not calibrated)", len ? " " : "");
  if (scale_what && len < sizeof row->note)
    snprintf(row->note + len, sizeof row->note - len, "%s(%s ceiling x%.4f)", len ? " " : "", scale_what, scale);
}

static void print_num(FILE *out, const char *fmt, const char *blank, double x) {
  if (isfinite(x)) fprintf(out, fmt, x);
  else fprintf(out, blank, "-");
}

static void print_row(FILE *out, const gate_row *r) {
  char size[64], label[256];
  const hx_run_row *k = r->k;
  snprintf(size, sizeof size, "%llu", (unsigned long long)k->n_points);
  if (k->batch != 1) snprintf(size, sizeof size, "%llux%u", (unsigned long long)k->n_points, (unsigned)k->batch);
  label_of(label, sizeof label, k);
  fprintf(out, "%-36s %-10s %10s %-12s", label, k->workload, size, k->metric);
  print_num(out, " %11.4g", " %11s", r->mb);
  print_num(out, " %11.4g", " %11s", r->mn);
  if (isfinite(r->rel)) fprintf(out, " %+7.1f%%", 100.0 * r->rel); else fprintf(out, " %8s", "-");
  if (r->rule >= 0) fprintf(out, " %5.1f%% %-5s", 100.0 * r->thr, rule_names[r->rule]);
  else fprintf(out, " %6s %-5s", "-", "");
  print_num(out, " %9.2g", " %9s", r->p);
  fprintf(out, "  %-7s %s\n", hx_stats_verdict_str(r->v), r->note);
}

static void csv_num(FILE *f, double x) {
  if (isfinite(x)) fprintf(f, ",%.6g", x);
  else fputc(',', f);
}

/* A key's fields as CSV: pipeline,kernel,variant,workload,n_points,batch,metric (no trailing comma). */
static void csv_key(FILE *f, const hx_run_row *k) {
  hx_csv_field(f, k->pipeline);
  fputc(',', f);
  hx_csv_field(f, k->kernel);
  fputc(',', f);
  hx_csv_field(f, k->variant);
  fputc(',', f);
  hx_csv_field(f, k->workload);
  fprintf(f, ",%llu,%u,", (unsigned long long)k->n_points, (unsigned)k->batch);
  hx_csv_field(f, k->metric);
}

static void csv_row(FILE *f, const gate_row *r) {
  csv_key(f, r->k);
  csv_num(f, r->mb);
  csv_num(f, r->mn);
  csv_num(f, r->rel);
  csv_num(f, r->rule >= 0 ? r->thr : (double)NAN);
  fprintf(f, ",%s", r->rule >= 0 ? rule_names[r->rule] : "");
  csv_num(f, r->p);
  fprintf(f, ",%s\n", hx_stats_verdict_str(r->v));
}

/* ---- the gate ------------------------------------------------------------------------------------------------ */

void hx_gate_print_verdict(FILE *out, const hx_compare_counts *n) {
  const size_t gated = n->faster + n->slower + n->same + n->unknown;
  const size_t tested = n->faster + n->slower + n->same;
  fprintf(out, "gate: %s: %zu faster, %zu slower, %zu same, %zu unknown of %zu keys gated",
          n->slower ? "FAIL" : tested ? "pass" : "NOTHING TESTED", n->faster, n->slower, n->same, n->unknown, gated);
  if (isfinite(n->largest_change))
    fprintf(out, "; largest change %+.1f%% %s (threshold %.1f%%)", 100.0 * n->largest_change, n->largest_key,
            100.0 * n->largest_threshold);
  if (n->not_gated_cpu || n->not_gated_keys)
    fprintf(out, "; not gated: %zu CPU stage keys, %zu outside the key patterns", n->not_gated_cpu,
            n->not_gated_keys);
  fputc('\n', out);
}

hx_status hx_gate_runs(hx_run *base, hx_run *cur, const hx_gate_opts *o, FILE *out, hx_compare_counts *counts,
                       hx_err *err) {
  memset(counts, 0, sizeof *counts);
  counts->largest_change = counts->largest_threshold = NAN;
  if (!base || !cur || !o) return hx_errf(err, HX_EINVAL, "compare: NULL argument");
  if (!(o->alpha > 0.0 && o->alpha < 1.0) || !(o->min_effect >= 0.0) || !(o->noise_k >= 0.0))
    return hx_errf(err, HX_EINVAL, "compare: alpha %g, min effect %g, noise k %g out of range", o->alpha,
                   o->min_effect, o->noise_k);
  ceilings cb = {0, 0}, cn = {0, 0};
  if (o->normalize) {
    HX_TRY(read_ceilings(base, &cb, err));
    HX_TRY(read_ceilings(cur, &cn, err));
  }
  const int include_cpu = o->include_cpu >= 0 ? o->include_cpu : !run_timed_gpu(base) && !run_timed_gpu(cur);
  HX_TRY(hx_run_groups(base, err));
  HX_TRY(hx_run_groups(cur, err));
  size_t maxn = 1;
  for (size_t g = 0; g < base->n_groups; g++)
    if (base->groups[g].count > maxn) maxn = base->groups[g].count;
  for (size_t g = 0; g < cur->n_groups; g++)
    if (cur->groups[g].count > maxn) maxn = cur->groups[g].count;
  double *a = malloc(maxn * sizeof *a), *b = malloc(maxn * sizeof *b);
  gate_row *rows = calloc(base->n_groups + cur->n_groups + 1, sizeof *rows);
  if (!a || !b || !rows) {
    free(a);
    free(b);
    free(rows);
    return hx_errf(err, HX_ENOMEM, "compare: no memory for %zu samples", maxn);
  }
  size_t nrows = 0, i = 0, j = 0;
  while (i < base->n_groups || j < cur->n_groups) {
    const hx_run_row *kb = i < base->n_groups ? &base->samples[base->groups[i].first] : NULL;
    const hx_run_row *kn = j < cur->n_groups ? &cur->samples[cur->groups[j].first] : NULL;
    int c = !kb ? 1 : !kn ? -1 : hx_run_row_key_cmp(kb, kn);
    const hx_run_row *k = c <= 0 ? kb : kn;
    char label[256];
    label_of(label, sizeof label, k);
    const int cpu = strcmp(k->variant, "cpu") == 0;
    if ((cpu && !include_cpu) || !keys_match(o->keys, label)) {
      if (cpu && !include_cpu) counts->not_gated_cpu++;
      else counts->not_gated_keys++;
      i += c <= 0;
      j += c >= 0;
      continue;
    }
    gate_row *row = &rows[nrows++];
    row->k = k;
    row->mb = row->mn = row->rel = row->thr = row->p = NAN;
    row->rule = -1;
    row->v = HX_VERDICT_UNKNOWN;
    if (c != 0) { /* one side only */
      if (c < 0) gather(base, i, a), row->mb = hx_stats_median(a, base->groups[i].count);
      else gather(cur, j, b), row->mn = hx_stats_median(b, cur->groups[j].count);
      snprintf(row->note, sizeof row->note, "(missing in %s)", c < 0 ? "NEW" : "BASE");
      i += c < 0;
      j += c > 0;
      continue;
    }
    const size_t na = base->groups[i].count, nn = cur->groups[j].count;
    gather(base, i, a);
    gather(cur, j, b);
    double scale = 1.0;
    const char *scale_what = NULL;
    if (o->normalize) {
      const int tensor = declares_flops(base, kb) || declares_flops(cur, kn);
      const double rb = tensor ? cb.gemm : cb.copy, rn = tensor ? cn.gemm : cn.copy;
      scale = higher_is_better(kn->unit) ? rb / rn : rn / rb;
      scale_what = tensor ? "gemm" : "copy";
    }
    judge(row, o, a, na, b, nn, kn, scale, scale_what);
    i++;
    j++;
  }
  for (size_t r = 0; r < nrows; r++) {
    const gate_row *row = &rows[r];
    switch (row->v) {
    case HX_VERDICT_FASTER: counts->faster++; break;
    case HX_VERDICT_SLOWER: counts->slower++; break;
    case HX_VERDICT_SAME: counts->same++; break;
    case HX_VERDICT_UNKNOWN:
      counts->unknown++;
      /* the reason judge() or the one-side branch above put first in the note */
      if (!strncmp(row->note, "(missing in", 11)) counts->unknown_one_side++;
      else if (!strncmp(row->note, "(fewer than", 11)) counts->unknown_few_samples++;
      else counts->unknown_other++;
      break;
    }
    if (row->rule >= 0) counts->by_rule[row->rule]++;
    if (row->v != HX_VERDICT_UNKNOWN && isfinite(row->rel) &&
        (!isfinite(counts->largest_change) || fabs(row->rel) > fabs(counts->largest_change))) {
      char label[256], size[64];
      label_of(label, sizeof label, row->k);
      snprintf(size, sizeof size, "%llu", (unsigned long long)row->k->n_points);
      if (row->k->batch != 1)
        snprintf(size, sizeof size, "%llux%u", (unsigned long long)row->k->n_points, (unsigned)row->k->batch);
      counts->largest_change = row->rel;
      counts->largest_threshold = row->thr;
      snprintf(counts->largest_key, sizeof counts->largest_key, "%.160s %.80s %.20s %.40s", label, row->k->workload, size,
               row->k->metric);
    }
  }
  if (out) {
    hx_gate_print_verdict(out, counts);
    fprintf(out, "%-36s %-10s %10s %-12s %11s %11s %8s %12s %9s  %-7s\n", "pipeline/kernel/variant", "workload",
            "n_points", "metric", "base_med", "new_med", "change", "threshold", "p", "verdict");
    for (size_t r = 0; r < nrows; r++) print_row(out, &rows[r]);
    fprintf(out,
            "%zu faster, %zu slower, %zu same, %zu unknown (alpha %g, min effect %g%%, noise k %g; thresholds set "
            "by min %zu, batch %zu, aa %zu%s%s)\n",
            counts->faster, counts->slower, counts->same, counts->unknown, o->alpha, 100.0 * o->min_effect,
            o->noise_k, counts->by_rule[RULE_MIN], counts->by_rule[RULE_BATCH], counts->by_rule[RULE_AA],
            o->calib ? "; calibration " : "", o->calib ? o->calib->path : "");
  }
  if (o->csv) {
    fprintf(o->csv, "%s\n", HX_GATE_CSV_HEADER);
    for (size_t r = 0; r < nrows; r++) csv_row(o->csv, &rows[r]);
  }
  free(a);
  free(b);
  free(rows);
  return HX_OK;
}

hx_status hx_compare_runs(hx_run *base, hx_run *cur, double alpha, double min_effect, FILE *out,
                          hx_compare_counts *counts, hx_err *err) {
  hx_gate_opts o = hx_gate_defaults();
  o.alpha = alpha;
  o.min_effect = min_effect;
  o.include_cpu = 1;
  return hx_gate_runs(base, cur, &o, out, counts, err);
}

/* ---- calibration ------------------------------------------------------------------------------------------------ */

static size_t group_find(const hx_run *r, const hx_run_row *k) {
  size_t lo = 0, hi = r->n_groups;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int cmp = hx_run_row_key_cmp(&r->samples[r->groups[mid].first], k);
    if (cmp == 0) return mid;
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return (size_t)-1;
}

/* 10% quantiles of chi-square with nu = 1..30 degrees of freedom; Wilson-Hilferty above (within 0.2% there). */
static const double chi2_q10[30] = {0.01579, 0.2107, 0.5844, 1.0636, 1.6103, 2.2041, 2.8331, 3.4895, 4.1682, 4.8652,
                                    5.5778,  6.3038, 7.0415, 7.7895, 8.5468, 9.3122, 10.0852, 10.8649, 11.6509, 12.4426,
                                    13.2396, 14.0415, 14.8480, 15.6587, 16.4734, 17.2919, 18.1139, 18.9392, 19.7677,
                                    20.5992};

double hx_gate_sigma_bound(size_t runs) {
  if (runs < 2) return NAN;
  const double nu = (double)(runs - 1);
  double q;
  if (runs - 1 <= 30) {
    q = chi2_q10[runs - 2];
  } else {
    const double a = 2.0 / (9.0 * nu), t = 1.0 - a - 1.2815516 * sqrt(a);
    q = nu * t * t * t;
  }
  return sqrt(nu / q);
}

static hx_status calib_text(FILE *f, hx_run *runs, size_t n, hx_err *err) {
  fprintf(f, "f3dbench-gate-calibration,3,%zu\n", n);
  for (size_t r = 0; r < n; r++) {
    fputs("run,", f);
    hx_csv_field(f, runs[r].dir);
    fputc('\n', f);
  }
  for (size_t c = 0; c < runs[0].n_ctx; c++) {
    int shared = 1;
    for (size_t r = 1; r < n && shared; r++) {
      const char *v = hx_run_context(&runs[r], runs[0].ctx_keys[c]);
      shared = v && strcmp(v, runs[0].ctx_vals[c]) == 0;
    }
    if (!shared) continue;
    fputs("context,", f);
    hx_csv_field(f, runs[0].ctx_keys[c]);
    fputc(',', f);
    hx_csv_field(f, runs[0].ctx_vals[c]);
    fputc('\n', f);
  }
  size_t maxn = 1;
  for (size_t r = 0; r < n; r++)
    for (size_t g = 0; g < runs[r].n_groups; g++)
      if (runs[r].groups[g].count > maxn) maxn = runs[r].groups[g].count;
  double *x = malloc(maxn * sizeof *x), *med = malloc(n * sizeof *med);
  if (!x || !med) {
    free(x);
    free(med);
    return hx_errf(err, HX_ENOMEM, "calibration: no memory for %zu samples", maxn);
  }
  size_t n_keys = 0;
  for (size_t g = 0; g < runs[0].n_groups; g++) {
    const hx_run_row *k = &runs[0].samples[runs[0].groups[g].first];
    int usable = 1;
    for (size_t r = 0; r < n && usable; r++) {
      size_t h = r ? group_find(&runs[r], k) : g;
      if (h == (size_t)-1 || runs[r].groups[h].count < HX_COMPARE_MIN_SAMPLES) {
        usable = 0;
        break;
      }
      gather(&runs[r], h, x);
      med[r] = hx_stats_median(x, runs[r].groups[h].count);
      usable = isfinite(med[r]) && med[r] > 0.0;
    }
    if (!usable) continue; /* a key some run lacks is not calibrated: the gate says so per key */
    hx_stats_desc d; /* the runs' medians are finite and positive (usable): rel_noise = sd / mean */
    hx_status st = hx_stats_describe(&d, med, n, err);
    if (st != HX_OK) {
      free(x);
      free(med);
      return st;
    }
    fputs("key,", f);
    csv_key(f, k);
    fprintf(f, ",%zu,%.6g\n", n, hx_gate_sigma_bound(n) * d.rel_noise);
    n_keys++;
  }
  free(x);
  free(med);
  if (n_keys == 0)
    return hx_errf(err, HX_EINVAL, "calibration: no key has %d or more raw samples and a positive median in every run: "
                   "nothing to calibrate", HX_COMPARE_MIN_SAMPLES);
  fprintf(f, "end,%zu\n", n_keys);
  return HX_OK;
}

hx_status hx_gate_calibrate(hx_run *runs, size_t n, const char *path, hx_err *err) {
  if (!runs || !path) return hx_errf(err, HX_EINVAL, "calibration: NULL argument");
  if (n < 2) return hx_errf(err, HX_EINVAL, "calibration: needs at least 2 runs of one build (got %zu)", n);
  for (size_t r = 0; r < n; r++) {
    char why[512];
    if (runs[r].incomplete)
      return hx_errf(err, HX_EINVAL, "calibration: %s: %s", runs[r].dir, hx_run_incomplete_why(&runs[r], why, sizeof why));
    if (runs[r].n_samples == 0) return hx_errf(err, HX_EINVAL, "calibration: %s: no raw samples (samples.csv)", runs[r].dir);
    if (r) HX_TRY(hx_run_check_compatible(&runs[0], &runs[r], 0, err));
    HX_TRY(hx_run_groups(&runs[r], err));
  }
  char *mem = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&mem, &len);
  if (!f) return hx_errf(err, HX_ENOMEM, "calibration: no memory");
  hx_status st = calib_text(f, runs, n, err);
  if (fclose(f) != 0 && st == HX_OK) st = hx_errf(err, HX_ENOMEM, "calibration: no memory");
  if (st == HX_OK) st = hx_write_file_atomic(path, mem, len, err);
  free(mem);
  return st;
}

void hx_gate_calib_free(hx_gate_calib *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n_keys; i++) {
    hx_run_row *k = &c->keys[i];
    free(k->workload);
    free(k->pipeline);
    free(k->kernel);
    free(k->variant);
    free(k->metric);
    free(k->unit);
  }
  for (size_t i = 0; i < c->n_ctx; i++) {
    free(c->ctx_keys[i]);
    free(c->ctx_vals[i]);
  }
  free(c->keys);
  free(c->ctx_keys);
  free(c->ctx_vals);
  free(c->path);
  memset(c, 0, sizeof *c);
}

static int parse_u64(const char *s, unsigned long long max, unsigned long long *out) {
  uint64_t v;
  if (hx_parse_dec_u64(s, (uint64_t)max, &v) != 0) return -1;
  *out = (unsigned long long)v;
  return 0;
}

static int cmp_calib(const void *x, const void *y) { return hx_run_row_key_cmp(x, y); }

/* The largest aa_sigma hx_gate_calibrate can write from `runs` runs: the bound's factor times the largest relative sd
 * of `runs` positive medians, sqrt(runs) (one median large, the others near 0). A larger value is a damaged file. */
static double calib_sigma_max(size_t runs) { return hx_gate_sigma_bound(runs) * sqrt((double)runs) * (1.0 + 1e-5); }

static hx_status calib_record(hx_gate_calib *c, char **fld, size_t nf, size_t line, size_t *cap_keys,
                              size_t *cap_ctx, size_t *n_run, hx_err *err) {
  if (strcmp(fld[0], "run") == 0 && nf == 2) return ++*n_run, HX_OK;
  if (strcmp(fld[0], "context") == 0 && nf == 3) {
    for (size_t i = 0; i < c->n_ctx; i++)
      if (strcmp(c->ctx_keys[i], fld[1]) == 0)
        return hx_errf(err, HX_EFORMAT, "%s: record %zu: context key %s given twice", c->path, line, fld[1]);
    if (c->n_ctx == *cap_ctx) {
      size_t cap = *cap_ctx ? 2 * *cap_ctx : 32;
      char **k = realloc(c->ctx_keys, cap * sizeof *k);
      if (k) c->ctx_keys = k;
      char **v = realloc(c->ctx_vals, cap * sizeof *v);
      if (v) c->ctx_vals = v;
      if (!k || !v) return hx_errf(err, HX_ENOMEM, "%s: no memory", c->path);
      *cap_ctx = cap;
    }
    c->ctx_keys[c->n_ctx] = strdup(fld[1]);
    c->ctx_vals[c->n_ctx] = strdup(fld[2]);
    c->n_ctx++;
    if (!c->ctx_keys[c->n_ctx - 1] || !c->ctx_vals[c->n_ctx - 1]) return hx_errf(err, HX_ENOMEM, "%s: no memory", c->path);
    return HX_OK;
  }
  if (strcmp(fld[0], "key") != 0 || nf != 10)
    return hx_errf(err, HX_EFORMAT, "%s: record %zu: expected run, context or key with its fields", c->path, line);
  unsigned long long n_points, batch, runs;
  char *end = NULL;
  double aa = strtod(fld[9], &end);
  if (parse_u64(fld[5], UINT64_MAX, &n_points) || parse_u64(fld[6], UINT32_MAX, &batch) ||
      parse_u64(fld[8], 1000000, &runs) || runs < 2 || end == fld[9] || *end != '\0' || !isfinite(aa) || aa < 0.0)
    return hx_errf(err, HX_EFORMAT, "%s: record %zu: bad n_points, batch, runs or aa_sigma", c->path, line);
  if (runs != c->runs)
    return hx_errf(err, HX_EFORMAT, "%s: record %zu: a key of %llu runs in a calibration of %zu", c->path, line, runs,
                   c->runs);
  if (aa > calib_sigma_max(c->runs))
    return hx_errf(err, HX_EFORMAT, "%s: record %zu: aa_sigma %s is more than %zu runs can give (%.4g)", c->path, line,
                   fld[9], c->runs, calib_sigma_max(c->runs));
  if (c->n_keys == *cap_keys) {
    size_t cap = *cap_keys ? 2 * *cap_keys : 256;
    hx_run_row *k = realloc(c->keys, cap * sizeof *k);
    if (!k) return hx_errf(err, HX_ENOMEM, "%s: no memory", c->path);
    c->keys = k;
    *cap_keys = cap;
  }
  hx_run_row *k = &c->keys[c->n_keys];
  memset(k, 0, sizeof *k);
  c->n_keys++;
  k->pipeline = strdup(fld[1]);
  k->kernel = strdup(fld[2]);
  k->variant = strdup(fld[3]);
  k->workload = strdup(fld[4]);
  k->metric = strdup(fld[7]);
  k->unit = strdup("ratio");
  k->n_points = (uint64_t)n_points;
  k->batch = (uint32_t)batch;
  k->sample = (int64_t)runs;
  k->value = aa;
  if (!k->pipeline || !k->kernel || !k->variant || !k->workload || !k->metric || !k->unit)
    return hx_errf(err, HX_ENOMEM, "%s: no memory", c->path);
  return HX_OK;
}

hx_status hx_gate_calib_load(hx_gate_calib *out, const char *path, hx_err *err) {
  if (!out || !path) return hx_errf(err, HX_EINVAL, "calibration: NULL argument");
  memset(out, 0, sizeof *out);
  FILE *f;
  if (hx_fopen_regular(path, &f, NULL, err) != HX_OK) {
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    return hx_errf(err, HX_EIO, "cannot read the calibration file: %s", why);
  }
  out->path = strdup(path);
  char *buf = malloc(65536);
  hx_status st = out->path && buf ? HX_OK : hx_errf(err, HX_ENOMEM, "%s: no memory", path);
  char *fld[16];
  size_t nf = 0, line = 0, cap_keys = 0, cap_ctx = 0, n_run = 0;
  int ended = 0; /* the end record was read: nothing may follow it */
  while (st == HX_OK) {
    hx_status rs = hx_csv_read(f, buf, 65536, fld, 16, &nf, err);
    if (rs == HX_EIO) break; /* end of file */
    if (rs != HX_OK) {
      char why[sizeof err->msg];
      snprintf(why, sizeof why, "%s", err ? err->msg : "malformed record");
      st = hx_errf(err, rs, "%s: record %zu: %s", path, line + 1, why);
      break;
    }
    line++;
    if (ended) {
      st = hx_errf(err, HX_EFORMAT, "%s: record %zu after the end record", path, line);
      break;
    }
    if (line == 1) {
      unsigned long long runs;
      if (nf == 3 && strcmp(fld[0], "f3dbench-gate-calibration") == 0 && strcmp(fld[1], "1") == 0)
        st = hx_errf(err, HX_EFORMAT, "%s: a calibration of format 1 (the largest A/A change), which this gate no "
                     "longer reads: write it again with f3dbench compare --calibrate", path);
      else if (nf == 3 && strcmp(fld[0], "f3dbench-gate-calibration") == 0 && strcmp(fld[1], "2") == 0)
        st = hx_errf(err, HX_EFORMAT, "%s: a calibration of format 2 (no end record: a file cut short read as whole), "
                     "which this gate no longer reads: write it again with f3dbench compare --calibrate", path);
      else if (nf != 3 || strcmp(fld[0], "f3dbench-gate-calibration") != 0 || strcmp(fld[1], "3") != 0 ||
               parse_u64(fld[2], 1000000, &runs) || runs < 2)
        st = hx_errf(err, HX_EFORMAT, "%s: not a gate calibration (written by f3dbench compare --calibrate)", path);
      else
        out->runs = (size_t)runs;
      continue;
    }
    if (strcmp(fld[0], "end") == 0 && nf == 2) {
      unsigned long long keys;
      ended = 1;
      if (parse_u64(fld[1], UINT64_MAX, &keys) || keys != out->n_keys)
        st = hx_errf(err, HX_EFORMAT, "%s: the end record counts %s keys, the file holds %zu: a damaged calibration, "
                     "write it again", path, fld[1], out->n_keys);
      continue;
    }
    st = calib_record(out, fld, nf, line, &cap_keys, &cap_ctx, &n_run, err);
  }
  if (st == HX_OK && line == 0)
    st = hx_errf(err, HX_EFORMAT, "%s: empty file, not a gate calibration", path);
  if (st == HX_OK && !ended)
    st = hx_errf(err, HX_EFORMAT, "%s: no end record after %zu keys: cut short, write it again", path, out->n_keys);
  if (st == HX_OK && n_run != out->runs)
    st = hx_errf(err, HX_EFORMAT, "%s: %zu run records for a calibration of %zu runs", path, n_run, out->runs);
  if (st == HX_OK && out->n_keys == 0) st = hx_errf(err, HX_EFORMAT, "%s: a calibration without keys", path);
  fclose(f);
  free(buf);
  if (st != HX_OK) {
    hx_gate_calib_free(out);
    return st;
  }
  qsort(out->keys, out->n_keys, sizeof *out->keys, cmp_calib);
  for (size_t i = 1; i < out->n_keys; i++)
    if (hx_run_row_key_cmp(&out->keys[i - 1], &out->keys[i]) == 0) {
      char label[256];
      label_of(label, sizeof label, &out->keys[i]);
      st = hx_errf(err, HX_EFORMAT, "%s: key %s %s %llu %s given twice", path, label, out->keys[i].workload,
                   (unsigned long long)out->keys[i].n_points, out->keys[i].metric);
      hx_gate_calib_free(out);
      return st;
    }
  return HX_OK;
}

hx_status hx_gate_calib_check(const hx_gate_calib *c, const hx_run *r, hx_err *err) {
  hx_run view;
  memset(&view, 0, sizeof view);
  view.dir = c->path;
  view.ctx_keys = c->ctx_keys;
  view.ctx_vals = c->ctx_vals;
  view.n_ctx = c->n_ctx;
  return hx_run_check_compatible(&view, r, 0, err);
}
