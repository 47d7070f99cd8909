/* arena_stub.c - the device backend of the memory arena in a build without CUDA: every allocation is
 * HX_ENODEV (the bookkeeping in arena.c works the same with any other backend). */
#include "harness/harness.h"

static hx_status no_alloc(void *ctx, void **p, size_t bytes, hx_err *err) {
  (void)ctx;
  *p = NULL;
  return hx_errf(err, HX_ENODEV, "device allocation of %zu B: this build has no CUDA", bytes);
}

static void no_release(void *ctx, void *p) { (void)ctx, (void)p; }

hx_arena_backend hx_arena_device_backend(void) {
  hx_arena_backend b = {no_alloc, no_release, NULL};
  return b;
}

hx_status hx_device_mem_used(size_t *bytes, hx_err *err) {
  *bytes = 0;
  return hx_errf(err, HX_ENODEV, "device memory: this build has no CUDA");
}
