/*
 * kernels.h - the one public header of the kernels folder: Flash3D's PSH bucketing (psh_), bucket-swin
 * attention (battn_) and in-bucket pooling (bpool_). Plain C; GPU entry points take device pointers
 * (d_ prefix), return hx_status, take the stream last, and report scratch sizes when given NULL scratch.
 */
#ifndef F3D_KERNELS_H
#define F3D_KERNELS_H

#include "base/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== bucket-swin attention (battn_) ============================================================== */
/*
 * Attention over scopes of buckets (kernels/attn.c, attn.cu). Rows are points in bucket order. Bucket b
 * owns rows [bucket_start[b], bucket_start[b] + bucket_count[b]); rows of a padded layout past a bucket's
 * count are neither keys nor queries (their O and LSE are left unwritten). The scope table
 * (uint32 [num_scopes][buckets_per_scope], BATTN_EMPTY for the unused slots of a partial scope) lists the
 * buckets of each scope; every bucket with rows belongs to exactly one scope, and each query row of a
 * bucket attends to every valid key row of every bucket of its scope. Scopes therefore partition the
 * queries, and a swin shift or a stride is only a different scope table (no data moves).
 * Q, K, V, O are [rows, H, D] with explicit row and head strides in elements (the D elements of one row and
 * head are contiguous); LSE is fp32 [rows, H] contiguous, natural log. fp16 or bf16, fp32 accumulation.
 */
#define BATTN_EMPTY 0xFFFFFFFFu
#define BATTN_MAX_SCOPE_BUCKETS 4096u /* bound on buckets_per_scope (host builders, validation) */

typedef enum battn_dtype { BATTN_F16 = 0, BATTN_BF16 = 1 } battn_dtype;

/* Everything a forward pass reads, in the flash-attention style: pointers, sizes, strides. For GPU
 * variants every pointer is a device pointer; for the CPU reference every pointer is a host pointer.
 * Q/K/V/O hold raw fp16 or bf16 bit patterns (uint16). Validated once by battn_validate; kernels trust it. */
typedef struct battn_params {
  const void *q, *k, *v; /* [rows, H, D] */
  void *o;               /* [rows, H, D], same dtype; may lie over q (the same rows and head stride): a variant
                          * reads a row's q before it writes that row's o; q rows of other tiles it may read as
                          * padding feed only results it never stores (test_attn_gpu's o-over-q cases) */
  float *lse;            /* [rows, H] contiguous, natural log; may be NULL (not written) */
  int64_t q_row_stride, q_head_stride; /* in elements; all strides multiples of 8, pointers 16-byte aligned */
  int64_t k_row_stride, k_head_stride;
  int64_t v_row_stride, v_head_stride;
  int64_t o_row_stride, o_head_stride;
  int64_t rows;  /* rows addressable through the strides (every bucket lies inside [0, rows)) */
  int heads;     /* H >= 1 */
  int head_dim;  /* D in {16, 32, 64, 128} */
  battn_dtype dtype;
  float scale;   /* softmax scale; battn_params_init sets 1/sqrt(D) */
  /* bucket and scope tables */
  const uint32_t *bucket_start, *bucket_count; /* [num_buckets] */
  const uint32_t *scope;                       /* [num_scopes * buckets_per_scope] */
  uint32_t num_buckets, num_scopes, buckets_per_scope;
  uint32_t max_bucket_rows; /* >= every bucket_count (grid size of the fused kernel) */
  uint32_t max_scope_rows;  /* >= valid rows of every scope (buffers of the unfused reference) */
} battn_params;

/* A host-side plan: bucket table, scope table and the two bounds, owning its arrays (battn_plan_free). */
typedef struct battn_plan {
  uint32_t num_buckets, num_scopes, buckets_per_scope;
  uint32_t *bucket_start, *bucket_count, *scope;
  uint32_t max_bucket_rows, max_scope_rows;
} battn_plan;

typedef enum battn_plan_kind { BATTN_PLAN_PLAIN = 0, BATTN_PLAN_SWIN, BATTN_PLAN_STRIDE } battn_plan_kind;

/* Fill shapes, contiguous [rows, H, D] strides, scale 1/sqrt(D) and the tables/bounds of `plan` (which may
 * be NULL: then the table fields stay zero). Pointers stay NULL. */
void battn_params_init(battn_params *p, int64_t rows, int heads, int head_dim, battn_dtype dtype,
                       const battn_plan *plan);

/* Check an attention call. Shapes, dtype, strides and alignment are always checked; when h_plan is not
 * NULL its host tables (which must equal what p's table pointers hold) are checked too: buckets inside
 * [0, rows) and not overlapping, counts <= max_bucket_rows, scope entries < num_buckets or BATTN_EMPTY,
 * every non-empty bucket in exactly one scope, scope rows <= max_scope_rows. HX_EINVAL with a message. */
hx_status battn_validate(const battn_params *p, const battn_plan *h_plan, hx_err *err);

/* Scope plans from a per-cloud bucket layout. Cloud c owns buckets [cloud_buckets[c], cloud_buckets[c+1])
 * (cloud_buckets has num_clouds + 1 entries, increasing). K = buckets_per_scope. Numbering the cloud's
 * buckets 0..n-1, the scopes are (every slot past n left BATTN_EMPTY, a scope with no bucket dropped):
 *   plain:       {jK, ..., jK+K-1}                                       j = 0, 1, ...
 *   swin (k):    {0..k-1}, then {k+jK, ..., k+jK+K-1}  (windows shifted by k, 0 <= k < K; not cyclic)
 *   stride (s):  within each chunk of s*K consecutive buckets starting at c0: {c0+r, c0+r+s, ..., c0+r+(K-1)s}
 *                for r = 0..s-1 (dilated windows, s >= 1)
 * Scopes never mix clouds; partial scopes at a cloud's end are kept. The bucket table is copied into
 * the plan. On failure the plan is left empty (all zero). */
