/*
 * nets_internal.h - private to nets/: the per-model entry points net.c dispatches to, and the device
 * helpers the model files share. Each model file owns its section.
 */
#ifndef F3D_NETS_INTERNAL_H
#define F3D_NETS_INTERNAL_H

#include "kernels/kernels.h" /* psh_params, battn_plan (the Flash3D section) */
#include "nets/nets.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- What both models share ---- */
/* Host views of a Linear and a norm, looked up by name (pointers into a net_params' host data). */
typedef struct net_lin { const float *w, *b; size_t in, out; } net_lin;          /* w [out, in], b [out] */
typedef struct net_norm { const float *w, *b, *mean, *var; size_t C; } net_norm; /* LN: mean = var = NULL */
/* The path a block's MLP (C -> H hidden) takes on the GPU by the configuration's mlp_fused, the one rule the forwards
 * and the cost model share: the whole MLP as one kernel (nl_mlp_gpu: PTv3's GELU kind, Flash3D's SwiGLU), else
 * Flash3D's fc1 + SwiGLU as one (nl_linear_swiglu_gpu), else unfused. A forward whose kernel the device cannot run
 * (HX_EUNSUPPORTED) falls to the next path at run time, while the cost model still prices the fused kernel (the
 * wgmma MLP at C >= 96 without sm_90a, the C = 80 SwiGLU MLP on sm_80). */
typedef enum net_mlp_path { NET_MLP_UNFUSED = 0, NET_MLP_WHOLE, NET_MLP_FC1_SWIGLU } net_mlp_path;
static inline net_mlp_path net_mlp_path_of(const net_config *cfg, size_t C, size_t H) {
  const int swiglu = cfg->kind == 1;
  if (cfg->mlp_fused == 1 && nl_mlp_gpu_takes(C, H, swiglu ? NL_MLP_SWIGLU : NL_MLP_GELU)) return NET_MLP_WHOLE;
  if (swiglu && cfg->mlp_fused && nl_linear_swiglu_gpu_takes(C, H)) return NET_MLP_FC1_SWIGLU;
  return NET_MLP_UNFUSED;
}

/* The path a block's MLP takes on the current device: net_mlp_path_of's, where NET_MLP_WHOLE falls to the next path
 * (as the forwards do at run time on HX_EUNSUPPORTED) when the device cannot run the whole-MLP kernel
 * (nl_mlp_gpu_runs, with its LayerNorm where net_ln_mlp_fused), and NET_MLP_FC1_SWIGLU to the unfused one when it
 * cannot run that kernel (nl_linear_swiglu_gpu_runs). The forwards size their work buffers by it. */
static inline net_mlp_path net_mlp_path_run(const net_config *cfg, size_t C, size_t H) {
  net_mlp_path p = net_mlp_path_of(cfg, C, H);
  const nl_mlp_kind kind = cfg->kind == 1 ? NL_MLP_SWIGLU : NL_MLP_GELU;
  if (p == NET_MLP_WHOLE && !nl_mlp_gpu_runs(C, H, kind, cfg->ln_fused))
    p = kind == NL_MLP_SWIGLU && cfg->mlp_fused && nl_linear_swiglu_gpu_takes(C, H) ? NET_MLP_FC1_SWIGLU
                                                                                  : NET_MLP_UNFUSED;
  return p == NET_MLP_FC1_SWIGLU && !nl_linear_swiglu_gpu_runs(C, H) ? NET_MLP_UNFUSED : p;
}

/* Rows of a chunk of an MLP over n rows with H hidden channels (net_config's mlp_chunk): n where mlp_chunk is 0 or
 * n x H fits it; else the most rows, a multiple of 256, whose H-wide hidden rows fit mlp_chunk elements (256 at
 * least, so a hidden width past mlp_chunk / 256 holds 256 x H). */
static inline size_t net_mlp_chunk_rows(const net_config *cfg, size_t n, size_t H) {
  if (!cfg->mlp_chunk || !H || n * H <= cfg->mlp_chunk) return n;
  size_t rows = cfg->mlp_chunk / H / 256 * 256;
  if (rows < 256) rows = 256;
  return rows < n ? rows : n;
}

