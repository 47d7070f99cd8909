/* measure_stub.c - the GPU measurement entry points in a build without CUDA: HX_ENODEV, said once. */
#include "harness/harness.h"

hx_status hx_meter_create(hx_meter **out, int device, hx_err *err) {
  (void)device;
  *out = NULL;
  return hx_errf(err, HX_ENODEV, "measure: this build has no CUDA");
}
void hx_meter_destroy(hx_meter *m) { (void)m; }
void *hx_meter_stream(hx_meter *m) {
  (void)m;
  return NULL;
}
hx_status hx_meter_measure(hx_meter *m, const hx_measure_opts *o, const hx_closure *c, hx_measurement *out,
                           hx_err *err) {
  (void)m, (void)o, (void)c;
  if (out) *out = (hx_measurement){0};
  return hx_errf(err, HX_ENODEV, "measure: this build has no CUDA");
}
hx_status hx_meter_mem_used(hx_meter *m, size_t *bytes, hx_err *err) {
  (void)m;
  *bytes = 0;
  return hx_errf(err, HX_ENODEV, "measure: this build has no CUDA");
}
hx_status hx_meter_flush_l2(hx_meter *m, hx_err *err) {
  (void)m;
  return hx_errf(err, HX_ENODEV, "measure: this build has no CUDA");
}
hx_status hx_meter_ceilings(hx_meter *m, hx_ceilings *out, hx_err *err) {
  (void)m;
  *out = (hx_ceilings){0};
  return hx_errf(err, HX_ENODEV, "measure: this build has no CUDA");
}
