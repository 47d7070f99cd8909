/*
 * variants_internal.h - private to baselines/: the one list of the variants of the whole serialization and of the
 * row gathers, as X-macros that the CUDA tables (sfc_gpu.cu, shuf_gpu.cu) and the CPU-only stub
 * (baselines_stub.c) both expand, so ids and names are written once. Each entry names its launcher as a token
 * that only the CUDA files expand. Never reuse an id; v0 is the reference shape (PTv3's own structure).
 */
#ifndef F3D_BASELINES_VARIANTS_INTERNAL_H
#define F3D_BASELINES_VARIANTS_INTERNAL_H

#include <stddef.h>

/* The whole serialization (sfc_serial_variant): X(id, name, launcher). */
#define SFC_SERIAL_VARIANT_LIST(X)        \
  X(0, "cub-per-order", serial_v0)        \
  X(1, "fused-narrow", serial_v1)         \
  X(2, "fused-rowpacked", serial_v2)

/* sfc_serial_variant_best's choice, for both builds: v2 (fused-rowpacked: one encode launch, ONE radix sort of all R
 * rows on keys row << key_bits | code) is the fastest at every shape timed: 600k lidar points, 4 orders, H200
 * (2026-11-21, docs/serialization.md): 0.266 ms against v0 0.440 and v1 0.420 (B = 1 and B = 4), 0.196 against 0.374 / 0.372 at
 * grid 0.1 (32-bit keys); 0.29 ms (H200) and 0.315 ms (H100) in every sweep since. It picks 32- or 64-bit keys itself. */
#define SFC_SERIAL_BEST_ID 2

/* Row gathers (shuf_gather_variant): X(id, name, launcher). */
#define SHUF_GATHER_VARIANT_LIST(X)       \
  X(0, "elementwise", gather_v0)          \
  X(1, "warp-row-16B", gather_v1)         \
  X(2, "group-16B", gather_v2)            \
  X(3, "group-16B-cs", gather_v3)

/* shuf_gather_variant_best's rule, one copy for both builds: the id of the fastest gather for rows of `width` 2-byte
 * elements, from the one table that timed every variant at every width (fp16, 600k rows, H200, 2026-11-21, GB/s
 * read + write as % of a same-size copy; docs/serialization.md):
 *   128 B rows (out C=64):   v2 82%, v3 76%, v1 43%       -> v2 below 256 B
 *   384 B rows (qkv C=64):   v3 88%, v2 85%, v1 78%       -> v3 from 256 B (streaming loads of a source read once)
 *   512 B rows (out C=256):  v1 90%, v2 88%, v3 82%       -> v1 from 512 B (one warp per row has enough in flight)
 *   1536 B rows (qkv C=256): v1 96%, v2 96%, v3 94%
 * and v0 (one thread per element) where a row is not a multiple of 16 bytes, which the vectorised variants refuse. */
static inline int shuf_gather_best_id(size_t width) {
  const size_t row_bytes = width * 2;
  if (row_bytes == 0 || row_bytes % 16) return 0;
  if (row_bytes < 256) return 2;
  if (row_bytes < 512) return 3;
  return 1;
}

#endif /* F3D_BASELINES_VARIANTS_INTERNAL_H */
