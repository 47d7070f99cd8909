/* device_stub.c - device queries in a CPU-only build: there is no CUDA device (see harness.h, device). */
#include "harness.h"

#include <string.h>

hx_status hx_device_count(int *count, hx_err *err) {
  if (count) *count = 0;
  return hx_errf(err, HX_ENODEV, "no CUDA device (this build has no CUDA support)");
}

hx_status hx_device_query(hx_device_info *out, int index, hx_err *err) {
  if (out) memset(out, 0, sizeof *out);
  return hx_errf(err, HX_ENODEV, "device %d: this build has no CUDA support", index);
}
