/*
 * measure.cu - the NVBench measurement discipline for one closure on one device (see harness.h,
 * "NVBench-style GPU measurement"): warm-up, cold samples behind a blocking kernel with the L2 flushed,
 * SM clock per sample with throttled samples dropped, noise-based stopping, then hot batches.
 *
 * Invariant: everything a cold sample queues (hold, flush, probe, start event, work, stop event, probe)
 * sits behind the spinning kernel until the host releases it, so the start event fires right after the
 * flush and the work's launch overhead is hidden; the spin kernel leaves on release or after
 * sync_timeout_s, and a timeout means run() waited for the stream itself (the sample is discarded).
 * Lazy module loading (CUDA's default since 11.7) makes the FIRST launch of a kernel wait for the
 * device to idle, which a spinning hold kernel never does: such a launch behind the hold looks exactly
 * like a synchronizing run(). So the meter's own kernels are loaded at create, warm-up runs (which load
 * run()'s kernels) are never held, and only a held cold sample that times out counts as a sync. In the
 * hot loop a time-out means the launch queue filled up (batches x kernels per run()), not a sync: the
 * batch is redone without holding and sync_detected stays as the cold loop found it. Time lost waiting
 * for a time-out does not count against max_time_s, so a synchronizing stage still gets its samples.
 * Napkin math: flushing 2 x 50 MB of H100 L2 at ~3 TB/s costs ~35 us per sample, outside the timed
 * interval; the probes cost one tiny launch each, also outside it.
 */
#include "harness/harness.h"

#include <cuda_runtime.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hx_meter {
  int device;
  cudaStream_t stream;
  cudaEvent_t ev0, ev1;
  void *d_flush;
  size_t flush_bytes;
  volatile int32_t *h_flags; /* pinned, mapped: [0] release, [1] timed out */
  unsigned long long *h_probe; /* pinned, mapped: [0..1] start (globaltimer ns, clock64), [2..3] end */
  int sm_count;
  double rated_sm_mhz;
};

#define CU(call, what)                                                                                  \
  do {                                                                                                  \
    cudaError_t e_ = (call);                                                                            \
    if (e_ != cudaSuccess) return hx_errf(err, HX_ECUDA, "measure: %s: %s", what, cudaGetErrorString(e_)); \
  } while (0)

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* Holds the stream until the host writes flags[0] = 1, or gives up after timeout_ns (flags[1] = 1). */
__global__ void hold_kernel(volatile int32_t *flags, unsigned long long timeout_ns) {
  unsigned long long t0 = global_ns();
  while (flags[0] == 0) {
    if (global_ns() - t0 > timeout_ns) {
      flags[1] = 1;
      break;
    }
  }
}

/* Every block whose SM is 0 records (globaltimer, clock64) into out[0..1]; with 2 x SM-count blocks at
 * least one lands on SM 0 in practice; if none does the slot stays 0 and the clock is unknown. */
__global__ void probe_kernel(unsigned long long *out) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (smid == 0 && threadIdx.x == 0) {
    unsigned long long c = (unsigned long long)clock64();
    unsigned long long t = global_ns();
    out[0] = t;
    out[1] = c;
  }
}

