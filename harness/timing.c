/*
 * timing.c - the CPU clock of the timing module and the closure check (see harness.h, timing). The
 * summary of samples is hx_stats_describe (stats.c).
 *
 * hx_time runs `warmup` discarded repetitions, then `reps` timed ones, each preceded by the optional
 * untimed reset(). Invariant: on HX_OK every one of the reps entries of samples_ms holds a finite,
 * non-negative duration in milliseconds; on failure the contents are unspecified.
 */
#include "harness.h"

#include <math.h>
#include <time.h>

hx_timing_opts hx_timing_defaults(void) {
  hx_timing_opts o = {HX_TIMING_DEFAULT_WARMUP, HX_TIMING_DEFAULT_REPS};
  return o;
}

double hx_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

hx_status hx_closure_check(const hx_closure *c, hx_err *err) {
  if (!c || !c->run) return hx_errf(err, HX_EINVAL, "timing: missing closure");
  if (!(c->bytes >= 0.0) || !isfinite(c->bytes))
    return hx_errf(err, HX_EINVAL, "closure declares %g bytes (must be finite and >= 0; 0 = not declared)", c->bytes);
  if (!(c->flops >= 0.0) || !isfinite(c->flops))
    return hx_errf(err, HX_EINVAL, "closure declares %g FLOP (must be finite and >= 0; 0 = not declared)", c->flops);
  return HX_OK;
}

static hx_status check_opts(const hx_timing_opts *o, const hx_closure *c, hx_err *err) {
  if (!o) return hx_errf(err, HX_EINVAL, "timing: missing options");
  const hx_status cs = hx_closure_check(c, err);
  if (cs != HX_OK) return cs;
  if (o->reps == 0 || o->reps > HX_TIMING_MAX_REPS)
    return hx_errf(err, HX_EINVAL, "timing: repetitions must be 1..%u (got %u)", HX_TIMING_MAX_REPS, o->reps);
  if (o->warmup > HX_TIMING_MAX_REPS)
    return hx_errf(err, HX_EINVAL, "timing: warm-up must be at most %u (got %u)", HX_TIMING_MAX_REPS, o->warmup);
  return HX_OK;
}

static hx_status time_cpu(double *samples_ms, const hx_timing_opts *o, const hx_closure *c, hx_err *err) {
  for (uint32_t i = 0; i < o->warmup + o->reps; i++) {
    if (c->reset) {
      hx_status st = c->reset(c->arg, err);
      if (st != HX_OK) return st;
    }
    double t0 = hx_now_ms();
    hx_status st = c->run(c->arg, NULL, err);
    double t1 = hx_now_ms();
    if (st != HX_OK) return st;
    if (i >= o->warmup) samples_ms[i - o->warmup] = t1 - t0;
  }
  return HX_OK;
}

hx_status hx_time(double *samples_ms, hx_clock clock, const hx_timing_opts *opts, const hx_closure *c,
                  void *stream, hx_err *err) {
  hx_status cs = check_opts(opts, c, err);
  if (cs != HX_OK) return cs; /* caller error: reported in err, not traced */
  if (!samples_ms) return hx_errf(err, HX_EINVAL, "timing: no sample buffer");
  if (clock == HX_CLOCK_GPU) return hx_time_gpu(samples_ms, opts, c, stream, err);
  return time_cpu(samples_ms, opts, c, err);
}
