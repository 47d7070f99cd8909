/*
 * cupti.cpp - GPU performance counters through the CUPTI Range Profiler and Profiler Host API of CUDA 13,
 * behind the C interface hx_counters_* of harness.h (this is C++ only because cupti_profiler_host.h
 * includes <string>).
 *
 * Sequence (harness-cupti.md section 1): context -> cuptiProfilerInitialize -> device supported? ->
 * chip name -> counter availability image -> host object -> metric names checked one by one (an unknown
 * name is an error listing the closest known names) -> config image + pass count -> range profiler
 * enabled on the context -> counter data image. Then per profiled case a "session": image reset +
 * SetConfig (user ranges, user replay), one or more passes Start / Push ... Pop / Stop, the caller
 * re-running the same work each pass until CUPTI says every pass was submitted, then DecodeData and
 * per range EvaluateToGpuValues.
 * Invariants: every CUPTI params struct is zeroed with its STRUCT_SIZE set; no C++ exception crosses the
 * C interface (each entry point catches and reports HX_ENOMEM); a failing call leaves the object usable
 * only for hx_counters_close.
 * Ranges per pass: CUPTI 13.0's range profiler begins its profiler session at the first cuptiRangeProfilerStart
 * after cuptiRangeProfilerEnable and ends it only in cuptiRangeProfilerDisable; that session's trace buffer (2 of
 * them, each from NVPW's CalcTraceBufferSize for the maxRangesPerPass of the SetConfig in force then, at an average
 * range name of 128 characters) is never sized again, whatever later SetConfig calls ask (read from libcupti.so.13:
 * cuptiRangeProfilerSetConfig only stores its fields; the session begin passes numTraceBuffers 2,
 * avgRangeNameLength 128, maxLaunchesPerPass 1). Ranges beyond it are lost without a count (DecodeData's
 * numOfRangeDropped counts only ranges that miss the counter data image): the first device run decoded 128 of
 * ~480 flat ranges after sessions of 64. So the first session since Enable asks for HX_COUNTERS_PASS_RANGES ranges
 * (its trace buffers: 2 x 4096 x 128 B), later ones for what they need, and range names are at most 127
 * characters. Re-creating the range profiler for a larger session (Disable, Enable) crashed in the next pass.
 * Errors that mean "counters are not available here" (no permission, another profiler attached, unsupported
 * device/driver) return HX_EUNSUPPORTED with one sentence saying why and what to do, so the caller can go on
 * timing-only.
 * The driver API entry points (cuCtxGetCurrent, cuCtxGetDevice) are fetched through
 * cudaGetDriverEntryPointByVersion so that nothing links libcuda: binaries still load (and tests skip)
 * on machines without a driver.
 */
#include "harness/harness.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

struct hx_counters {
  int device = 0;
  std::string chip;
  std::vector<std::string> names;
  std::vector<const char *> cnames;
  std::vector<uint8_t> avail, config, image;
  CUpti_Profiler_Host_Object *host = nullptr;
  CUpti_RangeProfiler_Object *rp = nullptr;
  CUcontext ctx = nullptr;
  bool profiler_initialized = false;
  size_t passes = 0, max_ranges = 0;
  size_t image_ranges = 0;   /* the ranges the counter data image is sized for */
  size_t set_ranges = 0;     /* maxRangesPerPass of the last SetConfig */
  size_t session_ranges = 0; /* the maxRangesPerPass CUPTI's session was begun with; 0: none since Enable */
  uint16_t nesting = 1;
  bool in_pass = false;
  std::vector<std::string> range_names;
  std::vector<double> range_values; /* range i: names.size() values from i * names.size() */
};

/* ---- errors -------------------------------------------------------------------------------------- */