hx_status battn_plan_build(battn_plan *plan, battn_plan_kind kind, uint32_t shift_or_stride,
                           uint32_t buckets_per_scope, const uint32_t *bucket_start,
                           const uint32_t *bucket_count, const uint32_t *cloud_buckets,
                           uint32_t num_clouds, hx_err *err);
hx_status battn_plan_plain(battn_plan *plan, uint32_t buckets_per_scope, const uint32_t *bucket_start,
                           const uint32_t *bucket_count, const uint32_t *cloud_buckets,
                           uint32_t num_clouds, hx_err *err);
hx_status battn_plan_swin(battn_plan *plan, uint32_t shift, uint32_t buckets_per_scope,
                          const uint32_t *bucket_start, const uint32_t *bucket_count,
                          const uint32_t *cloud_buckets, uint32_t num_clouds, hx_err *err);
hx_status battn_plan_stride(battn_plan *plan, uint32_t stride, uint32_t buckets_per_scope,
                            const uint32_t *bucket_start, const uint32_t *bucket_count,
                            const uint32_t *cloud_buckets, uint32_t num_clouds, hx_err *err);
/* PTv3 varlen patches: patch i = rows [cu_seqlens[i], cu_seqlens[i+1]) becomes one scope whose buckets
 * are consecutive pieces of at most bucket_rows rows; buckets_per_scope = the most pieces of any patch. */
hx_status battn_plan_patches(battn_plan *plan, const int64_t *cu_seqlens, uint32_t num_patches,
                             uint32_t bucket_rows, hx_err *err);
/* A uniform layout for benchmarks: `rows` rows in buckets of `bucket_rows` (the last one partial), all in
 * one cloud, then the plan of `kind`. */
hx_status battn_plan_uniform(battn_plan *plan, battn_plan_kind kind, uint32_t shift_or_stride,
                             uint32_t buckets_per_scope, int64_t rows, uint32_t bucket_rows, hx_err *err);
void battn_plan_free(battn_plan *plan);

/* The score work of a plan in the fused kernels' tiles, in (query, key) pairs: real = the sum over scopes of their
 * rows squared; by_bucket = each bucket's rows in tiles of bm query rows against each of its scope's buckets' rows in
 * tiles of bn keys (v23's walk, every bucket's last tiles padded); packed = each scope's rows in tiles of bm against
 * them in tiles of bn (v24's walk, only the scope's last tiles padded). A partial tile costs a full one, so
 * by_bucket / real is the kernel's work over the real work. Host only; bm, bn >= 1. */
typedef struct battn_tile_work {
  double real, by_bucket, packed;
} battn_tile_work;
void battn_tile_work_compute(battn_tile_work *w, const battn_plan *plan, uint32_t bm, uint32_t bn);

/* fp16 / bf16 conversions (round to nearest even) used by references, tests and the CLI. */
uint16_t battn_from_float(battn_dtype dt, float x);
float battn_to_float(battn_dtype dt, uint16_t h);

/* Double-precision reference for the listed query rows (all host pointers in p; p->o and p->lse unused).
 * o_ref is [n_sel, H, D], lse_ref [n_sel, H] (natural log). Rows in no bucket give NaN. Returns HX_EINVAL
 * through battn_validate(p, plan). `naive` != 0 instead computes the naive same-precision attention
 * (scores rounded to the dtype, softmax in fp32, P rounded to the dtype, output rounded to the dtype):
 * the yardstick of the flash-attention tolerance. */
hx_status battn_reference_rows(const battn_params *p, const battn_plan *plan, const int64_t *sel,
                               int64_t n_sel, int naive, double *o_ref, double *lse_ref, hx_err *err);
/* Plain CPU forward: the double reference for every row, written to p->o (dtype) and p->lse (fp32). */
hx_status battn_forward_cpu(const battn_params *p, const battn_plan *plan, hx_err *err);

/* Compare an output (host copies laid out as p->o / p->lse, dtype bits and fp32) on the rows `sel` with
 * the double reference: pass when max|o - ref| <= 2 max|naive - ref| + floor and |lse - ref| <= 1e-3 (1 +
 * |ref|), and every value finite. Fills the report; returns HX_ECHECK with a message on failure. */
typedef struct battn_check_report {
  double o_err, o_naive_err, o_tol, lse_err;
  int64_t rows_checked, nonfinite;
} battn_check_report;
hx_status battn_check_rows(const battn_params *p, const battn_plan *plan, const void *h_o,
                           const float *h_lse, const int64_t *sel, int64_t n_sel,
                           battn_check_report *rep, hx_err *err);

/* GPU variants: CUB style (NULL d_scratch: report *scratch_bytes and return), device pointers in p,
 * stream (cudaStream_t) last. v0 unfused cuBLAS reference, v1 fused mma.sync kernel, ... */
typedef hx_status (*battn_fn)(const battn_params *p, void *d_scratch, size_t *scratch_bytes,
                              void *stream, hx_err *err);
typedef struct battn_variant {
  int id;
  const char *name;    /* "v0", "v1", ... */
  const char *summary; /* one line */
  battn_fn fn;
} battn_variant;
/* The const table of this build (a CPU-only build lists the same variants, each returning HX_ENODEV). */
const battn_variant *battn_variants(size_t *count);
const battn_variant *battn_variant_find(const char *name);
const battn_variant *battn_variant_by_id(int id); /* NULL when no variant has that id */
/* The best attention variant for p on this device: v9 where it runs (an sm_90a build on a compute capability 9.0
 * device: the warp-specialised wgmma kernel at D = 32/64/128, 254 / 421 / 606 TFLOP/s at scope 4096 on the H200,
 * cuDNN 238 / 443 at D = 32 / 64; at D = 16 it runs v24's mma.sync kernel itself), else v24 (the mma.sync kernels of
 * every sm_80+ device: v5's at D = 32/64/128, its own at D = 16). Decided by each variant's own scratch query on p
 * (nothing launched).
 * HX_ENODEV in a CPU-only build, the query's status when neither runs; *out NULL then. */
