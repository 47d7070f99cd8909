/*
 * test_cupti_attrib.c - counters per component without a GPU: nested ranges flattened into one level (hx_flat_*)
 * and flat ranges summed into components (hx_counters_aggregate), on a synthetic forward whose kernels carry
 * known time, SM activity, issue, tensor activity and DRAM bytes.
 *   A fake range profiler turns the kernels launched while each flat range was open into that range's values
 *   (what CUPTI reports for a range: gpu_time the sum, sm_active per elapsed cycle, issue and tensor per active
 *   cycle, DRAM bytes per second); the flat ranges are grouped by component (leaf: its category, gap: "other")
 *   and aggregated; each component must equal the same metrics computed straight from its kernels, whose
 *   component is written by hand beside each launch.
 *   The aggregation rules on hand-computed values (active-cycle weighting differs from time weighting there);
 *   flattening errors: an end without a begin, ranges left open, too deep, a full table; range-name parsing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"

static const char *const names[] = {
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "dram__bytes_read.sum.per_second",
    "gpu__time_duration.sum",
};
enum { M_ACT, M_ISSUE, M_TENSOR, M_DRAM, M_TIME, NM };

/* One kernel: duration (ns), share of elapsed cycles the SMs were active, issue and tensor shares of active
 * cycles, bytes read from DRAM. */
typedef struct kern {
  double t, act, issue, tensor, bytes;
} kern;

/* A script step: a range begin ('b') or end ('e') with its path, or a kernel ('k') and the component it must
 * be counted in. */
typedef struct step {
  char op;
  const char *path;
  kern k;
} step;

#define K(comp, t, a, i, tc, b) {'k', comp, {t, a, i, tc, b}}
#define B(p_) {.op = 'b', .path = p_}
#define E(p_) {.op = 'e', .path = p_}
/* levels, blocks and components as the networks nest them; kernels also in gaps (outside any leaf: "other")
 * and before the first range; one leaf without kernels ("norm.2" of enc1) */
static const step script[] = {
    K("other", 2000, 0.30, 0.20, 0.00, 1e6),
    B("serialize"),
    K("serialize", 50000, 0.90, 0.40, 0.00, 4e8),
    K("serialize", 30000, 0.60, 0.30, 0.00, 1e8),
    E("serialize"),
    B("enc0"),
    B("enc0/block0"),
    B("enc0/block0/attn"),
    K("attn", 100000, 0.95, 0.50, 0.80, 2e8),
    E("enc0/block0/attn"),
    K("other", 5000, 0.50, 0.10, 0.00, 5e6), /* a gap of block0, between its components */
    B("enc0/block0/norm.1"),
    K("norm", 8000, 0.70, 0.25, 0.00, 6e7),
    E("enc0/block0/norm.1"),
    B("enc0/block0/mlp"),
    K("mlp", 60000, 0.98, 0.60, 0.70, 9e7),
    K("mlp", 20000, 0.40, 0.20, 0.10, 3e7),
    E("enc0/block0/mlp"),
    E("enc0/block0"),
    E("enc0"),
    B("enc1"),
    B("enc1/pool"),
    K("pool", 15000, 0.55, 0.35, 0.00, 1.2e8),
    E("enc1/pool"),
    B("enc1/block0"),
    B("enc1/block0/attn.v5"),
    K("attn", 40000, 0.50, 0.30, 0.40, 1e8),
    E("enc1/block0/attn.v5"),
    B("enc1/block0/norm.2"),
    E("enc1/block0/norm.2"),
    E("enc1/block0"),
    K("other", 3000, 0.20, 0.10, 0.00, 2e6), /* a gap of enc1, after its last block */
    E("enc1"),
    B("head"),
    K("head", 12000, 0.85, 0.45, 0.60, 3e7),
    E("head"),
};
#define N_SCRIPT (sizeof script / sizeof *script)
#define MAX_RANGES 64
#define MAX_COMP 16

