/*
 * psh_internal.h - the arithmetic that the PSH reference (psh.c) and the CUDA variants (psh.cu) share, so
 * that a voxel, a code, a bucket, a probe or an overflow placement is the same bit pattern on both sides.
 * Everything here is a pure function (HX_HD); private to kernels/.
 *
 * Float discipline: the only float operations are (x - o) / voxel and floor, in fp32, with no fused
 * multiply-add possible, so host (SSE, -std=c11: no contraction) and device (IEEE division by default)
 * agree bit for bit.
 */
#ifndef F3D_PSH_INTERNAL_H
#define F3D_PSH_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"

#define PSH_VOX_BITS 21u                          /* per axis: 3 * 21 = 63-bit Morton codes */
#define PSH_VOX_MAX ((1u << PSH_VOX_BITS) - 1u)
#define PSH_RESID_FLAG 0x80000000u                /* bucket field of a leftover point: flag | cloud */
#define PSH_STREAM_PROBE 0x5053485052424Full      /* hx_rng stream of the probe shuffle ("PSHPRBO") */
#define PSH_NPROBE_BASE 128

/* Counter slots (psh_out.counters). */
enum { PSH_C_FIRST = 0, PSH_C_PROBE = 1, PSH_C_OVERFLOW = 2, PSH_C_SPARE = 3 };

/* High 64 bits of a 64 x 64 product. */
static inline HX_HD uint64_t psh_mulhi64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#elif defined(__SIZEOF_INT128__)
  __extension__ typedef unsigned __int128 u128; /* GCC/Clang; __extension__ silences -Wpedantic */
  return (uint64_t)(((u128)a * b) >> 64);
#else
  uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

/* Spread the low 21 bits of x so that bit i lands at bit 3i. */
static inline HX_HD uint64_t psh_spread3(uint32_t v) {
  uint64_t x = v & 0x1FFFFFu;
  x = (x | x << 32) & 0x1F00000000FFFFull;
  x = (x | x << 16) & 0x1F0000FF0000FFull;
  x = (x | x << 8) & 0x100F00F00F00F00Full;
  x = (x | x << 4) & 0x10C30C30C30C30C3ull;
  x = (x | x << 2) & 0x1249249249249249ull;
  return x;
}

/* PTv3's bit order: x is the most significant bit of each triple. */
static inline HX_HD uint64_t psh_morton(uint32_t vx, uint32_t vy, uint32_t vz) {
  return psh_spread3(vx) << 2 | psh_spread3(vy) << 1 | psh_spread3(vz);
}

static inline HX_HD int psh_is_zorder(psh_hash h) { return h == PSH_ZORDER_MOD || h == PSH_ZORDER_DIV; }
static inline HX_HD int psh_is_div(psh_hash h) { return h == PSH_XOR_DIV || h == PSH_ZORDER_DIV; }

/* Width K of the code space of a cloud whose voxel indices have `bits` bits. */
static inline HX_HD uint32_t psh_code_bits(psh_hash h, uint32_t bits) { return psh_is_zorder(h) ? 3u * bits : bits; }

static inline HX_HD uint32_t psh_bucket_of_code(psh_hash h, uint64_t code, uint32_t kbits, uint32_t nb) {
  if (!psh_is_div(h)) {
#if !defined(__CUDA_ARCH__)
    if (!(nb & (nb - 1u))) return (uint32_t)(code & (nb - 1u)); /* host: a mask for a power of two (see above) */
#endif
    /* 32-bit remainder when the code fits: the 64-bit one is a long software sequence on the GPU. */
    return code <= 0xFFFFFFFFull ? (uint32_t)code % nb : (uint32_t)(code % nb);
  }
  if (kbits == 0) return 0;
  /* floor(code * nb / 2^K) = high word of (code * 2^(64-K)) * nb; code < 2^K so the shift is exact. */
  return (uint32_t)psh_mulhi64(code << (64u - kbits), (uint64_t)nb);
}

static inline HX_HD uint32_t psh_hash3(psh_hash h, uint32_t vx, uint32_t vy, uint32_t vz, uint32_t bits,
                                       uint32_t nb) {
  uint64_t code = psh_is_zorder(h) ? psh_morton(vx, vy, vz) : (uint64_t)(vx ^ vy ^ vz);
  return psh_bucket_of_code(h, code, psh_code_bits(h, bits), nb);
}