hx_status battn_variant_best(const battn_variant **out, const battn_params *p, hx_err *err);

/* ==== PSH bucketing (psh_) and in-bucket pooling (bpool_) ========================================== */
/*
 * PSH bucketing (kernels/psh.c reference, psh.cu variants). A batch is `nclouds` clouds of xyz fp32
 * points; cloud c spans points [cloud_offset[c], cloud_offset[c+1]). Each cloud owns `nb` buckets of
 * capacity S (= cap, a multiple of 16); bucket ids are global: g = c * nb + local.
 *
 * Voxel frame (per cloud, never across the batch): origin o = per-axis minimum of the cloud's points,
 * v_d = floor((x_d - o_d) / voxel) in fp32, clamped to [0, 2^21 - 1]; `bits` = bit width of the largest
 * voxel index of the cloud on any axis (0 when the cloud is one voxel).
 * Codes (full width, no dropped bits): XOR code = vx ^ vy ^ vz (K = bits wide); Z code = Morton
 * interleave with x in the high bit of each triple, as PTv3: sum_i x_i<<(3i+2) | y_i<<(3i+1) | z_i<<3i
 * (K = 3 * bits wide, <= 63). Z-order-div first stretches each axis onto the common 2^bits cube,
 * v_d << (bits - bits_d) with bits_d the width of the axis's largest index (psh_internal.h says why).
 * Bucket of a code for any nb:
 *   mod:  code % nb                                   (64-bit)
 *   div:  floor(code * nb / 2^K)                      (exact: high 64 bits of (code << (64-K)) * nb; 0 if K=0)
 * Rebalancing: phase 1 keeps the first S points of each home bucket; phase 2 lets each overflowing point
 * try up to nprobe perturbed voxels v + probe * step + jitter (probe set: {-2..2}^3 minus the origin plus
 * (3,3,3), (3,-3,3), (-3,3,-3), (-3,-3,-3), shuffled by the seed; step = 1 for mod hashes, one bucket's
 * extent in voxels for div hashes; jitter uniform in [-step/2, step/2) from hx_rng_u64(seed, point, probe);
 * coordinates wrap modulo 2^bits) and takes the first hashed bucket with room; phase 3 (overflow policy,
 * bounded and deterministic given the residue order) gives the k-th leftover point of a cloud the k-th
 * free slot of that cloud in bucket order; past the cloud's capacity nb*S, leftover e goes to bucket
 * e % nb (the only case where a count exceeds S, reported as over_cap_buckets).
 * Invariant after psh_*: every point has one (bucket, offset); offsets in a bucket are 0..count-1;
 * count <= S whenever the cloud has n_c <= nb * S; bucket_start is the exclusive scan of bucket_count over
 * the whole batch (so cloud c's buckets start at row cloud_offset[c]); slot[i] = bucket_start[bucket[i]] +
 * offset[i] is a permutation of 0..n-1 and perm is its inverse.
 */
#define PSH_NPROBE_MAX 128u
#define PSH_NONE 0xFFFFFFFFu        /* padding rows of a padded layout, unused entries */
#define PSH_MAX_POINTS (1u << 30)   /* bound on n for one call (4M-point clouds are well inside) */
#define PSH_NB_MAX (1u << 24)       /* bound on buckets per cloud: 16M (the issue asks for >= 64k); beyond it
                                     * the per-bucket arrays alone would take gigabytes */

typedef enum psh_hash { PSH_XOR_MOD = 0, PSH_XOR_DIV, PSH_ZORDER_MOD, PSH_ZORDER_DIV, PSH_HASH_COUNT } psh_hash;
const char *psh_hash_name(psh_hash h);          /* "xor-mod", "xor-div", "zorder-mod", "zorder-div" */
hx_status psh_hash_parse(const char *name, psh_hash *out);

typedef struct psh_params {
  psh_hash hash;
  uint32_t nb;     /* buckets per cloud, >= 1 */
  uint32_t cap;    /* S: bucket capacity, a multiple of 16 */
  float voxel;     /* voxel edge in coordinate units, > 0 */
  uint32_t nprobe; /* probes tried per overflowing point, 0..PSH_NPROBE_MAX */
  uint64_t seed;
  uint32_t trace_blocks; /* 0 (default): the measured kernels; 1: v8-v10 run their instances that stamp every
                          * block's phases (psh_gpu_block_trace), a measurement build for the device bench (lab/);
                          * the other variants and the CPU reference ignore it */
} psh_params;

/* Defaults: xor-div (the official code's shipped config), S = 512, voxel 0.05, 128 probes, seed 3407,
 * nb = 0 (fill in with psh_auto_buckets), trace_blocks 0. */
void psh_params_default(psh_params *p);
/* Buckets per cloud as the public code picks them: next power of two >= ceil(n_max / cap) (>= 1). */
uint32_t psh_auto_buckets(size_t n_max, uint32_t cap);
/* Check parameters against a batch shape (host cloud_offset, nclouds + 1 entries). HX_EINVAL + message. */
hx_status psh_params_check(const psh_params *p, const uint32_t *cloud_offset, uint32_t nclouds, hx_err *err);

