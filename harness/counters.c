/*
 * counters.c - the metric table of the counter pass (always built, also without CUPTI): for each metric
 * of the default set its CUPTI name, the short name used as `metric` in result rows, the unit and what it
 * means. The default set is one pass on GA100 and GH100 (harness-cupti.md section 2), so the counter pass
 * replays each case once. Metrics named by the user but not in this table keep their CUPTI name as the
 * row name and an empty unit.
 * Also the host side of counters per part of a larger piece of work (a network's components): nested ranges
 * flattened into one level of user ranges, so one replay pass attributes each kernel to one range (hx_flat_*),
 * and the ranges' values summed into groups by each metric's rollup (hx_counters_aggregate). Neither calls
 * CUPTI except through hx_counters_push/pop, so both are tested without a GPU.
 */
#include "harness/harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const hx_metric_info metric_table[] = {
    {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "sm_active", "%",
     "SM active: share of elapsed cycles with at least one warp in flight (Nsight 'SMs Active')"},
    {"smsp__issue_active.avg.pct_of_peak_sustained_active", "sm_issue", "%",
     "SM issue: share of active cycles in which a warp scheduler issued an instruction"},
    {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "tensor_active", "%",
     "TensorCore active: share of active cycles the tensor pipe (all MMA kinds) was busy"},
    {"dram__bytes_read.sum.per_second", "dram_read_bw", "B/s", "DRAM read bandwidth over the range"},
    {"gpu__time_duration.sum", "gpu_time", "ns", "GPU time of the range as the profiler saw it (replayed)"},
};
#define N_DEFAULT (sizeof metric_table / sizeof metric_table[0])

static const char *const default_names[] = {
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "dram__bytes_read.sum.per_second",
    "gpu__time_duration.sum",
};

const char *const *hx_counters_default_names(size_t *n) {
  if (n) *n = sizeof default_names / sizeof default_names[0];
  return default_names;
}

const hx_metric_info *hx_metric_lookup(const char *name) {
  for (size_t i = 0; i < N_DEFAULT; i++)
    if (strcmp(metric_table[i].name, name) == 0 || strcmp(metric_table[i].short_name, name) == 0)
      return &metric_table[i];
  return NULL;
}

hx_status hx_counters_split(char *list, const char **names, size_t cap, size_t *n, hx_err *err) {
  *n = 0;
  for (char *save = NULL, *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
    if (*n == cap) return hx_errf(err, HX_EINVAL, "counters: more than %zu metric names", cap);
    const hx_metric_info *m = hx_metric_lookup(tok); /* short names are accepted too */
    names[(*n)++] = m ? m->name : tok;
  }
  if (*n == 0) return hx_errf(err, HX_EINVAL, "counters: empty metric list");
  return HX_OK;
}

/* ---- nested ranges flattened into one level ------------------------------------------------------ */

/* "<i>:<path>" in a buffer of HX_FLAT_PATH + 24: never longer than a range name CUPTI's trace buffer holds */
#define FLAT_NAME (HX_FLAT_PATH + 24)
_Static_assert(FLAT_NAME - 1 <= HX_COUNTERS_MAX_NAME, "flat range names must fit HX_COUNTERS_MAX_NAME");

hx_status hx_flat_init(hx_flat *f, hx_counters *counters, size_t cap, hx_err *err) {
  memset(f, 0, sizeof *f);
  if (cap == 0) return hx_errf(err, HX_EINVAL, "counters: a flat range table of 0 entries");
  f->seg = calloc(cap, sizeof *f->seg);
  if (!f->seg) return hx_errf(err, HX_ENOMEM, "counters: a table of %zu flat ranges", cap);
  f->counters = counters;
  f->cap = cap;
  return HX_OK;
}

void hx_flat_fini(hx_flat *f) {
  free(f->seg);
  f->seg = NULL;
  f->cap = f->n = 0;
}

static void flat_fail(hx_flat *f, hx_status st, const hx_err *e) {
  if (f->st != HX_OK) return; /* the first failure is the cause; later ones follow from it */
  f->st = st;
  f->err.status = st;
  snprintf(f->err.msg, sizeof f->err.msg, "%s", e->msg);
}

