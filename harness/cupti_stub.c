/*
 * cupti_stub.c - the counter interface in a build without CUPTI (no CUDA, or -Dcupti=disabled): every
 * entry point says so with HX_EUNSUPPORTED, so the sweep runs timing-only and reports why once.
 */
#include "harness/harness.h"

#define NO_CUPTI "counters: this build has no CUPTI (configure with CUDA and -Dcupti=enabled)"

hx_status hx_counters_validate(const char *chip, const char *const *names, size_t n, size_t *passes,
                               hx_err *err) {
  (void)chip, (void)names, (void)n, (void)passes;
  return hx_errf(err, HX_EUNSUPPORTED, NO_CUPTI);
}
hx_status hx_counters_open(hx_counters **out, int device, const char *const *names, size_t n, size_t max_ranges,
                           unsigned nesting_levels, hx_err *err) {
  (void)device, (void)names, (void)n, (void)max_ranges, (void)nesting_levels;
  if (out) *out = NULL;
  return hx_errf(err, HX_EUNSUPPORTED, NO_CUPTI);
}
void hx_counters_close(hx_counters *c) { (void)c; }
const char *hx_counters_chip(const hx_counters *c) {
  (void)c;
  return "";
}
size_t hx_counters_num_passes(const hx_counters *c) {
  (void)c;
  return 0;
}
size_t hx_counters_num_metrics(const hx_counters *c) {
  (void)c;
  return 0;
}
const char *hx_counters_metric(const hx_counters *c, size_t i) {
  (void)c, (void)i;
  return NULL;
}
hx_status hx_counters_session_begin(hx_counters *c, hx_err *err) {
  (void)c;
  return hx_errf(err, HX_EUNSUPPORTED, NO_CUPTI);
}
hx_status hx_counters_pass_begin(hx_counters *c, hx_err *err) {
  (void)c;
  return hx_errf(err, HX_EUNSUPPORTED, NO_CUPTI);
}
hx_status hx_counters_pass_end(hx_counters *c, int *all_passes_done, hx_err *err) {
  (void)c, (void)all_passes_done;
  return hx_errf(err, HX_EUNSUPPORTED, NO_CUPTI);
}
hx_status hx_counters_push(hx_counters *c, const char *name, hx_err *err) {
  (void)c, (void)name;
  return hx_errf(err, HX_EUNSUPPORTED, NO_CUPTI);
}
hx_status hx_counters_pop(hx_counters *c, hx_err *err) {
  (void)c;
  return hx_errf(err, HX_EUNSUPPORTED, NO_CUPTI);
}
hx_status hx_counters_session_end(hx_counters *c, size_t *n_ranges, hx_err *err) {
  (void)c;
  if (n_ranges) *n_ranges = 0;
  return hx_errf(err, HX_EUNSUPPORTED, NO_CUPTI);
}
hx_status hx_counters_range(const hx_counters *c, size_t i, const char **name, double *values, hx_err *err) {
  (void)c, (void)i, (void)name, (void)values;
  return hx_errf(err, HX_EUNSUPPORTED, NO_CUPTI);
}
hx_status hx_counters_profile(hx_counters *c, const char *range, const hx_closure *work, void *stream,
                              double *values, hx_err *err) {
  (void)c, (void)range, (void)work, (void)stream, (void)values;
  return hx_errf(err, HX_EUNSUPPORTED, NO_CUPTI);
}
hx_status hx_counters_set_max_ranges(hx_counters *c, size_t max_ranges, hx_err *err) {
  (void)c, (void)max_ranges;
  return hx_errf(err, HX_EUNSUPPORTED, NO_CUPTI);
}
size_t hx_counters_max_ranges(const hx_counters *c) {
  (void)c;
  return 0;
}
