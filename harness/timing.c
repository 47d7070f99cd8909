/*
 * timing.c - the CPU clock of the timing module and the sample summary (see harness.h, timing).
 *
 * hx_time runs `warmup` discarded repetitions, then `reps` timed ones, each preceded by the optional
 * untimed reset(). Invariant: on HX_OK every one of the reps entries of samples_ms holds a finite,
 * non-negative duration in milliseconds; on failure the contents are unspecified.
 */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
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

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

hx_status hx_summarize(hx_summary *out, const double *x, size_t n, hx_err *err) {
  if (!out || !x || n == 0) return hx_errf(err, HX_EINVAL, "summary of an empty sample");
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return hx_errf(err, HX_EINVAL, "summary: sample %zu is not finite", i);
  double *s = malloc(n * sizeof *s);
  if (!s) return hx_errf(err, HX_ENOMEM, "summary: no memory for %zu samples", n);
  memcpy(s, x, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_double);
  /* Two-pass mean and variance: samples are close together, so the naive sum of squares would lose
   * the variance to cancellation. */
  double sum = 0.0;
  for (size_t i = 0; i < n; i++) sum += s[i];
  double mean = sum / (double)n, ss = 0.0;
  for (size_t i = 0; i < n; i++) ss += (s[i] - mean) * (s[i] - mean);
  out->n = n;
  out->mean = mean;
  out->std = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
  out->min = s[0];
  out->max = s[n - 1];
  out->median = (n % 2) ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  free(s);
  return HX_OK;
}

static hx_status check_opts(const hx_timing_opts *o, const hx_closure *c, hx_err *err) {
  if (!o || !c || !c->run) return hx_errf(err, HX_EINVAL, "timing: missing options or closure");
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
