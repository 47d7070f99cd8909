/* timing_gpu_stub.c - the GPU clock in a CPU-only build: there is nothing to time (see harness.h). */
#include "harness.h"

hx_status hx_time_gpu(double *samples_ms, const hx_timing_opts *opts, const hx_closure *c, void *stream,
                      hx_err *err) {
  (void)samples_ms, (void)opts, (void)c, (void)stream;
  return hx_errf(err, HX_ENODEV, "GPU timing: this build has no CUDA support");
}