/* A fused kernel's status in a forward: 1, with err cleared, when the device cannot run it (HX_EUNSUPPORTED, nets.h),
 * so that the forward runs the unfused path; 0 otherwise (it ran, or failed: the caller returns st). */
static inline int net_unsupported(hx_status st, hx_err *err) {
  if (st != HX_EUNSUPPORTED) return 0;
  *err = (hx_err){HX_OK, ""};
  return 1;
}

/* Whether a LayerNorm runs inside the kernel of the Linear next to it (net_config's ln_fused), the rule the forwards
 * and the cost model share: a block's norm.1 inside its qkv Linear (nl_ln_linear_gpu, where it takes (C, 3C): PTv3's
 * on its patch slots, Flash3D's on its rows in order); PTv3's
 * xCPE LayerNorm and residual inside its Linear (nl_linear_ln_add_gpu, where it takes C); a block's MLP LayerNorm
 * (PTv3's norm.2, Flash3D's LayerNormMLP's) inside the whole-MLP kernel (nl_ln_mlp_gpu, on NET_MLP_WHOLE). A device
 * that cannot run the kernel (HX_EUNSUPPORTED) gets the separate LayerNorm at run time. */
static inline int net_ln_qkv_fused(const net_config *cfg, size_t C) {
  return cfg->ln_fused && nl_ln_linear_gpu_takes(C, 3 * C);
}
static inline int net_ln_cpe_fused(const net_config *cfg, size_t C) {
  return cfg->ln_fused && cfg->kind == 0 && nl_linear_ln_add_gpu_takes(C);
}
static inline int net_ln_mlp_fused(const net_config *cfg, size_t C, size_t H) {
  return cfg->ln_fused && net_mlp_path_of(cfg, C, H) == NET_MLP_WHOLE;
}

/* ---- PTv3-m1 (net_ptv3.c: configuration, parameters, CPU forward; net_ptv3_gpu.c: GPU forward) ---- */
hx_status net_ptv3_config(net_config *cfg, const char *name, hx_err *err);
hx_status net_ptv3_params_init(net_params *p, const net_config *cfg, uint64_t seed, hx_err *err);
hx_status net_ptv3_forward_cpu(net_output *out, const net_config *cfg, const net_params *p, const net_input *in,
                               int keep_levels, hx_err *err);

/* PTv3 internals shared by net_ptv3.c and net_ptv3_gpu.c. */
#define NET_PTV3_ORDERS 4       /* z, z-trans, hilbert, hilbert-trans, shuffled per serialization */
#define NET_PTV3_MAX_DEPTH 8    /* blocks per level */
#define NET_PTV3_PIECE_ROWS 512u /* a patch is cut into attention buckets of at most this many rows */
#define NET_PTV3_BN_EPS 1e-3f
#define NET_PTV3_LN_EPS 1e-5f

/* Whether a PTv3 convolution of (in, out) at K offsets reads a rulebook: its variant is the forced one for the k = 3
 * (xCPE) ones (spconv_force = 1 + id) where it takes the widths, else spc_variant_best's (spc_variant_main only swaps
 * v3 for v6, neither of which reads one; a forced v6 the device refuses falls back to v3, which reads none either).
 * An unknown forced id reads none (the forward refuses it). */
static inline int net_ptv3_needs_rule(const net_config *cfg, size_t in, size_t out, uint32_t K) {
  if (K == 27u && cfg->spconv_force > 0) {
    const spc_variant *f = spc_variant_by_id(cfg->spconv_force - 1);
    if (!f) return 0;
    if (spc_variant_takes(f, in, out, K)) return f->needs_rule;
  }
  const spc_variant *v = spc_variant_best(in, out, K);
  return v && v->needs_rule;
}
/* Whether a k = 3 convolution on level l, its encoder's xCPE or its decoder's, reads a rulebook. */
static inline int net_ptv3_level_needs_rule(const net_config *cfg, int l) {
  return net_ptv3_needs_rule(cfg, (size_t)cfg->enc_channels[l], (size_t)cfg->enc_channels[l], 27u) ||
         (l < cfg->levels - 1 &&
          net_ptv3_needs_rule(cfg, (size_t)cfg->dec_channels[l], (size_t)cfg->dec_channels[l], 27u));
}
/* The one rule the GPU forward and the cost model share: level 0's k = 3 map comes from the stem's lookup
 * (spc_map_pair_gpu, no rulebooks) unless a convolution on level 0, the stem or an xCPE, reads a rulebook. */
