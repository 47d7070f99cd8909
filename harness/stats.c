/*
 * stats.c - order statistics and the two-sided Mann-Whitney U test used by the regression gate.
 *
 * Quantiles use linear interpolation between order statistics (Hyndman-Fan type 7, the default of R and
 * NumPy), so quantile(0.5) is the usual median. The U test ranks the pooled samples with mid-ranks for
 * ties; U_a = R_a - n_a(n_a+1)/2 counts the pairs (a_i, b_j) with a_i > b_j (ties count one half).
 * Invariant: U_a + U_b = n_a * n_b. p-values:
 *   - exact when there are no ties and both samples hold at most HX_MWU_EXACT_MAX values: the null
 *     distribution of U is the coefficient list of the Gaussian binomial [n_a+n_b choose n_a]_q, built
 *     by polynomial products in doubles (counts up to C(200,100) ~ 9e58 fit; relative error ~1e-15);
 *   - otherwise the normal approximation with the tie-corrected variance
 *     n_a n_b / 12 * ((n+1) - sum(t^3 - t) / (n (n-1))) and a 0.5 continuity correction, as SciPy's
 *     "asymptotic" method, so numbers can be checked against it.
 * The regression gate's noise term (hx_stats_batch_spread) cuts a run's samples, in the order they were
 * taken, into consecutive batches and reports the range of the batch medians over the overall median.
 * Nothing here allocates except scratch (sorted copies, ranks, the U distribution), freed before returning.
 */
#include "harness/harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double hx_stats_quantile_sorted(const double *sorted, size_t n, double q) {
  if (n == 0 || !(q >= 0.0 && q <= 1.0)) return NAN;
  double h = q * (double)(n - 1);
  size_t lo = (size_t)floor(h);
  if (lo >= n - 1) return sorted[n - 1];
  double frac = h - (double)lo;
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

hx_status hx_stats_describe(hx_stats_desc *out, const double *x, size_t n, hx_err *err) {
  if (!out || (!x && n)) return hx_errf(err, HX_EINVAL, "stats: NULL argument");
  memset(out, 0, sizeof *out);
  if (n == 0) return hx_errf(err, HX_EINVAL, "stats: no samples");
  double *s = malloc(n * sizeof *s);
  if (!s) return hx_errf(err, HX_ENOMEM, "stats: %zu samples", n);
  memcpy(s, x, n * sizeof *s);
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(s[i])) {
      free(s);
      return hx_errf(err, HX_EINVAL, "stats: sample %zu is not finite", i);
    }
  }
  qsort(s, n, sizeof *s, cmp_double);
  /* Welford's update keeps the variance accurate when the mean is large against the spread
   * (kernel times of 1.234 ms +- 0.001 ms). */
  double mean = 0.0, m2 = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = x[i] - mean;
    mean += d / (double)(i + 1);
    m2 += d * (x[i] - mean);
  }
  out->n = n;
  out->mean = mean;
  out->std = n > 1 ? sqrt(m2 / (double)(n - 1)) : 0.0;
  out->min = s[0];
  out->max = s[n - 1];
  out->q1 = hx_stats_quantile_sorted(s, n, 0.25);
  out->median = hx_stats_quantile_sorted(s, n, 0.5);
  out->q3 = hx_stats_quantile_sorted(s, n, 0.75);
  out->rel_noise = mean != 0.0 ? out->std / fabs(mean) : 0.0;
  free(s);
  return HX_OK;
}

double hx_stats_median(const double *x, size_t n) {
  hx_stats_desc d;
  if (hx_stats_describe(&d, x, n, NULL) != HX_OK) return NAN;
  return d.median;
}

/* Null distribution of U for sample sizes (m, n) without ties: dist[u] = #arrangements with U = u,
 * u = 0..m*n. The generating function is prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i); multiply by the
 * numerator factor and divide by the denominator factor one i at a time (each division is exact
 * because the partial product is itself a polynomial with integer coefficients). */