/* Bit width of v (0 for 0). */
static inline HX_HD uint32_t psh_bitwidth(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return 32u - (uint32_t)__clz(v); /* one instruction: this sits on each tile's serial frame computation */
#endif
  uint32_t b = 0;
  while (v) {
    b++;
    v >>= 1;
  }
  return b;
}

/* One voxel index: floor((x - o) / voxel) clamped to [0, PSH_VOX_MAX]. */
static inline HX_HD uint32_t psh_vox1(float x, float o, float voxel) {
  float t = floorf((x - o) / voxel);
  if (!(t > 0.0f)) return 0; /* also catches NaN */
  if (t >= (float)PSH_VOX_MAX) return PSH_VOX_MAX;
  return (uint32_t)t;
}

/* Voxel bits of a cloud from its bounding box. */
static inline HX_HD uint32_t psh_frame_bits(const float lo[3], const float hi[3], float voxel) {
  uint32_t m = 0;
  for (int d = 0; d < 3; d++) {
    uint32_t v = psh_vox1(hi[d], lo[d], voxel);
    m = v > m ? v : m;
  }
  return psh_bitwidth(m);
}

/* Per-axis stretch onto the cloud's common 2^bits cube, used by Z-order-div only: shift[d] = bits - (bit
 * width of the axis's largest voxel index), 0 for the other hashes. A flat cloud (lidar: 12 bits in x and
 * y, 8 in z at 5 cm) otherwise occupies 1/16 of the Morton code space and Z-div fills a few buckets
 * (measured on a 170k-point lidar + indoor batch: 14k first-hash placements without, 56k with, same
 * bucket diagonal); the public code gets the same effect by normalising every axis to 16 bits. The mod
 * hashes read the low code bits, which a stretch zeroes (Z-mod fell from 121k to 25k), and XOR-div lost
 * locality, so they use the raw indices. Shifting left adds zero bits: no index bit is dropped. */
static inline HX_HD void psh_frame_shift(psh_hash h, const float lo[3], const float hi[3], float voxel,
                                         uint32_t bits, uint32_t shift[3]) {
  for (int d = 0; d < 3; d++)
    shift[d] = h == PSH_ZORDER_DIV ? bits - psh_bitwidth(psh_vox1(hi[d], lo[d], voxel)) : 0u;
}

/* Probe step in voxels: 1 for mod hashes; for div hashes the extent of one bucket, so that a probe
 * reaches a neighbouring bucket instead of re-hashing into the full one. XOR-div: a bucket spans
 * 2^K / nb consecutive XOR codes; Z-div: 2^K / nb Morton codes, a cell of side 2^floor(log2(width)/3). */
static inline HX_HD uint32_t psh_probe_step(psh_hash h, uint32_t bits, uint32_t nb) {
  if (!psh_is_div(h)) return 1;
  uint32_t k = psh_code_bits(h, bits);
  uint64_t width = (k >= 64u ? 0 : (1ull << k)) / nb;
  if (width <= 1) return 1;
  if (h == PSH_XOR_DIV) return (uint32_t)width; /* < 2^21 since k = bits <= 21 */
  uint32_t lg = 63u;
  while (!(width >> lg)) lg--;
  return 1u << (lg / 3u);
}

/* psh_probe_bucket given its random word r = hx_rng_u64(seed, gidx, pi) = hx_mix64(hx_rng_base(seed, gidx) + pi):
 * a caller running many probes of one point computes hx_rng_base once (one mix per probe instead of three). */
static inline HX_HD uint32_t psh_probe_bucket_r(psh_hash h, const uint32_t v[3], const int8_t probe[3], uint32_t step,
                                                uint32_t bits, uint32_t nb, uint64_t r) {
  uint32_t mask = bits >= 32u ? 0xFFFFFFFFu : ((1u << bits) - 1u);
  uint32_t w[3];
  for (int d = 0; d < 3; d++) {
    const uint64_t x = (r >> (21 * d)) & 0x1FFFFFull;
#if defined(__CUDA_ARCH__)
    const uint64_t q = x % step; /* the device code v1/v2 were measured with (faster probes: psh_probe_bucket_pow2) */
#else
    /* the host's 64-bit divisions were ~40% of psh_check's placement test (a probe per bucket tried, 128 for each
     * overflow point); the step is a power of two on every hash but XOR-div with nb not one */
    const uint64_t q = step & (step - 1u) ? x % step : x & (step - 1u);
#endif
    int64_t jit = (int64_t)q - (int64_t)(step / 2u);
    int64_t t = (int64_t)v[d] + (int64_t)probe[d] * (int64_t)step + jit;
    w[d] = (uint32_t)((uint64_t)t & mask); /* two's complement wrap modulo 2^bits */
  }
  return psh_hash3(h, w[0], w[1], w[2], bits, nb);
}
/* The local bucket of point `gidx` (global index) at probe number `pi` with offset `probe`. */
static inline HX_HD uint32_t psh_probe_bucket(psh_hash h, const uint32_t v[3], const int8_t probe[3],
                                              uint32_t step, uint32_t bits, uint32_t nb, uint64_t seed,
                                              uint64_t gidx, uint32_t pi) {
  return psh_probe_bucket_r(h, v, probe, step, bits, nb, hx_rng_u64(seed, gidx, pi));
}

