/* device.c - device-independent helpers of the device section (see harness.h): version text, and why there is no
 * device in words (the runtime's own message blames the driver's version when there is no driver at all). */
#include "harness.h"

void hx_cuda_version_str(char *buf, size_t cap, int version) {
  if (!buf || cap == 0) return;
  if (version <= 0)
    snprintf(buf, cap, "none");
  else
    snprintf(buf, cap, "%d.%d", version / 1000, (version % 1000) / 10);
}

void hx_no_device_reason(char *buf, size_t cap, const char *error_text, int insufficient_driver, int driver_version,
                         int runtime_version) {
  if (!buf || cap == 0) return;
  char drv[16], rt[16];
  hx_cuda_version_str(drv, sizeof drv, driver_version);
  hx_cuda_version_str(rt, sizeof rt, runtime_version);
  if (insufficient_driver && driver_version <= 0) /* the runtime found no libcuda.so.1 to ask */
    snprintf(buf, cap, "no NVIDIA driver: libcuda.so.1 is not installed or not on the loader's path");
  else if (insufficient_driver)
    snprintf(buf, cap, "the NVIDIA driver supports CUDA %s, older than this build's runtime %s: update the driver", drv,
             rt);
  else
    snprintf(buf, cap, "%s", error_text && *error_text ? error_text : "unknown CUDA error");
}
