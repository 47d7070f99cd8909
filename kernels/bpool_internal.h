/*
 * bpool_internal.h - arithmetic shared by the in-bucket pooling reference (bpool.c) and its CUDA kernels
 * (bpool.cu), written so both produce the same bits: quantisation (x - lo) * scale with scale =
 * 1024 / extent computed once, squared distances with explicitly rounded multiplies and adds (the device
 * would otherwise fuse them into FMAs), integer distances on the packed quantised coordinates, the
 * sub-bucket window of step 3. Private to kernels/.
 */
#ifndef F3D_BPOOL_INTERNAL_H
#define F3D_BPOOL_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/psh_internal.h"

#define BPOOL_QBITS 10u  /* bits per axis of the tile-local Z code */
#define BPOOL_WINDOW 64u /* new sub-buckets considered by one leftover in step 3 */

static inline HX_HD float bpool_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
static inline HX_HD float bpool_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

/* Quantise one coordinate to [0, 1023] in the tile's cubic box. */
static inline HX_HD uint32_t bpool_q(float x, float lo, float scale) {
  float t = floorf(bpool_mul(x - lo, scale));
  if (!(t > 0.0f)) return 0;
  if (t >= 1023.0f) return 1023u;
  return (uint32_t)t;
}

/* The three 10-bit quantised coordinates of a row packed in one word (x | y << 10 | z << 20). Step 3
 * measures distances on these integers: exact on both sides (no float rounding to keep in step), one
 * 4-byte shared word per row on the device, and a squared distance below 2^22, so the GPU can pack
 * (distance, candidate) into one 32-bit key and take the lexicographic minimum with one warp reduction. */
static inline HX_HD uint32_t bpool_qpack(const float *x, const float lo[3], float scale) {
  return bpool_q(x[0], lo[0], scale) | bpool_q(x[1], lo[1], scale) << 10 | bpool_q(x[2], lo[2], scale) << 20;
}
/* Slot of step 1: Z code (30 bits) of the packed row, div-hashed into K slots. */
static inline HX_HD uint32_t bpool_qslot(uint32_t q, uint32_t K) {
  uint64_t code = psh_morton(q & 1023u, (q >> 10) & 1023u, q >> 20);
  return (uint32_t)((code * K) >> (3u * BPOOL_QBITS));
}
/* Squared distance of two packed rows, < 3 * 1023^2 < 2^22. */
static inline HX_HD uint32_t bpool_qdist2(uint32_t a, uint32_t b) {
  int dx = (int)(a & 1023u) - (int)(b & 1023u), dy = (int)((a >> 10) & 1023u) - (int)((b >> 10) & 1023u),
      dz = (int)(a >> 20) - (int)(b >> 20);
  return (uint32_t)(dx * dx + dy * dy + dz * dz);
}

/* Step 3 window [*lo, *hi) of new sub-buckets around centre c (of nn new sub-buckets). */
static inline HX_HD void bpool_window_at(uint32_t c, uint32_t nn, uint32_t *lo, uint32_t *hi) {
  uint32_t a = c > BPOOL_WINDOW / 2 ? c - BPOOL_WINDOW / 2 : 0;
  uint32_t b = a + BPOOL_WINDOW < nn ? a + BPOOL_WINDOW : nn;
  a = b > BPOOL_WINDOW ? b - BPOOL_WINDOW : 0;
  *lo = a;
  *hi = b;
}

/* The window of leftover l of L: centre floor(l * nn / L). A tile has at most 1024 rows, so L <= 1024
 * and nn <= 512: the product stays below 2^19 and 32-bit arithmetic is exact (a 64-bit division is a
 * long software routine on the GPU, on step 3's serial chain). */
static inline HX_HD void bpool_window(uint32_t l, uint32_t L, uint32_t nn, uint32_t *lo, uint32_t *hi) {
  bpool_window_at(l * nn / L, nn, lo, hi);
}

/* Leftover index of the seed of new sub-bucket j (j < nn <= 512, L <= 1024: exact in 32 bits). */
static inline HX_HD uint32_t bpool_seed_l(uint32_t j, uint32_t L, uint32_t nn) {
  return j * L / nn;
}

/* The feature dtypes bpool reduces and unpools, fp32, fp16 and bf16; HX_EUNSUPPORTED naming them otherwise. */
static inline int bpool_dt_ok(psh_dtype dt) { return dt == PSH_F32 || dt == PSH_F16 || dt == PSH_BF16; }
static inline hx_status bpool_dt_check(psh_dtype dt, hx_err *err) {
  return bpool_dt_ok(dt) ? HX_OK : hx_errf(err, HX_EUNSUPPORTED, "bpool: features must be fp32, fp16 or bf16");
}

/* fp32 <-> bf16 (round to nearest even; NaN kept quiet). */
static inline HX_HD float bpool_bf16_to_f(uint16_t h) {
  union {
    uint32_t u;
    float f;
  } c;
  c.u = (uint32_t)h << 16;
  return c.f;
}
static inline HX_HD uint16_t bpool_f_to_bf16(float f) {
  union {
    uint32_t u;
    float f;
  } c;
  c.f = f;
  if ((c.u & 0x7F800000u) == 0x7F800000u && (c.u & 0x7FFFFFu)) return (uint16_t)((c.u >> 16) | 0x40u);
  return (uint16_t)((c.u + 0x7FFFu + ((c.u >> 16) & 1u)) >> 16);
}

/* One reduction step, identical on both sides. */
static inline HX_HD float bpool_combine(bpool_op op, float acc, float x) {
  switch (op) {
  case BPOOL_MIN: return x < acc ? x : acc;
  case BPOOL_MAX: return x > acc ? x : acc;
  default: return bpool_add(acc, x);
  }
}

#endif /* F3D_BPOOL_INTERNAL_H */