/* The hash of one voxel (exposed for tests): local bucket in [0, nb). */
uint64_t psh_morton3(uint32_t vx, uint32_t vy, uint32_t vz);
uint32_t psh_hash_voxel(psh_hash h, uint32_t vx, uint32_t vy, uint32_t vz, uint32_t bits, uint32_t nb);
/* The probe offsets in the order the seed gives (first `count` of the shuffled 128; count <= 128). */
void psh_probe_order(int8_t (*probe)[3], uint32_t count, uint64_t seed);

/* Inputs: host pointers for *_cpu, device pointers for GPU variants. */
typedef struct psh_in {
  const float *xyz;            /* [n*3] */
  const uint32_t *cloud_offset;/* [nclouds+1], cloud_offset[0] = 0, cloud_offset[nclouds] = n */
  uint32_t nclouds;
  uint32_t n;
} psh_in;

/* Each cloud of in (host pointers) within the voxel grid the hashes index: at most 2^21 - 1 voxels of `voxel` m along
 * every axis from its lowest point (105 km at 5 cm). Past it every hash would fold the far points into the last
 * voxel; HX_EINVAL naming the cloud, the axis and its span. */
hx_status psh_span_check(const psh_in *in, float voxel, hx_err *err);

/* Outputs (host pointers for *_cpu, device pointers for GPU variants). xyz may be NULL. So may bucket and offset
 * together for the GPU variants and the floor (psh_run_cpu and psh_check need them): the per-point pair is then
 * not an output, since slot and the bucket table imply it (psh_bo_from_slot_cpu); a variant keeps what it needs of
 * it in its scratch (8 B per point more), and v9/v10 skip the stores of their first-hash points' pairs (up to 4.8
 * MB less to write at 600k: all of it on xor-mod, where nearly every point is placed by its first hash; about
 * half on the div hashes). psh_gpu runs every variant so. */
typedef struct psh_out {
  uint32_t *bucket;       /* [n] global bucket id, or NULL (GPU, with offset) */
  uint32_t *offset;       /* [n] row inside the bucket, or NULL (GPU, with bucket) */
  uint32_t *bucket_count; /* [nclouds*nb] */
  uint32_t *bucket_start; /* [nclouds*nb] first packed row (the attention kernel's bucket table) */
  uint32_t *slot;         /* [n] packed row of point i */
  uint32_t *perm;         /* [n] point at packed row r */
  float *xyz;             /* [n*3] coordinates in packed order, or NULL */
  uint32_t *counters;     /* [PSH_NCOUNTERS]: placed by first hash, by probing, by overflow policy */
} psh_out;
#define PSH_NCOUNTERS 4u

/* Balance statistics of one run (psh_stats_compute from host copies of counts and counters). */
typedef struct psh_stats {
  uint64_t n, placed_first, placed_probe, placed_overflow;
  uint32_t buckets, max_count, empty_buckets, over_cap_buckets;
  double mean_fill; /* n / (buckets * S) */
} psh_stats;
void psh_stats_compute(psh_stats *st, const uint32_t *bucket_count, uint32_t nbuckets, const uint32_t *counters,
                       uint32_t cap);

/* Plain, deterministic C reference of the whole PSH: voxelise, hash, rebalance (phases in point order),
 * scan, scatter of coordinates. */
hx_status psh_run_cpu(const psh_out *out, const psh_in *in, const psh_params *p, hx_err *err);
/* How many of its nb buckets cloud c's hash can reach, probes included: the codes of a cloud whose voxel indices
 * are `bits` wide (psh_frame_bits of its bounding box) take 2^bits values for the XOR hashes and 2^(3 bits) for
 * Z-order, so min(nb, that). Below nb, the rest of the cloud's capacity is filled only by the overflow policy
 * (in bucket order, without locality): on metric voxels, XOR hashes on a small or coarse cloud. *bits_out may
 * be NULL. Host reference, deterministic; 0 for an empty cloud. */
uint32_t psh_reachable_buckets(const psh_in *in, const psh_params *p, uint32_t c, uint32_t *bits_out);
/* Invariant check on host copies (bucket, offset, bucket_count, bucket_start, slot, perm; xyz_out may be
 * NULL, else compared with the input rows), and the placement rule in every cloud within its capacity: a point
 * outside its home bucket has a full home, and sits in one of its probes' buckets or, placed by the overflow
 * policy, finds every probe's bucket full (which probe won is not checked: GPU lanes race; psh.c says why);
 * with counters given and every cloud within capacity, the three kinds of placement equal them. HX_ECHECK with a
 * message naming the first violation (in point order), HX_ENOMEM. The placement test runs all probes of every
 * overflow point, so it splits the points over up to 16 threads (one per 64k points, at most one per CPU). */
hx_status psh_check(const psh_out *h_out, const psh_in *h_in, const psh_params *p, hx_err *err);

/* (bucket, offset) of every point from its packed row: bucket[i] = the bucket g whose rows [bucket_start[g],
 * bucket_start[g] + bucket_count[g]) hold slot[i], offset[i] = slot[i] - bucket_start[g]. For outputs that skip the
 * per-point pair (psh_out.bucket/offset NULL on the GPU): the pair is the packed layout read backwards, so
 * psh_check of the result still tests counts, starts, capacity, the slot bijection, perm and xyz_out. HX_ECHECK
 * if the buckets' rows do not tile [0, n) without overlap (a gap is found through the slot that falls in it),
 * HX_ENOMEM. Host, O(n + nbuckets). */
hx_status psh_bo_from_slot_cpu(uint32_t *bucket, uint32_t *offset, const uint32_t *slot, const uint32_t *bucket_start,
                               const uint32_t *bucket_count, uint32_t nbuckets, uint32_t n, hx_err *err);