static void mwu_null_dist(double *dist, size_t m, size_t n) {
  /* intermediate products reach degree m*n + m before the last division */
  memset(dist, 0, (m * n + m + 1) * sizeof *dist);
  dist[0] = 1.0;
  size_t deg = 0;
  for (size_t i = 1; i <= m; i++) {
    /* times (1 - q^(n+i)) */
    size_t s = n + i;
    size_t ndeg = deg + s;
    for (size_t k = ndeg + 1; k-- > s;) dist[k] -= dist[k - s];
    deg = ndeg;
    /* divided by (1 - q^i): c[k] = a[k] + c[k-i] */
    for (size_t k = i; k <= deg; k++) dist[k] += dist[k - i];
    deg -= i;
  }
}

hx_status hx_stats_mwu_exact_p(double *p_two_sided, size_t m, size_t n, double u, hx_err *err) {
  if (m == 0 || n == 0 || m > HX_MWU_EXACT_MAX || n > HX_MWU_EXACT_MAX)
    return hx_errf(err, HX_EINVAL, "exact U distribution needs 1..%d values per sample (got %zu, %zu)",
                   HX_MWU_EXACT_MAX, m, n);
  size_t top = m * n;
  double *dist = malloc((top + m + 1) * sizeof *dist);
  if (!dist) return hx_errf(err, HX_ENOMEM, "exact U distribution: %zu entries", top + 1);
  mwu_null_dist(dist, m, n);
  double total = 0.0;
  for (size_t k = 0; k <= top; k++) total += dist[k];
  /* Distribution is symmetric around m*n/2: P = 2 * P(U <= min(u, mn - u)), capped at 1. */
  double lo = fmin(u, (double)top - u);
  double cdf = 0.0;
  for (size_t k = 0; k <= top && (double)k <= lo + 1e-9; k++) cdf += dist[k];
  free(dist);
  double p = 2.0 * cdf / total;
  *p_two_sided = p > 1.0 ? 1.0 : p;
  return HX_OK;
}

typedef struct ranked {
  double v;
  int from_a;
} ranked;

static int cmp_ranked(const void *x, const void *y) {
  return cmp_double(&((const ranked *)x)->v, &((const ranked *)y)->v);
}

hx_status hx_stats_mwu(hx_stats_mwu_result *out, const double *a, size_t na, const double *b, size_t nb,
                       hx_err *err) {
  if (!out || (!a && na) || (!b && nb)) return hx_errf(err, HX_EINVAL, "U test: NULL argument");
  memset(out, 0, sizeof *out);
  if (na == 0 || nb == 0) return hx_errf(err, HX_EINVAL, "U test: empty sample (%zu, %zu)", na, nb);
  size_t n = na + nb;
  ranked *r = malloc(n * sizeof *r);
  if (!r) return hx_errf(err, HX_ENOMEM, "U test: %zu samples", n);
  for (size_t i = 0; i < na; i++) r[i] = (ranked){a[i], 1};
  for (size_t i = 0; i < nb; i++) r[na + i] = (ranked){b[i], 0};
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(r[i].v)) {
      free(r);
      return hx_errf(err, HX_EINVAL, "U test: sample %zu is not finite", i);
    }
  }
  qsort(r, n, sizeof *r, cmp_ranked);
  double rank_sum_a = 0.0, tie_term = 0.0;
  size_t tie_groups = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && r[j + 1].v == r[i].v) j++;
    double mid = 0.5 * (double)(i + j) + 1.0; /* ranks are 1-based */
    size_t t = j - i + 1;
    for (size_t k = i; k <= j; k++)
      if (r[k].from_a) rank_sum_a += mid;
    if (t > 1) {
      double tt = (double)t;
      tie_term += tt * tt * tt - tt;
      tie_groups++;
    }
    i = j + 1;
  }
  free(r);
  double dna = (double)na, dnb = (double)nb, dn = (double)n;
  double u_a = rank_sum_a - dna * (dna + 1.0) / 2.0;
  out->n_a = na;
  out->n_b = nb;
  out->u_a = u_a;
  out->u_b = dna * dnb - u_a;
  out->ties = tie_groups;
  double mu = dna * dnb / 2.0;
  double var = dna * dnb / 12.0 * ((dn + 1.0) - (n > 1 ? tie_term / (dn * (dn - 1.0)) : 0.0));
  out->z = var > 0.0 ? (u_a - mu) / sqrt(var) : 0.0;
  if (tie_groups == 0 && na <= HX_MWU_EXACT_MAX && nb <= HX_MWU_EXACT_MAX) {
    out->exact = 1;
    return hx_stats_mwu_exact_p(&out->p, na, nb, u_a, err);
  }
  if (var <= 0.0) { /* every value equal: no evidence of any difference */
    out->p = 1.0;
    return HX_OK;
  }
  double dev = fabs(u_a - mu) - 0.5;
  if (dev < 0.0) dev = 0.0;
  double p = erfc(dev / sqrt(var) / sqrt(2.0));
  out->p = p > 1.0 ? 1.0 : p;
  return HX_OK;
}

