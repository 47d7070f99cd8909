/*
 * measure_common.c - the host-side rules of the NVBench-style GPU measurement (measure.cu), kept in C so
 * they are built and tested without a GPU: option presets and the stopping rule.
 *
 * Stopping rule, checked after every kept cold sample: stop at max_samples or when the wall time passes
 * max_time_s; otherwise stop with "noise reached" once at least min_samples are kept, at least min_time_s
 * of GPU time has been accumulated and the relative noise std/mean is at most max_noise. A preset with
 * max_noise = 0 never stops on noise (fixed count, as the paper's protocol). The wall-time cap waits
 * for a second kept sample (when max_samples allows one), so a stage slower than the cap still gets a
 * noise figure.
 *
 * Rows never carry a non-finite value (hx_results_add refuses them): a statistic that is undefined
 * (noise of one sample, a counter of a range without a kernel) is left out and a row says why:
 * noise_undefined (the noise needs two samples), rows_undefined (any other statistic, counted) or
 * counters_undefined (how many metrics had no value).
 *
 * Rates are written here, not by the caller: a closure declares the bytes and FLOPs of one run() and
 * hx_rates_record divides them by the median time the time_median row reports (GB/s = B / (ms * 1e6),
 * TFLOP/s = FLOP / (ms * 1e-3) / 1e12), so a rate and the time it is computed from cannot disagree.
 */
#include "harness/harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

hx_measure_opts hx_measure_defaults(void) {
  hx_measure_opts o;
  o.warmup = 1;
  o.min_samples = 10;
  o.max_samples = 1000;
  o.min_time_s = 0.5;
  o.max_time_s = 15.0;
  o.max_noise = 0.005;
  o.throttle_threshold = 0.75;
  o.throttle_recovery_s = 0.05;
  o.hot_target_s = 0.1;
  o.hot_batches = 5;
  o.flush_l2 = 1;
  o.blocking = 1;
  o.cold = 1;
  o.hot = 1;
  o.sync_timeout_s = 2.0;
  return o;
}

/* The paper's protocol: 20 runs, the first discarded, mean and std of the other 19; no L2 flush and no
 * blocking kernel (plain CUDA events around each call), no hot batches, no early stop. Throttled samples
 * are still dropped, which only matters on a throttling GPU. */
hx_measure_opts hx_measure_paper(void) {
  hx_measure_opts o = hx_measure_defaults();
  o.warmup = 1;
  o.min_samples = 19;
  o.max_samples = 19;
  o.min_time_s = 0.0;
  o.max_time_s = 600.0;
  o.max_noise = 0.0;
  o.flush_l2 = 0;
  o.blocking = 0;
  o.hot = 0;
  return o;
}

hx_measure_stop hx_measure_should_stop(const hx_measure_opts *o, size_t n_kept, double gpu_time_s,
                                       double wall_s, double rel_noise) {
  if (n_kept >= o->max_samples) return HX_STOP_MAX_SAMPLES;
  if (wall_s >= o->max_time_s && (n_kept >= 2 || o->max_samples < 2)) return HX_STOP_MAX_TIME;
  if (o->max_noise > 0.0 && n_kept >= o->min_samples && n_kept >= 2 && gpu_time_s >= o->min_time_s &&
      rel_noise <= o->max_noise)
    return HX_STOP_NOISE;
  return HX_STOP_NO;
}

const char *hx_measure_stop_str(hx_measure_stop s) {
  switch (s) {
  case HX_STOP_NOISE: return "noise";
  case HX_STOP_MAX_SAMPLES: return "max_samples";
  case HX_STOP_MAX_TIME: return "max_time";
  case HX_STOP_NO: break;
  }
  return "running";
}

void hx_measurement_free(hx_measurement *r) {
  if (!r) return;
  free(r->cold_ms);
  free(r->cold_sm_mhz);
  free(r->hot_ms);
  r->cold_ms = r->cold_sm_mhz = r->hot_ms = NULL;
  r->n_cold = r->n_hot = 0;
}

/* ---- result rows ------------------------------------------------------------------------------------ */

