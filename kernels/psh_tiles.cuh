/*
 * psh_tiles.cuh - device helpers shared by the tiled PSH variants: v4 (psh_v4.cu, four launches) and
 * v5/v6 (psh_v5.cu, one cooperative launch). A tile is the points of one cloud inside one chunk of
 * `tile` points; a block serves one tile and its cloud's frame. Templates take the variant's parameter
 * struct (fields off, nclouds, tile, voxel, hash, nb). Private to kernels/; include it after
 * <cuda_runtime.h> (the host emulation in kernels/dev/emu rewrites it with the two .cu files).
 */
#ifndef F3D_PSH_TILES_CUH
#define F3D_PSH_TILES_CUH

#include <stdint.h>

#include "kernels/psh_internal.h"

namespace psh_tiles {

struct Frame {
  float lo[3];
  uint32_t bits, step, shift[3];
};

struct Tile {
  uint32_t c, k, lo, hi, k0, k1; /* cloud, chunk, points [lo, hi), the cloud's chunks k0..k1 */
};

__device__ __forceinline__ uint32_t lanemask_lt() {
  uint32_t m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

/* The tile of this block (block-uniform). false: the id matches no tile (the block must exit). */
template <class P> __device__ __forceinline__ bool tile_of(const P &p, Tile &t) {
  const uint32_t id = blockIdx.x, T = p.tile;
  uint32_t lo = 0, hi = p.nclouds; /* last c with c + off[c]/T <= id (true for c = 0) */
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) >> 1;
    if (mid + __ldg(p.off + mid) / T <= id) lo = mid;
    else hi = mid;
  }
  const uint32_t a = __ldg(p.off + lo), b = __ldg(p.off + lo + 1);
  t.c = lo;
  t.k = id - lo;
  const uint64_t k0p = (uint64_t)t.k * T, k1p = k0p + T;
  t.lo = (uint32_t)(k0p > a ? (k0p < b ? k0p : b) : a);
  t.hi = (uint32_t)(k1p < b ? k1p : b);
  t.k0 = a / T;
  t.k1 = b > a ? (b - 1) / T : t.k0;
  return t.lo < t.hi;
}

__device__ __forceinline__ uint32_t cloud_of(const uint32_t *off, uint32_t nclouds, uint32_t i) {
  uint32_t lo = 0, hi = nclouds; /* last c with off[c] <= i */
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) >> 1;
    if (__ldg(off + mid) <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

template <class P> __device__ __forceinline__ Frame frame_from_keys(const P &p, const uint32_t key[6]) {
  Frame f;
  float hi[3];
  for (int d = 0; d < 3; d++) {
    f.lo[d] = psh_key2f(key[d]);
    hi[d] = psh_key2f(~key[3 + d]);
  }
  f.bits = psh_frame_bits(f.lo, hi, p.voxel);
  f.step = psh_probe_step((psh_hash)p.hash, f.bits, p.nb);
  psh_frame_shift((psh_hash)p.hash, f.lo, hi, p.voxel, f.bits, f.shift);
  return f;
}

template <class P>
__device__ __forceinline__ void voxel3(const P &p, const Frame &f, float x, float y, float z, uint32_t v[3]) {
  v[0] = psh_vox1(x, f.lo[0], p.voxel) << f.shift[0];
  v[1] = psh_vox1(y, f.lo[1], p.voxel) << f.shift[1];
  v[2] = psh_vox1(z, f.lo[2], p.voxel) << f.shift[2];
}

/* psh_probe_bucket (psh_internal.h) with 32-bit arithmetic: the jitter operand is < 2^21 and the step
 * < 2^21, so x % step is the same in 32 bits (a mask when step is a power of two, as for Z-order-div)
 * instead of three 64-bit remainders, and |v + probe*step + jitter| < 2^24 fits an int32 whose low
 * `bits` bits are the same two's-complement wrap. Same bucket for every input. */
__device__ __forceinline__ uint32_t probe_bucket_fast(psh_hash h, const uint32_t v[3], const int8_t probe[3],
                                                      uint32_t step, uint32_t bits, uint32_t nb, uint64_t seed,
                                                      uint64_t gidx, uint32_t pi) {
  const uint64_t r = hx_rng_u64(seed, gidx, pi);
  const uint32_t mask = bits >= 32u ? 0xFFFFFFFFu : ((1u << bits) - 1u);
  const bool pow2 = (step & (step - 1u)) == 0u;
  uint32_t w[3];
  for (int d = 0; d < 3; d++) {
    const uint32_t x = (uint32_t)(r >> (21 * d)) & 0x1FFFFFu;
    const int32_t jit = (int32_t)(pow2 ? (x & (step - 1u)) : x % step) - (int32_t)(step / 2u);
    const int32_t t = (int32_t)v[d] + (int32_t)probe[d] * (int32_t)step + jit;
    w[d] = (uint32_t)t & mask;
  }
  return psh_hash3(h, w[0], w[1], w[2], bits, nb);
}

/* Block min of 6 keys per thread; the result is valid in thread 0 only. Ends with a barrier-free
 * read by thread 0 after the one barrier that separates the warp leaders' writes from it. */
template <int WARPS> __device__ __forceinline__ void block_min6(uint32_t k[6], uint32_t (*s_red)[WARPS]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int e = 0; e < 6; e++) {
    for (int o = 16; o > 0; o >>= 1) k[e] = min(k[e], __shfl_xor_sync(0xFFFFFFFFu, k[e], o));
    if (lane == 0) s_red[e][warp] = k[e];
  }
  __syncthreads(); /* s_red writes -> thread 0's reads */
  if (threadIdx.x == 0)
    for (int e = 0; e < 6; e++)
      for (int w = 1; w < WARPS; w++) k[e] = min(k[e], s_red[e][w]);
}

} // namespace psh_tiles

#endif /* F3D_PSH_TILES_CUH */