/* Where psh_probe_bucket_pow2 applies: an XOR hash with nb and the probe step powers of two (the step is one
 * whenever nb is: 1 for XOR-mod, 2^bits / nb or 1 for XOR-div) and bits <= PSH_VOX_BITS, as every frame has
 * (psh_frame_bits); that bounds the step by 2^21, the width of the jitter's random field. */
static inline HX_HD int psh_probe_pow2(psh_hash h, uint32_t step, uint32_t bits, uint32_t nb) {
  return !psh_is_zorder(h) && nb && !(nb & (nb - 1u)) && step && !(step & (step - 1u)) && bits <= PSH_VOX_BITS;
}
/* psh_probe_bucket where psh_probe_pow2 holds, given r = hx_rng_u64(seed, gidx, pi): the same bucket for every
 * input (test_psh_cpu: test_probe_pow2), with masks and shifts where psh_probe_bucket has remainders, the
 * 64-bit high product and the hash dispatch. The GPU probe phase runs it once per probe: a lone lane's chain
 * of up to 126 of them sets that phase's end (docs/psh.md, "Phase C"). */
static inline HX_HD uint32_t psh_probe_bucket_pow2(psh_hash h, const uint32_t v[3], const int8_t probe[3],
                                                   uint32_t step, uint32_t bits, uint32_t nb, uint64_t r) {
  const uint32_t ls = psh_bitwidth(step) - 1u, lnb = psh_bitwidth(nb) - 1u;
  const uint32_t mask = (1u << bits) - 1u, half = step / 2u;
  uint32_t code = 0;
  for (int d = 0; d < 3; d++) /* the jitter's x mod step is x's low bits (step <= 2^21) */
    code ^= (v[d] + ((uint32_t)(int32_t)probe[d] << ls) + ((uint32_t)(r >> (21 * d)) & (step - 1u)) - half) & mask;
  if (h != PSH_XOR_DIV) return code & (nb - 1u); /* XOR-mod: code mod nb */
  return bits >= lnb ? code >> (bits - lnb) : code << (lnb - bits); /* floor(code nb / 2^bits), code < 2^bits */
}

/* Largest |component| of a probe offset: the four far probes of psh_probe_canonical. */
#define PSH_PROBE_REACH 3

/* Where the probes of an XOR hash can land, for a cheap proof that probing cannot place a point (the GPU
 * probe phase skips the rest of a point's probes when every bucket here is full; docs/psh.md).
 * A probe of voxel v lands at w_d = v_d + p_d step + jitter_d (mod 2^bits) with |p_d| <= 3 and jitter in
 * [-floor(step/2), step - 1 - floor(step/2)]: per axis an interval of 7 step voxels, so inside at most two
 * aligned blocks of 2^u codes once 2^u >= 7 step. The XOR of three codes taken from aligned blocks A, B
 * and C lies in block A ^ B ^ C, so every probe's XOR code lies in one of at most 8 blocks. Returns u
 * (<= bits; u = bits: the whole code space, block 0) and per axis the two block indices (equal when the
 * interval is in one block). */
static inline HX_HD uint32_t psh_xor_reach_blocks(const uint32_t v[3], uint32_t step, uint32_t bits, uint32_t a[3][2]) {
  const uint64_t span = (2u * PSH_PROBE_REACH + 1u) * (uint64_t)step;
  uint32_t u = 0;
  while (u < bits && (1ull << u) < span) u++;
  const uint64_t mask = (1ull << bits) - 1u; /* bits <= 21 */
  for (int d = 0; d < 3; d++) {
    const int64_t lo = (int64_t)v[d] - PSH_PROBE_REACH * (int64_t)step - (int64_t)(step / 2u);
    a[d][0] = (uint32_t)(((uint64_t)lo & mask) >> u);
    a[d][1] = (uint32_t)(((uint64_t)(lo + (int64_t)span - 1) & mask) >> u);
  }
  return u;
}

