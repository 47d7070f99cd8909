/*
 * bench.c - the measurement of one sweep stage in one call, for the sweep and the subcommands: the
 * NVBench-style timing pass (hx_meter_measure), its rows (hx_measure_record) and the rate rows of the
 * closure's declared bytes and FLOPs at the median (hx_rates_record), then a counter pass of its
 * own (hx_counters_profile on the same closure, range "pipeline/kernel/variant") and its rows. When
 * counters are unavailable (no CUPTI, no permission, another profiler attached, unsupported device) the
 * reason is printed once on the log stream, recorded in the context, and every later stage is timed only.
 * Invariant: the timing pass never runs while the range profiler is collecting (the two passes are
 * sequential), so counters cannot perturb the timed numbers.
 */
#include "harness/harness.h"

#include <math.h>
#include <string.h>

hx_status hx_bench_open(hx_bench *b, int device, const char *metrics, int no_counters, int paper, FILE *log,
                        hx_err *err) {
  memset(b, 0, sizeof *b);
  b->log = log;
  b->last_median_ms = NAN;
  b->ceilings.copy_gbs = b->ceilings.gemm_bf16_tflops = b->ceilings.gemm_fp16_tflops = NAN;
  b->opts = paper ? hx_measure_paper() : hx_measure_defaults();
  if (!paper) b->opts.max_time_s = 3.0; /* per stage: a 6-size x 10-stage sweep stays in minutes */
  HX_TRY(hx_meter_create(&b->meter, device, err));
  if (no_counters) {
    snprintf(b->counters_off, sizeof b->counters_off, "counters: off (--no-counters)");
    return HX_OK;
  }
  size_t n = 0;
  const char *const *names = hx_counters_default_names(&n);
  if (metrics) {
    /* a copy to split in place; names point into it for the life of b */
    snprintf(b->metric_buf, sizeof b->metric_buf, "%s", metrics);
    hx_status st = hx_counters_split(b->metric_buf, b->metric_names, HX_BENCH_MAX_METRICS, &n, err);
    if (st != HX_OK) {
      hx_bench_close(b);
      return st;
    }
    names = b->metric_names;
  } else {
    for (size_t i = 0; i < n; i++) b->metric_names[i] = names[i];
  }
  b->n_metrics = n;
  hx_err e;
  hx_status st = hx_counters_open(&b->counters, device, b->metric_names, n, 64, 1, &e);
  if (st == HX_EUNSUPPORTED) {
    snprintf(b->counters_off, sizeof b->counters_off, "%s", e.msg);
    if (log) fprintf(log, "f3dbench: %s\n", e.msg);
    return HX_OK;
  }
  if (st != HX_OK) { /* an unknown metric name is the user's error: stop before the run */
    hx_bench_close(b);
    return hx_errf(err, st, "%s", e.msg);
  }
  return HX_OK;
}

void hx_bench_close(hx_bench *b) {
  hx_counters_close(b->counters);
  hx_meter_destroy(b->meter);
  b->counters = NULL;
  b->meter = NULL;
}

void *hx_bench_stream(hx_bench *b) { return hx_meter_stream(b->meter); }