/* Close the open flat range (if any). */
static void flat_close(hx_flat *f) {
  if (!f->open) return;
  f->open = 0;
  if (!f->counters) return;
  hx_err e;
  hx_status st = hx_counters_pop(f->counters, &e);
  if (st != HX_OK) flat_fail(f, st, &e);
}

/* Open flat range n for the range on top of the stack (depth f->depth). */
static void flat_open(hx_flat *f) {
  if (f->n == f->cap) {
    hx_err e;
    (void)hx_errf(&e, HX_EINVAL, "counters: more than %zu flat ranges in one pass (the table holds 1 + 2 x the "
                  "nested ranges the caller expected)", f->cap);
    flat_fail(f, HX_EINVAL, &e);
    return;
  }
  hx_flat_seg *s = &f->seg[f->n];
  snprintf(s->path, sizeof s->path, "%s", f->stack[f->depth]);
  s->leaf = 0;
  if (f->counters) {
    char name[FLAT_NAME];
    int len = snprintf(name, sizeof name, "%zu:%s", f->n, s->path);
    for (int i = 0; i < len && (size_t)i < sizeof name; i++)
      if (name[i] == '/') name[i] = '|'; /* '/' joins nesting levels in decoded names */
    hx_err e;
    hx_status st = hx_counters_push(f->counters, name, &e);
    if (st != HX_OK) {
      flat_fail(f, st, &e);
      return; /* not open: nothing to pop */
    }
  }
  f->n++;
  f->open = 1;
}

void hx_flat_begin(hx_flat *f, const char *root) {
  f->n = 0;
  f->depth = 0;
  f->open = 0;
  f->st = HX_OK;
  f->err.status = HX_OK;
  f->err.msg[0] = '\0';
  snprintf(f->stack[0], sizeof f->stack[0], "%s", root ? root : "");
  f->child[0] = 0;
  flat_open(f);
}

void hx_flat_range(hx_flat *f, const char *name, int begin) {
  if (f->st != HX_OK) return; /* after a failure the pass is void: no more CUPTI calls */
  hx_err e;
  if (begin) {
    if (f->depth == HX_FLAT_MAX_DEPTH) {
      (void)hx_errf(&e, HX_EINVAL, "counters: ranges nested deeper than %d (at \"%s\")", HX_FLAT_MAX_DEPTH,
                    name ? name : "");
      flat_fail(f, HX_EINVAL, &e);
      return;
    }
    flat_close(f);
    f->child[f->depth] = 1;
    f->depth++;
    snprintf(f->stack[f->depth], sizeof f->stack[0], "%s", name ? name : "");
    f->child[f->depth] = 0;
    flat_open(f);
    return;
  }
  if (f->depth == 0) {
    (void)hx_errf(&e, HX_EINVAL, "counters: range \"%s\" ends without a begin", name ? name : "");
    flat_fail(f, HX_EINVAL, &e);
    return;
  }
  /* a range without nested ones: the flat range open now is all of it */
  if (!f->child[f->depth] && f->open && f->n > 0) f->seg[f->n - 1].leaf = 1;
  flat_close(f);
  f->depth--;
  flat_open(f); /* the rest of the enclosing range (or of the root) */
}

hx_status hx_flat_end(hx_flat *f, hx_err *err) {
  if (f->st == HX_OK && f->depth != 0) {
    hx_err e;
    (void)hx_errf(&e, HX_EINVAL, "counters: %d range%s still open at the end (innermost \"%s\")", f->depth,
                  f->depth == 1 ? "" : "s", f->stack[f->depth]);
    flat_fail(f, HX_EINVAL, &e);
  }
  flat_close(f); /* also after a failure: CUPTI's stack must be empty before the pass ends */
  if (f->st != HX_OK) return hx_errf(err, f->st, "%s", f->err.msg);
  return HX_OK;
}