static inline int net_ptv3_maps_paired(const net_config *cfg) {
  return !net_ptv3_needs_rule(cfg, (size_t)cfg->in_channels, (size_t)cfg->enc_channels[0], 125u) &&
         !net_ptv3_level_needs_rule(cfg, 0);
}

/* Whether a block of PTv3's level l attends in order row `row` (block i of the encoder or decoder in row i mod 4): the
 * rows whose composed indices the GPU forward builds, once per forward, and the cost model prices. */
static inline int net_ptv3_row_used(const net_config *cfg, int l, int row) {
  const int enc = cfg->enc_depth[l], dec = l < cfg->levels - 1 ? cfg->dec_depth[l] : 0;
  return row >= 0 && row < NET_PTV3_ORDERS && (row < enc || row < dec);
}

/* Whether the stem runs in one pass (spc_stem_gpu, net_config's stem_fused), the rule the GPU forward and the cost
 * model share: where its widths are taken and level 0's k = 3 map comes from the stem's probes (net_ptv3_maps_paired);
 * else the k = 5 map, the stem's convolution variant and the BatchNorm + GELU pass. */
static inline int net_ptv3_stem_fused(const net_config *cfg) {
  return cfg->stem_fused && cfg->kind == 0 && net_ptv3_maps_paired(cfg) &&
         spc_stem_takes((size_t)cfg->in_channels, (size_t)cfg->enc_channels[0]);
}

/* The parameters of a configuration, looked up by name (pointers into a net_params' host data). */
typedef struct net_ptv3_conv { const float *w, *b; size_t in, out; uint32_t k; } net_ptv3_conv;
typedef struct net_ptv3_block {
  net_ptv3_conv cpe_conv;
  net_lin cpe_lin;
  net_norm cpe_norm, norm1, norm2;
  net_lin qkv, proj, fc1, fc2;
  int C, H;
} net_ptv3_block;
typedef struct net_ptv3_view {
  net_lin head;
  net_ptv3_conv stem;
  net_norm stem_bn;
  net_lin down[NET_MAX_LEVELS];        /* [s], s >= 1: pooling into level s */
  net_norm down_bn[NET_MAX_LEVELS];
  net_lin up_proj[NET_MAX_LEVELS], up_skip[NET_MAX_LEVELS]; /* [s], s < levels - 1: unpooling into level s */
  net_norm up_bn[NET_MAX_LEVELS], skip_bn[NET_MAX_LEVELS];
  net_ptv3_block enc[NET_MAX_LEVELS][NET_PTV3_MAX_DEPTH], dec[NET_MAX_LEVELS][NET_PTV3_MAX_DEPTH];
} net_ptv3_view;
/* Every tensor of cfg found in p with its exact shape (HX_EINVAL naming the first missing or mis-shaped one). */
hx_status net_ptv3_view_get(net_ptv3_view *v, const net_config *cfg, const net_params *p, hx_err *err);

/* The data-dependent structure of one input, level by level (host, exact: the GPU recomputes the same). */
typedef struct net_ptv3_level {
  size_t n;              /* points */
  size_t *off;           /* [B+1] per-cloud offsets (clouds stay contiguous at every level) */
  int depth;             /* serialization depth (level 0: bit_length(max grid + 1); -1 per pooling) */
  uint32_t *grid, *batch; /* [n*3], [n] */
  float *coord;          /* [n*3] (level 0: the input xyz; pooled: segment means) */
  uint64_t *code;        /* [4*n] rows in shuffled order */
  uint32_t *order, *inverse; /* [4*n] */
  uint32_t *cluster;     /* s >= 1: [n_{s-1}] point of level s-1 -> its parent here (pooling_inverse) */
  uint32_t *idx_ptr;     /* s >= 1: [n+1] children of parent c are children[idx_ptr[c] .. idx_ptr[c+1]) */
  uint32_t *children;    /* s >= 1: [n_{s-1}] points of level s-1 grouped by parent, ascending in each group */
  size_t sum_p, n_cu;    /* padded slots, cu_seqlens entries (patches + 1) */
  uint32_t *pad, *unpad; /* [sum_p], [n] */
  int32_t *cu;           /* [n_cu] */
  spc_map map;           /* k = 3 kernel map of the level (CPU forward only) */
} net_ptv3_level;
typedef struct net_ptv3_struct {
  int L;
  uint32_t B;
  size_t n;
  net_ptv3_level lv[NET_MAX_LEVELS];
  spc_map stem_map;      /* k = 5 (CPU forward only) */
} net_ptv3_struct;
/* Serialization of the input (grid, depth, 4 orders shuffled by sfc_row_perm(seed, 0)), pooling into every level
 * (level s shuffled by sfc_row_perm(seed, s)), patch padding per level, and with maps != 0 the kernel maps.
 * Refuses (HX_EINVAL, with the reason) a malformed batch, an empty cloud, two points of one cloud in one voxel,
 * and an input too small to pool into every level. On failure s is left freed. */
