/*
 * walk.c - the parameter walk both models share (nets_internal.h): one function that, in add mode, creates a tensor
 * under its PyTorch name with seeded values and, in find mode, looks it up and checks its shape, so a model lists
 * its tensors once (the same code builds the parameter set and the views its forwards read); and the modules both
 * models walk alike (Linear, LayerNorm, BatchNorm) on it.
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

hx_status net_walk_linear(net_walk *w, net_lin *l, size_t in, size_t out, const char *prefix) {
  const float bound = (float)(1.0 / sqrt((double)in));
  const int64_t ws[2] = {(int64_t)out, (int64_t)in}, bs[1] = {(int64_t)out};
  l->in = in, l->out = out;
  HX_TRY(net_walk_tensor(w, &l->w, NET_INIT_UNIFORM, bound, 1, 2, ws, "%s.weight", prefix));
  return net_walk_tensor(w, &l->b, NET_INIT_UNIFORM, bound, 1, 1, bs, "%s.bias", prefix);
}

hx_status net_walk_layernorm(net_walk *w, net_norm *nm, size_t C, const char *prefix) {
  const int64_t s[1] = {(int64_t)C};
  nm->C = C, nm->mean = nm->var = NULL;
  HX_TRY(net_walk_tensor(w, &nm->w, NET_INIT_NORM_W, 0, 1, 1, s, "%s.weight", prefix));
  return net_walk_tensor(w, &nm->b, NET_INIT_NORM_B, 0, 1, 1, s, "%s.bias", prefix);
}

hx_status net_walk_batchnorm(net_walk *w, net_norm *nm, size_t C, const char *prefix) {
  const int64_t s[1] = {(int64_t)C};
  nm->C = C;
  HX_TRY(net_walk_tensor(w, &nm->w, NET_INIT_NORM_W, 0, 1, 1, s, "%s.weight", prefix));
  HX_TRY(net_walk_tensor(w, &nm->b, NET_INIT_NORM_B, 0, 1, 1, s, "%s.bias", prefix));
  HX_TRY(net_walk_tensor(w, &nm->mean, NET_INIT_BN_MEAN, 0, 0, 1, s, "%s.running_mean", prefix));
  return net_walk_tensor(w, &nm->var, NET_INIT_BN_VAR, 0, 0, 1, s, "%s.running_var", prefix);
}
