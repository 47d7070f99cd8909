/*
 * baselines.h - the one public header of the baselines folder: faithful C/CUDA reimplementations of
 * PTv3's serialization (sfc_), global shuffle around attention (shuf_) and serialized pooling (spool_).
 *
 * Conventions (CUB style): outputs before inputs, device pointers start with d_, the stream is last
 * (`struct CUstream_st *` is cudaStream_t without the CUDA headers; NULL = default stream), and a launcher
 * that needs scratch takes (void *d_scratch, size_t *scratch_bytes): with d_scratch == NULL it only
 * stores the size it needs and launches nothing, so nothing is allocated inside a timed region. Every
 * GPU routine has a plain C `*_cpu` reference; in a CPU-only build the GPU entry points return
 * HX_ENODEV and the variant tables list the same variants, each returning HX_ENODEV. Indices are uint32_t (n < 2^32).
 */
#ifndef F3D_BASELINES_H
#define F3D_BASELINES_H

#include "base/base.h"

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;

/* ---- serialization (sfc_: baselines/sfc.c, sfc_gpu.cu) ------------------------------------------- */

#define SFC_MAX_DEPTH 16  /* PTv3 asserts depth <= 16 (its Z LUT covers 16 coordinate bits) */
#define SFC_MAX_ORDERS 4
#define SFC_MAX_CLOUDS 64 /* GPU padding passes the per-cloud offsets by value */

typedef enum sfc_order { SFC_Z = 0, SFC_Z_TRANS, SFC_HILBERT, SFC_HILBERT_TRANS, SFC_ORDER_COUNT } sfc_order;

/* "z", "z-trans", "hilbert", "hilbert-trans". */
const char *sfc_order_name(sfc_order o);
hx_status sfc_order_parse(const char *name, sfc_order *out);
/* Comma-separated list ("z,hilbert"); no duplicates, 1..SFC_MAX_ORDERS entries. */
hx_status sfc_orders_parse(const char *list, sfc_order *orders, int *count, hx_err *err);

/* One point's curve index (no batch bits) at `depth` (1..16); coordinates must be < 2^depth (higher
 * bits are ignored, as PTv3's LUTs ignore them). Z: x_i at bit 3i+2, y_i at 3i+1, z_i at 3i. Hilbert:
 * Skilling's transpose, MSB-first x,y,z interleave, prefix XOR. The -trans orders swap x and y. */
uint64_t sfc_code_point(sfc_order o, uint32_t x, uint32_t y, uint32_t z, int depth);

/* Bits of a packed code: 3*depth curve bits plus bit_length(B-1) batch bits (0 for one cloud). These are
 * the bits a radix sort must look at. */
int sfc_key_bits(int depth, uint32_t B);

/* Cloud index of every point: batch[i] = b for offset[b] <= i < offset[b+1]. */
hx_status sfc_batch_index_cpu(uint32_t *batch, const size_t *offset, uint32_t B, hx_err *err);

/* GridSample: grid[3i+a] = floor(xyz[3i+a] / grid_size) (double divide) minus the per-cloud minimum of
 * that axis, so every cloud starts at (0,0,0). *max_coord (optional) receives the largest coordinate over
 * all points and axes. HX_EINVAL on a non-positive grid, a non-finite coordinate or a cloud whose extent
 * does not fit 31 bits. */
hx_status sfc_grid_cpu(uint32_t *grid, uint32_t *max_coord, const float *xyz, const size_t *offset,
                       uint32_t B, double grid_size, hx_err *err);

/* One point per voxel per cloud, first point kept, input order preserved: keep[k] = input index of the
 * k-th kept point, offset_out[B+1] = the kept clouds' offsets, *dropped = n - kept. */
hx_status sfc_dedup_cpu(uint32_t *keep, size_t *offset_out, size_t *dropped, const uint32_t *grid,
                        const size_t *offset, uint32_t B, hx_err *err);

/* depth = bit_length(max_coord + 1) (Pointcept >= 1.6; the standalone model.py uses bit_length(max),
 * which differs only when max = 2^k - 1). Errors (HX_EINVAL, naming a grid size that would fit when
 * grid_size > 0) for depth > 16 and for 3*depth + bit_length(B) > 63 (PTv3's two asserts). */
