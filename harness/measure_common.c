/*
 * measure_common.c - the host-side rules of the NVBench-style GPU measurement (measure.cu), kept in C so
 * they are built and tested without a GPU: option presets and the stopping rule.
 *
 * Stopping rule, checked after every kept cold sample: stop at max_samples or when the wall time passes
 * max_time_s; otherwise stop with "noise reached" once at least min_samples are kept, at least min_time_s
 * of GPU time has been accumulated and the relative noise std/mean is at most max_noise. A preset with
 * max_noise = 0 never stops on noise (fixed count, as the paper's protocol).
 */
#include "harness/harness.h"

#include <stdlib.h>

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
  if (wall_s >= o->max_time_s) return HX_STOP_MAX_TIME;
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