/* Padded layout: each bucket g padded to S rows at row g*S; perm_pad[g*S + o] = the point at offset o, or
 * PSH_NONE for padding; slot_pad[i] = bucket[i]*S + offset[i]. HX_EUNSUPPORTED if some count > S. */
hx_status psh_pad_cpu(uint32_t *perm_pad, uint32_t *slot_pad, const uint32_t *bucket, const uint32_t *offset,
                      const uint32_t *bucket_start, const uint32_t *bucket_count, uint32_t nbuckets,
                      uint32_t n, uint32_t cap, const uint32_t *perm, hx_err *err);

/* Row gather: out[r] = in[src[r]] (row of row_bytes bytes), zero when src[r] == PSH_NONE. With perm this
 * scatters features (fp32, fp16, bf16 alike: only the row size matters) into packed or padded order. */
typedef enum psh_dtype { PSH_F32 = 0, PSH_F16, PSH_BF16 } psh_dtype;
size_t psh_dtype_size(psh_dtype t);
hx_status psh_gather_rows_cpu(void *out, const void *in, const uint32_t *src, uint32_t rows, size_t row_bytes);

/* GPU variants (CUB style: NULL d_scratch reports *scratch_bytes; out/in hold device pointers; params by
 * value on the host; stream = cudaStream_t). The size depends on out too (a NULL pair adds its working copy,
 * 8 B per point): ask with the out you will run with. The GPU assignment differs from psh_run_cpu where racing makes
 * it order dependent; the invariants and the phase-1 count (v2) are the same. */
typedef hx_status (*psh_fn)(void *d_scratch, size_t *scratch_bytes, const psh_out *out, const psh_in *in,
                            const psh_params *p, void *stream, hx_err *err);
typedef struct psh_variant {
  int id;
  const char *name;    /* "v1", "v2", ... */
  const char *summary; /* one line */
  psh_fn fn;
} psh_variant;
const psh_variant *psh_variants(size_t *count); /* a CPU-only build lists them, each returning HX_ENODEV */
const psh_variant *psh_variant_find(const char *name);
/* The best PSH variant for this device and batch shape (n points in nclouds clouds, p's nb and cap), the first rung
 * of the fall-back chain that runs its own kernel there:
 *   v10 where v9/v10 run their one-wave cooperative launch (up to about 0.9M points on 132 SMs, nb <= 4096) on sm_90
 *       or later: its L2 prefetch of xyz_out took 600k xor-mod from v9's 35.4 to 31.0 us cold on the H100 and from
 *       32.8 to 28.9 us on the H200 (same runs), within 1% of v9 elsewhere except +2.5-4% on the long-list hashes
 *       at 100k; v9 below sm_90, where v10's prefetch is compiled out;
 *   v7 where only v7's one-wave cooperative launch fits (more points per tile);
 *   v4 otherwise (4M points and beyond one wave: 0.46-0.50 ms at 4M on the H100), which itself runs v2's kernels
 *       past 16384 buckets per cloud.
 * (docs/psh.md.) Asks the device (the launchers' own planning code, no launch). *out = NULL and HX_ENODEV
 * in a CPU-only build; HX_ECUDA when the device cannot be queried. */
hx_status psh_variant_best(const psh_variant **out, uint32_t n, uint32_t nclouds, const psh_params *p, hx_err *err);
/* The data-movement floor of the one-launch variants v9/v10, measured beside them: v10's launch plan (one wave
 * of 1024-thread tiles, its dynamic shared memory, cooperative) running a kernel that reads each tile's
 * coordinates into shared memory, passes two grid barriers and then writes its outputs coalesced (28 B per
 * point with the pair, 20 B without), computing nothing. A PSH of that shape (every output stored after the second barrier, as v9/v10
 * do) takes at least this long on the device. Not a PSH (its outputs meet no invariant), so not in
 * psh_variants() and not found by name; its outputs are psh_floor_cpu's. Run it like a variant (psh_gpu_run,
 * psh_gpu_run_graph); its scratch size is 0, but the scratch protocol holds: a NULL d_scratch only asks the
 * size. HX_EUNSUPPORTED where v10 has no launch of its own. */
#define PSH_FLOOR_ID 100
const psh_variant *psh_floor_variant(void);
/* What the floor writes: slot[i] = perm[i] = i, bucket[i] = offset[i] = i when given (both or neither: psh_gpu
 * gives neither, so 20 B of outputs per point) and xyz_out = xyz for the batch's n points (count, start and
 * counters untouched). out->xyz may be NULL. */
hx_status psh_floor_cpu(const psh_out *out, const psh_in *in, hx_err *err);
/* Whether host copies of the floor's outputs (slot, perm; bucket, offset and xyz when not NULL) equal
 * psh_floor_cpu's, bit for bit: HX_ECHECK naming the first array that differs, HX_ENOMEM, HX_EINVAL. */
hx_status psh_floor_check(const psh_out *got, const psh_in *in, hx_err *err);
/* GPU padded layout and row gather (device pointers, stream last). No host round trip, so no count check:
 * a point with offset >= S (possible only when a cloud exceeds nb*S) gets slot_pad = PSH_NONE. psh_pad_gpu reads
 * the per-point pair: run the PSH with bucket and offset given. */
hx_status psh_pad_gpu(uint32_t *d_perm_pad, uint32_t *d_slot_pad, const uint32_t *d_bucket,
                      const uint32_t *d_offset, const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                      uint32_t nbuckets, uint32_t n, uint32_t cap, const uint32_t *d_perm, void *stream,
                      hx_err *err);
hx_status psh_gather_rows_gpu(void *d_out, const void *d_in, const uint32_t *d_src, uint32_t rows,
                              size_t row_bytes, void *stream, hx_err *err);