hx_status sfc_depth(int *depth, uint32_t max_coord, uint32_t B, double grid_size, hx_err *err);

/* code[r*n + i] = batch[i] << 3*depth | curve index of point i in order orders[r] (batch NULL = 0). */
hx_status sfc_encode_cpu(uint64_t *code, const uint32_t *grid, const uint32_t *batch, size_t n, int depth,
                         const sfc_order *orders, int R, hx_err *err);

/* Per row: order = stable argsort of the codes (ties by point index; codes are unique after dedup, so
 * this is PTv3's argsort), inverse[order[j]] = j. inverse may be NULL. */
hx_status sfc_sort_cpu(uint32_t *order, uint32_t *inverse, const uint64_t *code, size_t n, int R,
                       hx_err *err);

/* PTv3's torch.randperm(R) of the order rows, reproducible: a Fisher-Yates shuffle drawn from
 * hx_rng_u64(seed, SFC_RNG_STREAM, counter*16 + k). Permuting the order list before encoding gives the
 * same rows as permuting code/order/inverse afterwards, at no cost. */
#define SFC_RNG_STREAM 0x5F3C0DEull
void sfc_row_perm(int *perm, int R, uint64_t seed, uint64_t counter);

/* GPU stages (one launch each, or one CUB call); codes in point order, rows as in the CPU reference. */
hx_status sfc_grid_gpu(uint32_t *d_grid, uint32_t *d_batch, uint32_t *d_max_coord, void *d_scratch,
                       size_t *scratch_bytes, const float *d_xyz, const size_t *offset, uint32_t B,
                       double grid_size, struct CUstream_st *stream);
hx_status sfc_encode_gpu(uint64_t *d_code, const uint32_t *d_grid, const uint32_t *d_batch, size_t n,
                         int depth, const sfc_order *orders, int R, struct CUstream_st *stream);
/* CUB DeviceRadixSort::SortPairs per row over bits [0, key_bits). The scratch size depends on n and on
 * key_bits (more bits, more radix passes): query with the values of the real call, or larger ones. */
hx_status sfc_sort_gpu(uint32_t *d_order, void *d_scratch, size_t *scratch_bytes, const uint64_t *d_code,
                       size_t n, int R, int key_bits, struct CUstream_st *stream);
hx_status sfc_inverse_gpu(uint32_t *d_inverse, const uint32_t *d_order, size_t n, int R,
                          struct CUstream_st *stream);

/* GPU dedup with sfc_dedup_cpu's result: voxels keyed by batch << 3*depth | Morton code (a bijection on
 * (cloud, voxel) once depth fits), stable radix sort of (key, index), the first index of every run kept,
 * compacted in input order. d_keep [n] receives the kept indices; offset_out (host, B+1) and *dropped are
 * read back (one stream synchronisation). d_batch NULL = one cloud. B <= SFC_MAX_CLOUDS. */
hx_status sfc_dedup_gpu(uint32_t *d_keep, size_t *offset_out, size_t *dropped, void *d_scratch,
                        size_t *scratch_bytes, const uint32_t *d_grid, const uint32_t *d_batch,
                        const size_t *offset, uint32_t B, int depth, struct CUstream_st *stream);

/* Conveniences for tools (never timed): host arrays in and out, device memory allocated, used and freed
 * inside; results identical to sfc_grid_cpu / sfc_encode_cpu. HX_ENODEV without a device or CUDA. */
hx_status sfc_grid_host_gpu(uint32_t *grid, uint32_t *max_coord, const float *xyz, const size_t *offset,
                            uint32_t B, double grid_size, hx_err *err);
hx_status sfc_dedup_host_gpu(uint32_t *keep, size_t *offset_out, size_t *dropped, const uint32_t *grid,
                             const size_t *offset, uint32_t B, int depth, hx_err *err);
hx_status sfc_encode_host_gpu(uint64_t *code, const uint32_t *grid, const uint32_t *batch, size_t n, int depth,
                              const sfc_order *orders, int R, hx_err *err);