/* What a range profiler reports for the kernels of one range (NaN shares for a range without kernels). */
static void range_values(double *v, const kern *k, size_t n) {
  double t = 0, act = 0, issue = 0, tensor = 0, bytes = 0;
  for (size_t i = 0; i < n; i++) {
    t += k[i].t, act += k[i].act * k[i].t, bytes += k[i].bytes;
    issue += k[i].issue * k[i].act * k[i].t, tensor += k[i].tensor * k[i].act * k[i].t;
  }
  v[M_TIME] = t;
  v[M_ACT] = t > 0 ? 100.0 * act / t : (double)NAN;
  v[M_ISSUE] = act > 0 ? 100.0 * issue / act : (double)NAN;
  v[M_TENSOR] = act > 0 ? 100.0 * tensor / act : (double)NAN;
  v[M_DRAM] = t > 0 ? bytes / (t * 1e-9) : (double)NAN;
}

static size_t comp_index(char comps[][16], size_t *n, const char *name) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp(comps[i], name) == 0) return i;
  assert_true(*n < MAX_COMP);
  snprintf(comps[*n], 16, "%s", name);
  return (*n)++;
}

static void test_synthetic_forward(void **state) {
  (void)state;
  hx_flat f;
  hx_err e;
  assert_int_equal(hx_flat_init(&f, NULL, MAX_RANGES, &e), HX_OK);
  kern in_range[MAX_RANGES][8];
  size_t n_in[MAX_RANGES] = {0}, begins = 0;
  hx_flat_begin(&f, "forward");
  for (size_t s = 0; s < N_SCRIPT; s++) {
    if (script[s].op == 'k') {
      assert_true(f.open && f.n > 0); /* every launch falls in an open flat range */
      const size_t r = f.n - 1;
      assert_true(n_in[r] < 8);
      in_range[r][n_in[r]++] = script[s].k;
    } else {
      hx_flat_range(&f, script[s].path, script[s].op == 'b');
      begins += script[s].op == 'b';
      assert_int_equal(f.st, HX_OK);
      assert_true(f.open); /* exactly one flat range open at every point of the pass */
    }
  }
  assert_int_equal(hx_flat_end(&f, &e), HX_OK);
  assert_false(f.open);
  assert_int_equal(f.n, 1 + 2 * begins);

  /* the flat ranges as the profiler would decode them, in a shuffled order, grouped by component */
  char comps[MAX_COMP][16];
  size_t nc = 0;
  double values[MAX_RANGES * NM];
  long group[MAX_RANGES];
  for (size_t q = 0; q < f.n; q++) {
    const size_t r = (q * 7) % f.n; /* 7 is prime to f.n = 1 + 2 x 12 = 25: a permutation */
    char name[HX_FLAT_PATH + 24];
    snprintf(name, sizeof name, "%zu:%s", r, f.seg[r].path);
    assert_int_equal(hx_flat_index(&f, name), (long)r);
    char cat[16];
    hx_range_category(f.seg[r].path, cat, sizeof cat);
    group[q] = (long)comp_index(comps, &nc, f.seg[r].leaf ? cat : "other");
    range_values(values + q * NM, in_range[r], n_in[r]);
  }
  double agg[MAX_COMP * NM];
  assert_int_equal(hx_counters_aggregate(agg, nc, values, group, f.n, names, NM, &e), HX_OK);

  /* every component from its own kernels, by the labels in the script */
  size_t checked = 0;
  for (size_t c = 0; c < nc; c++) {
    kern ks[16];
    size_t nk = 0;
    for (size_t s = 0; s < N_SCRIPT; s++)
      if (script[s].op == 'k' && strcmp(script[s].path, comps[c]) == 0) ks[nk++] = script[s].k;
    double want[NM];
    range_values(want, ks, nk);
    for (int m = 0; m < NM; m++) {
      if (isnan(want[m])) {
        assert_true(isnan(agg[c * NM + (size_t)m])); /* the leaf without kernels stays undefined */
        continue;
      }
      const double got = agg[c * NM + (size_t)m];
      if (fabs(got - want[m]) > 1e-9 * fabs(want[m]))
        print_error("%s metric %d: %g, want %g\n", comps[c], m, got, want[m]);
      assert_true(fabs(got - want[m]) <= 1e-9 * fabs(want[m]));
      checked++;
    }
  }
  /* serialize, attn, norm, mlp, pool, head and other: each with all five metrics */
  assert_true(nc == 7);
  assert_true(checked == 7 * NM);

  /* the whole pass as one group equals the forward's kernels taken together */
  for (size_t q = 0; q < f.n; q++) group[q] = 0;
  double whole[NM], want[NM];
  assert_int_equal(hx_counters_aggregate(whole, 1, values, group, f.n, names, NM, &e), HX_OK);
  kern all[32];
  size_t na = 0;
  for (size_t s = 0; s < N_SCRIPT; s++)
    if (script[s].op == 'k') all[na++] = script[s].k;
  range_values(want, all, na);
  for (int m = 0; m < NM; m++) assert_true(fabs(whole[m] - want[m]) <= 1e-9 * fabs(want[m]));
  hx_flat_fini(&f);
}