/* Geometric quality of a grouping: over groups of points (bucket b = packed rows [start, start+count)),
 * the mean (weighted by group size) and the max of the bounding-box diagonal and of the mean distance to
 * the group centroid. psh_quality_zorder does the same for PTv3-style patches: points of each cloud sorted
 * by the Z code of their voxel (PSH voxel frame, PTv3 bit order), cut into patches of `patch` points. */
typedef struct psh_quality {
  uint32_t groups;
  double diag_mean, diag_max, spread_mean, spread_max;
} psh_quality;
hx_status psh_quality_buckets(psh_quality *q, const float *xyz_packed, const uint32_t *bucket_start,
                              const uint32_t *bucket_count, uint32_t nbuckets, hx_err *err);
hx_status psh_quality_zorder(psh_quality *q, const psh_in *in, float voxel, uint32_t patch, hx_err *err);

/*
 * In-bucket pooling (kernels/bpool.c reference, bpool.cu). Input: rows in bucket order (packed or padded
 * PSH output) with the bucket table. Each bucket is cut into tiles of at most 1024 rows; a tile of m rows
 * forms K = ceil(m / rho) sub-buckets (rho in {2, 4, 8}) in three steps (paper appendix):
 *   1. initial sub-buckets by hash: Z code of the row's coordinates quantised to 10 bits per axis in the
 *      tile's cubic bounding box, div-hashed into K slots; rows ordered by (slot, row); each slot's first
 *      rho*floor(c/rho) rows form full sub-buckets (ids 0..A-1 in slot order), the rest are leftovers
 *      (list L in the same order);
 *   2. new sub-bucket allocation: the K - A new sub-buckets are seeded by leftovers L[floor(j*|L|/(K-A))];
 *   3. find new sub-bucket: every other leftover, in L order, joins the nearest (squared distance to the
 *      seed on the 10-bit quantised coordinates of step 1, an exact integer; ties to the lower id) non-full
 *      new sub-bucket among the 64 whose seeds are nearest in L order, else the first non-full one.
 *      Deterministic: the GPU gives the same assignment as the CPU.
 * Output row r of bucket b = out_start[b] + (1024/rho)*tile + sub-bucket; out_count[b] = ceil(count/rho).
 * members[r*rho + k] = input rows of sub-bucket r (BPOOL_NONE past its size, size >= 1), parent[row] = its
 * output row (BPOOL_NONE for rows outside every bucket: the unpool index map), xyz_out = member mean.
 */
#define BPOOL_NONE 0xFFFFFFFFu
#define BPOOL_TILE 1024u
typedef enum bpool_op { BPOOL_SUM = 0, BPOOL_MEAN, BPOOL_MIN, BPOOL_MAX, BPOOL_OP_COUNT } bpool_op;
const char *bpool_op_name(bpool_op op);
hx_status bpool_op_parse(const char *name, bpool_op *out);

/* out_count[b] = ceil(bucket_count[b] / rho), out_start = exclusive scan; *n_out = total output rows. */
hx_status bpool_plan_cpu(uint32_t *out_start, uint32_t *out_count, uint32_t *n_out, const uint32_t *bucket_count,
                         uint32_t nbuckets, uint32_t rho, hx_err *err);
/* Sub-bucket construction. n_rows = input rows (parent has n_rows entries). */
hx_status bpool_assign_cpu(uint32_t *members, uint32_t *parent, float *xyz_out, const float *xyz_in,
                           uint32_t n_rows, const uint32_t *bucket_start, const uint32_t *bucket_count,
                           const uint32_t *out_start, uint32_t nbuckets, uint32_t rho, hx_err *err);
/* Feature reduction over members, fp32 accumulation in member order: feat_out [n_out, C]. dtype PSH_F32,
 * PSH_F16 or PSH_BF16 (a 16-bit result = the fp32 result rounded to nearest even). */
hx_status bpool_reduce_cpu(void *feat_out, const void *feat_in, const uint32_t *members, uint32_t n_out,
                           uint32_t rho, uint32_t channels, psh_dtype dt, bpool_op op, hx_err *err);
/* Unpool: up[row] = down[parent[row]] (+ residual[row] if not NULL), fp32, zero rows where parent is NONE. */
hx_status bpool_unpool_cpu(float *up, const float *down, const float *residual, const uint32_t *parent,
                           uint32_t n_rows, uint32_t channels, hx_err *err);
/* The same for fp32, fp16 or bf16 rows (PSH_F32 / PSH_F16 / PSH_BF16): the sum is taken in fp32 and a 16-bit
 * result is that fp32 value rounded to nearest even; bpool_unpool_cpu is the PSH_F32 case. */
hx_status bpool_unpool_dt_cpu(void *up, const void *down, const void *residual, const uint32_t *parent,
                              uint32_t n_rows, uint32_t channels, psh_dtype dt, hx_err *err);

/* GPU (device pointers, stream last). bpool_plan_gpu uses a CUB scan: NULL d_scratch reports the size. */
hx_status bpool_plan_gpu(void *d_scratch, size_t *scratch_bytes, uint32_t *d_out_start, uint32_t *d_out_count,
                         const uint32_t *d_bucket_count, uint32_t nbuckets, uint32_t rho, void *stream,
                         hx_err *err);
typedef hx_status (*bpool_assign_fn)(uint32_t *d_members, uint32_t *d_parent, float *d_xyz_out,
                                     const float *d_xyz_in, uint32_t n_rows, const uint32_t *d_bucket_start,
                                     const uint32_t *d_bucket_count, const uint32_t *d_out_start,
                                     uint32_t nbuckets, uint32_t rho, void *stream, hx_err *err);
