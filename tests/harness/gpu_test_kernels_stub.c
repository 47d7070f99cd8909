/* gpu_test_kernels_stub.c - the test kernels in a build without CUDA: no device, every call HX_ENODEV. */
#include "gpu_test_kernels.h"

int tk_device_count(void) { return 0; }
int tk_sm_count(void) { return 0; }
hx_status tk_malloc(void **p, size_t bytes) {
  (void)bytes;
  *p = NULL;
  return HX_ENODEV;
}
void tk_free(void *p) { (void)p; }
hx_status tk_sync(void) { return HX_ENODEV; }
hx_status tk_copy(float *d_dst, const float *d_src, size_t n, void *stream) {
  (void)d_dst, (void)d_src, (void)n, (void)stream;
  return HX_ENODEV;
}
hx_status tk_mma(float *d_out, int blocks, int iters, void *stream) {
  (void)d_out, (void)blocks, (void)iters, (void)stream;
  return HX_ENODEV;
}
hx_status tk_spin(uint64_t ns, void *stream) {
  (void)ns, (void)stream;
  return HX_ENODEV;
}
hx_status tk_spin_fresh(uint64_t ns, void *stream) {
  (void)ns, (void)stream;
  return HX_ENODEV;
}