/* The rules on values worked by hand. */
static void test_aggregate_rules(void **state) {
  (void)state;
  hx_err e;
  /* two ranges of group 0: 1 and 3 us, SMs active 100% and 50%; tensor 80% and 0% of active cycles; DRAM 1 and
   * 2 TB/s; issue NaN in the second (left out); a third range left out (group -1) */
  const double v[3 * NM] = {
      100.0, 40.0, 80.0, 1e12, 1000.0, /**/ 50.0, NAN, 0.0, 2e12, 3000.0, /**/ 10.0, 10.0, 10.0, 1e9, 1e9,
  };
  const long g[3] = {0, 0, -1};
  double out[NM];
  assert_int_equal(hx_counters_aggregate(out, 1, v, g, 3, names, NM, &e), HX_OK);
  assert_true(fabs(out[M_TIME] - 4000.0) < 1e-9);                  /* summed */
  assert_true(fabs(out[M_ACT] - (100.0 * 1 + 50.0 * 3) / 4) < 1e-9); /* 62.5: by time */
  /* by active cycles: (80 x 1 x 1.0 + 0 x 3 x 0.5) / (1 + 1.5) = 32, where weighting by time gives 20 */
  assert_true(fabs(out[M_TENSOR] - 32.0) < 1e-9);
  assert_true(fabs(out[M_ISSUE] - 40.0) < 1e-9);                      /* the NaN range left out */
  assert_true(fabs(out[M_DRAM] - 1.75e12) < 1e-12 * 1.75e12);          /* bytes / time: (1 + 6) / 4 TB/s */

  /* a group without ranges is NaN everywhere; a chip constant takes the largest; a count is summed */
  const char *const more[] = {"gpu__time_duration.sum", "sm__inst_executed.sum", "dram__bytes.sum.peak_sustained"};
  const double w[2 * 3] = {10.0, 5.0, 64.0, 30.0, 7.0, 64.0};
  const long g2[2] = {1, 1};
  double o2[2 * 3];
  assert_int_equal(hx_counters_aggregate(o2, 2, w, g2, 2, more, 3, &e), HX_OK);
  assert_true(isnan(o2[0]) && isnan(o2[1]) && isnan(o2[2]));
  assert_true(o2[3] == 40.0 && o2[4] == 12.0 && o2[5] == 64.0);

  /* a rate without the time to weigh it by: refused, naming the missing metric */
  const char *const no_time[] = {"dram__bytes_read.sum.per_second"};
  assert_int_equal(hx_counters_aggregate(o2, 1, w, g2, 2, no_time, 1, &e), HX_EUNSUPPORTED);
  assert_non_null(strstr(e.msg, "gpu__time_duration.sum"));
  /* counts alone need no time */
  const char *const counts[] = {"sm__inst_executed.sum"};
  const long g1[2] = {0, 0};
  assert_int_equal(hx_counters_aggregate(o2, 1, w, g1, 2, counts, 1, &e), HX_OK);
  assert_true(o2[0] == 15.0);
  /* a group out of range, NULL arguments */
  const long bad[2] = {0, 2};
  assert_int_equal(hx_counters_aggregate(o2, 2, w, bad, 2, more, 3, &e), HX_EINVAL);
  assert_int_equal(hx_counters_aggregate(NULL, 1, w, g2, 2, more, 3, &e), HX_EINVAL);
}