hx_status net_ptv3_struct_build(net_ptv3_struct *s, const net_config *cfg, const net_input *in, int maps,
                                hx_err *err);
void net_ptv3_struct_free(net_ptv3_struct *s);
/* Element counts of the forward's work buffers, the largest over all levels (CPU and GPU use the same). */
typedef struct net_ptv3_work {
  size_t nc;    /* rows x C: norm outputs, conv outputs, gathered attention outputs, projections */
  size_t big;   /* rows x max(3C, mlp_ratio C, C of the next level): qkv, MLP hidden, pooling projection */
  size_t pc3;   /* padded slots x 3C: gathered qkv */
  size_t pc;    /* padded slots x C: attention output */
  size_t slots; /* padded slots (order[pad]) */
} net_ptv3_work;
void net_ptv3_work_sizes(net_ptv3_work *w, const net_config *cfg, const net_ptv3_struct *s);
/* fp32 attention over PTv3 patches: patch i = slots [cu[i], cu[i+1]); qkv [slots, 3, H, D], o [slots, H, D]. */
hx_status net_ptv3_patch_attn_cpu(float *o, const float *qkv, const int32_t *cu, size_t n_patches, int H, int D,
                                  float scale, hx_err *err);

/* ---- Flash3D (net_flash3d.c, net_flash3d_gpu.c) ---- */
hx_status net_flash3d_config(net_config *cfg, const char *name, hx_err *err);
hx_status net_flash3d_params_init(net_params *p, const net_config *cfg, uint64_t seed, hx_err *err);
hx_status net_flash3d_forward_cpu(net_output *out, const net_config *cfg, const net_params *p, const net_input *in,
                                  int keep_levels, hx_err *err);

/* Flash3D internals shared by net_flash3d.c and net_flash3d_gpu.c (net_flash3d.c's header says why each is so). */
#define NET_F3D_MAX_DEPTH 8     /* blocks per level and side */
#define NET_F3D_RHO 2u          /* in-bucket pooling ratio */
#define NET_F3D_BN_EPS 1e-3f
#define NET_F3D_LN_EPS 1e-5f    /* te.LayerNorm and LayerNormMLP's default */

/* The parameters of a configuration, looked up by name (pointers into a net_params' host data). */
typedef struct net_f3d_block {
  net_norm norm, mlp_norm; /* XFMR.norm; LayerNormMLP's layer_norm_{weight,bias} */
  net_lin qkv, proj, fc1, fc2; /* fc1 [2 * ratio * C, C] (SwiGLU halves a | b), fc2 [C, ratio * C] */
  int C, H;
} net_f3d_block;
typedef struct net_f3d_view {
  net_lin embed, head, leaf;                           /* psh_scatter.lin, seg_head, last level's middle */
  net_lin pool[NET_MAX_LEVELS];                        /* [l], l < L-1: pooling out of level l */
  net_norm pool_bn[NET_MAX_LEVELS];
  net_lin up[NET_MAX_LEVELS], up_skip[NET_MAX_LEVELS]; /* [l], l < L-1: unpooling into level l */
  net_norm up_bn[NET_MAX_LEVELS], skip_bn[NET_MAX_LEVELS];
  net_f3d_block enc[NET_MAX_LEVELS][NET_F3D_MAX_DEPTH], dec[NET_MAX_LEVELS][NET_F3D_MAX_DEPTH];
} net_f3d_view;
/* Every tensor of cfg found in p with its exact shape (HX_EINVAL naming the first missing or mis-shaped one). */
hx_status net_flash3d_view_get(net_f3d_view *v, const net_config *cfg, const net_params *p, hx_err *err);
/* Parameter count of a configuration by arithmetic (equals net_params_count of its net_params_init). */
uint64_t net_flash3d_count(const net_config *cfg);