static hx_status cupti_fail(CUptiResult r, const char *call, hx_err *err) {
  const char *s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) s = "unknown CUPTI error";
  switch (r) {
  case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    return hx_errf(err, HX_EUNSUPPORTED,
                   "counters: %s: no permission to read GPU performance counters (CUPTI_ERROR_INSUFFICIENT_"
                   "PRIVILEGES): run as root or with CAP_SYS_ADMIN (CAP_PERFMON on R565+ drivers), or allow "
                   "all users with 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in "
                   "/etc/modprobe.d/ (check: grep RmProfilingAdminOnly /proc/driver/nvidia/params); "
                   "continuing with timing only",
                   call);
  case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    return hx_errf(err, HX_EUNSUPPORTED,
                   "counters: %s: another CUPTI client is attached (Nsight Systems, Nsight Compute, cuda-gdb "
                   "or another profiler); run without it or pass --no-counters; continuing with timing only",
                   call);
  case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    return hx_errf(err, HX_EUNSUPPORTED,
                   "counters: %s: the legacy CUPTI profiler API is already in use in this process; "
                   "continuing with timing only",
                   call);
  case CUPTI_ERROR_NOT_INITIALIZED:
    return hx_errf(err, HX_EUNSUPPORTED,
                   "counters: %s: CUPTI could not initialise (%s): usually a driver older than the CUDA "
                   "toolkit (CUDA 13 needs an R580+ driver); continuing with timing only",
                   call, s);
  case CUPTI_ERROR_NOT_SUPPORTED:
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
  case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS:
  case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    return hx_errf(err, HX_EUNSUPPORTED,
                   "counters: %s: profiling is not supported here (%s: MIG, MPS, vGPU, confidential "
                   "computing and CMP devices cannot be profiled); continuing with timing only",
                   call, s);
  default: break;
  }
  return hx_errf(err, HX_ECUDA, "counters: %s: %s (CUPTI error %d)", call, s, (int)r);
}