/* The whole serialization after grid coordinates: codes, order and inverse of R rows. */
typedef struct sfc_serial_args {
  uint64_t *d_code;        /* [R*n] out */
  uint32_t *d_order;       /* [R*n] out */
  uint32_t *d_inverse;     /* [R*n] out */
  const uint32_t *d_grid;  /* [n*3] */
  const uint32_t *d_batch; /* [n], NULL = one cloud */
  size_t n;
  uint32_t B;
  int depth;
  int R;
  sfc_order orders[SFC_MAX_ORDERS];
} sfc_serial_args;
typedef hx_status (*sfc_serial_fn)(void *d_scratch, size_t *scratch_bytes, const sfc_serial_args *a,
                                   struct CUstream_st *stream);
typedef struct sfc_serial_variant {
  int id;
  const char *name;
  sfc_serial_fn fn;
} sfc_serial_variant;
/* The variant table (v0 = per-order encode + per-order CUB sort on 64-bit keys). A CPU-only build lists the same
 * variants, each returning HX_ENODEV. */
int sfc_serial_variant_count(void);
const sfc_serial_variant *sfc_serial_variant_get(int i);
/* The best whole serialization: v2 (fused-rowpacked), the fastest at every shape timed (one cloud or four, 32- or
 * 64-bit keys: 0.27 ms against 0.42-0.44 for v0/v1 at 600k on the H200; baselines/variants_internal.h has the
 * figures). It picks its key width itself. */
const sfc_serial_variant *sfc_serial_variant_best(void);

/* ---- global shuffle (shuf_: baselines/shuf.c, shuf_gpu.cu) ---------------------------------------- */

#define SHUF_DEFAULT_PATCH 1024

/* Sizes of PTv3's padding: *sum_p = sum_b p_b with p_b = ceil(n_b/K)*K if n_b > K else n_b, and
 * *n_seqlens = number of cu_seqlens entries (patches + 1). */
hx_status shuf_pad_sizes(size_t *sum_p, size_t *n_seqlens, const size_t *offset, uint32_t B, uint32_t K,
                         hx_err *err);
/* pad[s] = sorted position read by slot s (the last patch of a long cloud re-reads the points at the
 * same in-patch offsets of the previous patch), unpad[j] = slot of sorted position j, cu_seqlens = patch
 * starts per cloud plus sum_p (ptv3.md 2.1). Any output may be NULL. */
hx_status shuf_padding_cpu(uint32_t *pad, uint32_t *unpad, int32_t *cu_seqlens, const size_t *offset,
                           uint32_t B, uint32_t K, hx_err *err);
hx_status shuf_padding_gpu(uint32_t *d_pad, uint32_t *d_unpad, int32_t *d_cu_seqlens, const size_t *offset,
                           uint32_t B, uint32_t K, struct CUstream_st *stream);

/* order_p[s] = order_row[pad[s]] (slot -> point), inverse_p[i] = unpad[inverse_row[i]] (point -> slot). */
hx_status shuf_compose_cpu(uint32_t *order_p, uint32_t *inverse_p, const uint32_t *order_row,
                           const uint32_t *inverse_row, const uint32_t *pad, const uint32_t *unpad, size_t n,
                           size_t sum_p);
hx_status shuf_compose_gpu(uint32_t *d_order_p, uint32_t *d_inverse_p, const uint32_t *d_order_row,
                           const uint32_t *d_inverse_row, const uint32_t *d_pad, const uint32_t *d_unpad,
                           size_t n, size_t sum_p, struct CUstream_st *stream);

typedef enum shuf_dtype { SHUF_F16 = 0, SHUF_BF16 } shuf_dtype;
const char *shuf_dtype_name(shuf_dtype t);

/* out[r, :] = in[idx[r], :] for r < rows; rows of `width` 2-byte elements (fp16 and bf16 are moved as
 * bits, so both dtypes take the same path). */
hx_status shuf_gather_cpu(void *out, const void *in, const uint32_t *idx, size_t rows, size_t width,
                          shuf_dtype dt);
typedef hx_status (*shuf_gather_fn)(void *d_out, const void *d_in, const uint32_t *d_idx, size_t rows,
                                    size_t width, shuf_dtype dt, struct CUstream_st *stream);