/* The input-size-dependent shape of every level, the same on CPU and GPU: which levels run a PSH, its parameters,
 * buckets per cloud, the attention scope, and the bound on each level's rows that the GPU allocates for (the
 * real count depends on bucket parities, which the GPU PSH's races can change between runs). */
typedef struct net_f3d_level_shape {
  int hashed;            /* 1: a PSH of the level's own points (level 0; every level when cfg->rehash) */
  psh_params psh;        /* hashed levels: hash, nb, cap, voxel, nprobe, seed */
  uint32_t nb;           /* buckets per cloud */
  uint32_t scope;        /* buckets per attention scope */
  uint32_t max_bucket;   /* bound on one bucket's rows */
  size_t bound_rows;     /* sum over clouds of the rows bound: the GPU's rows of the level (exact at level 0) */
  size_t max_cloud;      /* the largest cloud's bound */
} net_f3d_level_shape;
typedef struct net_f3d_shape {
  int L;
  uint32_t B;
  size_t n;
  net_f3d_level_shape lv[NET_MAX_LEVELS];
} net_f3d_shape;
/* Validates cfg and the batch (offsets, grid, finite coordinates and features) and fills s. */
hx_status net_flash3d_shape_get(net_f3d_shape *s, const net_config *cfg, const net_input *in, hx_err *err);
/* The attention plan of block `block` of level `level` (dec = 0 encoder, 1 decoder): kind and shift or stride,
 * a shift taken modulo the level's scope. */
void net_flash3d_block_plan(const net_config *cfg, const net_f3d_level_shape *ls, int dec, int level, int block,
                            battn_plan_kind *kind, uint32_t *value);

/* Bucket layouts, level by level: what the forward's result depends on beyond the input and the weights. Level l's
 * rows are its points in "pool order" (level 0: the input rows; level l+1: the pooling output rows of level l's
 * layout); the layout puts them in bucket order: packed row r holds pool row perm[r], and cloud c's buckets are
 * [c * nb, (c+1) * nb) (bucket_start is the exclusive scan over the batch, so cloud c's rows stay in its range).
 * A level without a PSH of its own (rehash = 0) has perm = identity and fixed windows as its tables
 * (nl_windows_cpu over each cloud's rows). */
typedef struct net_f3d_layout {
  uint32_t rows, nb;
  uint32_t *perm;                        /* [rows] */
  uint32_t *bucket_start, *bucket_count; /* [B * nb] */
} net_f3d_layout;
typedef struct net_f3d_layouts {
  int L;
  uint32_t B;
  net_f3d_layout lv[NET_MAX_LEVELS];
} net_f3d_layouts;
void net_flash3d_layouts_free(net_f3d_layouts *l);
/* The layouts psh_run_cpu gives (what net_flash3d_forward_cpu runs on). */
hx_status net_flash3d_layouts_cpu(net_f3d_layouts *l, const net_config *cfg, const net_input *in, hx_err *err);
/* The CPU forward on given layouts (NULL: psh_run_cpu's, i.e. net_flash3d_forward_cpu). Hashed levels take the
 * given layout after checking it (rows, buckets per cloud, perm a permutation keeping clouds, tables tiling each
 * cloud's rows with counts <= max_bucket: HX_EINVAL naming the level); other levels must equal their windows
 * (HX_ECHECK). Pooling is recomputed (bpool's assignment is deterministic and bit-exact on the GPU). */
hx_status net_flash3d_forward_cpu_layouts(net_output *out, const net_config *cfg, const net_params *p,
                                          const net_input *in, const net_f3d_layouts *lay, int keep_levels,
                                          hx_err *err);
/* The layouts of the last GPU forward of a Flash3D forward object (net_gpu's impl): waits for the device. A CPU-only
 * build returns HX_ENODEV. */