#define CUPTI_TRY(call, params)                                                                        \
  do {                                                                                                 \
    CUptiResult r_ = call(&(params));                                                                  \
    if (r_ != CUPTI_SUCCESS) return cupti_fail(r_, #call, err);                                         \
  } while (0)

/* ---- host side ----------------------------------------------------------------------------------- */

static hx_status host_init(const char *chip, const uint8_t *avail, CUpti_Profiler_Host_Object **host,
                           hx_err *err) {
  CUpti_Profiler_Host_Initialize_Params p;
  std::memset(&p, 0, sizeof p);
  p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
  p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  p.pChipName = chip;
  p.pCounterAvailabilityImage = avail;
  CUptiResult r = cuptiProfilerHostInitialize(&p);
  if (r != CUPTI_SUCCESS) {
    hx_status st = cupti_fail(r, "cuptiProfilerHostInitialize", err);
    if (st == HX_ECUDA) { /* most likely an unknown chip: list the supported ones */
      CUpti_Profiler_Host_GetSupportedChips_Params c;
      std::memset(&c, 0, sizeof c);
      c.structSize = CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE;
      if (cuptiProfilerHostGetSupportedChips(&c) == CUPTI_SUCCESS) {
        std::string list;
        for (size_t i = 0; i < c.numChips; i++) list += (i ? ", " : "") + std::string(c.ppChipNames[i]);
        return hx_errf(err, HX_EINVAL, "counters: chip \"%s\" is not known to CUPTI (supported: %s)", chip,
                       list.c_str());
      }
    }
    return st;
  }
  *host = p.pHostObject;
  return HX_OK;
}

static void host_deinit(CUpti_Profiler_Host_Object *host) {
  if (!host) return;
  CUpti_Profiler_Host_Deinitialize_Params p;
  std::memset(&p, 0, sizeof p);
  p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
  p.pHostObject = host;
  (void)cuptiProfilerHostDeinitialize(&p);
}

static size_t edit_distance(const std::string &a, const std::string &b) {
  return hx_edit_distance(a.c_str(), b.c_str());
}

/* The closest known names to `bad`: base metrics of every type by edit distance of the base part
 * (text before the first '.'), and when the base exists, its valid submetric suffixes. */
static std::string close_names(CUpti_Profiler_Host_Object *host, const std::string &bad) {
  std::string base = bad.substr(0, bad.find('.'));
  std::string suffix = bad.find('.') == std::string::npos ? "" : bad.substr(bad.find('.'));
  std::vector<std::pair<size_t, std::string>> cand;
  bool base_exists = false;
  CUpti_MetricType base_type = CUPTI_METRIC_TYPE_COUNTER;
  for (int t = 0; t < (int)CUPTI_METRIC_TYPE__COUNT; t++) {
    CUpti_Profiler_Host_GetBaseMetrics_Params p;
    std::memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE;
    p.pHostObject = host;
    p.metricType = (CUpti_MetricType)t;
    if (cuptiProfilerHostGetBaseMetrics(&p) != CUPTI_SUCCESS) continue;
    for (size_t i = 0; i < p.numMetrics; i++) {
      std::string m = p.ppMetricNames[i];
      if (m == base) {
        base_exists = true;
        base_type = (CUpti_MetricType)t;
      }
      cand.emplace_back(edit_distance(m, base), m);
    }
  }
  std::string out;
  if (base_exists) {
    CUpti_Profiler_Host_GetSubMetrics_Params s;
    std::memset(&s, 0, sizeof s);
    s.structSize = CUpti_Profiler_Host_GetSubMetrics_Params_STRUCT_SIZE;
    s.pHostObject = host;
    s.metricType = base_type;
    s.pMetricName = base.c_str();
    if (cuptiProfilerHostGetSubMetrics(&s) == CUPTI_SUCCESS) {
      std::vector<std::pair<size_t, std::string>> subs;
      for (size_t i = 0; i < s.numOfSubmetrics; i++) {
        std::string sub = s.ppSubMetrics[i];
        if (!sub.empty() && sub[0] != '.') sub = "." + sub;
        subs.emplace_back(edit_distance(sub, suffix), base + sub);
      }
      std::sort(subs.begin(), subs.end());
      for (size_t i = 0; i < subs.size() && i < 5; i++) out += (i ? ", " : "") + subs[i].second;
      return out;
    }
  }
  std::sort(cand.begin(), cand.end());
  for (size_t i = 0; i < cand.size() && i < 5; i++) out += (i ? ", " : "") + cand[i].second + suffix;
  return out;
}

static hx_status check_names(CUpti_Profiler_Host_Object *host, const char *chip,
                             const std::vector<const char *> &names, hx_err *err) {
  for (const char *n : names) {
    CUpti_Profiler_Host_GetMetricProperties_Params p;
    std::memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
    p.pHostObject = host;
    p.pMetricName = n;
    CUptiResult r = cuptiProfilerHostGetMetricProperties(&p);
    if (r == CUPTI_SUCCESS) continue;
    if (r == CUPTI_ERROR_INVALID_METRIC_NAME || r == CUPTI_ERROR_INVALID_PARAMETER) {
      std::string close = close_names(host, n);
      return hx_errf(err, HX_EINVAL, "counters: unknown metric \"%s\" on %s; close names: %s", n, chip,
                     close.empty() ? "(none)" : close.c_str());
    }
    return cupti_fail(r, "cuptiProfilerHostGetMetricProperties", err);
  }
  return HX_OK;
}

static hx_status build_config(CUpti_Profiler_Host_Object *host, std::vector<const char *> &names,
                              std::vector<uint8_t> &config, size_t *passes, hx_err *err) {
  CUpti_Profiler_Host_ConfigAddMetrics_Params a;
  std::memset(&a, 0, sizeof a);
  a.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
  a.pHostObject = host;
  a.ppMetricNames = names.data();
  a.numMetrics = names.size();
  CUPTI_TRY(cuptiProfilerHostConfigAddMetrics, a);
  CUpti_Profiler_Host_GetConfigImageSize_Params s;
  std::memset(&s, 0, sizeof s);
  s.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
  s.pHostObject = host;
  CUPTI_TRY(cuptiProfilerHostGetConfigImageSize, s);
  config.assign(s.configImageSize, 0);
  CUpti_Profiler_Host_GetConfigImage_Params g;
  std::memset(&g, 0, sizeof g);
  g.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
  g.pHostObject = host;
  g.configImageSize = config.size();
  g.pConfigImage = config.data();
  CUPTI_TRY(cuptiProfilerHostGetConfigImage, g);
  CUpti_Profiler_Host_GetNumOfPasses_Params n;
  std::memset(&n, 0, sizeof n);
  n.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
  n.configImageSize = config.size();
  n.pConfigImage = config.data();
  CUPTI_TRY(cuptiProfilerHostGetNumOfPasses, n);
  *passes = n.numOfPasses;
  return HX_OK;
}

extern "C" hx_status hx_counters_validate(const char *chip, const char *const *names, size_t n, size_t *passes,
                                          hx_err *err) {
  if (!chip || !names || n == 0) return hx_errf(err, HX_EINVAL, "counters: no chip or no metric names");
  try {
    std::vector<const char *> v(names, names + n);
    CUpti_Profiler_Host_Object *host = nullptr;
    hx_status hs = host_init(chip, nullptr, &host, err);
    if (hs != HX_OK) return hs; /* an unknown chip is an expected answer here: no trace */
    size_t p = 0;
    std::vector<uint8_t> cfg;
    hx_status st = check_names(host, chip, v, err);
    if (st == HX_OK) st = build_config(host, v, cfg, &p, err);
    host_deinit(host);
    if (st == HX_OK && passes) *passes = p;
    return st;
  } catch (const std::bad_alloc &) {
    return hx_errf(err, HX_ENOMEM, "counters: out of host memory");
  }
}

/* ---- target side --------------------------------------------------------------------------------- */

typedef CUresult (*cu_ctx_get_current_fn)(CUcontext *);
typedef CUresult (*cu_ctx_get_device_fn)(CUdevice *);

static hx_status current_context(CUcontext *ctx, CUdevice *dev, hx_err *err) {
  void *f_ctx = nullptr, *f_dev = nullptr;
  cudaDriverEntryPointQueryResult q1 = cudaDriverEntryPointSymbolNotFound, q2 = q1;
  cudaError_t e1 = cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &f_ctx, 12000, cudaEnableDefault, &q1);
  cudaError_t e2 = cudaGetDriverEntryPointByVersion("cuCtxGetDevice", &f_dev, 12000, cudaEnableDefault, &q2);
  if (e1 != cudaSuccess || e2 != cudaSuccess || q1 != cudaDriverEntryPointSuccess ||
      q2 != cudaDriverEntryPointSuccess || !f_ctx || !f_dev)
    return hx_errf(err, HX_ECUDA, "counters: driver entry points cuCtxGetCurrent/cuCtxGetDevice not found");
  if (((cu_ctx_get_current_fn)f_ctx)(ctx) != CUDA_SUCCESS || !*ctx)
    return hx_errf(err, HX_ECUDA, "counters: no current CUDA context");
  if (((cu_ctx_get_device_fn)f_dev)(dev) != CUDA_SUCCESS)
    return hx_errf(err, HX_ECUDA, "counters: cuCtxGetDevice failed");
  return HX_OK;
}