extern "C" hx_status hx_meter_create(hx_meter **out, int device, hx_err *err) {
  *out = NULL;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    (void)cudaGetLastError();
    return hx_errf(err, HX_ENODEV, "measure: no CUDA device");
  }
  if (device < 0 || device >= ndev) return hx_errf(err, HX_EINVAL, "measure: no device %d (%d present)", device, ndev);
  hx_meter *m = (hx_meter *)calloc(1, sizeof *m);
  if (!m) return hx_errf(err, HX_ENOMEM, "measure: no memory");
  m->device = device;
  hx_status st = HX_OK;
  int l2 = 0, clock_khz = 0;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&m->sm_count, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreate(&m->ev0);
  if (e == cudaSuccess) e = cudaEventCreate(&m->ev1);
  m->flush_bytes = 2 * (size_t)(l2 > 0 ? l2 : (8 << 20));
  if (e == cudaSuccess) e = cudaMalloc(&m->d_flush, m->flush_bytes);
  if (e == cudaSuccess) e = cudaHostAlloc((void **)&m->h_flags, 2 * sizeof(int32_t), cudaHostAllocMapped);
  if (e == cudaSuccess) e = cudaHostAlloc((void **)&m->h_probe, 4 * sizeof(unsigned long long), cudaHostAllocMapped);
  if (e != cudaSuccess) {
    st = hx_errf(err, HX_ECUDA, "measure: set-up on device %d: %s", device, cudaGetErrorString(e));
    hx_meter_destroy(m);
    return st;
  }
  m->rated_sm_mhz = clock_khz / 1000.0;
  /* load the hold and probe kernels now (lazy loading), so their first launch never sits behind a hold */
  m->h_flags[0] = 1;
  m->h_flags[1] = 0;
  hold_kernel<<<1, 1, 0, m->stream>>>(m->h_flags, 0ull);
  e = cudaGetLastError();
  if (e == cudaSuccess) {
    probe_kernel<<<1, 32, 0, m->stream>>>(m->h_probe);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(m->stream);
  if (e != cudaSuccess) {
    st = hx_errf(err, HX_ECUDA, "measure: loading the meter's kernels on device %d: %s", device, cudaGetErrorString(e));
    hx_meter_destroy(m);
    return st;
  }
  *out = m;
  return HX_OK;
}

extern "C" void hx_meter_destroy(hx_meter *m) {
  if (!m) return;
  if (m->stream) cudaStreamSynchronize(m->stream);
  if (m->ev0) cudaEventDestroy(m->ev0);
  if (m->ev1) cudaEventDestroy(m->ev1);
  if (m->stream) cudaStreamDestroy(m->stream);
  if (m->d_flush) cudaFree(m->d_flush);
  if (m->h_flags) cudaFreeHost((void *)m->h_flags);
  if (m->h_probe) cudaFreeHost(m->h_probe);
  free(m);
}

extern "C" void *hx_meter_stream(hx_meter *m) { return m ? (void *)m->stream : NULL; }

