/*
 * sfc_internal.h - private to baselines/: the space-filling-curve arithmetic shared by the CPU reference
 * (sfc.c) and the CUDA kernels (sfc_gpu.cu, spool_gpu.cu), plus helpers both sides use.
 *
 * Two forms of each code. The *_ref forms are bit loops that read like ptv3.md 1.3 and are what the CPU
 * reference calls. The *_fast forms (magic-number bit spreading, log-step prefix XOR) are what the kernels
 * call; the GPU tests compare the two on random points, so the kernels are checked against the loops.
 */
#ifndef F3D_SFC_INTERNAL_H
#define F3D_SFC_INTERNAL_H

#include "baselines/baselines.h"

/* Bit length of v (0 for 0), as Python's int.bit_length. */
static inline HX_HD int sfc_bit_length(uint64_t v) {
  int b = 0;
  while (v) {
    b++;
    v >>= 1;
  }
  return b;
}

/* ---- reference forms ---------------------------------------------------------------------------- */

/* Bit i of v moved to bit 3i, for i < depth. */
static inline HX_HD uint64_t sfc_spread3_ref(uint32_t v, int depth) {
  uint64_t r = 0;
  for (int i = 0; i < depth; i++) r |= (uint64_t)((v >> i) & 1u) << (3 * i);
  return r;
}

/* Morton: x_i at bit 3i+2, y_i at 3i+1, z_i at 3i (O-CNN's LUT layout used by PTv3's z_order.py). */
static inline HX_HD uint64_t sfc_z_ref(uint32_t x, uint32_t y, uint32_t z, int depth) {
  return sfc_spread3_ref(x, depth) << 2 | sfc_spread3_ref(y, depth) << 1 | sfc_spread3_ref(z, depth);
}

/* Skilling's AxesToTranspose as PTv3's hilbert.py runs it (ptv3.md 1.3): undo the rotations from the MSB
 * level down to bit 1, interleave MSB level first (x, y, z), then prefix XOR from the MSB (Gray decode). */
static inline HX_HD uint64_t sfc_hilbert_ref(uint32_t x, uint32_t y, uint32_t z, int depth) {
  const uint32_t mask = depth >= 32 ? 0xFFFFFFFFu : (1u << depth) - 1u;
  uint32_t X[3] = {x & mask, y & mask, z & mask};
  for (uint32_t Q = depth > 0 ? 1u << (depth - 1) : 0u; Q > 1; Q >>= 1) {
    const uint32_t P = Q - 1;
    for (int i = 0; i < 3; i++) {
      if (X[i] & Q) {
        X[0] ^= P;
      } else {
        const uint32_t t = (X[0] ^ X[i]) & P;
        X[0] ^= t;
        X[i] ^= t;
      }
    }
  }
  const uint64_t s = sfc_z_ref(X[0], X[1], X[2], depth); /* MSB-first x,y,z interleave = Morton layout */
  /* h_k = s_top ^ ... ^ s_k: walk down from the top bit carrying the running XOR. */
  uint64_t h = 0;
  int run = 0;
  for (int k = 3 * depth - 1; k >= 0; k--) {
    run ^= (int)((s >> k) & 1u);
    h |= (uint64_t)run << k;
  }
  return h;
}

/* ---- fast forms (kernels) ------------------------------------------------------------------------ */

/* Bits 0..15 of v to bits 0,3,...,45 (standard magic-number spreading). */
static inline HX_HD uint64_t sfc_spread3_fast(uint32_t v) {
  uint64_t x = v & 0xFFFFu;
  x = (x | (x << 16)) & 0x0000FF0000FFull;
  x = (x | (x << 8)) & 0x00F00F00F00Full;
  x = (x | (x << 4)) & 0x0C30C30C30C3ull;
  x = (x | (x << 2)) & 0x249249249249ull;
  return x;
}

static inline HX_HD uint64_t sfc_z_fast(uint32_t x, uint32_t y, uint32_t z, int depth) {
  const uint32_t m = (1u << depth) - 1u; /* depth <= 16, checked at the API boundary */
  return sfc_spread3_fast(x & m) << 2 | sfc_spread3_fast(y & m) << 1 | sfc_spread3_fast(z & m);
}

static inline HX_HD uint64_t sfc_hilbert_fast(uint32_t x, uint32_t y, uint32_t z, int depth) {
  const uint32_t m = (1u << depth) - 1u;
  uint32_t X0 = x & m, X1 = y & m, X2 = z & m;
  for (uint32_t Q = 1u << (depth - 1); Q > 1; Q >>= 1) {
    const uint32_t P = Q - 1;
    /* i = 0: X0 & Q set -> X0 ^= P; clear -> t = 0, nothing to do. */
    if (X0 & Q) X0 ^= P;
    if (X1 & Q) {
      X0 ^= P;
    } else {
      const uint32_t t = (X0 ^ X1) & P;
      X0 ^= t;
      X1 ^= t;
    }
    if (X2 & Q) {
      X0 ^= P;
    } else {
      const uint32_t t = (X0 ^ X2) & P;
      X0 ^= t;
      X2 ^= t;
    }
  }
  uint64_t h = sfc_spread3_fast(X0) << 2 | sfc_spread3_fast(X1) << 1 | sfc_spread3_fast(X2);
  /* Prefix XOR from the MSB in log steps; bits above 3*depth are zero so they add nothing. */
  h ^= h >> 1;
  h ^= h >> 2;
  h ^= h >> 4;
  h ^= h >> 8;
  h ^= h >> 16;
  h ^= h >> 32;
  return h;
}

static inline HX_HD uint64_t sfc_code_fast(sfc_order o, uint32_t x, uint32_t y, uint32_t z, int depth) {
  switch (o) {
    case SFC_Z: return sfc_z_fast(x, y, z, depth);
    case SFC_Z_TRANS: return sfc_z_fast(y, x, z, depth);
    case SFC_HILBERT: return sfc_hilbert_fast(x, y, z, depth);
    case SFC_HILBERT_TRANS: return sfc_hilbert_fast(y, x, z, depth);
    default: return 0;
  }
}

/* Round up to a multiple of 256 bytes (scratch carving). */
static inline size_t sfc_align256(size_t b) { return (b + 255u) & ~(size_t)255u; }

/* ---- CPU references (sfc.c, spool.c) ------------------------------------------------------------- */

/* A 64-bit key and the row it came from. sfc_key_idx_cmp (qsort) orders by key, then by row, so a
 * qsort of these gives the order of a stable radix sort of the keys. */
typedef struct sfc_key_idx {
  uint64_t key;
  uint32_t idx;
} sfc_key_idx;

#ifdef __cplusplus
extern "C" {
#endif
int sfc_key_idx_cmp(const void *pa, const void *pb);
#ifdef __cplusplus
}
#endif

#endif /* F3D_SFC_INTERNAL_H */