typedef struct shuf_gather_variant {
  int id;
  const char *name;
  shuf_gather_fn fn;
} shuf_gather_variant;
/* v0 = one thread per element (torch index_select's shape); vectorised variants need width*2 % 16 == 0
 * and 16-byte aligned rows, else they return HX_EUNSUPPORTED. A CPU-only build lists the same variants, each
 * returning HX_ENODEV. */
int shuf_gather_variant_count(void);
const shuf_gather_variant *shuf_gather_variant_get(int i);
/* The best gather for rows of `width` 2-byte elements, by row size (fp16, 600k rows, H200): v2 below 256 B (128 B
 * rows: 82% of the copy), v3 from 256 B (384 B rows: 88%), v1 from 512 B (512 B rows: 90%, 1536 B: 96%); v0 where a
 * row is not a multiple of 16 bytes (the vectorised variants refuse it). The rows must still be 16-byte aligned
 * for v1-v3. baselines/variants_internal.h has the whole table. */
const shuf_gather_variant *shuf_gather_variant_best(size_t width);

/* ---- serialized pooling (spool_: baselines/spool.c, spool_gpu.cu) -------------------------------- */

/* Inputs: a serialized cloud (codes of R rows in point order, the R rows' orders from the sort: the GPU takes
 * the pooled orders from them), projected features [n*C] (fp32), coordinates [n*3], grid [n*3], batch [n].
 * The GPU refuses R * n > INT_MAX (one scan over the R rows' flags). */
typedef struct spool_in {
  const uint64_t *code;  /* [R*n] */
  const uint32_t *order; /* [R*n]; the GPU reads row 0 (the clusters) and row perm[r] (pooled row r's order);
                          * the CPU reference re-derives everything */
  const float *feat;     /* [n*C] */
  const float *coord;    /* [n*3] */
  const uint32_t *grid;  /* [n*3] */
  const uint32_t *batch; /* [n] */
  size_t n;
  size_t C;
  int R;
  int depth;
  uint32_t B;
  int perm[SFC_MAX_ORDERS]; /* row shuffle of the pooled rows: new row r = old row perm[r] */
} spool_in;

/* Outputs, each sized for n (the upper bound); n_out, depth set by the call. Clusters = parent voxels in
 * ascending order of code[0] >> 3 (torch.unique sorted); head = smallest child index (what a stable
 * sort of the cluster ids gives; codes/grid/batch are the same for every child). */
typedef struct spool_out {
  size_t n_out;
  int depth;
  uint32_t *cluster;  /* [n] pooling_inverse: point -> pooled point */
  uint32_t *head;     /* [n_out] */
  uint32_t *idx_ptr;  /* [n_out+1] */
  uint64_t *code;     /* [R*n_out]: old row perm[r] of the head >> 3 */
  uint32_t *order;    /* [R*n_out] */
  uint32_t *inverse;  /* [R*n_out] */
  float *feat;        /* [n_out*C] segment max */
  float *coord;       /* [n_out*3] segment mean */
  uint32_t *grid;     /* [n_out*3] grid[head] >> 1 */
  uint32_t *batch;    /* [n_out] */
} spool_out;

hx_status spool_cpu(spool_out *out, const spool_in *in, hx_err *err);
/* Device pointers in both structs. n_out is data dependent: the launcher reads it back (one stream
 * synchronisation, as torch.unique does) and stores it in out->n_out. */
hx_status spool_gpu(spool_out *out, void *d_scratch, size_t *scratch_bytes, const spool_in *in,
                    struct CUstream_st *stream);
/* The same with the pooled size given (what spool_gpu returned for this input, e.g. in an untimed prepare): no
 * read-back and no host synchronisation, so it can be captured in a CUDA graph. n_out must be exact (1..n): it
 * cannot be checked without the read-back, and a wrong value gives wrong outputs. HX_EINVAL for 0 or > n. */
hx_status spool_gpu_sized(spool_out *out, void *d_scratch, size_t *scratch_bytes, const spool_in *in, size_t n_out,
                          struct CUstream_st *stream);

#ifdef __cplusplus
}
#endif
#endif /* F3D_BASELINES_H */
