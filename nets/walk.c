/*
 * walk.c - the parameter walk both models share (nets_internal.h): one function that, in add mode, creates a tensor
 * under its PyTorch name with seeded values and, in find mode, looks it up and checks its shape, so a model lists
 * its tensors once (the same code builds the parameter set and the views its forwards read).
 */
#include <math.h>
#include <stdarg.h>

#include "nets/nets_internal.h"

hx_status net_walk_tensor(net_walk *w, const float **out, net_init init, float bound, int counted, int ndim,
                          const int64_t *shape, const char *fmt, ...) {
  char name[128];
  va_list ap;
  va_start(ap, fmt);
  const int len = vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  if (len < 0 || (size_t)len >= sizeof name) return hx_errf(w->err, HX_EINVAL, "%s: tensor name too long", w->model);
  size_t numel = 1;
  for (int d = 0; d < ndim; d++) numel *= (size_t)shape[d];
  const uint64_t stream = w->stream_base + w->idx++;
  if (w->p) {
    net_tensor *t = NULL;
    HX_TRY(net_params_add(w->p, name, ndim, shape, counted, &t, w->err));
    for (size_t k = 0; k < numel; k++) {
      const float u = (float)(2.0 * hx_rng_unit(w->seed, stream, k) - 1.0); /* [-1, 1) */
      switch (init) {
        case NET_INIT_UNIFORM: t->data[k] = bound * u; break;
        case NET_INIT_NORM_W: t->data[k] = 1.0f + 0.1f * u; break;
        case NET_INIT_NORM_B: t->data[k] = 0.1f * u; break;
        case NET_INIT_BN_MEAN: t->data[k] = 0.1f * u; break;
        default: t->data[k] = 1.0f + 0.2f * u; break; /* NET_INIT_BN_VAR: near 1, so the fold is exercised */
      }
    }
    *out = t->data;
    return HX_OK;
  }
  const net_tensor *t = net_params_find(w->cp, name);
  if (!t) return hx_errf(w->err, HX_EINVAL, "%s: parameter %s missing", w->model, name);
  int same = t->ndim == ndim;
  for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
  if (!same) return hx_errf(w->err, HX_EINVAL, "%s: parameter %s has the wrong shape", w->model, name);
  *out = t->data;
  return HX_OK;
}
