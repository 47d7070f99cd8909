/*
 * test_sm90a.h - the nets GPU tests' one rule for whether this build's sm_90a images (spconv v6, the whole MLP at
 * C >= 96, fc1 + SwiGLU at C >= 128) run on the current device: a compute capability 9.0 device and a build with them.
 * meson -Dsm90a=false leaves them out, and a Hopper GPU then takes the fallbacks an A100 takes. The rule is the
 * build's and the device's, not the library's own probe (nwg_sm90a_check), which the tests check against it. Include
 * after <cmocka.h>, in a CUDA build only.
 */
#ifndef F3D_TEST_SM90A_H
#define F3D_TEST_SM90A_H

#include <cuda_runtime.h>

#include "f3d_config.h"

static inline int t_sm90a_runs(void) {
  int dev = 0, major = 0, minor = 0;
  assert_int_equal(cudaGetDevice(&dev), cudaSuccess);
  assert_int_equal(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
  assert_int_equal(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), cudaSuccess);
  return F3D_HAVE_SM90A && major == 9 && minor == 0;
}

#endif
