/* device.c - device-independent helpers of the device section (see harness.h). */
#include "harness.h"

void hx_cuda_version_str(char *buf, size_t cap, int version) {
  if (!buf || cap == 0) return;
  if (version <= 0)
    snprintf(buf, cap, "none");
  else
    snprintf(buf, cap, "%d.%d", version / 1000, (version % 1000) / 10);
}
