/*
 * net.c - what every model shares: the parameter store (named fp32 host tensors), its safetensors load and
 * save, the registry of configuration names, and the dispatch of net_* calls to the model files (cfg->kind:
 * 0 PTv3-m1 -> net_ptv3_*, 1 Flash3D -> net_flash3d_*; the GPU forward through the model's net_gpu_ops,
 * which is NULL in a CPU-only build).
 *
 * Invariants: names in a net_params are unique, 1..127 bytes; every tensor's data holds exactly its
 * shape's element count (never NULL, zero-filled at net_params_add). net_params_load checks the whole file
 * against the store before it copies a value, so on failure the store is unchanged.
 */
#include "nets/nets_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NET_MAX_DIMS 5 /* net_tensor.shape */

/* ---- parameter store ----------------------------------------------------------------------------------- */
static uint64_t tensor_numel(const net_tensor *t) {
  uint64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= (uint64_t)t->shape[d];
  return n;
}

const net_tensor *net_params_find(const net_params *p, const char *name) {
  if (!p || !name) return NULL;
  for (size_t i = 0; i < p->n; i++)
    if (strcmp(p->t[i].name, name) == 0) return &p->t[i];
  return NULL;
}

/* Adds a zero-filled tensor. *out (may be NULL) points into p->t: valid until the next net_params_add. */
hx_status net_params_add(net_params *p, const char *name, int ndim, const int64_t *shape, int counted,
                         net_tensor **out, hx_err *err) {
  if (out) *out = NULL;
  if (!p || !name || (ndim > 0 && !shape)) return hx_errf(err, HX_EINVAL, "net_params_add: missing argument");
  const size_t len = strlen(name);
  if (len == 0 || len >= sizeof p->t[0].name)
    return hx_errf(err, HX_EINVAL, "net_params_add: name of %zu bytes (1..127 allowed): %.60s", len, name);
  if (ndim < 0 || ndim > NET_MAX_DIMS)
    return hx_errf(err, HX_EINVAL, "net_params_add: %s: %d dimensions (0..5 allowed)", name, ndim);
  uint64_t numel = 1;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) return hx_errf(err, HX_EINVAL, "net_params_add: %s: negative dimension %lld", name,
                                     (long long)shape[d]);
    if (shape[d] > 0 && numel > ((uint64_t)SIZE_MAX / sizeof(float)) / (uint64_t)shape[d])
      return hx_errf(err, HX_EINVAL, "net_params_add: %s: element count overflows", name);
    numel *= (uint64_t)shape[d];
  }
  if (net_params_find(p, name)) return hx_errf(err, HX_EINVAL, "net_params_add: %s: duplicate name", name);
  if (p->n == p->cap) {
    size_t nc = p->cap ? 2 * p->cap : 64;
    net_tensor *g = realloc(p->t, nc * sizeof *g);
    if (!g) return hx_errf(err, HX_ENOMEM, "net_params_add: out of memory for %zu tensors", nc);
    p->t = g;
    p->cap = nc;
  }
  net_tensor *t = &p->t[p->n];
  memset(t, 0, sizeof *t);
  memcpy(t->name, name, len + 1);
  t->ndim = ndim;
  for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
  t->counted = counted ? 1 : 0;
  t->data = calloc(numel ? (size_t)numel : 1u, sizeof(float));
  if (!t->data) return hx_errf(err, HX_ENOMEM, "net_params_add: %s: out of memory for %llu values", name,
                               (unsigned long long)numel);
  p->n++;
  if (out) *out = t;
  return HX_OK;
}

uint64_t net_params_count(const net_params *p) {
  uint64_t n = 0;
  for (size_t i = 0; p && i < p->n; i++)
    if (p->t[i].counted) n += tensor_numel(&p->t[i]);
  return n;
}

void net_params_free(net_params *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n; i++) free(p->t[i].data);
  free(p->t);
  p->t = NULL;
  p->n = p->cap = 0;
}

static int cmp_stf_name(const void *a, const void *b) {
  return strcmp((*(const stf_tensor *const *)a)->name, (*(const stf_tensor *const *)b)->name);
}

static int cmp_key_stf(const void *key, const void *elem) {
  return strcmp((const char *)key, (*(const stf_tensor *const *)elem)->name);
}

static void shape_str(char *s, size_t cap, int ndim, const int64_t *shape) {
  size_t k = (size_t)snprintf(s, cap, "[");
  for (int d = 0; d < ndim && k < cap; d++)
    k += (size_t)snprintf(s + k, cap - k, "%s%lld", d ? ", " : "", (long long)shape[d]);
  if (k < cap) snprintf(s + k, cap - k, "]");
}