/* The local buckets of the XOR codes of block D (codes D 2^u .. D 2^u + 2^u - 1): one range [r[0], r[1]],
 * or two ([r[0], r[1]] and [r[2], r[3]]) where a mod hash wraps past nb - 1. The div hash is monotone in
 * the code, so its block is one range. Returns the number of ranges. */
static inline HX_HD uint32_t psh_xor_block_buckets(psh_hash h, uint32_t D, uint32_t u, uint32_t bits, uint32_t nb,
                                                   uint32_t r[4]) {
  const uint64_t lo = (uint64_t)D << u, hi = lo + (1ull << u) - 1u;
  if (psh_is_div(h)) {
    r[0] = psh_bucket_of_code(h, lo, bits, nb);
    r[1] = psh_bucket_of_code(h, hi, bits, nb);
    return 1;
  }
  if ((1ull << u) >= nb) {
    r[0] = 0;
    r[1] = nb - 1u;
    return 1;
  }
  r[0] = (uint32_t)(lo % nb);
  r[1] = (uint32_t)(hi % nb);
  if (r[0] <= r[1]) return 1;
  r[2] = 0;
  r[3] = r[1];
  r[1] = nb - 1u;
  return 2;
}

/* The reach in bytes of the bucket bitmap, where it takes that form: nb a power of two >= 8 and 2^u = 8 step,
 * i.e. XOR-mod (step 1, u = 3) with bits >= 3 and XOR-div (step = 2^(bits - log2 nb)) with bits >= log2 nb.
 * Each code block's buckets are then one aligned group of 8: block D holds buckets 8D..8D+7 (div, D < nb/8) or
 * the same modulo nb (mod). Writes the 8 groups (local bucket / 8, duplicates possible) and returns 1, or
 * returns 0 (use psh_xor_reach_blocks). Same buckets as psh_xor_block_buckets over psh_xor_reach_blocks. */
static inline HX_HD int psh_xor_reach_bytes(psh_hash h, const uint32_t v[3], uint32_t step, uint32_t bits, uint32_t nb,
                                            uint32_t group[8]) {
  if (nb < 8u || (nb & (nb - 1u))) return 0;
  uint32_t m = 0;
  while ((1u << m) < nb) m++;
  if (psh_is_div(h) ? bits < m : bits < 3u) return 0;
  const uint32_t u = psh_is_div(h) ? bits + 3u - m : 3u, mask = (1u << bits) - 1u;
  const uint32_t back = PSH_PROBE_REACH * step + step / 2u, span = (2u * PSH_PROBE_REACH + 1u) * step;
  uint32_t a[3][2];
  for (int d = 0; d < 3; d++) { /* 32-bit wrap: the same low `bits` bits as psh_xor_reach_blocks' 64-bit one */
    a[d][0] = ((v[d] - back) & mask) >> u;
    a[d][1] = ((v[d] - back + span - 1u) & mask) >> u;
  }
  for (int q = 0; q < 8; q++) group[q] = (a[0][q & 1] ^ a[1][(q >> 1) & 1] ^ a[2][q >> 2]) & (nb / 8u - 1u);
  return 1;
}

/* Z-order-div's probe cells, for a cheap proof that one probe cannot place a point (the GPU probe phase skips
 * such a probe without its random word or its Morton code; docs/psh.md). With nb a power of two and
 * a frame of `bits` bits per axis whose Morton width K = 3 bits is at least log2 nb, the probe step is 2^s
 * (psh_probe_step: s = floor((K - log2 nb) / 3)), and the 2^bits cube cuts into C = 2^m cells of side 2^s per
 * axis, m = bits - s = ceil(log2 nb / 3) whatever the bits. A cell's codes are one aligned block of 2^(3s)
 * Morton codes inside one bucket: bucket = (Morton code of the cell's coordinates) >> r, r = K - log2 nb - 3s
 * in {0, 1, 2}. A probe of voxel v with offset p lands per axis in a window of 2^s voxels that starts at
 * v_d + p_d 2^s - floor(2^s / 2) (its jitter's range, psh_probe_bucket), so in cell b_d + p_d or b_d + p_d + 1
 * (mod C), b_d = psh_zcell_base: when the 8 cells of that 2 x 2 x 2 block lie in full buckets, no jitter
 * places the point there. Returns 1 and m, s, r where this holds (m >= 2: a cloud's table is whole 32-bit
 * words), else 0. */