hx_status hx_measure_record(hx_results *res, const hx_key *k, const hx_measurement *m, hx_err *err) {
  if (m->n_cold > 0) {
    hx_stats_desc d;
    HX_TRY(hx_stats_describe(&d, m->cold_ms, m->n_cold, err));
    const struct {
      const char *metric;
      double v;
      const char *unit;
    } rows[] = {{"time_median", d.median, "ms"},
                {"time_mean", d.mean, "ms"},
                {"time_std", d.std, "ms"},
                {"time_min", d.min, "ms"},
                {"time_max", d.max, "ms"},
                {"reps", (double)m->n_cold, "count"},
                {"time_noise", m->noise, "ratio"},
                {"noise_reached", (double)m->noise_reached, "bool"},
                {"throttled_dropped", (double)m->n_throttled, "count"}};
    size_t other_undefined = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
      if (isfinite(rows[i].v)) {
        HX_TRY(hx_results_add(res, k, rows[i].metric, rows[i].v, rows[i].unit, err));
      } else if (strcmp(rows[i].metric, "time_noise") == 0) { /* one kept sample: say so instead */
        HX_TRY(hx_results_add(res, k, "noise_undefined", 1.0, "bool", err));
      } else {
        other_undefined++;
      }
    }
    if (other_undefined) HX_TRY(hx_results_add(res, k, "rows_undefined", (double)other_undefined, "count", err));
    /* SM clock: the median of the samples where SM 0 was probed */
    double *clk = malloc(m->n_cold * sizeof *clk);
    if (!clk) return hx_errf(err, HX_ENOMEM, "measure: no memory");
    size_t nc = 0;
    for (size_t i = 0; i < m->n_cold; i++)
      if (isfinite(m->cold_sm_mhz[i])) clk[nc++] = m->cold_sm_mhz[i];
    hx_status st = HX_OK;
    if (nc) st = hx_results_add(res, k, "sm_clock", hx_stats_median(clk, nc), "MHz", err);
    free(clk);
    HX_TRY(st);
    HX_TRY(hx_results_add_samples(res, k, "time", m->cold_ms, m->n_cold, "ms", err));
  }
  if (m->n_hot > 0) {
    hx_stats_desc d;
    HX_TRY(hx_stats_describe(&d, m->hot_ms, m->n_hot, err));
    HX_TRY(hx_results_add(res, k, "time_hot_median", d.median, "ms", err));
    HX_TRY(hx_results_add(res, k, "time_hot_mean", d.mean, "ms", err));
    HX_TRY(hx_results_add(res, k, "time_hot_std", d.std, "ms", err));
    HX_TRY(hx_results_add(res, k, "hot_batch", (double)m->hot_batch_size, "count", err));
    HX_TRY(hx_results_add_samples(res, k, "time_hot", m->hot_ms, m->n_hot, "ms", err));
  }
  if (m->sync_detected) HX_TRY(hx_results_add(res, k, "sync_detected", 1.0, "bool", err));
  return HX_OK;
}

hx_status hx_counters_record(hx_results *res, const hx_key *k, const char *const *names, const double *values,
                             size_t n, hx_err *err) {
  size_t undefined = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(values[i])) { /* e.g. a percentage over a range with no kernel (a copy-only stage) */
      undefined++;
      continue;
    }
    const hx_metric_info *mi = hx_metric_lookup(names[i]);
    HX_TRY(hx_results_add(res, k, mi ? mi->short_name : names[i], values[i], mi ? mi->unit : "", err));
  }
  if (undefined) HX_TRY(hx_results_add(res, k, "counters_undefined", (double)undefined, "count", err));
  return HX_OK;
}

hx_status hx_rates_record(hx_results *res, const hx_key *k, const hx_closure *c, double median_ms, hx_err *err) {
  if (!c) return hx_errf(err, HX_EINVAL, "rates: no closure");
  HX_TRY(hx_closure_check(c, err)); /* a negative or NaN declaration writes no row at all */
  const int rate = isfinite(median_ms) && median_ms > 0.0;
  if (c->bytes > 0.0) {
    HX_TRY(hx_results_add(res, k, "bytes", c->bytes, "B", err));
    if (rate) HX_TRY(hx_results_add(res, k, "bandwidth", c->bytes / (median_ms * 1e6), "GB/s", err));
  }
  if (c->flops > 0.0) {
    HX_TRY(hx_results_add(res, k, "flops", c->flops, "FLOP", err));
    if (rate) HX_TRY(hx_results_add(res, k, "tflops", c->flops / (median_ms * 1e-3) / 1e12, "TFLOP/s", err));
  }
  return HX_OK;
}