/* A state_dict key no forward reads: "<module>.num_batches_tracked" (BatchNorm's counter) or
 * "<module>._extra_state" (TransformerEngine's FP8 metadata), or the bare suffix. */
static int ignorable_key(const char *name) {
  static const char *const suffix[] = {"num_batches_tracked", "_extra_state"};
  const size_t n = strlen(name);
  for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
    const size_t m = strlen(suffix[i]);
    if (n >= m && strcmp(name + n - m, suffix[i]) == 0 && (n == m || name[n - m - 1u] == '.')) return 1;
  }
  return 0;
}

/* A BatchNorm buffer of variances ("<module>.running_var", or the bare name): every value must be >= 0. */
static int is_running_var(const char *name) {
  static const char suffix[] = "running_var";
  const size_t n = strlen(name), m = sizeof suffix - 1u;
  return n >= m && strcmp(name + n - m, suffix) == 0 && (n == m || name[n - m - 1u] == '.');
}

static int float_dtype(const char *dt) {
  return strcmp(dt, "F32") == 0 || strcmp(dt, "F16") == 0 || strcmp(dt, "BF16") == 0 || strcmp(dt, "F64") == 0;
}

/* match[i] = the file's tensor for p->t[i], after checking names, shapes, dtypes and values (see
 * net_params_load); *ignored = the file's ignorable keys that are not parameters. */
static hx_status match_file(const stf_tensor **match, const net_params *p, const stf_file *f, const char *path,
                            size_t *ignored, hx_err *err) {
  const stf_tensor **ix = malloc((f->n ? f->n : 1) * sizeof *ix);
  if (!ix) return hx_errf(err, HX_ENOMEM, "%s: out of memory", path);
  for (size_t i = 0; i < f->n; i++) ix[i] = &f->t[i];
  qsort(ix, f->n, sizeof *ix, cmp_stf_name);
  hx_status st = HX_OK;
  for (size_t i = 0; i < p->n && st == HX_OK; i++) {
    const net_tensor *t = &p->t[i];
    const stf_tensor *const *hit = f->n ? bsearch(t->name, ix, f->n, sizeof *ix, cmp_key_stf) : NULL;
    match[i] = hit ? *hit : NULL;
    if (!hit) {
      st = hx_errf(err, HX_EFORMAT, "%s: tensor %s missing (the model expects %zu tensors, the file holds %zu)", path,
                   t->name, p->n, f->n);
      break;
    }
    int same = (*hit)->ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = (*hit)->shape[d] == t->shape[d];
    if (!same) {
      char want[96], got[160];
      shape_str(want, sizeof want, t->ndim, t->shape);
      shape_str(got, sizeof got, (*hit)->ndim, (*hit)->shape);
      st = hx_errf(err, HX_EFORMAT, "%s: tensor %s has shape %s, the model expects %s", path, t->name, got, want);
    } else if (!float_dtype((*hit)->dtype)) {
      st = hx_errf(err, HX_EFORMAT, "%s: tensor %s has dtype %s, a parameter needs F32, F16, BF16 or F64", path,
                   t->name, (*hit)->dtype);
    }
  }
  /* every name of p is in the file (unique on both sides), so there is an extra one exactly when the counts
   * differ; the ignorable ones are counted, the first other one in file order is refused */
  *ignored = 0;
  for (size_t i = 0; i < f->n && st == HX_OK && f->n != p->n; i++)
    if (!net_params_find(p, f->t[i].name)) {
      if (ignorable_key(f->t[i].name)) (*ignored)++;
      else st = hx_errf(err, HX_EFORMAT, "%s: tensor %s is not a parameter of the model (extra name; only keys "
                        "ending in num_batches_tracked or _extra_state are ignored)", path, f->t[i].name);
    }
  for (size_t i = 0; i < p->n && st == HX_OK; i++) {
    const uint64_t m = tensor_numel(&p->t[i]);
    const int var = is_running_var(p->t[i].name);
    for (uint64_t k = 0; k < m; k++) {
      const float v = match[i]->data[k];
      if (!isfinite(v)) {
        st = hx_errf(err, HX_EFORMAT, "%s: tensor %s: value %llu is %s", path, p->t[i].name, (unsigned long long)k,
                     isnan(v) ? "NaN" : "infinite");
        break;
      }
      if (var && v < 0.0f) { /* 1 / sqrt(var + eps) would be NaN, blamed on the activations far downstream */
        st = hx_errf(err, HX_EFORMAT, "%s: tensor %s: value %llu is %.9g: a BatchNorm running variance is never "
                     "negative", path, p->t[i].name, (unsigned long long)k, (double)v);
        break;
      }
    }
  }
  free(ix);
  return st;
}