typedef hx_status (*bpool_reduce_fn)(void *d_feat_out, const void *d_feat_in, const uint32_t *d_members,
                                     uint32_t n_out, uint32_t rho, uint32_t channels, psh_dtype dt,
                                     bpool_op op, void *stream, hx_err *err);
/* GPU unpool (bpool_unpool_dt_cpu's contract, device pointers; d_residual may be NULL). */
typedef hx_status (*bpool_unpool_fn)(void *d_up, const void *d_down, const void *d_residual, const uint32_t *d_parent,
                                     uint32_t n_rows, uint32_t channels, psh_dtype dt, void *stream, hx_err *err);
/* A second stream and two events (cudaEventDisableTiming) that the caller owns, for variants that overlap
 * two launches (pooling v6): the stream should have a higher priority than the main one, so that its
 * blocks are placed first. Work forked onto it is joined back into the main stream before the call
 * returns, so the pair can be captured in a CUDA graph from the main stream. */
typedef struct bpool_aux {
  void *stream;          /* cudaStream_t */
  void *ev_fork, *ev_join; /* cudaEvent_t */
} bpool_aux;
/* Plan, assignment and reduction in one call (op < BPOOL_OP_COUNT, features of `channels` columns in the
 * rows' order): the outputs of bpool_plan_gpu (d_out_start, d_out_count; its scratch contract: NULL d_scratch
 * reports *scratch_bytes and returns), assign and reduce, bit for bit. n_out = the plan's output rows (the
 * caller's bpool_plan_cpu or psh_gpu_pool_plan figure). aux may be NULL (then one stream). NULL in variants
 * without it. */
typedef hx_status (*bpool_pool_fn)(void *d_scratch, size_t *scratch_bytes, uint32_t *d_members, uint32_t *d_parent,
                                   float *d_xyz_out, void *d_feat_out, const float *d_xyz_in, const void *d_feat_in,
                                   uint32_t n_rows, uint32_t channels, psh_dtype dt, bpool_op op,
                                   const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                                   uint32_t *d_out_start, uint32_t *d_out_count, uint32_t nbuckets, uint32_t rho,
                                   uint32_t n_out, const bpool_aux *aux, void *stream, hx_err *err);
/* Plan and assignment in one call: bpool_plan_gpu (d_out_start, d_out_count written; its scratch contract:
 * NULL d_scratch reports *scratch_bytes) followed by assign, the same outputs. NULL in variants without it. */
typedef hx_status (*bpool_assign_plan_fn)(void *d_scratch, size_t *scratch_bytes, uint32_t *d_members, uint32_t *d_parent,
                                          float *d_xyz_out, const float *d_xyz_in, uint32_t n_rows,
                                          const uint32_t *d_bucket_start, const uint32_t *d_bucket_count,
                                          uint32_t *d_out_start, uint32_t *d_out_count, uint32_t nbuckets, uint32_t rho,
                                          void *stream, hx_err *err);
typedef struct bpool_variant {
  int id;
  const char *name;
  const char *summary;
  bpool_assign_fn assign;
  bpool_reduce_fn reduce;
  bpool_unpool_fn unpool;
  bpool_pool_fn pool;               /* may be NULL: then pooling is assign + reduce */
  bpool_assign_plan_fn assign_plan; /* may be NULL: then the plan is bpool_plan_gpu, then assign */
} bpool_variant;
const bpool_variant *bpool_variants(size_t *count);
const bpool_variant *bpool_variant_find(const char *name);
/* The best pooling variant: v9, the fastest of the ladder at every shape measured (rho 2/4/8, fp32 and bf16
 * features, C = 64, 100k-600k points, H100 and H200: on the H100 at 600k bf16 53.7-57.1% and fp32 72-78% of the copy
 * bandwidth, where v5 reaches 45.4-55.5% on bf16; docs/pooling.md). v9 keeps its own fall-backs (a plain reduction past 16384 buckets or for
 * features the 16-byte reduction cannot take). The CPU-only build lists the same table and returns the same entry. */
const bpool_variant *bpool_variant_best(void);

/* Everything one pooling call reads and writes, in the flash-attention style: device pointers, sizes, the
 * reduction. bpool_pool validates it once; the variants' launchers trust it. */
typedef struct bpool_params {
  const float *xyz_in;          /* [n_rows*3] coordinates of the rows, in bucket order */
  const void *feat_in;          /* [n_rows, channels] of dt; unused (may be NULL) when op == BPOOL_OP_COUNT */
  const uint32_t *bucket_start; /* [nbuckets] the rows' bucket table (packed or padded PSH output) */
  const uint32_t *bucket_count; /* [nbuckets] */
  uint32_t n_rows, nbuckets;
  uint32_t rho;                 /* 2, 4 or 8 */
  uint32_t channels;            /* feature columns; unused when op == BPOOL_OP_COUNT */
  uint32_t n_out;               /* the plan's output rows (bpool_plan_cpu or psh_gpu_pool_plan) */
  psh_dtype dt;                 /* PSH_F32, PSH_F16 or PSH_BF16 features */
  bpool_op op;                  /* the reduction; BPOOL_OP_COUNT: plan and assignment only */
  uint32_t *out_start, *out_count; /* [nbuckets] the plan, written */
  uint32_t *members;            /* [n_out*rho] written */
  uint32_t *parent;             /* [n_rows] written */
  float *xyz_out;               /* [n_out*3] written */
  void *feat_out;               /* [n_out, channels] of dt, written when op < BPOOL_OP_COUNT */
  const bpool_aux *aux;         /* a second stream for the variants that overlap two launches; NULL: one stream */
} bpool_params;
/* One pooling call with variant v: the plan, the assignment and, when p->op < BPOOL_OP_COUNT, the reduction, through
 * the variant's fused pool when it has one, else its assign_plan (or bpool_plan_gpu then assign) and reduce: the
 * outputs of bpool_plan_gpu, assign and reduce, bit for bit. CUB's scratch contract (NULL d_scratch: only
 * *scratch_bytes is set, nothing launched); device pointers in p, stream last. HX_EINVAL naming the field for a bad
 * p (rho, op, dt, a missing pointer); HX_ENODEV in a CPU-only build. The per-variant launchers (assign, reduce, pool,
 * assign_plan of bpool_variant) stay callable as before. */
