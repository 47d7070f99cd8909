/*
 * nets_internal.h - private to nets/: the per-model entry points net.c dispatches to, and the device
 * helpers the model files share. Each model file owns its section.
 */
#ifndef F3D_NETS_INTERNAL_H
#define F3D_NETS_INTERNAL_H

#include "nets/nets.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- PTv3-m1 (net_ptv3.c: configuration, parameters, CPU forward; net_ptv3_gpu.c: GPU forward) ---- */
hx_status net_ptv3_config(net_config *cfg, const char *name, hx_err *err);
hx_status net_ptv3_params_init(net_params *p, const net_config *cfg, uint64_t seed, hx_err *err);
hx_status net_ptv3_forward_cpu(net_output *out, const net_config *cfg, const net_params *p, const net_input *in,
                               int keep_levels, hx_err *err);

/* ---- Flash3D (net_flash3d.c, net_flash3d_gpu.c) ---- */
hx_status net_flash3d_config(net_config *cfg, const char *name, hx_err *err);
hx_status net_flash3d_params_init(net_params *p, const net_config *cfg, uint64_t seed, hx_err *err);
hx_status net_flash3d_forward_cpu(net_output *out, const net_config *cfg, const net_params *p, const net_input *in,
                                  int keep_levels, hx_err *err);

/* ---- GPU forward objects: one vtable per model (net.c's net_gpu_* call through it) ---- */
typedef struct net_gpu_ops {
  hx_status (*create)(void **impl, const net_config *cfg, const net_params *p, net_dtype dt, const net_alloc *alloc,
                      hx_err *err);
  void (*destroy)(void *impl);
  hx_status (*bytes)(size_t *bytes, const net_config *cfg, const net_input *in, net_dtype dt, hx_err *err);
  hx_status (*prepare)(void *impl, const net_input *in, struct CUstream_st *stream, hx_err *err);
  hx_status (*forward)(void *impl, const net_hooks *hooks, struct CUstream_st *stream, hx_err *err);
  hx_status (*download)(void *impl, net_output *out, int keep_levels, struct CUstream_st *stream, hx_err *err);
  int (*graphable)(const void *impl);
  size_t (*held_bytes)(const void *impl);
  /* The fp32 CPU forward on the same structure as the last GPU forward (for Flash3D: the bucket layouts the GPU
   * PSH produced, which may differ from psh_run_cpu's where threads race); NULL: net_forward_cpu is the same. */
  hx_status (*cpu_reference)(const void *impl, net_output *out, const net_params *p, const net_input *in,
                             int keep_levels, hx_err *err);
} net_gpu_ops;
/* The object behind net_gpu (net.c creates it; net_check.c reads it). */
struct net_gpu {
  const net_gpu_ops *ops;
  void *impl;
  net_config cfg;
  net_dtype dt;
};

/* NULL in a CPU-only build (net_gpu_create then returns HX_ENODEV). */
const net_gpu_ops *net_ptv3_gpu_ops(void);
const net_gpu_ops *net_flash3d_gpu_ops(void);

/* A range on the hooks, if any (begin = 1 / 0). */
static inline void net_range(const net_hooks *h, const char *name, int begin, struct CUstream_st *s) {
  if (h && h->range) h->range(h->ctx, name, begin, s);
}

#ifdef __cplusplus
}
#endif
#endif /* F3D_NETS_INTERNAL_H */
