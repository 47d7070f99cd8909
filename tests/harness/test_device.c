/*
 * test_device.c - why there is no CUDA device, in words (hx_no_device_reason, harness/device.c): with no NVIDIA
 * driver installed the CUDA runtime reports cudaErrorInsufficientDriver ("CUDA driver version is insufficient for
 * CUDA runtime version") and cudaDriverGetVersion 0; that reads "no NVIDIA driver", and a real version mismatch
 * names both versions. Other errors keep the runtime's text. hx_cuda_version_str formats 1000 * major + 10 * minor.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "harness/harness.h"

static const char *const insufficient = "CUDA driver version is insufficient for CUDA runtime version";

static void test_no_driver(void **state) {
  (void)state;
  char b[200];
  hx_no_device_reason(b, sizeof b, insufficient, 1, 0, 13000);
  assert_non_null(strstr(b, "no NVIDIA driver"));
  assert_null(strstr(b, "insufficient"));
}

static void test_old_driver(void **state) {
  (void)state;
  char b[200];
  hx_no_device_reason(b, sizeof b, insufficient, 1, 12080, 13000);
  assert_non_null(strstr(b, "supports CUDA 12.8"));
  assert_non_null(strstr(b, "runtime 13.0"));
  assert_null(strstr(b, "no NVIDIA driver"));
}

static void test_other_errors(void **state) {
  (void)state;
  char b[200];
  hx_no_device_reason(b, sizeof b, "no CUDA-capable device is detected", 0, 13000, 13000);
  assert_string_equal(b, "no CUDA-capable device is detected");
  hx_no_device_reason(b, sizeof b, NULL, 0, 0, 0);
  assert_string_equal(b, "unknown CUDA error");
  char small[8]; /* truncated, still terminated */
  hx_no_device_reason(small, sizeof small, insufficient, 1, 0, 13000);
  assert_int_equal(strlen(small), sizeof small - 1);
  hx_cuda_version_str(b, sizeof b, 13000);
  assert_string_equal(b, "13.0");
  hx_cuda_version_str(b, sizeof b, 0);
  assert_string_equal(b, "none");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_driver),
      cmocka_unit_test(test_old_driver),
      cmocka_unit_test(test_other_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
