/*
 * harness.h - the one public header of the harness folder (prefix hx_).
 *
 * Everything every other folder may rely on lives here: status codes and error reports (library code
 * returns a status and never exits), a counter-based random generator usable on host and device, the
 * results writer, the timing module and statistics. The header is plain C11 and also compiles as CUDA
 * C++ (device code includes it for hx_rng_* and HX_HD).
 */
#ifndef F3D_HARNESS_H
#define F3D_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__)
#define HX_HD __host__ __device__
#else
#define HX_HD
#endif

/* ---- Status codes ------------------------------------------------------------------------------ */
typedef enum hx_status {
  HX_OK = 0,
  HX_EINVAL,       /* bad argument or impossible configuration */
  HX_EIO,          /* file could not be opened, read or written */
  HX_EFORMAT,      /* malformed or truncated input file */
  HX_ENOMEM,       /* host allocation failed */
  HX_ECUDA,        /* a CUDA call failed (including device out-of-memory) */
  HX_ENODEV,       /* no CUDA device, or built without CUDA */
  HX_EUNSUPPORTED, /* valid request this build or device cannot do */
  HX_ECHECK        /* a result failed its check against the reference */
} hx_status;

const char *hx_status_str(hx_status s);

/* An error report: the status plus one human sentence naming the problem ("file.pcd: truncated after
 * 1200 of 460400 points"). Functions that can fail take an optional `hx_err *` (NULL allowed) and fill it
 * when they return non-HX_OK. No global errno-like state. */
typedef struct hx_err {
  hx_status status;
  char msg[512];
} hx_err;

/* Fill `err` (if not NULL) with status and a printf-style message; returns `status` so callers can write
 * `return hx_errf(err, HX_EFORMAT, "%s: bad header", path);`. */
hx_status hx_errf(hx_err *err, hx_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Log "file:line: expr: status" on stderr (for HX_TRY) and return the status unchanged. */
hx_status hx_trace(hx_status s, const char *file, int line, const char *expr);

/* Propagate a failing status, logging where it came from. */
#define HX_TRY(expr)                                                                                     \
  do {                                                                                                   \
    hx_status hx_try_s_ = (expr);                                                                        \
    if (hx_try_s_ != HX_OK) return hx_trace(hx_try_s_, __FILE__, __LINE__, #expr);                       \
  } while (0)

/* ---- Counter-based randomness -------------------------------------------------------------------- */
/* A pure function of (seed, stream, counter): the same value on CPU and GPU, in any order, with no
 * state to carry. SplitMix64's finaliser over a combined key; good enough for sampling and hashing
 * probes, not for cryptography. */
static inline HX_HD uint64_t hx_mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline HX_HD uint64_t hx_rng_u64(uint64_t seed, uint64_t stream, uint64_t counter) {
  return hx_mix64(hx_mix64(seed ^ hx_mix64(stream + 0x632BE59BD9B4E019ull)) + counter);
}
/* Uniform double in [0, 1) with 53 random bits. */
static inline HX_HD double hx_rng_unit(uint64_t seed, uint64_t stream, uint64_t counter) {
  return (double)(hx_rng_u64(seed, stream, counter) >> 11) * (1.0 / 9007199254740992.0);
}

/* ==== Sections below are filled in by their modules; keep each section self-contained. ============ */

/* ---- results (harness/results.c) ---- */

/* ---- timing (harness/timing.c, harness/timing_gpu.cu) ---- */

/* ---- statistics (harness/stats.c) ---- */

/* ---- device (harness/device.cu or device_stub.c) ---- */

#ifdef __cplusplus
}
#endif
#endif /* F3D_HARNESS_H */
