/*
 * par.c - the one parallel loop of the CPU code (base.h): rows split into contiguous chunks, one pthread each,
 * the calling thread taking the first. Every body writes only its own rows, so results do not depend on the
 * thread count (each row's arithmetic is the serial one). Why: the fp32 CPU forward of a 46M-parameter network
 * is the check every GPU forward is compared with, before every timing, and one thread takes seconds per
 * thousand points; the sweep's host-side inputs (attention's q, k, v at 600k points) likewise.
 */
#include <pthread.h>
#include <unistd.h>

#include "base/base.h"

#define HX_PAR_MAX 64

typedef struct par_job {
  void (*body)(void *ctx, size_t begin, size_t end);
  void *ctx;
  size_t begin, end;
} par_job;

static void *par_run(void *arg) {
  par_job *j = arg;
  j->body(j->ctx, j->begin, j->end);
  return NULL;
}

void hx_par_for(size_t n, size_t grain, void (*body)(void *ctx, size_t begin, size_t end), void *ctx) {
  if (n == 0) return;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t t = cpus > 0 ? (size_t)cpus : 1;
  if (t > HX_PAR_MAX) t = HX_PAR_MAX;
  if (grain == 0) grain = 1;
  if (t > (n + grain - 1) / grain) t = (n + grain - 1) / grain;
  if (t <= 1) {
    body(ctx, 0, n);
    return;
  }
  par_job job[HX_PAR_MAX];
  pthread_t th[HX_PAR_MAX];
  int started[HX_PAR_MAX] = {0};
  for (size_t k = 0; k < t; k++) job[k] = (par_job){body, ctx, n * k / t, n * (k + 1) / t};
  for (size_t k = 1; k < t; k++) started[k] = pthread_create(&th[k], NULL, par_run, &job[k]) == 0;
  /* a thread that could not start has its chunk run here: the result is the same */
  body(ctx, job[0].begin, job[0].end);
  for (size_t k = 1; k < t; k++) {
    if (started[k]) pthread_join(th[k], NULL);
    else body(ctx, job[k].begin, job[k].end);
  }
}