extern "C" hx_status hx_meter_mem_used(hx_meter *m, size_t *bytes, hx_err *err) {
  size_t free_b = 0, total = 0;
  CU(cudaSetDevice(m->device), "set device");
  CU(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo");
  *bytes = total - free_b;
  return HX_OK;
}

extern "C" hx_status hx_meter_flush_l2(hx_meter *m, hx_err *err) {
  CU(cudaMemsetAsync(m->d_flush, 0, m->flush_bytes, m->stream), "L2 flush");
  CU(cudaStreamSynchronize(m->stream), "L2 flush sync");
  return HX_OK;
}

static void release(hx_meter *m) {
  m->h_flags[0] = 1;
  __sync_synchronize();
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void pause_s(double s) {
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  nanosleep(&ts, NULL);
}

/* One timed launch sequence: `reps` back-to-back runs between the events (1 for cold). *ms is the
 * elapsed time, *mhz the SM clock over it (NaN when unknown), *timed_out 1 when the hold timed out. */
static hx_status timed(hx_meter *m, const hx_measure_opts *o, const hx_closure *c, int flush, int hold,
                       size_t reps, double *ms, double *mhz, int *timed_out, hx_err *err) {
  cudaStream_t s = m->stream;
  m->h_flags[0] = 0;
  m->h_flags[1] = 0;
  memset(m->h_probe, 0, 4 * sizeof(unsigned long long));
  __sync_synchronize();
  if (hold) {
    hold_kernel<<<1, 1, 0, s>>>(m->h_flags, (unsigned long long)(o->sync_timeout_s * 1e9));
    CU(cudaGetLastError(), "hold kernel launch");
  }
  if (flush) CU(cudaMemsetAsync(m->d_flush, 0, m->flush_bytes, s), "L2 flush");
  probe_kernel<<<2 * m->sm_count, 32, 0, s>>>(m->h_probe);
  CU(cudaGetLastError(), "clock probe launch");
  CU(cudaEventRecord(m->ev0, s), "record start");
  for (size_t r = 0; r < reps; r++) {
    hx_status st = c->run(c->arg, (void *)s, err);
    if (st != HX_OK) {
      release(m);
      cudaStreamSynchronize(s);
      return st;
    }
  }
  CU(cudaEventRecord(m->ev1, s), "record stop");
  probe_kernel<<<2 * m->sm_count, 32, 0, s>>>(m->h_probe + 2);
  CU(cudaGetLastError(), "clock probe launch");
  release(m);
  CU(cudaStreamSynchronize(s), "synchronize");
  float f = 0.f;
  CU(cudaEventElapsedTime(&f, m->ev0, m->ev1), "elapsed time");
  *ms = (double)f;
  *timed_out = hold && m->h_flags[1] != 0;
  unsigned long long t0 = m->h_probe[0], c0 = m->h_probe[1], t1 = m->h_probe[2], c1 = m->h_probe[3];
  *mhz = (t0 && t1 && t1 > t0 && c1 > c0) ? (double)(c1 - c0) / (double)(t1 - t0) * 1e3 : NAN;
  return HX_OK;
}

static hx_status grow(double **a, double **b, size_t *cap, size_t need, hx_err *err) {
  if (need <= *cap) return HX_OK;
  size_t nc = *cap ? 2 * *cap : 64;
  while (nc < need) nc *= 2;
  double *na = (double *)realloc(*a, nc * sizeof *na);
  if (na) *a = na;
  double *nb = (double *)realloc(*b, nc * sizeof *nb);
  if (nb) *b = nb;
  if (!na || !nb) return hx_errf(err, HX_ENOMEM, "measure: no memory for %zu samples", nc);
  *cap = nc;
  return HX_OK;
}

static hx_status measure_impl(hx_meter *m, const hx_measure_opts *o, const hx_closure *c, hx_measurement *out,
                              hx_err *err) {
  double t_start = wall_now();
  int hold = o->blocking;
  double ms, mhz;
  int to;
  CU(cudaSetDevice(m->device), "set device");
  out->rated_sm_mhz = m->rated_sm_mhz;
  /* Warm-up is never held: it is where run()'s kernels get loaded (see the invariant above). With a
   * hold and no warm-up asked for, one unheld run still goes first, for the same reason. */
  uint32_t n_warm = o->warmup ? o->warmup : (hold ? 1u : 0u);
  for (uint32_t i = 0; i < n_warm; i++) {
    if (c->reset) HX_TRY(c->reset(c->arg, err));
    HX_TRY(timed(m, o, c, o->flush_l2, 0, 1, &ms, &mhz, &to, err));
  }
  /* the cold loop's wall clock starts after the warm-up and leaves out time-outs */
  double t_cold = wall_now(), lost_s = 0.0;
  size_t cap = 0;
  double gpu_s = 0.0, mean = 0.0, m2 = 0.0;
  hx_measure_stop stop = HX_STOP_NO;
  while (o->cold && stop == HX_STOP_NO) {
    if (c->reset) HX_TRY(c->reset(c->arg, err));
    double t_sample = wall_now();
    HX_TRY(timed(m, o, c, o->flush_l2, hold, 1, &ms, &mhz, &to, err));
    if (to) { /* run() waited on the held stream: discard, go on without holding */
      hold = 0;
      out->sync_detected = 1;
      lost_s += wall_now() - t_sample;
      continue;
    }
    gpu_s += ms * 1e-3;
    if (isfinite(mhz) && mhz < o->throttle_threshold * m->rated_sm_mhz) {
      out->n_throttled++;
      pause_s(o->throttle_recovery_s);
    } else {
      HX_TRY(grow(&out->cold_ms, &out->cold_sm_mhz, &cap, out->n_cold + 1, err));
      out->cold_ms[out->n_cold] = ms;
      out->cold_sm_mhz[out->n_cold] = mhz;
      out->n_cold++;
      double d = ms - mean; /* Welford: noise after every sample without a pass over all of them */
      mean += d / (double)out->n_cold;
      m2 += d * (ms - mean);
    }
    /* std/mean needs two samples; until then the noise is unknown (NaN, never recorded as a row) */
    double sd = out->n_cold > 1 ? sqrt(m2 / (double)(out->n_cold - 1)) : NAN;
    out->noise = out->n_cold > 1 && mean > 0.0 ? sd / mean : NAN;
    stop = hx_measure_should_stop(o, out->n_cold, gpu_s, wall_now() - t_cold - lost_s,
                                  isfinite(out->noise) ? out->noise : INFINITY);
    /* a GPU that throttles all the time must still end */
    if (stop == HX_STOP_NO && out->n_throttled > 4 * (size_t)o->max_samples) stop = HX_STOP_MAX_SAMPLES;
  }
  out->stop = stop;
  out->noise_reached = stop == HX_STOP_NOISE;
  if (o->hot && o->hot_batches > 0) {
    /* batch size from the cold median (or one probing run when cold is off) */
    double per_run_ms;
    if (out->n_cold > 0) {
      per_run_ms = hx_stats_median(out->cold_ms, out->n_cold);
    } else {
      if (c->reset) HX_TRY(c->reset(c->arg, err));
      HX_TRY(timed(m, o, c, 0, 0, 1, &per_run_ms, &mhz, &to, err));
    }
    double target_ms = o->hot_target_s * 1e3 / o->hot_batches;
    double n = per_run_ms > 0.0 ? target_ms / per_run_ms : 1.0;
    size_t batch = n < 1.0 ? 1 : n > 100000.0 ? 100000 : (size_t)n;
    out->hot_ms = (double *)malloc(o->hot_batches * sizeof(double));
    if (!out->hot_ms) return hx_errf(err, HX_ENOMEM, "measure: no memory");
    out->hot_batch_size = batch;
    if (c->reset) HX_TRY(c->reset(c->arg, err));
    /* Holding the stream while queueing more launches than the driver's queue takes would block the
     * host in a launch until the hold times out: hold only batches that surely fit. */
    int hold_hot = hold && batch <= 256;
    for (uint32_t b = 0; b < o->hot_batches; b++) {
      HX_TRY(timed(m, o, c, 0, hold_hot, batch, &ms, &mhz, &to, err));
      if (to) {
        /* After held cold samples that did not time out, a time-out here is a full launch queue (a
         * run() of many kernels), not a sync; without a cold loop it may be either. Redo unheld. */
        if (!o->cold || out->n_cold == 0) out->sync_detected = 1;
        hold = hold_hot = 0;
        b--;
        continue;
      }
      out->hot_ms[out->n_hot++] = ms / (double)batch;
    }
  }
  out->wall_s = wall_now() - t_start;
  return HX_OK;
}

extern "C" hx_status hx_meter_measure(hx_meter *m, const hx_measure_opts *o, const hx_closure *c,
                                      hx_measurement *out, hx_err *err) {
  memset(out, 0, sizeof *out);
  if (!m || !o || !c || !c->run) return hx_errf(err, HX_EINVAL, "measure: NULL argument");
  if (o->cold && (o->max_samples == 0 || o->min_samples > o->max_samples))
    return hx_errf(err, HX_EINVAL, "measure: need 0 < min_samples <= max_samples");
  hx_status st = measure_impl(m, o, c, out, err);
  if (st != HX_OK) hx_measurement_free(out);
  return st;
}