hx_status hx_bench_context(hx_bench *b, hx_results *res, int measure_ceilings, hx_err *err) {
  const hx_measure_opts *o = &b->opts;
  HX_TRY(hx_results_contextf(res, err, "timing", "%s", o->max_noise > 0.0 ? "nvbench" : "paper"));
  HX_TRY(hx_results_contextf(res, err, "timing_opts",
                             "warmup=%u min_samples=%u max_samples=%u min_time_s=%g max_time_s=%g max_noise=%g "
                             "flush_l2=%d blocking=%d hot=%d throttle=%g",
                             o->warmup, o->min_samples, o->max_samples, o->min_time_s, o->max_time_s, o->max_noise,
                             o->flush_l2, o->blocking, o->hot, o->throttle_threshold));
  if (b->counters) {
    HX_TRY(hx_results_contextf(res, err, "counters", "on (%s, %zu pass%s)", hx_counters_chip(b->counters),
                               hx_counters_num_passes(b->counters), hx_counters_num_passes(b->counters) == 1 ? "" : "es"));
  } else {
    HX_TRY(hx_results_context(res, "counters", b->counters_off, err));
  }
  if (measure_ceilings) {
    hx_ceilings c;
    hx_err e;
    if (hx_meter_ceilings(b->meter, &c, &e) == HX_OK) {
      b->ceilings = c;
      HX_TRY(hx_results_contextf(res, err, "ceiling_copy_gbs", "%.1f", c.copy_gbs));
      HX_TRY(hx_results_contextf(res, err, "ceiling_gemm_bf16_tflops", "%.1f", c.gemm_bf16_tflops));
      HX_TRY(hx_results_contextf(res, err, "ceiling_gemm_fp16_tflops", "%.1f", c.gemm_fp16_tflops));
    } else {
      if (b->log) fprintf(b->log, "f3dbench: ceilings not measured: %s\n", e.msg);
      HX_TRY(hx_results_context(res, "ceilings", e.msg, err));
    }
  }
  return HX_OK;
}

/* The closure the counter pass runs: the stage's own run and reset, plus an L2 flush after the reset. */
typedef struct counter_prep {
  const hx_closure *stage;
  hx_meter *meter;
} counter_prep;

static hx_status counter_prep_run(void *arg, void *stream, hx_err *err) {
  const counter_prep *p = arg;
  return p->stage->run(p->stage->arg, stream, err);
}

static hx_status counter_prep_reset(void *arg, hx_err *err) {
  const counter_prep *p = arg;
  if (p->stage->reset) HX_TRY(p->stage->reset(p->stage->arg, err));
  return hx_meter_flush_l2(p->meter, err);
}

hx_status hx_bench_stage(hx_bench *b, hx_results *res, const hx_key *k, const hx_closure *c, hx_err *err) {
  hx_measurement m;
  b->last_median_ms = NAN;
  HX_TRY(hx_closure_check(c, err)); /* a bad declaration stops before the stage is timed */
  HX_TRY(hx_meter_measure(b->meter, &b->opts, c, &m, err));
  if (m.n_cold > 0) b->last_median_ms = hx_stats_median(m.cold_ms, m.n_cold);
  else if (m.n_hot > 0) b->last_median_ms = hx_stats_median(m.hot_ms, m.n_hot);
  hx_status st = hx_measure_record(res, k, &m, err);
  hx_measurement_free(&m);
  HX_TRY(st);
  HX_TRY(hx_rates_record(res, k, c, b->last_median_ms, err));
  if (!b->counters) return HX_OK;
  char range[256];
  snprintf(range, sizeof range, "%s/%s/%s", k->pipeline, k->kernel, k->variant);
  double v[HX_BENCH_MAX_METRICS];
  hx_err e;
  /* The counter pass sees what a cold sample sees: the stage's reset, then the L2 flushed, so DRAM
   * figures of stages whose working set fits in L2 are not those of a warm cache. */
  counter_prep prep = {c, b->meter};
  hx_closure cc = {counter_prep_run, counter_prep_reset, &prep, 0.0, 0.0};
  st = hx_counters_profile(b->counters, range, &cc, hx_meter_stream(b->meter), v, &e);
  if (st == HX_EUNSUPPORTED) { /* e.g. a profiler attached mid-run: say so once, keep timing */
    snprintf(b->counters_off, sizeof b->counters_off, "%s", e.msg);
    if (b->log) fprintf(b->log, "f3dbench: %s\n", e.msg);
    hx_counters_close(b->counters);
    b->counters = NULL;
    return HX_OK;
  }
  if (st != HX_OK) return hx_errf(err, st, "%s", e.msg);
  return hx_counters_record(res, k, b->metric_names, v, b->n_metrics, err);
}