size_t hx_range_category(const char *path, char *out, size_t cap) {
  if (!cap) return 0;
  const char *leaf = path ? strrchr(path, '/') : NULL;
  leaf = leaf ? leaf + 1 : path ? path : "";
  size_t k = 0;
  while (leaf[k] && leaf[k] != '.' && k + 1 < cap) out[k] = leaf[k], k++;
  out[k] = '\0';
  return k;
}

long hx_flat_index(const hx_flat *f, const char *range_name) {
  if (!range_name || range_name[0] < '0' || range_name[0] > '9') return -1;
  char *end = NULL;
  unsigned long i = strtoul(range_name, &end, 10);
  if (!end || *end != ':' || i >= f->n) return -1;
  return (long)i;
}

/* ---- ranges summed into groups ------------------------------------------------------------------- */

typedef enum { AGG_SUM, AGG_MAX, AGG_TIME, AGG_ACTIVE } agg_rule;

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static agg_rule agg_rule_of(const char *name) {
  if (ends_with(name, ".pct_of_peak_sustained_active") || ends_with(name, ".per_cycle_active")) return AGG_ACTIVE;
  if (ends_with(name, ".peak_sustained")) return AGG_MAX;
  if (ends_with(name, ".sum") || ends_with(name, ".avg") || ends_with(name, ".max") || ends_with(name, ".min"))
    return AGG_SUM;
  return AGG_TIME;
}

#define AGG_TIME_NAME "gpu__time_duration.sum"
#define AGG_ACTIVE_NAME "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"

hx_status hx_counters_aggregate(double *out, size_t n_groups, const double *values, const long *group,
                                size_t n_ranges, const char *const *names, size_t n_metrics, hx_err *err) {
  if (!out || (n_ranges && (!values || !group)) || (n_metrics && !names))
    return hx_errf(err, HX_EINVAL, "counters: aggregate: NULL argument");
  long t_idx = -1, a_idx = -1;
  for (size_t m = 0; m < n_metrics; m++) {
    if (!names[m]) return hx_errf(err, HX_EINVAL, "counters: aggregate: metric %zu has no name", m);
    if (strcmp(names[m], AGG_TIME_NAME) == 0) t_idx = (long)m;
    if (strcmp(names[m], AGG_ACTIVE_NAME) == 0) a_idx = (long)m;
  }
  for (size_t m = 0; m < n_metrics; m++) {
    agg_rule r = agg_rule_of(names[m]);
    if ((r == AGG_TIME || r == AGG_ACTIVE) && t_idx < 0)
      return hx_errf(err, HX_EUNSUPPORTED,
                     "counters: %s is a rate or a share: summing it over ranges needs each range's time, "
                     "gpu__time_duration.sum (gpu_time), in the metric set", names[m]);
  }
  for (size_t r = 0; r < n_ranges; r++)
    if (group[r] < -1 || group[r] >= (long)n_groups)
      return hx_errf(err, HX_EINVAL, "counters: aggregate: range %zu has group %ld of %zu", r, group[r], n_groups);
  for (size_t g = 0; g < n_groups; g++)
    for (size_t m = 0; m < n_metrics; m++) {
      const agg_rule rule = agg_rule_of(names[m]);
      double acc = 0.0, wsum = 0.0;
      size_t used = 0;
      for (size_t r = 0; r < n_ranges; r++) {
        if (group[r] != (long)g) continue;
        const double v = values[r * n_metrics + m];
        if (!isfinite(v)) continue;
        if (rule == AGG_SUM) {
          acc += v, used++;
        } else if (rule == AGG_MAX) {
          acc = used ? fmax(acc, v) : v, used++;
        } else {
          double w = values[r * n_metrics + (size_t)t_idx];
          if (rule == AGG_ACTIVE && a_idx >= 0) w *= values[r * n_metrics + (size_t)a_idx] / 100.0;
          if (!isfinite(w) || w <= 0.0) continue; /* no time (or no active cycle): nothing to weigh */
          acc += v * w, wsum += w, used++;
        }
      }
      double res = NAN;
      if (used && (rule == AGG_SUM || rule == AGG_MAX)) res = acc;
      else if (used && wsum > 0.0) res = acc / wsum;
      out[g * n_metrics + m] = res;
    }
  return HX_OK;
}