static const char *support_str(CUpti_Profiler_Support_Level l) {
  switch (l) {
  case CUPTI_PROFILER_CONFIGURATION_SUPPORTED: return "supported";
  case CUPTI_PROFILER_CONFIGURATION_DISABLED: return "disabled";
  case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED: return "unsupported";
  default: return "unknown";
  }
}

/* The range profiler on the context, new: its session (and trace buffer) begins at the next pass. */
static hx_status rp_enable(hx_counters *c, hx_err *err) {
  CUpti_RangeProfiler_Enable_Params en;
  std::memset(&en, 0, sizeof en);
  en.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
  en.ctx = c->ctx;
  CUPTI_TRY(cuptiRangeProfilerEnable, en);
  c->rp = en.pRangeProfilerObject;
  c->session_ranges = 0;
  return HX_OK;
}

static void rp_disable(hx_counters *c) {
  if (!c->rp) return;
  CUpti_RangeProfiler_Disable_Params d;
  std::memset(&d, 0, sizeof d);
  d.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
  d.pRangeProfilerObject = c->rp;
  (void)cuptiRangeProfilerDisable(&d);
  c->rp = nullptr;
  c->session_ranges = 0;
}

/* The counter data image for sessions of up to max_ranges ranges (every range a node of the range tree: the flat
 * ranges of hx_flat have unique names, nested ones at most one node each). c->max_ranges changes only when the
 * image was sized, so a failure leaves the last working size. */
