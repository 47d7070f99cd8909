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

/* One entry of a list ("XY", "XYZ", "XYa", "XYf"; spaces around it ignored) from *p, which moves past it and
 * its comma: 1 with the number and suffix, 0 at the end, -1 for a malformed entry. */
static int arch_entry(const char **p, int *v, char *suffix) {
  const char *q = *p;
  while (*q == ' ') ++q;
  if (!*q) return *p = q, 0;
  int digits = 0;
  *v = 0;
  while (isdigit((unsigned char)*q) && digits < 4) *v = *v * 10 + (*q++ - '0'), ++digits;
  *suffix = *q == 'a' || *q == 'f' ? *q++ : '\0';
  while (*q == ' ') ++q;
  if (digits < 2 || (*q && *q != ',')) return -1;
  if (*q == ',') ++q;
  *p = q;
  return 1;
}

int hx_arch_runs(const char *archs, int major, int minor) {
  if (!archs) return 0;
  int v, any = 0, runs = 0;
  char sfx;
  for (const char *p = archs;;) {
    const int r = arch_entry(&p, &v, &sfx);
    if (r < 0) return 0; /* a malformed list runs nowhere, whatever its other entries */
    if (r == 0) break;
    any = 1;
    const int am = v / 10, an = v % 10;
    if (am == major && (sfx == 'a' ? an == minor : an <= minor)) runs = 1;
  }
  return any && runs;
}

hx_status hx_arch_check(const char *archs, const hx_device_info *dev, hx_err *err) {
  if (!dev) return hx_errf(err, HX_EINVAL, "hx_arch_check: NULL device");
  if (hx_arch_runs(archs, dev->cc_major, dev->cc_minor)) return HX_OK;
  /* the list as sm_ names, whole entries only ("..." past the buffer); the rebuild list adds the device's */
  char list[96] = "", plain[96] = "";
  size_t k = 0, kp = 0;
  int v, r, n = 0;
  char sfx;
  for (const char *p = archs ? archs : ""; (r = arch_entry(&p, &v, &sfx)) > 0; ++n) {
    char one[24], bare[16];
    snprintf(one, sizeof one, "%ssm_%d%s", n ? ", " : "", v, sfx ? (char[2]){sfx, 0} : "");
    snprintf(bare, sizeof bare, "%s%d%s", n ? "," : "", v, sfx ? (char[2]){sfx, 0} : "");
    if (k + strlen(one) + 5 >= sizeof list || kp + strlen(bare) + 8 >= sizeof plain) {
      snprintf(list + k, sizeof list - k, ", ...");
      k = strlen(list), kp = 0;
      break;
    }
    k += (size_t)snprintf(list + k, sizeof list - k, "%s", one);
    kp += (size_t)snprintf(plain + kp, sizeof plain - kp, "%s", bare);
  }
  if (r < 0)
    return hx_errf(err, HX_EUNSUPPORTED, "this build's GPU architecture list '%s' is malformed: rebuild with "
                   "F3D_GPU_ARCH=%d%d ./f3d setup", archs, dev->cc_major, dev->cc_minor);
  char rebuild[112];
  if (kp)
    snprintf(rebuild, sizeof rebuild, "%s,%d%d", plain, dev->cc_major, dev->cc_minor);
  else
    snprintf(rebuild, sizeof rebuild, "%d%d", dev->cc_major, dev->cc_minor);
  return hx_errf(err, HX_EUNSUPPORTED,
                 "device %d (%s) is sm_%d%d, and this build holds %s%s%s, which does not run on it: rebuild with "
                 "F3D_GPU_ARCH=%s ./f3d setup",
                 dev->index, dev->name, dev->cc_major, dev->cc_minor, k ? "GPU code for " : "no GPU code", list,
                 k ? " only" : "", rebuild);
}
