/*
 * wl_internal.h - helpers shared by the files of the workloads folder (private to it).
 *
 * Growable point buffers for readers, checked size arithmetic, and explicit little/big-endian decoding
 * so that readers give the same result on any host byte order.
 */
#ifndef F3D_WL_INTERNAL_H
#define F3D_WL_INTERNAL_H

#include "workloads/workloads.h"

#include <string.h>

/* Propagate a failing status without HX_TRY's trace line: the hx_err already says what went wrong, and a
 * missing or malformed user file is an expected outcome, not a bug worth a file:line on stderr. */
#define WL_PASS(expr)                                                                                    \
  do {                                                                                                   \
    hx_status wl_pass_s_ = (expr);                                                                       \
    if (wl_pass_s_ != HX_OK) return wl_pass_s_;                                                          \
  } while (0)

/* a * b without wrap-around; returns 0 on overflow (result in *r). */
static inline int wl_mul_ok(size_t a, size_t b, size_t *r) {
  if (a != 0 && b > SIZE_MAX / a) return 0;
  *r = a * b;
  return 1;
}

static inline uint32_t wl_get_u32(const unsigned char *p, int big) {
  return big ? ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3])
             : ((uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | (uint32_t)p[0]);
}
static inline uint64_t wl_get_u64(const unsigned char *p, int big) {
  uint64_t hi = wl_get_u32(big ? p : p + 4, big), lo = wl_get_u32(big ? p + 4 : p, big);
  return hi << 32 | lo;
}
static inline double wl_get_f32(const unsigned char *p, int big) {
  uint32_t u = wl_get_u32(p, big);
  float f;
  memcpy(&f, &u, sizeof f);
  return (double)f;
}
static inline double wl_get_f64(const unsigned char *p, int big) {
  uint64_t u = wl_get_u64(p, big);
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}
static inline void wl_put_f32le(unsigned char *p, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  p[0] = (unsigned char)u;
  p[1] = (unsigned char)(u >> 8);
  p[2] = (unsigned char)(u >> 16);
  p[3] = (unsigned char)(u >> 24);
}

/* Points accumulated by a reader: `cap` is fixed up front from a bound the file size guarantees, so a
 * header claiming 10^12 points is refused before anything is allocated. NaN/Inf points are counted. */
/* An empty cloud (n = 0, no arrays), without freeing anything: the state every function leaves its output
 * in before it fills it or when it fails. */
void wl_cloud_clear(wl_cloud *c);

typedef struct wl_sink {
  wl_cloud c;
  size_t cap;
  int src_failed; /* c.src could not be allocated at the first drop: wl_sink_finish reports it */
  int far; /* 1 after a finite coordinate beyond WL_COORD_MAX: wl_sink_finish refuses the file */
  size_t far_index; /* the first such point's position in the file, and that coordinate */
  double far_value;
} wl_sink;

hx_status wl_sink_init(wl_sink *s, size_t cap, const char *path, hx_err *err);
/* Append one point (dropped and counted when a coordinate is not finite; noted for wl_sink_finish to
 * refuse when one is beyond +-WL_COORD_MAX). Caller guarantees room. */
void wl_sink_push(wl_sink *s, double x, double y, double z);
/* Hand the points over (HX_EFORMAT "empty cloud" when none is finite); frees on failure. */
hx_status wl_sink_finish(wl_sink *s, wl_cloud *out, const char *path, hx_err *err);
void wl_sink_free(wl_sink *s);

/* The whole file in memory, NUL-terminated (so strtod never runs past the end). */
hx_status wl_slurp(const char *path, unsigned char **data, size_t *size, hx_err *err);

/* Per-format readers over a slurped file (path only for messages). */
hx_status wl_read_pcd(wl_cloud *out, const unsigned char *d, size_t size, const char *path, hx_err *err);
hx_status wl_read_ply(wl_cloud *out, const unsigned char *d, size_t size, const char *path, hx_err *err);
hx_status wl_read_bin(wl_cloud *out, const unsigned char *d, size_t size, size_t nfloat, const char *path,
                      hx_err *err);
hx_status wl_read_xyz(wl_cloud *out, const unsigned char *d, size_t size, const char *path, hx_err *err);

/* Deterministic sine and cosine (no libm: the same bits on every libc). */
void wl_sincos(double x, double *s, double *c);

#endif /* F3D_WL_INTERNAL_H */
