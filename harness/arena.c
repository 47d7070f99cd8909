/*
 * arena.c - the bookkeeping of the device memory arena (harness.h, "Device memory arena"): a table of
 * live allocations with their accounted sizes, bytes in use, the high-water mark since init/reset and the
 * high-water mark since the last mark. The memory itself comes from a backend (cudaMalloc in
 * arena_gpu.cu, host memory in the tests), so everything here runs and is tested without a GPU.
 *
 * Invariant: in_use == sum of live[i].bytes; mark_peak <= peak; in_use <= mark_peak; every live[i].bytes
 * is a non-zero multiple of HX_ARENA_ALIGN; with capacity > 0, in_use <= capacity. A failed call leaves
 * all of this unchanged (the backend's memory is handed back when the table cannot grow); one refused for
 * want of memory is remembered in refused / refused_in_use.
 */
#include "harness/harness.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void hx_arena_init(hx_arena *a, const char *name, size_t capacity, const hx_arena_backend *be) {
  memset(a, 0, sizeof *a);
  a->be = be ? *be : hx_arena_device_backend();
  a->capacity = capacity;
  snprintf(a->name, sizeof a->name, "%s", name ? name : "arena");
}

void hx_arena_release_all(hx_arena *a) {
  for (size_t i = a->n_live; i-- > 0;)
    if (!a->live[i].external && a->be.release) a->be.release(a->be.ctx, (void *)(uintptr_t)a->live[i].p);
  a->n_live = 0;
  a->in_use = 0;
}

void hx_arena_destroy(hx_arena *a) {
  hx_arena_release_all(a);
  free(a->live);
  a->live = NULL;
  a->cap_live = 0;
}

void hx_arena_reset(hx_arena *a) {
  hx_arena_release_all(a);
  a->peak = a->mark_peak = 0;
  a->n_allocs = 0;
  a->refused = a->refused_in_use = 0;
}

void hx_arena_mark(hx_arena *a) { a->mark_peak = a->in_use; }
size_t hx_arena_in_use(const hx_arena *a) { return a->in_use; }
size_t hx_arena_peak(const hx_arena *a) { return a->peak; }
size_t hx_arena_mark_peak(const hx_arena *a) { return a->mark_peak; }
size_t hx_arena_count(const hx_arena *a) { return a->n_allocs; }
size_t hx_arena_live(const hx_arena *a) { return a->n_live; }

/* The accounted size of a request; 0 when rounding would overflow. */
static size_t rounded(size_t bytes) {
  if (bytes == 0) return HX_ARENA_ALIGN;
  if (bytes > SIZE_MAX - (HX_ARENA_ALIGN - 1)) return 0;
  return (bytes + HX_ARENA_ALIGN - 1) / HX_ARENA_ALIGN * HX_ARENA_ALIGN;
}

/* Remember a request refused for want of memory (what a sweep records when it skips the pipeline). */
static void refuse(hx_arena *a, size_t r, hx_status st) {
  if (st == HX_ENOMEM) a->refused = r, a->refused_in_use = a->in_use;
}

/* Capacity and table room for r more bytes under `label`: HX_OK, or the error that names the request. */
static hx_status admit(hx_arena *a, size_t bytes, size_t r, const char *label, hx_err *err) {
  if (r == 0) return hx_errf(err, HX_EINVAL, "arena %s: %s: request of %zu B is too large", a->name, label, bytes);
  if (a->capacity && (r > a->capacity || a->in_use > a->capacity - r)) {
    refuse(a, r, HX_ENOMEM);
    return hx_errf(err, HX_ENOMEM,
                   "arena %s: %s: request of %zu B (%zu B aligned) does not fit: %zu B in use in %zu allocations, "
                   "capacity %zu B, peak %zu B",
                   a->name, label, bytes, r, a->in_use, a->n_live, a->capacity, a->peak);
  }
  if (a->n_live == a->cap_live) {
    size_t nc = a->cap_live ? 2 * a->cap_live : 32;
    hx_arena_entry *t = realloc(a->live, nc * sizeof *t);
    if (!t) return hx_errf(err, HX_ENOMEM, "arena %s: no host memory for the allocation table", a->name);
    a->live = t;
    a->cap_live = nc;
  }
  return HX_OK;
}

static void enter(hx_arena *a, const void *p, size_t r, int external, const char *label) {
  hx_arena_entry *e = &a->live[a->n_live++];
  e->p = p;
  e->bytes = r;
  e->external = external;
  snprintf(e->label, sizeof e->label, "%s", label);
  a->in_use += r;
  a->n_allocs++;
  if (a->in_use > a->peak) a->peak = a->in_use;
  if (a->in_use > a->mark_peak) a->mark_peak = a->in_use;
}

hx_status hx_arena_alloc(hx_arena *a, void **p, size_t bytes, const char *label, hx_err *err) {
  *p = NULL;
  if (!label) label = "?";
  const size_t r = rounded(bytes);
  hx_status st = admit(a, bytes, r, label, err);
  if (st != HX_OK) return st;
  if (!a->be.alloc) return hx_errf(err, HX_EINVAL, "arena %s: no backend", a->name);
  void *q = NULL;
  hx_err be = {HX_OK, ""};
  st = a->be.alloc(a->be.ctx, &q, r, &be);
  if (st != HX_OK) {
    refuse(a, r, st);
    return hx_errf(err, st, "arena %s: %s: %s (%zu B in use in %zu allocations, peak %zu B)", a->name, label, be.msg,
                   a->in_use, a->n_live, a->peak);
  }
  if ((uintptr_t)q % HX_ARENA_ALIGN != 0) {
    if (a->be.release) a->be.release(a->be.ctx, q);
    return hx_errf(err, HX_EINVAL, "arena %s: %s: the backend returned a pointer not aligned to %u B", a->name, label,
                   HX_ARENA_ALIGN);
  }
  enter(a, q, r, 0, label);
  *p = q;
  return HX_OK;
}

hx_status hx_arena_note(hx_arena *a, const void *handle, size_t bytes, const char *label, hx_err *err) {
  if (!label) label = "?";
  if (!handle) return hx_errf(err, HX_EINVAL, "arena %s: %s: note without a handle", a->name, label);
  for (size_t i = 0; i < a->n_live; i++)
    if (a->live[i].p == handle) return hx_errf(err, HX_EINVAL, "arena %s: %s: handle entered twice", a->name, label);
  const size_t r = rounded(bytes);
  hx_status st = admit(a, bytes, r, label, err);
  if (st != HX_OK) return st;
  enter(a, handle, r, 1, label);
  return HX_OK;
}

hx_status hx_arena_free(hx_arena *a, const void *p, hx_err *err) {
  if (!p) return HX_OK;
  for (size_t i = a->n_live; i-- > 0;) { /* newest first: frees usually undo the latest allocations */
    if (a->live[i].p != p) continue;
    if (!a->live[i].external && a->be.release) a->be.release(a->be.ctx, (void *)(uintptr_t)p);
    a->in_use -= a->live[i].bytes;
    a->live[i] = a->live[--a->n_live];
    return HX_OK;
  }
  return hx_errf(err, HX_EINVAL, "arena %s: free of a pointer it does not hold", a->name);
}
