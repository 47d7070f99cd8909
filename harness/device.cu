/*
 * device.cu - CUDA device queries for `f3dbench info` and the run context (see harness.h, device).
 *
 * Every failure (no driver, no device, a query error) becomes a status with a message; nothing here
 * aborts, so a CUDA build on a machine without a GPU still runs its CPU references.
 */
#include "harness.h"

#include <cuda_runtime.h>
#include <string.h>

extern "C" hx_status hx_device_count(int *count, hx_err *err) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  *count = 0;
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    int drv = 0, rt = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0; /* 0 also when no driver is installed */
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = 0;
    (void)cudaGetLastError();
    char why[200];
    hx_no_device_reason(why, sizeof why, cudaGetErrorString(e), e == cudaErrorInsufficientDriver, drv, rt);
    return hx_errf(err, HX_ENODEV, "no CUDA device (%s)", why);
  }
  if (n == 0) return hx_errf(err, HX_ENODEV, "no CUDA device");
  *count = n;
  return HX_OK;
}

extern "C" hx_status hx_device_query(hx_device_info *out, int index, hx_err *err) {
  memset(out, 0, sizeof *out);
  cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, index);
  if (e != cudaSuccess) return hx_errf(err, HX_ECUDA, "device %d: %s", index, cudaGetErrorString(e));
  out->index = index;
  snprintf(out->name, sizeof out->name, "%s", p.name);
  out->cc_major = p.major;
  out->cc_minor = p.minor;
  out->sm_count = p.multiProcessorCount;
  out->l2_bytes = p.l2CacheSize;
  out->mem_bytes = p.totalGlobalMem;
  /* CUDA 13 removed the clock fields from cudaDeviceProp; the attributes remain. */
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, index) == cudaSuccess) out->sm_clock_khz = v;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, index) == cudaSuccess) out->mem_clock_khz = v;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, index) == cudaSuccess) out->mem_bus_bits = v;
  (void)cudaGetLastError();
  cudaDriverGetVersion(&out->driver_version);
  cudaRuntimeGetVersion(&out->runtime_version);
  if (cudaDeviceGetPCIBusId(out->pci_bus_id, (int)sizeof out->pci_bus_id, index) != cudaSuccess) {
    (void)cudaGetLastError();
    out->pci_bus_id[0] = '\0';
  }
  return HX_OK;
}
