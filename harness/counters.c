/*
 * counters.c - the metric table of the counter pass (always built, also without CUPTI): for each metric
 * of the default set its CUPTI name, the short name used as `metric` in result rows, the unit and what it
 * means. The default set is one pass on GA100 and GH100 (harness-cupti.md section 2), so the counter pass
 * replays each case once. Metrics named by the user but not in this table keep their CUPTI name as the
 * row name and an empty unit.
 */
#include "harness/harness.h"

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