hx_status net_params_load(net_params *p, const char *path, size_t *ignored, hx_err *err) {
  if (ignored) *ignored = 0;
  if (!p || !path) return hx_errf(err, HX_EINVAL, "net_params_load: missing parameters or path");
  stf_file f = {0};
  HX_TRY(stf_read(&f, path, err));
  const stf_tensor **match = malloc((p->n ? p->n : 1) * sizeof *match);
  size_t skipped = 0;
  hx_status st =
      match ? match_file(match, p, &f, path, &skipped, err) : hx_errf(err, HX_ENOMEM, "%s: out of memory", path);
  if (ignored && st == HX_OK) *ignored = skipped;
  for (size_t i = 0; i < p->n && st == HX_OK; i++)
    memcpy(p->t[i].data, match[i]->data, (size_t)tensor_numel(&p->t[i]) * sizeof(float));
  free(match);
  stf_free(&f);
  return st;
}

hx_status net_params_save(const net_params *p, const char *path, hx_err *err) {
  if (!p || !path) return hx_errf(err, HX_EINVAL, "net_params_save: missing parameters or path");
  stf_tensor *t = calloc(p->n ? p->n : 1, sizeof *t);
  if (!t) return hx_errf(err, HX_ENOMEM, "%s: out of memory", path);
  for (size_t i = 0; i < p->n; i++) {
    memcpy(t[i].name, p->t[i].name, sizeof t[i].name);
    t[i].ndim = p->t[i].ndim;
    for (int d = 0; d < p->t[i].ndim; d++) t[i].shape[d] = p->t[i].shape[d];
    t[i].data = p->t[i].data; /* borrowed: stf_write only reads it */
  }
  hx_status st = stf_write(path, t, p->n, err);
  free(t);
  return st;
}

void net_output_free(net_output *o) {
  if (!o) return;
  free(o->logits);
  for (size_t i = 0; i < 2 * NET_MAX_LEVELS; i++) free(o->level[i]);
  memset(o, 0, sizeof *o);
}

/* ---- configurations ------------------------------------------------------------------------------------ */
/* Every name the model files accept (a model file that adds a configuration adds its name here). */
static const char *const net_names[] = {"ptv3",         "ptv3-patch4096",     "ptv3-tiny",
                                        "flash3d-public", "flash3d-46m",      "flash3d-46m-fill75",
                                        "flash3d-46m-windows", "flash3d-46m-scope2", "flash3d-129m",
                                        "flash3d-tiny", NULL};

const char *const *net_config_names(size_t *n) {
  if (n) *n = sizeof net_names / sizeof net_names[0] - 1;
  return net_names;
}