hx_status bpool_pool(const bpool_variant *v, const bpool_params *p, void *d_scratch, size_t *scratch_bytes,
                     void *stream, hx_err *err);

/* Host conveniences for the CLI, the sweep pipeline and the device bench (kernels/psh_host.cu; a CPU-only
 * build returns HX_ENODEV). A psh_gpu holds device copies of one batch (xyz, cloud offsets, features of
 * `channels` columns in fp32 and bf16) and every output and scratch buffer, allocated once, so timed calls
 * never allocate and never copy to or from the host. */
typedef struct psh_gpu psh_gpu;
hx_status psh_gpu_create(psh_gpu **out, const psh_in *h_in, const psh_params *p, uint32_t channels, hx_err *err);
void psh_gpu_free(psh_gpu *g);
/* Device bytes the handle's buffers hold (each allocation rounded up to 256 B; the CUDA graph that
 * psh_gpu_run_graph instantiates later is not in it). 0 for NULL. */
size_t psh_gpu_device_bytes(const psh_gpu *g);
/* Whole PSH (voxelise + hash + rebalance + scan + scatter of coordinates) with variant v on `stream`. */
hx_status psh_gpu_run(psh_gpu *g, const psh_variant *v, void *stream, hx_err *err);
/* The same as one CUDA graph: captured on `stream` (must not be the legacy default stream) the first time
 * for v, replayed afterwards; shows the PSH time without the host's per-launch cost. */
hx_status psh_gpu_run_graph(psh_gpu *g, const psh_variant *v, void *stream, hx_err *err);
/* Feature scatter into packed order (gather by perm) of the last run: fp32 or bf16 rows of `channels`. */
hx_status psh_gpu_scatter_feat(psh_gpu *g, psh_dtype dt, void *stream, hx_err *err);
/* Pooling of the last run's packed output. psh_gpu_pool_plan (untimed: it waits for the device) fixes
 * rho and returns the output row count; psh_gpu_pool then runs plan + assign, and the reduction of the
 * packed features (fp32 or bf16, run psh_gpu_scatter_feat first) when op < BPOOL_OP_COUNT: through the
 * variant's fused pool when it has one, else assign then reduce. */
hx_status psh_gpu_pool_plan(psh_gpu *g, uint32_t rho, uint32_t *n_out, void *stream, hx_err *err);
hx_status psh_gpu_pool(psh_gpu *g, const bpool_variant *v, bpool_op op, psh_dtype dt, void *stream, hx_err *err);
/* Unpool of the last pooling run's output coordinates with v's GPU unpool: h_up[row] = pooled xyz of the
 * row's sub-bucket (zero for rows outside every bucket), [n*3] fp32, copied to the host. Waits. */
hx_status psh_gpu_unpool_xyz(psh_gpu *g, const bpool_variant *v, float *h_up, hx_err *err);
/* Phase timestamps of the last run of v (v5 to v10 only, HX_EUNSUPPORTED otherwise, and also where v fell back
 * to an earlier variant for g's batch, e.g. more than 4096 buckets): 6 values in us after the kernel's start
 * (bbox, commit, probing, rows of block 0, gather barrier or -1, last block's end). Waits. */
hx_status psh_gpu_phase_trace(psh_gpu *g, const psh_variant *v, double phase_us[6], hx_err *err);
/* Every block's phase stamps of the last v8-v10 run (HX_EUNSUPPORTED for other variants or a fall-back): st[k] = {min, median,
 * max, block of the max} in us after the first block's start, for the 16 stamps psh_internal.h lists under
 * psh_v8_block_trace (-1 where no block reached one); *nblocks = the launch's blocks. Waits. */
hx_status psh_gpu_block_trace(psh_gpu *g, const psh_variant *v, double st[16][4], uint32_t *nblocks, hx_err *err);
/* Fill the PSH outputs (count, start, slot, perm, xyz, counters) and the variants' scratch (where they keep the
 * pair's working copy) with 0xFF bytes on `stream`, so
 * that a check after the next run sees only what that run wrote; like a run, it drops the pooling plan. */
hx_status psh_gpu_poison(psh_gpu *g, void *stream, hx_err *err);
/* Copy the last run's results to host buffers laid out as psh_out (any pointer may be NULL; bucket and offset are
 * rebuilt from slot and the bucket table by psh_bo_from_slot_cpu, HX_ECHECK if those are not a packed layout, e.g.
 * after the floor, which writes no table) and, when not NULL, the pooling outputs: members [n_out*rho], parent [n],
 * xyz_out [n_out*3] and *n_out. */
hx_status psh_gpu_download(psh_gpu *g, const psh_out *h_out, uint32_t *members, uint32_t *parent, float *xyz_out,
                           uint32_t *n_out, hx_err *err);
/* Copy the packed features of dtype dt (psh_gpu_scatter_feat's output, [n, channels]) and the pooled
 * features of the last pooling run with a reduction ([n_out, channels] of dt) to the host; either pointer
 * may be NULL. Waits. */
hx_status psh_gpu_download_feat(psh_gpu *g, psh_dtype dt, void *h_packed, void *h_pooled, hx_err *err);

#ifdef __cplusplus
}
#endif
#endif /* F3D_KERNELS_H */
