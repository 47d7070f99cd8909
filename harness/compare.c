/*
 * compare.c - the regression gate: two runs' raw samples, key by key (pipeline, kernel, variant,
 * workload, n_points, batch, metric), a two-sided Mann-Whitney U test plus a minimum relative effect on
 * the medians (hx_stats_compare), printed as one table row per key.
 *
 * Direction: a metric whose unit is a time (ns, us, ms, s) or "cycles" is better when lower; a rate
 * (unit ending in "/s", e.g. GB/s, or "%") is better when higher, so "faster" means "improved" in both.
 * Keys present on one side only are "unknown" with a note; they never count as slower.
 */
#include "harness/harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int higher_is_better(const char *unit) {
  size_t n = strlen(unit);
  if (n >= 2 && strcmp(unit + n - 2, "/s") == 0) return 1;
  return strcmp(unit, "%") == 0 || strcmp(unit, "pct") == 0;
}

static void gather(const hx_run *r, size_t g, double *out) {
  for (size_t i = 0; i < r->groups[g].count; i++) out[i] = r->samples[r->groups[g].first + i].value;
}

static void print_row(FILE *out, const hx_run_row *k, double mb, double mn, double rel, double p,
                      const char *verdict, const char *note) {
  char size[64];
  snprintf(size, sizeof size, "%llu%s", (unsigned long long)k->n_points, "");
  if (k->batch != 1) snprintf(size, sizeof size, "%llux%u", (unsigned long long)k->n_points, (unsigned)k->batch);
  char label[256];
  snprintf(label, sizeof label, "%s/%s/%s", k->pipeline, k->kernel, k->variant);
  fprintf(out, "%-36s %-10s %10s %-12s", label, k->workload, size, k->metric);
  if (isfinite(mb)) fprintf(out, " %11.4g", mb); else fprintf(out, " %11s", "-");
  if (isfinite(mn)) fprintf(out, " %11.4g", mn); else fprintf(out, " %11s", "-");
  if (isfinite(rel)) fprintf(out, " %+7.1f%%", 100.0 * rel); else fprintf(out, " %8s", "-");
  if (isfinite(p)) fprintf(out, " %9.2g", p); else fprintf(out, " %9s", "-");
  fprintf(out, "  %-7s %s\n", verdict, note ? note : "");
}

hx_status hx_compare_runs(hx_run *base, hx_run *cur, double alpha, double min_effect, FILE *out,
                          hx_compare_counts *counts, hx_err *err) {
  memset(counts, 0, sizeof *counts);
  HX_TRY(hx_run_groups(base, err));
  HX_TRY(hx_run_groups(cur, err));
  size_t maxn = 1;
  for (size_t g = 0; g < base->n_groups; g++)
    if (base->groups[g].count > maxn) maxn = base->groups[g].count;
  for (size_t g = 0; g < cur->n_groups; g++)
    if (cur->groups[g].count > maxn) maxn = cur->groups[g].count;
  double *a = malloc(maxn * sizeof *a), *b = malloc(maxn * sizeof *b);
  if (!a || !b) {
    free(a);
    free(b);
    return hx_errf(err, HX_ENOMEM, "compare: no memory for %zu samples", maxn);
  }
  if (out) {
    fprintf(out, "%-36s %-10s %10s %-12s %11s %11s %8s %9s  %-7s\n", "pipeline/kernel/variant", "workload",
            "n_points", "metric", "base_med", "new_med", "change", "p", "verdict");
  }
  size_t i = 0, j = 0;
  while (i < base->n_groups || j < cur->n_groups) {
    const hx_run_row *kb = i < base->n_groups ? &base->samples[base->groups[i].first] : NULL;
    const hx_run_row *kn = j < cur->n_groups ? &cur->samples[cur->groups[j].first] : NULL;
    int c = !kb ? 1 : !kn ? -1 : hx_run_row_key_cmp(kb, kn);
    if (c < 0) {
      gather(base, i, a);
      if (out) print_row(out, kb, hx_stats_median(a, base->groups[i].count), NAN, NAN, NAN, "unknown",
                         "(missing in NEW)");
      counts->unknown++;
      i++;
      continue;
    }
    if (c > 0) {
      gather(cur, j, b);
      if (out) print_row(out, kn, NAN, hx_stats_median(b, cur->groups[j].count), NAN, NAN, "unknown",
                         "(missing in BASE)");
      counts->unknown++;
      j++;
      continue;
    }
    size_t na = base->groups[i].count, nn = cur->groups[j].count;
    gather(base, i, a);
    gather(cur, j, b);
    double rel, p;
    hx_stats_verdict v = hx_stats_compare(a, na, b, nn, alpha, min_effect, &rel, &p);
    const char *note = NULL;
    if (strcmp(kb->unit, kn->unit) != 0) {
      v = HX_VERDICT_UNKNOWN;
      note = "(units differ)";
    } else if (higher_is_better(kb->unit)) {
      if (v == HX_VERDICT_FASTER) v = HX_VERDICT_SLOWER;
      else if (v == HX_VERDICT_SLOWER) v = HX_VERDICT_FASTER;
    }
    if (v == HX_VERDICT_UNKNOWN && !note) note = "(fewer than 3 samples)";
    switch (v) {
    case HX_VERDICT_FASTER: counts->faster++; break;
    case HX_VERDICT_SLOWER: counts->slower++; break;
    case HX_VERDICT_SAME: counts->same++; break;
    case HX_VERDICT_UNKNOWN: counts->unknown++; break;
    }
    if (out) print_row(out, kb, hx_stats_median(a, na), hx_stats_median(b, nn), rel, p, hx_stats_verdict_str(v),
                       note);
    i++;
    j++;
  }
  free(a);
  free(b);
  if (out)
    fprintf(out, "%zu faster, %zu slower, %zu same, %zu unknown (alpha %g, min effect %g%%)\n", counts->faster,
            counts->slower, counts->same, counts->unknown, alpha, 100.0 * min_effect);
  return HX_OK;
}