static inline HX_HD int psh_zcell_geom(psh_hash h, uint32_t bits, uint32_t nb, uint32_t *m, uint32_t *s, uint32_t *r) {
  if (h != PSH_ZORDER_DIV || nb < 16u || nb > (1u << 24) || (nb & (nb - 1u)) || bits == 0 || bits > PSH_VOX_BITS)
    return 0; /* nb <= 2^24 (PSH_NB_MAX): m <= 8, so psh_zcell_bucket's 32-bit spread holds a cell */
  const uint32_t lg = psh_bitwidth(nb) - 1u, k = 3u * bits;
  if (k < lg) return 0;
  *s = (k - lg) / 3u;
  *m = bits - *s;
  *r = k - lg - 3u * *s;
  return 1;
}
/* Axis d's base cell b_d of a voxel coordinate x (psh_zcell_geom): the cell of its probe window's first voxel
 * at offset 0, x - floor(2^s / 2) modulo 2^bits. */
static inline HX_HD uint32_t psh_zcell_base(uint32_t x, uint32_t bits, uint32_t s) {
  return ((x - (1u << s) / 2u) & ((1u << bits) - 1u)) >> s;
}
/* A cell's bit in a cloud's table: x-major, then y, then z (m bits each). */
static inline HX_HD uint32_t psh_zcell_index(uint32_t cx, uint32_t cy, uint32_t cz, uint32_t m) {
  return cx << (2u * m) | cy << m | cz;
}
/* psh_spread3 of x < 256 in 32-bit arithmetic (three steps instead of five 64-bit ones): bit i to bit 3i. */
static inline HX_HD uint32_t psh_spread3_8(uint32_t x) {
  x &= 0xFFu;
  x = (x | x << 8) & 0x0300F00Fu;
  x = (x | x << 4) & 0x030C30C3u;
  return (x | x << 2) & 0x09249249u;
}
/* psh_morton's low 24 bits: the Morton code of the low 8 bits of each coordinate, in 32-bit arithmetic. */
static inline HX_HD uint32_t psh_morton8(uint32_t x, uint32_t y, uint32_t z) {
  return psh_spread3_8(x) << 2 | psh_spread3_8(y) << 1 | psh_spread3_8(z);
}
/* The local bucket of cell (cx, cy, cz) (psh_zcell_geom's m <= 8 and r): psh_morton's bit order. The GPU probe
 * phase computes a Z-order-div probe's bucket this way, from the probe voxel's cell (docs/psh.md). */
static inline HX_HD uint32_t psh_zcell_bucket(uint32_t cx, uint32_t cy, uint32_t cz, uint32_t r) {
  return psh_morton8(cx, cy, cz) >> r;
}

/* A probe offset's two's complement as a 32-bit word (a function: inside an addition gcc's -Wsign-conversion
 * flags the same cast). */
static inline HX_HD uint32_t psh_s8_u32(int8_t x) { return (uint32_t)(int32_t)x; }
/* Where psh_probe_bucket_zmod applies: Z-order-mod with nb a power of two <= 2^24 (PSH_NB_MAX) and bits <=
 * PSH_VOX_BITS, as every frame has. */
static inline HX_HD int psh_probe_zmod(psh_hash h, uint32_t bits, uint32_t nb) {
  return h == PSH_ZORDER_MOD && nb && !(nb & (nb - 1u)) && nb <= (1u << 24) && bits <= PSH_VOX_BITS;
}
/* psh_probe_bucket where psh_probe_zmod holds: the same bucket for every input (test_psh_cpu: test_probe_zmod),
 * without the random word (a mod hash's probe step is 1, so its jitter is 0 whatever the word) and in 32 bits: the
 * code mod nb is the Morton code's low log2 nb <= 24 bits, which come from the low 8 bits of each coordinate
 * (psh_morton8). About 20 instructions where psh_probe_bucket takes ~200 (a 64-bit mix, three 64-bit spreads
 * and a 64-bit remainder once the code passes 32 bits); Z-order-mod's hopeless points run all their probes one
 * after another in one lane, and that chain set its probe phase's end (docs/psh.md). */
