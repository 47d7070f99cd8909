/* device.c - device-independent helpers of the device section (see harness.h): version text, why there is no
 * device in words (the runtime's own message blames the driver's version when there is no driver at all), and
 * whether a build's GPU code runs on a device. */
#include <ctype.h>

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

int hx_arch_runs(const char *archs, int major, int minor) {
  if (!archs) return 0;
  const char *p = archs;
  while (*p) {
    while (*p == ',' || *p == ' ') ++p;
    if (!*p) break;
    int v = 0, digits = 0;
    while (isdigit((unsigned char)*p) && digits < 4) v = v * 10 + (*p++ - '0'), ++digits;
    const int specific = *p == 'a';
    if (specific) ++p;
    if (digits < 2 || (*p && *p != ',' && *p != ' ')) return 0; /* not "XY", "XYZ" or "XYa": malformed */
    const int am = v / 10, an = v % 10;
    if (am == major && (specific ? an == minor : an <= minor)) return 1;
  }
  return 0;
}

hx_status hx_arch_check(const char *archs, const hx_device_info *dev, hx_err *err) {
  if (!dev) return hx_errf(err, HX_EINVAL, "hx_arch_check: NULL device");
  if (hx_arch_runs(archs, dev->cc_major, dev->cc_minor)) return HX_OK;
  char list[96] = "";
  size_t k = 0;
  for (const char *p = archs ? archs : ""; *p && k + 8 < sizeof list; ++p) {
    if (*p == ' ') continue;
    if (k == 0 || p[-1] == ',') k += (size_t)snprintf(list + k, sizeof list - k, "%ssm_", k ? " " : "");
    list[k++] = *p == ',' ? ',' : *p;
    list[k] = '\0';
  }
  return hx_errf(err, HX_EUNSUPPORTED,
                 "device %d (%s) is sm_%d%d, and this build holds %s%s%s, which does not run on it: "
                 "rebuild with F3D_GPU_ARCH=%d%d ./f3d setup (or a list such as %d%d,90)",
                 dev->index, dev->name, dev->cc_major, dev->cc_minor, k ? "GPU code for " : "no GPU code", list,
                 k ? " only" : "", dev->cc_major, dev->cc_minor, dev->cc_major, dev->cc_minor);
}