hx_stats_verdict hx_stats_compare(const double *base, size_t nb, const double *cur, size_t nc, double alpha,
                                  double min_effect, double *rel_change, double *p_value) {
  if (rel_change) *rel_change = NAN;
  if (p_value) *p_value = NAN;
  if (nb < HX_COMPARE_MIN_SAMPLES || nc < HX_COMPARE_MIN_SAMPLES) return HX_VERDICT_UNKNOWN;
  double mb = hx_stats_median(base, nb), mc = hx_stats_median(cur, nc);
  if (!isfinite(mb) || !isfinite(mc) || mb <= 0.0) return HX_VERDICT_UNKNOWN;
  double rel = (mc - mb) / mb;
  if (rel_change) *rel_change = rel;
  hx_stats_mwu_result t;
  if (hx_stats_mwu(&t, base, nb, cur, nc, NULL) != HX_OK) return HX_VERDICT_UNKNOWN;
  if (p_value) *p_value = t.p;
  if (t.p < alpha && fabs(rel) >= min_effect) return rel > 0.0 ? HX_VERDICT_SLOWER : HX_VERDICT_FASTER;
  return HX_VERDICT_SAME;
}

/* The batches are consecutive runs of the samples in the order they were taken; batch b holds
 * [b n / B, (b + 1) n / B), so the sizes differ by at most one. A run whose time drifts (clocks, heat, a
 * neighbour on the machine) shows it as batch medians that disagree; independent noise alone moves a
 * batch median by about 1.25 sigma / sqrt(n / B). */
double hx_stats_batch_spread(const double *x, size_t n, size_t batches) {
  if (!x || n < 2 || batches < 2) return NAN;
  if (batches > n) batches = n;
  double *s = malloc(n * sizeof *s);
  if (!s) return NAN;
  memcpy(s, x, n * sizeof *s);
  double lo = INFINITY, hi = -INFINITY;
  for (size_t b = 0; b < batches; b++) {
    size_t from = b * n / batches, to = (b + 1) * n / batches;
    qsort(s + from, to - from, sizeof *s, cmp_double);
    double m = hx_stats_quantile_sorted(s + from, to - from, 0.5);
    if (m < lo) lo = m;
    if (m > hi) hi = m;
  }
  qsort(s, n, sizeof *s, cmp_double);
  double med = hx_stats_quantile_sorted(s, n, 0.5);
  free(s);
  if (!isfinite(lo) || !isfinite(hi) || !isfinite(med) || med <= 0.0) return NAN;
  return (hi - lo) / med;
}

const char *hx_stats_verdict_str(hx_stats_verdict v) {
  switch (v) {
  case HX_VERDICT_FASTER: return "faster";
  case HX_VERDICT_SLOWER: return "slower";
  case HX_VERDICT_SAME: return "same";
  case HX_VERDICT_UNKNOWN: break;
  }
  return "unknown";
}

size_t hx_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  size_t *row = malloc((lb + 1) * sizeof *row);
  if (!row) return (size_t)-1;
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  size_t d = row[lb];
  free(row);
  return d;
}
