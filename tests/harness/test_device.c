/*
 * test_device.c - why there is no CUDA device, in words (hx_no_device_reason, harness/device.c): with no NVIDIA
 * driver installed the CUDA runtime reports cudaErrorInsufficientDriver ("CUDA driver version is insufficient for
 * CUDA runtime version") and cudaDriverGetVersion 0; that reads "no NVIDIA driver", and a real version mismatch
 * names both versions. Other errors keep the runtime's text. hx_cuda_version_str formats 1000 * major + 10 * minor.
 * hx_arch_runs / hx_arch_check: which devices a build's list of machine-code architectures runs on (sm_XY code on
 * major X, minor >= Y; "XYa" on X.Y only), and the message that replaces CUDA's "no kernel image".
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

static void test_arch_runs(void **state) {
  (void)state;
  /* the default build (80,90): A100, A10/RTX 30 (8.6), L4/RTX 40 (8.9), H100/H200 */
  assert_true(hx_arch_runs("80,90", 8, 0));
  assert_true(hx_arch_runs("80,90", 8, 6));
  assert_true(hx_arch_runs("80,90", 8, 9));
  assert_true(hx_arch_runs("80,90", 9, 0));
  /* no machine code crosses a major version: Volta, Blackwell (10.0, 12.0) */
  assert_false(hx_arch_runs("80,90", 7, 0));
  assert_false(hx_arch_runs("80,90", 10, 0));
  assert_false(hx_arch_runs("80,90", 12, 0));
  /* an sm_90-only build (F3D_GPU_ARCH=90) on an A100; sm_86 code not on an sm_80 device */
  assert_false(hx_arch_runs("90", 8, 0));
  assert_true(hx_arch_runs("90", 9, 0));
  assert_false(hx_arch_runs("86", 8, 0));
  assert_true(hx_arch_runs("86", 8, 9));
  /* three digits, arch-specific entries, spaces */
  assert_true(hx_arch_runs("100", 10, 0));
  assert_true(hx_arch_runs("100,120", 12, 1));
  assert_true(hx_arch_runs("90a", 9, 0));
  assert_false(hx_arch_runs("80a", 8, 6));
  assert_true(hx_arch_runs("100f", 10, 3));
  assert_false(hx_arch_runs("100f", 12, 0));
  assert_true(hx_arch_runs(" 80 , 90 ", 9, 0));
  assert_true(hx_arch_runs("100f,90", 9, 0));
  /* empty, NULL and malformed lists run nowhere */
  assert_false(hx_arch_runs("", 9, 0));
  assert_false(hx_arch_runs(NULL, 9, 0));
  assert_false(hx_arch_runs("9", 9, 0));
  assert_false(hx_arch_runs("sm_90", 9, 0));
  assert_false(hx_arch_runs("90x", 9, 0));
  assert_false(hx_arch_runs("80,9O", 9, 0));
  /* a malformed entry spoils the list whatever its place and the device */
  assert_false(hx_arch_runs("80,9O", 8, 0));
  assert_false(hx_arch_runs("9O,80", 8, 0));
  assert_false(hx_arch_runs("90,10x", 9, 0));
  assert_false(hx_arch_runs("80,,90", 9, 0));
  assert_false(hx_arch_runs(",90", 9, 0));
  assert_true(hx_arch_runs("90,", 9, 0)); /* a trailing comma ends the list */
}

static void test_arch_check(void **state) {
  (void)state;
  hx_device_info a100 = {.index = 0, .name = "NVIDIA A100-SXM4-80GB", .cc_major = 8, .cc_minor = 0};
  hx_device_info h200 = {.index = 1, .name = "NVIDIA H200", .cc_major = 9, .cc_minor = 0};
  hx_err err = {HX_OK, ""};
  assert_int_equal(hx_arch_check("80,90", &a100, &err), HX_OK);
  assert_int_equal(hx_arch_check("90", &h200, &err), HX_OK);
  assert_int_equal(hx_arch_check("90", &a100, &err), HX_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, "device 0 (NVIDIA A100-SXM4-80GB) is sm_80"));
  assert_non_null(strstr(err.msg, "for sm_90 only"));
  assert_non_null(strstr(err.msg, "F3D_GPU_ARCH=90,80 ./f3d setup"));
  assert_int_equal(hx_arch_check(" 86 , 90a ", &a100, &err), HX_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, "for sm_86, sm_90a only"));
  assert_non_null(strstr(err.msg, "F3D_GPU_ARCH=86,90a,80 ./f3d setup"));
  /* an H200 on an sm_80 build: the rebuild list keeps 80 and adds 90 */
  assert_int_equal(hx_arch_check("80", &h200, &err), HX_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, "device 1 (NVIDIA H200) is sm_90"));
  assert_non_null(strstr(err.msg, "F3D_GPU_ARCH=80,90 ./f3d setup"));
  /* a long list: whole entries only, then "..." (never a cut entry such as "sm_8") */
  assert_int_equal(hx_arch_check("50,52,53,60,61,62,70,72,75,80,86,87,89,100,101,103,120,121", &h200, &err),
                   HX_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, ", ... only"));
  assert_null(strstr(err.msg, "sm_1 "));
  assert_int_equal(hx_arch_check("9O", &h200, &err), HX_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, "'9O' is malformed"));
  assert_int_equal(hx_arch_check("", &h200, &err), HX_EUNSUPPORTED);
  assert_non_null(strstr(err.msg, "this build holds no GPU code, which"));
  assert_int_equal(hx_arch_check("90", NULL, &err), HX_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_driver),
      cmocka_unit_test(test_old_driver),
      cmocka_unit_test(test_other_errors),
      cmocka_unit_test(test_arch_runs),
      cmocka_unit_test(test_arch_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