static hx_status size_image(hx_counters *c, size_t max_ranges, hx_err *err) {
  if (max_ranges > UINT32_MAX) return hx_errf(err, HX_EINVAL, "counters: %zu ranges in one session", max_ranges);
  CUpti_RangeProfiler_GetCounterDataSize_Params sz;
  std::memset(&sz, 0, sizeof sz);
  sz.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
  sz.pRangeProfilerObject = c->rp;
  sz.pMetricNames = c->cnames.data();
  sz.numMetrics = c->cnames.size();
  sz.maxNumOfRanges = max_ranges;
  sz.maxNumRangeTreeNodes = (uint32_t)max_ranges;
  CUPTI_TRY(cuptiRangeProfilerGetCounterDataSize, sz);
  c->image.assign(sz.counterDataSize, 0);
  c->image_ranges = max_ranges;
  return HX_OK;
}

static hx_status open_impl(hx_counters *c, int device, hx_err *err) {
  cudaError_t ce = cudaSetDevice(device);
  if (ce == cudaSuccess) ce = cudaFree(nullptr); /* make the primary context current */
  if (ce != cudaSuccess)
    return hx_errf(err, HX_ENODEV, "counters: device %d: %s", device, cudaGetErrorString(ce));
  CUdevice cudev = 0;
  HX_TRY(current_context(&c->ctx, &cudev, err));

  CUpti_Profiler_Initialize_Params ip;
  std::memset(&ip, 0, sizeof ip);
  ip.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
  CUPTI_TRY(cuptiProfilerInitialize, ip);
  c->profiler_initialized = true;

  CUpti_Profiler_DeviceSupported_Params ds;
  std::memset(&ds, 0, sizeof ds);
  ds.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
  ds.cuDevice = cudev;
  ds.api = CUPTI_PROFILER_RANGE_PROFILING;
  CUPTI_TRY(cuptiProfilerDeviceSupported, ds);
  if (ds.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
    return hx_errf(err, HX_EUNSUPPORTED,
                   "counters: device %d cannot be profiled (architecture %s, SLI %s, vGPU %s, confidential "
                   "computing %s, CMP %s, WSL %s); continuing with timing only",
                   device, support_str(ds.architecture), support_str(ds.sli), support_str(ds.vGpu),
                   support_str(ds.confidentialCompute), support_str(ds.cmp), support_str(ds.wsl));

  CUpti_Device_GetChipName_Params cn;
  std::memset(&cn, 0, sizeof cn);
  cn.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
  cn.deviceIndex = (size_t)device;
  CUPTI_TRY(cuptiDeviceGetChipName, cn);
  c->chip = cn.pChipName ? cn.pChipName : "";

  CUpti_Profiler_GetCounterAvailability_Params av;
  std::memset(&av, 0, sizeof av);
  av.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
  av.ctx = c->ctx;
  CUPTI_TRY(cuptiProfilerGetCounterAvailability, av);
  c->avail.assign(av.counterAvailabilityImageSize, 0);
  av.pCounterAvailabilityImage = c->avail.data();
  CUPTI_TRY(cuptiProfilerGetCounterAvailability, av);

  HX_TRY(host_init(c->chip.c_str(), c->avail.data(), &c->host, err));
  HX_TRY(check_names(c->host, c->chip.c_str(), c->cnames, err));
  HX_TRY(build_config(c->host, c->cnames, c->config, &c->passes, err));

  HX_TRY(rp_enable(c, err));
  return size_image(c, c->max_ranges, err);
}

static void close_impl(hx_counters *c) {
  rp_disable(c);
  host_deinit(c->host);
  c->host = nullptr;
  if (c->profiler_initialized) {
    CUpti_Profiler_DeInitialize_Params p;
    std::memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE;
    (void)cuptiProfilerDeInitialize(&p);
    c->profiler_initialized = false;
  }
}

extern "C" hx_status hx_counters_open(hx_counters **out, int device, const char *const *names, size_t n,
                                      size_t max_ranges, unsigned nesting_levels, hx_err *err) {
  if (!out) return hx_errf(err, HX_EINVAL, "counters: NULL output");
  *out = nullptr;
  if (!names || n == 0) return hx_errf(err, HX_EINVAL, "counters: no metric names");
  if (max_ranges == 0 || max_ranges > HX_COUNTERS_PASS_RANGES || nesting_levels == 0 || nesting_levels > 8)
    return hx_errf(err, HX_EINVAL, "counters: max_ranges must be 1..%d and nesting levels 1..8",
                   HX_COUNTERS_PASS_RANGES);
  hx_counters *c = nullptr;
  try {
    c = new hx_counters();
    for (size_t i = 0; i < n; i++) c->names.emplace_back(names[i]);
    for (const std::string &s : c->names) c->cnames.push_back(s.c_str());
    c->device = device;
    c->max_ranges = max_ranges;
    c->nesting = (uint16_t)nesting_levels;
    hx_status st = open_impl(c, device, err);
    if (st != HX_OK) {
      close_impl(c);
      delete c;
      return st;
    }
  } catch (const std::bad_alloc &) {
    if (c) {
      close_impl(c);
      delete c;
    }
    return hx_errf(err, HX_ENOMEM, "counters: out of host memory");
  }
  *out = c;
  return HX_OK;
}

extern "C" void hx_counters_close(hx_counters *c) {
  if (!c) return;
  close_impl(c);
  delete c;
}

extern "C" const char *hx_counters_chip(const hx_counters *c) { return c ? c->chip.c_str() : ""; }
extern "C" size_t hx_counters_num_passes(const hx_counters *c) { return c ? c->passes : 0; }
extern "C" size_t hx_counters_num_metrics(const hx_counters *c) { return c ? c->names.size() : 0; }
extern "C" const char *hx_counters_metric(const hx_counters *c, size_t i) {
  return c && i < c->names.size() ? c->names[i].c_str() : nullptr;
}

extern "C" hx_status hx_counters_set_max_ranges(hx_counters *c, size_t max_ranges, hx_err *err) {
  if (!c || !c->rp) return hx_errf(err, HX_EINVAL, "counters: not open");
  if (c->in_pass) return hx_errf(err, HX_EINVAL, "counters: max ranges changed inside a pass");
  if (max_ranges == 0) return hx_errf(err, HX_EINVAL, "counters: max_ranges must be > 0");
  if (max_ranges > HX_COUNTERS_PASS_RANGES)
    return hx_errf(err, HX_EINVAL, "counters: %zu ranges in one pass, more than the %d CUPTI's range profiler is sized "
                   "for (HX_COUNTERS_PASS_RANGES)", max_ranges, HX_COUNTERS_PASS_RANGES);
  c->max_ranges = max_ranges; /* the image follows at the next session_begin */
  return HX_OK;
}

extern "C" size_t hx_counters_max_ranges(const hx_counters *c) { return c ? c->max_ranges : 0; }

extern "C" hx_status hx_counters_session_begin(hx_counters *c, hx_err *err) {
  if (!c || !c->rp) return hx_errf(err, HX_EINVAL, "counters: not open");
  if (c->in_pass) return hx_errf(err, HX_EINVAL, "counters: session begun inside a pass");
  c->range_names.clear();
  c->range_values.clear();
  /* The first session since Enable sizes CUPTI's trace buffer for good (file comment): it asks for the most ranges a
   * pass may ever hold, later ones for what they need. Re-creating the range profiler instead (Disable, Enable)
   * crashed inside libcupti 13.0 on the next pass (H200, 281f372). */
  const size_t want = c->session_ranges ? c->max_ranges : std::max(c->max_ranges, (size_t)HX_COUNTERS_PASS_RANGES);
  try {
    if (want != c->image_ranges) HX_TRY(size_image(c, want, err));
  } catch (const std::bad_alloc &) {
    return hx_errf(err, HX_ENOMEM, "counters: out of host memory for a counter data image of %zu ranges", want);
  }
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params ii;
  std::memset(&ii, 0, sizeof ii);
  ii.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
  ii.pRangeProfilerObject = c->rp;
  ii.counterDataSize = c->image.size();
  ii.pCounterData = c->image.data();
  CUPTI_TRY(cuptiRangeProfilerCounterDataImageInitialize, ii);
  CUpti_RangeProfiler_SetConfig_Params sc;
  std::memset(&sc, 0, sizeof sc);
  sc.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
  sc.pRangeProfilerObject = c->rp;
  sc.configSize = c->config.size();
  sc.pConfig = c->config.data();
  sc.counterDataImageSize = c->image.size();
  sc.pCounterDataImage = c->image.data();
  sc.range = CUPTI_UserRange;
  sc.replayMode = CUPTI_UserReplay;
  sc.maxRangesPerPass = want;
  sc.numNestingLevels = c->nesting;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  CUPTI_TRY(cuptiRangeProfilerSetConfig, sc);
  c->set_ranges = want;
  return HX_OK;
}

extern "C" hx_status hx_counters_pass_begin(hx_counters *c, hx_err *err) {
  if (!c || !c->rp) return hx_errf(err, HX_EINVAL, "counters: not open");
  CUpti_RangeProfiler_Start_Params p;
  std::memset(&p, 0, sizeof p);
  p.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = c->rp;
  CUPTI_TRY(cuptiRangeProfilerStart, p);
  c->in_pass = true;
  if (!c->session_ranges) c->session_ranges = c->set_ranges; /* the first Start since Enable began the session */
  return HX_OK;
}

extern "C" hx_status hx_counters_pass_end(hx_counters *c, int *all_passes_done, hx_err *err) {
  if (!c || !c->rp || !c->in_pass) return hx_errf(err, HX_EINVAL, "counters: no pass in progress");
  CUpti_RangeProfiler_Stop_Params p;
  std::memset(&p, 0, sizeof p);
  p.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = c->rp;
  c->in_pass = false;
  CUPTI_TRY(cuptiRangeProfilerStop, p);
  if (all_passes_done) *all_passes_done = p.isAllPassSubmitted != 0;
  return HX_OK;
}

extern "C" hx_status hx_counters_push(hx_counters *c, const char *name, hx_err *err) {
  if (!c || !c->rp || !c->in_pass) return hx_errf(err, HX_EINVAL, "counters: push outside a pass");
  if (!name || !name[0]) return hx_errf(err, HX_EINVAL, "counters: a range without a name");
  if (std::strlen(name) > HX_COUNTERS_MAX_NAME)
    return hx_errf(err, HX_EINVAL, "counters: range name \"%.40s...\" has %zu characters, more than %d (CUPTI sizes "
                   "its trace buffer for 128 a range)", name, std::strlen(name), HX_COUNTERS_MAX_NAME);
  CUpti_RangeProfiler_PushRange_Params p;
  std::memset(&p, 0, sizeof p);
  p.structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = c->rp;
  p.pRangeName = name;
  CUPTI_TRY(cuptiRangeProfilerPushRange, p);
  return HX_OK;
}

extern "C" hx_status hx_counters_pop(hx_counters *c, hx_err *err) {
  if (!c || !c->rp || !c->in_pass) return hx_errf(err, HX_EINVAL, "counters: pop outside a pass");
  CUpti_RangeProfiler_PopRange_Params p;
  std::memset(&p, 0, sizeof p);
  p.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = c->rp;
  CUPTI_TRY(cuptiRangeProfilerPopRange, p);
  return HX_OK;
}

static hx_status session_end_impl(hx_counters *c, hx_err *err) {
  CUpti_RangeProfiler_DecodeData_Params d;
  std::memset(&d, 0, sizeof d);
  d.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
  d.pRangeProfilerObject = c->rp;
  CUPTI_TRY(cuptiRangeProfilerDecodeData, d);
  if (d.numOfRangeDropped)
    return hx_errf(err, HX_EINVAL, "counters: %zu ranges dropped (more than max_ranges = %zu in one session)",
                   d.numOfRangeDropped, c->max_ranges);
  CUpti_RangeProfiler_GetCounterDataInfo_Params info;
  std::memset(&info, 0, sizeof info);
  info.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
  info.pCounterDataImage = c->image.data();
  info.counterDataImageSize = c->image.size();
  CUPTI_TRY(cuptiRangeProfilerGetCounterDataInfo, info);
  size_t nm = c->names.size();
  c->range_values.assign(info.numTotalRanges * nm, 0.0);
  for (size_t i = 0; i < info.numTotalRanges; i++) {
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri;
    std::memset(&ri, 0, sizeof ri);
    ri.structSize = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE;
    ri.pCounterDataImage = c->image.data();
    ri.counterDataImageSize = c->image.size();
    ri.rangeIndex = i;
    ri.rangeDelimiter = "/"; /* nested ranges read "outer/inner", like the NVTX path */
    CUPTI_TRY(cuptiRangeProfilerCounterDataGetRangeInfo, ri);
    /* The name is owned by CUPTI here (the header says nothing about freeing it; the host API's
     * GetRangeName, which documents caller-frees, is a different call): copy, never free. */
    c->range_names.emplace_back(ri.rangeName ? ri.rangeName : "");
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev;
    std::memset(&ev, 0, sizeof ev);
    ev.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
    ev.pHostObject = c->host;
    ev.pCounterDataImage = c->image.data();
    ev.counterDataImageSize = c->image.size();
    ev.rangeIndex = i;
    ev.ppMetricNames = c->cnames.data();
    ev.numMetrics = nm;
    ev.pMetricValues = c->range_values.data() + i * nm;
    CUPTI_TRY(cuptiProfilerHostEvaluateToGpuValues, ev);
  }
  return HX_OK;
}

extern "C" hx_status hx_counters_session_end(hx_counters *c, size_t *n_ranges, hx_err *err) {
  if (!c || !c->rp) return hx_errf(err, HX_EINVAL, "counters: not open");
  try {
    hx_status st = session_end_impl(c, err);
    if (n_ranges) *n_ranges = st == HX_OK ? c->range_names.size() : 0;
    return st;
  } catch (const std::bad_alloc &) {
    return hx_errf(err, HX_ENOMEM, "counters: out of host memory");
  }
}

extern "C" hx_status hx_counters_range(const hx_counters *c, size_t i, const char **name, double *values,
                                       hx_err *err) {
  if (!c || i >= c->range_names.size())
    return hx_errf(err, HX_EINVAL, "counters: range %zu does not exist", i);
  if (name) *name = c->range_names[i].c_str();
  size_t nm = c->names.size();
  if (values) std::copy(c->range_values.begin() + (long)(i * nm), c->range_values.begin() + (long)((i + 1) * nm), values);
  return HX_OK;
}

extern "C" hx_status hx_counters_profile(hx_counters *c, const char *range, const hx_closure *work, void *stream,
                                         double *values, hx_err *err) {
  if (!c || !range || !work || !work->run) return hx_errf(err, HX_EINVAL, "counters: bad profile request");
  cudaStream_t s = (cudaStream_t)stream;
  HX_TRY(hx_counters_session_begin(c, err));
  int done = 0;
  /* User replay: the same work once per pass, inputs restored by reset() (untimed, outside the range). */
  for (size_t pass = 0; !done; pass++) {
    if (pass >= 64) return hx_errf(err, HX_EUNSUPPORTED, "counters: more than 64 passes; reduce the metric set");
    if (work->reset) HX_TRY(work->reset(work->arg, err));
    if (cudaDeviceSynchronize() != cudaSuccess) return hx_errf(err, HX_ECUDA, "counters: sync before pass failed");
    HX_TRY(hx_counters_pass_begin(c, err));
    hx_status st = hx_counters_push(c, range, err);
    if (st == HX_OK) st = work->run(work->arg, stream, err);
    if (st == HX_OK) st = hx_counters_pop(c, err);
    if (st == HX_OK && cudaStreamSynchronize(s) != cudaSuccess)
      st = hx_errf(err, HX_ECUDA, "counters: %s: %s", range, cudaGetErrorString(cudaGetLastError()));
    if (st != HX_OK) {
      hx_err ignored;
      (void)hx_counters_pass_end(c, NULL, &ignored);
      return st;
    }
    HX_TRY(hx_counters_pass_end(c, &done, err));
  }
  size_t n = 0;
  HX_TRY(hx_counters_session_end(c, &n, err));
  for (size_t i = 0; i < n; i++) {
    const char *name = nullptr;
    HX_TRY(hx_counters_range(c, i, &name, values, err));
    if (std::strcmp(name, range) == 0) return HX_OK;
  }
  return hx_errf(err, HX_ECUDA, "counters: range \"%s\" missing from the decoded data (%zu ranges)", range, n);
}