hx_status net_flash3d_gpu_layouts(const void *impl, net_f3d_layouts *l, hx_err *err);
/* fp32 bucket-swin attention (the CPU reference of battn's kernels): qkv [rows, 3, H, D] (q | k | v, torch.chunk's
 * order), o [rows, H * D]; every row in one of the plan's buckets; rows in no bucket get zeros. */
hx_status net_flash3d_attn_cpu(float *o, const float *qkv, size_t rows, int H, int D, const battn_plan *pl,
                               hx_err *err);

/* ---- Cost model (net_costs.c): FLOPs and floor bytes per component from the prepared shapes, host arithmetic only,
 * the same in a CPU-only build (the tests call it on the CPU structures; the GPU forwards on their own). ---- */
/* Sum over the plan's scopes of (rows of the scope)^2: the keys every query row attends to, summed over rows. */
double net_plan_sq_rows(const battn_plan *pl);
typedef struct net_ptv3_cost_level {
  size_t n;        /* points */
  size_t sum_p;    /* padded slots */
  size_t n_cu;     /* cu_seqlens entries (patches + 1) */
  double patch_sq; /* sum over patches of (padded rows)^2 */
  uint64_t pairs;  /* real neighbour pairs of the level's k = 3 kernel map */
} net_ptv3_cost_level;
typedef struct net_ptv3_cost_shape {
  int L;
  uint32_t B;
  int depth;           /* level 0's serialization depth */
  uint64_t stem_pairs; /* pairs of the k = 5 stem map */
  net_ptv3_cost_level lv[NET_MAX_LEVELS];
} net_ptv3_cost_shape;
/* The shape of a host structure built with its kernel maps (HX_EINVAL naming the level when a map is missing). */
hx_status net_ptv3_cost_shape_get(net_ptv3_cost_shape *cs, const net_ptv3_struct *s, hx_err *err);
/* The costs (net_gpu_costs' entries) of PTv3 configuration cfg on shape cs. */
hx_status net_ptv3_costs_from_shape(const net_config *cfg, const net_ptv3_cost_shape *cs, const net_cost_rates *rates,
                                    net_cost *out, size_t cap, size_t *n, hx_err *err);
/* The costs of Flash3D configuration cfg on level shapes s and bucket layouts lay (real rows per level). */
hx_status net_flash3d_costs_from_layouts(const net_config *cfg, const net_f3d_shape *s, const net_f3d_layouts *lay,
                                         const net_cost_rates *rates, net_cost *out, size_t cap, size_t *n,
                                         hx_err *err);

/* ---- GPU forward objects: one vtable per model (net.c's net_gpu_* call through it) ---- */
/* Adds one allocation of `bytes` (rounded up to 256 as the forward allocates) under label and kind to m. */
void net_mem_add(net_mem *m, const char *label, net_mem_kind kind, size_t bytes);
typedef struct net_gpu_ops {
  hx_status (*create)(void **impl, const net_config *cfg, const net_params *p, net_dtype dt, const net_alloc *alloc,
                      hx_err *err);
  void (*destroy)(void *impl);
  hx_status (*bytes)(net_mem *m, const net_config *cfg, const net_input *in, net_dtype dt, hx_err *err);
  hx_status (*prepare)(void *impl, const net_input *in, struct CUstream_st *stream, hx_err *err);
  hx_status (*forward)(void *impl, const net_hooks *hooks, struct CUstream_st *stream, hx_err *err);
  hx_status (*download)(void *impl, net_output *out, int keep_levels, struct CUstream_st *stream, hx_err *err);
  int (*graphable)(const void *impl);
  size_t (*held_bytes)(const void *impl);
  /* The fp32 CPU forward on the same structure as the last GPU forward (for Flash3D: the bucket layouts the GPU
   * PSH produced, which may differ from psh_run_cpu's where threads race); NULL: net_forward_cpu is the same. */
  hx_status (*cpu_reference)(const void *impl, net_output *out, const net_params *p, const net_input *in,
                             int keep_levels, hx_err *err);
  /* The cost model of the prepared forward (net_gpu_costs); NULL: HX_EUNSUPPORTED. */
  hx_status (*costs)(const void *impl, const net_cost_rates *rates, net_cost *out, size_t cap, size_t *n, hx_err *err);
  /* Its cuBLASLt context's plan statistics (net_gpu_blas_stats). */
  void (*blas_stats)(const void *impl, nl_blas_stats *out);
} net_gpu_ops;
/* The object behind net_gpu (net.c creates it; net_check.c reads it). */
struct net_gpu {
  const net_gpu_ops *ops;
  void *impl;
  net_config cfg;
  net_dtype dt;
};