static inline HX_HD uint32_t psh_probe_bucket_zmod(const uint32_t v[3], const int8_t probe[3], uint32_t bits,
                                                   uint32_t nb) {
  const uint32_t mask = (1u << bits) - 1u; /* bits <= 21 */
  const uint32_t x = (v[0] + psh_s8_u32(probe[0])) & mask, y = (v[1] + psh_s8_u32(probe[1])) & mask,
                 z = (v[2] + psh_s8_u32(probe[2])) & mask; /* two's complement wrap modulo 2^bits */
  return psh_morton8(x, y, z) & (nb - 1u);
}

/* Block b's share [*first, *end) of an overflow list of n entries cut into equal contiguous shares over g
 * blocks (phase C of v5-v9, psh_tiles.cuh): ceil(n / g) entries a share, the last shares shorter or empty.
 * The shares partition [0, n) while n + g - 1 fits in 32 bits (b * per < n + g). */
static inline HX_HD void psh_list_share(uint32_t n, uint32_t g, uint32_t b, uint32_t *first, uint32_t *end) {
  const uint32_t per = (n + g - 1u) / g, f = b * per < n ? b * per : n;
  *first = f;
  *end = f + per < n ? f + per : n;
}

/* Block b's share of G of the 16-byte units of [base, base + bytes) (v10's L2 prefetch, psh_v8.cu: the bulk
 * prefetch's address and size must be multiples of 16): psh_list_share over the units of the interior
 * [ceil16(base), floor16(base + bytes)), so the shares tile it without overlap, in block order, each starting
 * and ending on a 16-byte boundary; the 0-15 bytes at either end belong to none (a prefetch past the array's
 * end could touch an unmapped page). Returns 0 when that interior is empty or holds 2^32 - G units or more
 * (64 GB: lo, hi untouched); a share may be empty (*lo >= *hi) otherwise. */
static inline HX_HD int psh_prefetch_share(uintptr_t base, size_t bytes, uint32_t b, uint32_t G, uintptr_t *lo,
                                           uintptr_t *hi) {
  const uintptr_t a0 = (base + 15u) & ~(uintptr_t)15u, a1 = (base + bytes) & ~(uintptr_t)15u;
  if (a1 <= a0 || (a1 - a0) / 16u > (uintptr_t)(0xFFFFFFFFu - G)) return 0;
  uint32_t first, end;
  psh_list_share((uint32_t)((a1 - a0) / 16u), G, b, &first, &end);
  *lo = a0 + 16u * (uintptr_t)first;
  *hi = a0 + 16u * (uintptr_t)end;
  return 1;
}

/* Overflow placement of leftover k of a cloud. F holds the cloud's exclusive scan of free slots
 * (S - count after probing) over its nb buckets, plus the total at F[nb]. */
static inline HX_HD void psh_resid_place(const uint32_t *F, uint32_t nb, uint32_t cap, uint32_t k,
                                         uint32_t *local, uint32_t *off) {
  uint32_t total = F[nb];
  if (k < total) {
    /* last j with F[j] <= k: buckets without free slots share F with their successor, so this is the
     * bucket whose free range [F[j], F[j+1]) holds k */
    uint32_t lo = 0, hi = nb; /* invariant: F[lo] <= k < F[hi] (F[nb] = total > k) */
    while (hi - lo > 1) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (F[mid] <= k) lo = mid;
      else hi = mid;
    }
    uint32_t freej = F[lo + 1] - F[lo];
    *local = lo;
    *off = cap - freej + (k - F[lo]);
  } else {
    uint32_t e = k - total;
    *local = e % nb;
    *off = cap + e / nb;
  }
}

/* Final count of bucket j of a cloud with R leftovers (count_before = S - free). */
static inline HX_HD uint32_t psh_final_count(uint32_t count_before, uint32_t Fj, uint32_t freej, uint32_t total,
                                             uint32_t R, uint32_t j, uint32_t nb) {
  uint32_t fill = R > Fj ? (R - Fj < freej ? R - Fj : freej) : 0;
  uint32_t extra = 0;
  if (R > total) {
    uint32_t e = R - total;
    extra = e > j ? (e - j - 1) / nb + 1 : 0;
  }
  return count_before + fill + extra;
}

/* The canonical probe list before shuffling: {-2..2}^3 without the origin (lexicographic), then the
 * four far probes of the public code. */