static void test_flat_errors(void **state) {
  (void)state;
  hx_flat f;
  hx_err e;
  assert_int_equal(hx_flat_init(&f, NULL, 0, &e), HX_EINVAL);
  assert_int_equal(hx_flat_init(&f, NULL, 5, &e), HX_OK);
  /* an end without a begin */
  hx_flat_begin(&f, "forward");
  hx_flat_range(&f, "a", 0);
  assert_int_equal(hx_flat_end(&f, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "without a begin"));
  /* a range left open */
  hx_flat_begin(&f, "forward");
  hx_flat_range(&f, "a", 1);
  assert_int_equal(hx_flat_end(&f, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "still open"));
  /* a new pass starts clean, and 1 + 2 x 2 ranges fit a table of 5 */
  hx_flat_begin(&f, "forward");
  hx_flat_range(&f, "a", 1);
  hx_flat_range(&f, "a", 0);
  hx_flat_range(&f, "b", 1);
  hx_flat_range(&f, "b", 0);
  assert_int_equal(hx_flat_end(&f, &e), HX_OK);
  assert_int_equal(f.n, 5);
  assert_true(f.seg[1].leaf && f.seg[3].leaf && !f.seg[0].leaf && !f.seg[2].leaf && !f.seg[4].leaf);
  assert_string_equal(f.seg[2].path, "forward");
  /* the sixth flat range does not fit: the first failure is kept, later steps change nothing */
  hx_flat_begin(&f, "forward");
  for (int i = 0; i < 3; i++) {
    hx_flat_range(&f, "c", 1);
    hx_flat_range(&f, "c", 0);
  }
  assert_int_equal(hx_flat_end(&f, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "more than 5 flat ranges"));
  hx_flat_fini(&f);
  /* deeper than HX_FLAT_MAX_DEPTH */
  assert_int_equal(hx_flat_init(&f, NULL, 64, &e), HX_OK);
  hx_flat_begin(&f, "forward");
  for (int i = 0; i <= HX_FLAT_MAX_DEPTH; i++) hx_flat_range(&f, "d", 1);
  assert_int_equal(hx_flat_end(&f, &e), HX_EINVAL);
  assert_non_null(strstr(e.msg, "deeper"));
  /* names: only "<i>:..." with i a flat range of this pass */
  hx_flat_begin(&f, "forward");
  hx_flat_range(&f, "x", 1);
  hx_flat_range(&f, "x", 0);
  assert_int_equal(hx_flat_end(&f, &e), HX_OK);
  assert_int_equal(hx_flat_index(&f, "1:x"), 1);
  assert_int_equal(hx_flat_index(&f, "0:forward"), 0);
  assert_int_equal(hx_flat_index(&f, "3:x"), -1);
  assert_int_equal(hx_flat_index(&f, "x"), -1);
  assert_int_equal(hx_flat_index(&f, "1x"), -1);
  assert_int_equal(hx_flat_index(&f, "-1:x"), -1);
  assert_int_equal(hx_flat_index(&f, NULL), -1);
  hx_flat_fini(&f);
  char cat[8];
  assert_int_equal(hx_range_category("enc2/block1/norm.1", cat, sizeof cat), 4);
  assert_string_equal(cat, "norm");
  hx_range_category("serialize", cat, sizeof cat); /* cut to the buffer */
  assert_string_equal(cat, "seriali");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_synthetic_forward),
      cmocka_unit_test(test_aggregate_rules),
      cmocka_unit_test(test_flat_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
