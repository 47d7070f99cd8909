/*
 * nvtx.c - named ranges seen by every tool at once: each hx_range_push opens an NVTX range in the
 * "flash3d" domain (Nsight Systems timelines, Nsight Compute --nvtx filters) and, while a counter pass is
 * in progress (r->counters set), a CUPTI user range of the same name, so nested stage names read the same
 * in nsys, ncu and our own counter rows.
 * NVTX3 is header-only and its calls are no-ops unless a tool injects itself; a build without the CUDA
 * headers compiles the NVTX part out. Invariant: pushes and pops pair up (depth >= 0); a pop without a
 * push is HX_EINVAL and changes nothing.
 */
#include "harness/harness.h"

#if defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#define HX_HAVE_NVTX 1
/* nvtxInit.h casts an object pointer to a function pointer, which -Wpedantic reports. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#include <nvtx3/nvToolsExt.h>
#pragma GCC diagnostic pop
#endif
#endif

void hx_ranges_init(hx_ranges *r, const char *domain, hx_counters *counters) {
  r->depth = 0;
  r->counters = counters;
#ifdef HX_HAVE_NVTX
  r->domain = (void *)nvtxDomainCreateA(domain ? domain : "flash3d");
#else
  (void)domain;
  r->domain = NULL;
#endif
}

void hx_ranges_fini(hx_ranges *r) {
#ifdef HX_HAVE_NVTX
  if (r->domain) nvtxDomainDestroy((nvtxDomainHandle_t)r->domain);
#endif
  r->domain = NULL;
  r->counters = NULL;
}

hx_status hx_range_push(hx_ranges *r, const char *name, hx_err *err) {
#ifdef HX_HAVE_NVTX
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  /* one colour per nesting level so stages stand out from their case in the timeline */
  static const uint32_t colours[] = {0xFF76B900u, 0xFF1F77B4u, 0xFFFF7F0Eu, 0xFFD62728u};
  a.colorType = NVTX_COLOR_ARGB;
  a.color = colours[(unsigned)r->depth % 4u];
  nvtxDomainRangePushEx((nvtxDomainHandle_t)r->domain, &a);
#endif
  if (r->counters) {
    hx_status st = hx_counters_push(r->counters, name, err);
    if (st != HX_OK) {
#ifdef HX_HAVE_NVTX
      nvtxDomainRangePop((nvtxDomainHandle_t)r->domain);
#endif
      return st;
    }
  }
  r->depth++;
  return HX_OK;
}

hx_status hx_range_pop(hx_ranges *r, hx_err *err) {
  if (r->depth <= 0) return hx_errf(err, HX_EINVAL, "range pop without a push");
  r->depth--;
#ifdef HX_HAVE_NVTX
  nvtxDomainRangePop((nvtxDomainHandle_t)r->domain);
#endif
  return r->counters ? hx_counters_pop(r->counters, err) : HX_OK;
}

int hx_ranges_have_nvtx(void) {
#ifdef HX_HAVE_NVTX
  return 1;
#else
  return 0;
#endif
}