static hx_status unknown_name(const char *name, hx_err *err) {
  char list[256];
  size_t k = 0;
  list[0] = 0;
  for (size_t i = 0; net_names[i] && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", net_names[i]);
  return hx_errf(err, HX_EINVAL, "unknown network '%s' (valid: %s)", name, list);
}

hx_status net_config_named(net_config *cfg, const char *name, hx_err *err) {
  if (!cfg || !name) return hx_errf(err, HX_EINVAL, "net_config_named: missing configuration or name");
  int listed = 0;
  for (size_t i = 0; net_names[i]; i++) listed |= strcmp(net_names[i], name) == 0;
  if (!listed) return unknown_name(name, err);
  memset(cfg, 0, sizeof *cfg);
  if (strncmp(name, "ptv3", 4) == 0) return net_ptv3_config(cfg, name, err);
  if (strncmp(name, "flash3d", 7) == 0) return net_flash3d_config(cfg, name, err);
  return unknown_name(name, err);
}

/* ---- dispatch to the model files ------------------------------------------------------------------------- */
static hx_status check_kind(const net_config *cfg, const char *what, hx_err *err) {
  if (!cfg) return hx_errf(err, HX_EINVAL, "%s: missing configuration", what);
  if (cfg->kind != 0 && cfg->kind != 1)
    return hx_errf(err, HX_EINVAL, "%s: configuration %.32s has unknown kind %d (0 PTv3, 1 Flash3D)", what, cfg->name,
                   cfg->kind);
  return HX_OK;
}

hx_status net_params_init(net_params *p, const net_config *cfg, uint64_t seed, hx_err *err) {
  HX_TRY(check_kind(cfg, "net_params_init", err));
  if (!p) return hx_errf(err, HX_EINVAL, "net_params_init: missing parameters");
  return cfg->kind == 0 ? net_ptv3_params_init(p, cfg, seed, err) : net_flash3d_params_init(p, cfg, seed, err);
}

hx_status net_forward_cpu(net_output *out, const net_config *cfg, const net_params *p, const net_input *in,
                          int keep_levels, hx_err *err) {
  HX_TRY(check_kind(cfg, "net_forward_cpu", err));
  if (!out || !p || !in) return hx_errf(err, HX_EINVAL, "net_forward_cpu: missing output, parameters or input");
  return cfg->kind == 0 ? net_ptv3_forward_cpu(out, cfg, p, in, keep_levels, err)
                        : net_flash3d_forward_cpu(out, cfg, p, in, keep_levels, err);
}

/* ---- GPU forward objects (struct net_gpu: nets_internal.h) -------------------------------------------------- */
/* The model's vtable, or HX_ENODEV in a CPU-only build. */
static hx_status gpu_ops(const net_gpu_ops **ops, const net_config *cfg, const char *what, hx_err *err) {
  HX_TRY(check_kind(cfg, what, err));
  *ops = cfg->kind == 0 ? net_ptv3_gpu_ops() : net_flash3d_gpu_ops();
  if (!*ops) return hx_errf(err, HX_ENODEV, "%s: %.32s: built without CUDA", what, cfg->name);
  return HX_OK;
}

hx_status net_gpu_create(net_gpu **out, const net_config *cfg, const net_params *p, net_dtype dt,
                         const net_alloc *alloc, hx_err *err) {
  if (!out) return hx_errf(err, HX_EINVAL, "net_gpu_create: missing output");
  *out = NULL;
  const net_gpu_ops *ops = NULL;
  HX_TRY(gpu_ops(&ops, cfg, "net_gpu_create", err));
  if (!p) return hx_errf(err, HX_EINVAL, "net_gpu_create: missing parameters");
  if (dt != NET_F16 && dt != NET_BF16) return hx_errf(err, HX_EINVAL, "net_gpu_create: unknown dtype %d", (int)dt);
  net_gpu *g = calloc(1, sizeof *g);
  if (!g) return hx_errf(err, HX_ENOMEM, "net_gpu_create: out of memory");
  g->ops = ops;
  g->cfg = *cfg;
  g->dt = dt;
  hx_status st = ops->create(&g->impl, cfg, p, dt, alloc, err);
  if (st != HX_OK) {
    free(g);
    return st;
  }
  *out = g;
  return HX_OK;
}

void net_gpu_destroy(net_gpu *g) {
  if (!g) return;
  if (g->impl) g->ops->destroy(g->impl);
  free(g);
}

hx_status net_gpu_memory(net_mem *m, const net_config *cfg, const net_input *in, net_dtype dt, hx_err *err) {
  if (!m || !in) return hx_errf(err, HX_EINVAL, "net_gpu_memory: missing output or input");
  memset(m, 0, sizeof *m);
  const net_gpu_ops *ops = NULL;
  HX_TRY(gpu_ops(&ops, cfg, "net_gpu_memory", err));
  if (dt != NET_F16 && dt != NET_BF16) return hx_errf(err, HX_EINVAL, "net_gpu_memory: unknown dtype %d", (int)dt);
  const hx_status st = ops->bytes(m, cfg, in, dt, err);
  if (st != HX_OK) memset(m, 0, sizeof *m);
  return st;
}

hx_status net_gpu_bytes(size_t *bytes, const net_config *cfg, const net_input *in, net_dtype dt, hx_err *err) {
  if (!bytes) return hx_errf(err, HX_EINVAL, "net_gpu_bytes: missing output");
  *bytes = 0;
  net_mem m;
  const hx_status st = net_gpu_memory(&m, cfg, in, dt, err);
  if (st == HX_OK) *bytes = m.total;
  return st;
}

void net_mem_add(net_mem *m, const char *label, net_mem_kind kind, size_t bytes) {
  if (!m || (unsigned)kind >= NET_MEM_KINDS) return;
  bytes = hx_align256(bytes ? bytes : 1);
  m->total += bytes, m->kind[kind] += bytes;
  uint32_t i = 0;
  while (i < m->n_parts && !(m->part[i].kind == kind && !strcmp(m->part[i].label, label))) i++;
  if (i == m->n_parts) {
    if (m->n_parts == NET_MEM_PARTS) { /* full: the last part becomes "other", of mixed kinds */
      i = NET_MEM_PARTS - 1;
      m->part[i].label = "other";
    } else {
      m->part[m->n_parts++] = (net_mem_part){label, kind, 0, 0};
    }
  }
  m->part[i].count++, m->part[i].bytes += bytes;
}

const char *net_mem_kind_name(net_mem_kind k) {
  static const char *const names[NET_MEM_KINDS] = {"weights", "io", "structure", "levels", "work", "scratch"};
  return (unsigned)k < NET_MEM_KINDS ? names[k] : NULL;
}

/* The GPU forward converts its input features to the activation dtype first: a feature past the dtype's largest
 * finite value (fp16: 65504, so coordinates more than 65.5 km from the origin, as the features carry them) would
 * enter as an infinity and reach every logit downstream of it. Refused, naming the point and the way out. */
static hx_status input_fits_dtype(const net_gpu *g, const net_input *in, hx_err *err) {
  const double lim = g->dt == NET_F16 ? 65504.0 : 3.3895313892515355e38; /* bf16's largest finite value */
  const size_t C = (size_t)g->cfg.in_channels;
  if (!in->feat) return HX_OK; /* the model's own prepare names it, as it names a NaN or infinite feature */
  for (size_t k = 0; k < in->n * C; k++)
    if (isfinite(in->feat[k]) && fabs((double)in->feat[k]) > lim)
      return hx_errf(err, HX_EINVAL,
                     "%.32s: input feature %zu of point %zu is %g, past the largest finite %s value (%g): subtract an "
                     "origin from the coordinates (the features carry them)",
                     g->cfg.name, k % C, k / C, (double)in->feat[k], net_dtype_name(g->dt), lim);
  return HX_OK;
}

hx_status net_gpu_prepare(net_gpu *g, const net_input *in, struct CUstream_st *stream, hx_err *err) {
  if (!g || !in) return hx_errf(err, HX_EINVAL, "net_gpu_prepare: missing forward object or input");
  HX_TRY(input_fits_dtype(g, in, err));
  return g->ops->prepare(g->impl, in, stream, err);
}

hx_status net_gpu_forward(net_gpu *g, const net_hooks *hooks, struct CUstream_st *stream, hx_err *err) {
  if (!g) return hx_errf(err, HX_EINVAL, "net_gpu_forward: missing forward object");
  return g->ops->forward(g->impl, hooks, stream, err);
}

hx_status net_gpu_download(net_gpu *g, net_output *out, int keep_levels, struct CUstream_st *stream, hx_err *err) {
  if (!g || !out) return hx_errf(err, HX_EINVAL, "net_gpu_download: missing forward object or output");
  /* without keep_levels the levels shared their buffers, each overwritten by the next */
  if (keep_levels && !g->cfg.keep_levels) {
    memset(out, 0, sizeof *out);
    return hx_errf(err, HX_EINVAL, "net_gpu_download: %.32s: the levels were not kept (their buffers are shared "
                   "across levels): create the forward with net_config's keep_levels to download them", g->cfg.name);
  }
  return g->ops->download(g->impl, out, keep_levels, stream, err);
}

int net_gpu_graphable(const net_gpu *g) { return g ? g->ops->graphable(g->impl) : 0; }

size_t net_gpu_held_bytes(const net_gpu *g) { return g ? g->ops->held_bytes(g->impl) : 0; }

void net_gpu_blas_stats(const net_gpu *g, nl_blas_stats *out) {
  if (!out) return;
  if (g && g->ops->blas_stats) g->ops->blas_stats(g->impl, out);
  else nl_blas_stats_get(NULL, out);
}

hx_status net_gpu_costs(const net_gpu *g, const net_cost_rates *rates, net_cost *out, size_t cap, size_t *n,
                        hx_err *err) {
  if (n) *n = 0;
  if (!g || !out || !n) return hx_errf(err, HX_EINVAL, "net_gpu_costs: missing forward object, output or count");
  if (!g->ops->costs) return hx_errf(err, HX_EUNSUPPORTED, "net_gpu_costs: %.32s has no cost model", g->cfg.name);
  return g->ops->costs(g->impl, rates, out, cap, n, err);
}