/* NULL in a CPU-only build (net_gpu_create then returns HX_ENODEV). */
const net_gpu_ops *net_ptv3_gpu_ops(void);
const net_gpu_ops *net_flash3d_gpu_ops(void);

/* The parameter walk both models share (walk.c). Add mode (p set): each tensor is created under its PyTorch name,
 * its values drawn from (seed, stream_base + its index in the walk) by init: uniform in [-bound, bound) (PyTorch's
 * Linear and conv default), norm weights near 1 and biases near 0, BatchNorm statistics near mean 0, var 1. Find
 * mode (cp set): the tensor is looked up and its shape checked (HX_EINVAL naming it otherwise). */
typedef enum net_init { NET_INIT_UNIFORM = 0, NET_INIT_NORM_W, NET_INIT_NORM_B, NET_INIT_BN_MEAN, NET_INIT_BN_VAR } net_init;
typedef struct net_walk {
  net_params *p;        /* add mode */
  const net_params *cp; /* find mode */
  uint64_t seed, idx;
  hx_err *err;
  const char *model;    /* names the model in messages */
  uint64_t stream_base; /* the model's random streams start here */
} net_walk;
hx_status net_walk_tensor(net_walk *w, const float **out, net_init init, float bound, int counted, int ndim,
                          const int64_t *shape, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 8, 9)))
#endif
    ;
/* The modules both models walk the same way: "<prefix>.weight" [out, in] and "<prefix>.bias" [out] (uniform in
 * +-1/sqrt(in)); a LayerNorm's "<prefix>.weight", ".bias" [C]; a BatchNorm's ".weight", ".bias" and the buffers
 * ".running_mean", ".running_var" [C] (not counted). */
hx_status net_walk_linear(net_walk *w, net_lin *l, size_t in, size_t out, const char *prefix);
hx_status net_walk_layernorm(net_walk *w, net_norm *nm, size_t C, const char *prefix);
hx_status net_walk_batchnorm(net_walk *w, net_norm *nm, size_t C, const char *prefix);

/* Dense weights on the device, packed into one block (pack.c; both GPU forwards): a sizing pass (host = dev =
 * NULL: only `used` grows) and a filling pass into a host staging copy of the block (host) whose device copy
 * (dev) the views point into; pieces 256-byte aligned. With a NULL host view a filling call lays out its piece and
 * writes nothing. */
typedef struct net_dlin { void *w; void *b; size_t in, out; } net_dlin;  /* w [out, in], b [out] in the dtype */
typedef struct net_dln { float *g, *b; size_t C; } net_dln;               /* a LayerNorm's affine, fp32 */
typedef struct net_daff { float *scale, *shift; size_t C; } net_daff;     /* a folded BatchNorm, fp32 */
typedef struct net_pack {
  char *host, *dev;
  size_t used;
  net_dtype dt;
} net_pack;
size_t net_pack_take(net_pack *k, size_t bytes); /* offset of a new piece of bytes */
/* Linear h [out, in] as [out, in_pad] (zero columns past in); with bn the BatchNorm after it folded in (inference:
 * y = s (W x + b) + t, s = w / sqrt(var + bn_eps), t = b - mean s). */
void net_pack_lin(net_pack *k, net_dlin *l, const net_lin *h, size_t in, size_t in_pad, size_t out,
                  const net_norm *bn, float bn_eps);
void net_pack_ln(net_pack *k, net_dln *l, const net_norm *h, size_t C);
void net_pack_bn(net_pack *k, net_daff *a, const net_norm *h, size_t C, float eps); /* scale, shift: nl_bn_fold */

/* A range on the hooks, if any (begin = 1 / 0). */
static inline void net_range(const net_hooks *h, const char *name, int begin, struct CUstream_st *s) {
  if (h && h->range) h->range(h->ctx, name, begin, s);
}

#ifdef __cplusplus
}
#endif
#endif /* F3D_NETS_INTERNAL_H */
