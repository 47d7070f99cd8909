/*
 * timing_gpu.cu - the GPU clock of the timing module: CUDA events around each repetition on a
 * non-default stream (see harness.h, timing).
 *
 * Each repetition: reset() on the host (untimed), event start, run() enqueues work on the stream,
 * event stop, wait for stop, elapsed = cudaEventElapsedTime. Invariant: every timed interval contains
 * exactly the work run() enqueued; nothing else runs on our stream. Launch overhead of the first
 * kernel is included (hx_meter_measure's blocking kernel is the discipline that removes it).
 */
#include "harness.h"

#include <cuda_runtime.h>

#define GPU_CHECK(call, what)                                                                            \
  do {                                                                                                   \
    cudaError_t e_ = (call);                                                                             \
    if (e_ != cudaSuccess) {                                                                             \
      st = hx_errf(err, HX_ECUDA, "GPU timing: %s: %s", what, cudaGetErrorString(e_));                   \
      goto done;                                                                                         \
    }                                                                                                    \
  } while (0)

extern "C" hx_status hx_time_gpu(double *samples_ms, const hx_timing_opts *opts, const hx_closure *c,
                                 void *stream, hx_err *err) {
  hx_status st = HX_OK;
  cudaStream_t s = (cudaStream_t)stream, own = nullptr;
  cudaEvent_t ev0 = nullptr, ev1 = nullptr;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    (void)cudaGetLastError();
    return hx_errf(err, HX_ENODEV, "GPU timing: no CUDA device");
  }
  if (!s) {
    GPU_CHECK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking), "stream create");
    s = own;
  }
  GPU_CHECK(cudaEventCreate(&ev0), "event create");
  GPU_CHECK(cudaEventCreate(&ev1), "event create");
  for (uint32_t i = 0; i < opts->warmup + opts->reps; i++) {
    if (c->reset && (st = c->reset(c->arg, err)) != HX_OK) goto done;
    GPU_CHECK(cudaEventRecord(ev0, s), "record start");
    if ((st = c->run(c->arg, (void *)s, err)) != HX_OK) goto done;
    GPU_CHECK(cudaEventRecord(ev1, s), "record stop");
    GPU_CHECK(cudaEventSynchronize(ev1), "synchronize");
    float ms = 0.0f;
    GPU_CHECK(cudaEventElapsedTime(&ms, ev0, ev1), "elapsed time");
    if (i >= opts->warmup) samples_ms[i - opts->warmup] = (double)ms;
  }
done:
  if (ev0) cudaEventDestroy(ev0);
  if (ev1) cudaEventDestroy(ev1);
  if (own) cudaStreamDestroy(own);
  return st;
}