static inline void psh_probe_canonical(int8_t (*probe)[3]) {
  int k = 0;
  for (int a = -2; a <= 2; a++)
    for (int b = -2; b <= 2; b++)
      for (int c = -2; c <= 2; c++) {
        if (a == 0 && b == 0 && c == 0) continue;
        probe[k][0] = (int8_t)a;
        probe[k][1] = (int8_t)b;
        probe[k][2] = (int8_t)c;
        k++;
      }
  static const int8_t extra[4][3] = {{3, 3, 3}, {3, -3, 3}, {-3, 3, -3}, {-3, -3, -3}};
  for (int i = 0; i < 4; i++, k++)
    for (int d = 0; d < 3; d++) probe[k][d] = extra[i][d];
}

/* Order-preserving map of a float to uint32 (for atomicMin-based min/max). */
static inline HX_HD uint32_t psh_f2key(float f) {
  union {
    float f;
    uint32_t u;
  } c;
  c.f = f;
  return (c.u & 0x80000000u) ? ~c.u : (c.u | 0x80000000u);
}
static inline HX_HD float psh_key2f(uint32_t k) {
  union {
    float f;
    uint32_t u;
  } c;
  c.u = (k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k;
  return c.f;
}

/* The launchers' scratch parts start at cudaMalloc's 256-byte alignment. */
static inline size_t psh_align256(size_t x) { return (x + 255u) & ~(size_t)255u; }
/* The scratch protocol of the PSH launchers: d_scratch NULL asks for the size (written to *scratch_bytes,
 * *query = 1: the launcher returns HX_OK at once); otherwise *scratch_bytes, when given, must be at least
 * need (*query = 0: the launcher goes on). */
static inline hx_status psh_scratch_check(const void *d_scratch, size_t *scratch_bytes, size_t need, int *query,
                                          hx_err *err) {
  *query = d_scratch == NULL;
  if (!d_scratch) {
    if (!scratch_bytes) return hx_errf(err, HX_EINVAL, "psh: scratch_bytes is NULL");
    *scratch_bytes = need;
    return HX_OK;
  }
  if (scratch_bytes && *scratch_bytes < need)
    return hx_errf(err, HX_EINVAL, "psh: scratch of %zu bytes, need %zu", *scratch_bytes, need);
  return HX_OK;
}

#ifdef __cplusplus
extern "C" {
#endif
/* A psh_out without the per-point pair (bucket and offset both NULL: kernels.h) still needs one as working state
 * in every variant but v9/v10's first-hash points: the launchers keep it at the end of their scratch, after
 * their own layout (rounded up to 256 B), in psh_pair_bytes(n) bytes; so a size query depends on whether the pair
 * is given. psh_run_paired does this for a launcher that needs the pair: fn as it is when the caller gives the
 * pair, else the scratch protocol over fn's need + the pair and fn with the pair in scratch; HX_EINVAL when only
 * one of bucket and offset is NULL. psh.c. Why at the end: the layouts keep their addresses (and the trace readers
 * below theirs); in front, Z-order-mod at 600k ran 2.5-4.7% slower in v9/v10, at the end 1.5-3.5% (H100,
 * 2026-11-27, 8633e87; cause unknown, docs/psh.md). */
size_t psh_pair_bytes(uint32_t n);
hx_status psh_run_paired(psh_fn fn, void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                         const psh_params *p, void *stream, hx_err *err);
/* The launchers below (v4's fall-back psh_run_v2 too; psh.cu, a stub in a CPU-only build) need the pair: psh.cu's
 * table reaches v4-v7 through psh_run_paired; v8-v10 take a NULL pair themselves. */
hx_status psh_run_v2(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                     const psh_params *p, void *stream, hx_err *err);
/* Variants v4 and v5 (psh_v4.cu, psh_v5.cu), registered in psh.cu's table: psh_fns. */
hx_status psh_run_v4(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                     const psh_params *p, void *stream, hx_err *err);
/* Variants v5 and v6 (psh_v5.cu): one cooperative launch (v6 gathers the coordinates instead of scattering
 * them); both fall back to v4 where they cannot run. */
hx_status psh_run_v5(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                     const psh_params *p, void *stream, hx_err *err);
hx_status psh_run_v6(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                     const psh_params *p, void *stream, hx_err *err);
/* Variant v7 (psh_v7.cu): v6 with a shared-atomic rank, warp-per-point probing of short overflow lists and
 * one 16-byte record per row (one random store) copied out by a coalesced gather; same scratch layout
 * prefix as v5/v6, so psh_v5_trace reads its stamps too. */
hx_status psh_run_v7(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                     const psh_params *p, void *stream, hx_err *err);
/* Variant v8 (psh_v8.cu): 1024-thread tiles held in shared memory, two grid barriers when the overflow list
 * is short (every block resolves it), perm and coordinates written in each tile's bucket order; v5's scratch
 * prefix, so psh_v5_trace reads its stamps (slot [4] is -1: no gather barrier). Falls back to v7. */
hx_status psh_run_v8(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                     const psh_params *p, void *stream, hx_err *err);
/* Variant v9 (psh_v8.cu, v8's kernel with kW): the tile and frame minima by redux.sync, the short overflow
 * list walked by one warp in list order (no block barriers), the first-hash bucket/offset stores after
 * barrier 2 (when the caller asks for the pair). Same scratch, trace and fall-back as v8. */
hx_status psh_run_v9(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                     const psh_params *p, void *stream, hx_err *err);
/* Variant v10 (psh_v8.cu): v9's kernel that also prefetches xyz_out's lines into the L2 (TMA,
 * sm_90+) during phase 2. Same scratch, trace and fall-back as v9. */
hx_status psh_run_v10(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                      const psh_params *p, void *stream, hx_err *err);
/* The data-movement floor of v9/v10 (psh_v8.cu, k8_floor; psh_floor_variant in kernels.h): v10's launch reading
 * the coordinates, passing two grid barriers and writing psh_floor_cpu's outputs. No scratch (0 bytes). */
hx_status psh_run_floor(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                        const psh_params *p, void *stream, hx_err *err);
/* Whether v5/v6 (gather 0/1), v7 and v8/v9/v10 (w 0/1/2) run their own cooperative kernel for this batch shape
 * (*own = 1) or fall back to an earlier variant (0: nb > 4096 or S > 2^20, no cooperative launch, more
 * tiles than one wave; v8-v10 also when the tile's arrays exceed the shared memory). The launchers make the
 * same decision through the same code; the trace readers below are only meaningful when *own = 1 (after
 * a fall-back the scratch holds another variant's layout). Device queries only, nothing launched (v8-v10 also
 * raise their kernel's dynamic shared memory limit, cudaFuncSetAttribute, as their launcher does). */
hx_status psh_v5_runs_own(int gather, uint32_t n, uint32_t nclouds, uint32_t nb, uint32_t cap, int *own, hx_err *err);
hx_status psh_v7_runs_own(uint32_t n, uint32_t nclouds, uint32_t nb, uint32_t cap, int *own, hx_err *err);
hx_status psh_v8_runs_own(int w, uint32_t n, uint32_t nclouds, uint32_t nb, uint32_t cap, int *own, hx_err *err);
/* Phase timestamps of the last v5/v6/v7 run whose scratch is d_scratch (same batch shape and nb), us after the
 * kernel's start as block 0 saw them: [0] barrier 1 (bbox done), [1] barrier 2 (commit done), [2] barrier 3
 * (probing done; = [1] without probing), [3] block 0's rows done, [4] gather barrier (v6; -1 in v5), [5]
 * the last block's end. Synchronous (cudaMemcpy); for the device bench. */
#define PSH_V5_TRACE 6
hx_status psh_v5_trace(double phase_us[PSH_V5_TRACE], const void *d_scratch, uint32_t nclouds, uint32_t nb,
                       uint32_t n, hx_err *err);
/* Every block's stamps of the last v8 run whose scratch is d_scratch (same batch shape and nb), us after the
 * first block's start: st[k] = {min, median, max over the blocks that reached stamp k, the block with the max}
 * (all -1 where none did); *nblocks = the launch's blocks. Stamps: 0 start, 1 tile xyz loaded, 2 bbox keys
 * stored (into grid barrier 1), 3 out of barrier 1, 4 frame, 5 tile histogram, 6 commit + local scan, 7 into
 * grid barrier 2, 8 out of it, 9 overflow list resolved, 10 start scan, 11 listed points and slot written,
 * 12 end (stores issued), 13 phase C done (the long path), 14 the tiles' keys loaded and reduced, 15 thread 0's
 * frame built and its stores issued (14 and 15 split stamp 4's step). Synchronous (cudaMemcpy); for the device bench. */
#define PSH_V8_BT 16
hx_status psh_v8_block_trace(double st[PSH_V8_BT][4], uint32_t *nblocks, const void *d_scratch, uint32_t nclouds,
                             uint32_t nb, uint32_t n, hx_err *err);
#ifdef __cplusplus
}
#endif

#endif /* F3D_PSH_INTERNAL_H */
