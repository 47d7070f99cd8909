/*
 * bpool_internal.h - arithmetic shared by the in-bucket pooling reference (bpool.c) and its CUDA kernels
 * (bpool.cu), written so both produce the same bits: quantisation (x - lo) * scale with scale =
 * 1024 / extent computed once, squared distances with explicitly rounded multiplies and adds (the device
 * would otherwise fuse them into FMAs), the sub-bucket window of step 3. Private to kernels/.
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

/* Slot of step 1: Z code (30 bits) div-hashed into K slots. */
static inline HX_HD uint32_t bpool_slot(const float *x, const float lo[3], float scale, uint32_t K) {
  uint64_t code = psh_morton(bpool_q(x[0], lo[0], scale), bpool_q(x[1], lo[1], scale), bpool_q(x[2], lo[2], scale));
  return (uint32_t)((code * K) >> (3u * BPOOL_QBITS));
}

static inline HX_HD float bpool_dist2(const float *a, const float *b) {
  float dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
  return bpool_add(bpool_add(bpool_mul(dx, dx), bpool_mul(dy, dy)), bpool_mul(dz, dz));
}

/* Step 3 window [*lo, *hi) of new sub-buckets for leftover l of L, nn new sub-buckets. */
static inline HX_HD void bpool_window(uint32_t l, uint32_t L, uint32_t nn, uint32_t *lo, uint32_t *hi) {
  uint32_t c = (uint32_t)((uint64_t)l * nn / L);
  uint32_t a = c > BPOOL_WINDOW / 2 ? c - BPOOL_WINDOW / 2 : 0;
  uint32_t b = a + BPOOL_WINDOW < nn ? a + BPOOL_WINDOW : nn;
  a = b > BPOOL_WINDOW ? b - BPOOL_WINDOW : 0;
  *lo = a;
  *hi = b;
}

/* Leftover index of the seed of new sub-bucket j. */
static inline HX_HD uint32_t bpool_seed_l(uint32_t j, uint32_t L, uint32_t nn) {
  return (uint32_t)((uint64_t)j * L / nn);
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
