/*
 * cmd_attn.c - `f3dbench attn`: one bucket-swin attention configuration, checked against the double
 * reference on sampled rows and then timed.
 *
 * Layout: `rows` rows in buckets of --bucket-size rows (the last partial), one cloud; the scope plan is
 * plain, swin:K, stride:S, or patches (PTv3's varlen path: cu_seqlens patches of bucket-size x
 * scope-buckets rows, each patch one scope of its bucket-size pieces). Inputs are uniform random
 * (q, k in [-2, 2), v in [-1, 1)). A variant that fails --check (the default) gets no timing: the command
 * prints the failure and exits 1. Timing: the harness's clocks (hx_time), the one path every published
 * number takes: on the GPU, CUDA events around each launch on the command's stream after --warmup
 * discarded launches, and median, min and max of the --reps kept ones (hx_stats_describe); the CPU
 * reference is one run on the CPU clock. TFLOP/s counts 4 * D * H * sum over scopes of rows_s^2 (= 4 * rows *
 * scope_rows * D * H for full scopes). Only the timing uses the GPU clock; the check is a CPU double
 * reference on --check-rows sampled rows (all rows when --check-rows 0).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "f3d_config.h"
#include "app/cli.h"
#include "kernels/kernels.h"

#if F3D_HAVE_CUDA
#include <cuda_runtime.h>
#endif

static void attn_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static void attn_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("f3dbench: attn: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void usage(FILE *f) {
  fputs("usage: f3dbench attn [options]\n"
        "  --rows N            rows (points), default 1048576 (k/M suffixes allowed)\n"
        "  --heads H           heads, default 4\n"
        "  --head-dim D        16, 32, 64 or 128 (default 16)\n"
        "  --bucket-size S     rows per bucket, default 512\n"
        "  --scope-buckets K   buckets per scope, default 8\n"
        "  --plan P            plain | swin:K | stride:S | patches (default plain)\n"
        "  --dtype T           fp16 | bf16 (default fp16)\n"
        "  --variant LIST      v0, v1, ... (comma-separated), cpu, all, or auto (default): v9, the fastest\n"
        "                      measured on H100/H200, or v24 where v9 cannot run (no sm_90a image); cpu is the\n"
        "                      double reference: about 13 s at --rows 4k, an hour at the default rows\n"
        "  --check / --no-check  compare with the double reference before timing (default --check)\n"
        "  --check-rows N      sampled rows for the check (0 = all rows), default 256\n"
        "  --packed            q, k, v as views of one [rows, 3, H, D] tensor\n"
        "  --reps N            timed launches (default 30), --warmup N (default 5)\n"
        "  --seed N            input seed (default 1)\n"
        "  --save DIR          write q, k, v, o, lse, bucket_start, bucket_count, scope as .npy, all or none\n"
        "                      of them (DIR, or its parent, must exist: checked before the run)\n",
        f);
}

/* NAME.npy staged in st (f3d_stage_path names it in the list before it is written, so an abort removes it), its
 * elements `size` bytes of the type descr (f3d_npy_write). */
static hx_status npy_write(f3d_stage *st, const char *name, const char *descr, size_t size, const size_t *shape,
                           int ndim, const void *data, hx_err *err) {
  char path[4300], file[40];
  snprintf(file, sizeof file, "%s.npy", name);
  HX_TRY(f3d_stage_path(st, path, sizeof path, file, err));
  return f3d_npy_write(path, descr, size, data, ndim, shape, err);
}

/* ---- configuration -------------------------------------------------------------------------------- */

typedef struct attn_opts {
  uint64_t rows, seed;
  int heads, head_dim, bucket, scope_buckets, reps, warmup, check, packed;
  int64_t check_rows;
  battn_dtype dtype;
  const char *plan, *variant, *save;
} attn_opts;

static hx_status build_plan(const attn_opts *o, battn_plan *pl, hx_err *err) {
  const char *p = o->plan;
  if (strcmp(p, "plain") == 0)
    return battn_plan_uniform(pl, BATTN_PLAN_PLAIN, 0, (uint32_t)o->scope_buckets, (int64_t)o->rows,
                              (uint32_t)o->bucket, err);
  if (strncmp(p, "swin:", 5) == 0 || strncmp(p, "stride:", 7) == 0) {
    int swin = p[1] == 'w';
    uint64_t a; /* f3d_parse_count (decimal, 4k style): strtoul took "-1" as 2^64-1 and cut 2^32+1 down to 1 */
    if (f3d_parse_count(p + (swin ? 5 : 7), &a) || a > UINT32_MAX)
      return hx_errf(err, HX_EINVAL, "bad plan '%s' (%s takes a count of buckets)", p, swin ? "swin:K" : "stride:S");
    return battn_plan_uniform(pl, swin ? BATTN_PLAN_SWIN : BATTN_PLAN_STRIDE, (uint32_t)a,
                              (uint32_t)o->scope_buckets, (int64_t)o->rows, (uint32_t)o->bucket, err);
  }
  if (strcmp(p, "patches") == 0) {
    uint64_t P = (uint64_t)o->bucket * (uint64_t)o->scope_buckets;
    uint64_t np = (o->rows + P - 1) / P;
    int64_t *cu = malloc((np + 1) * sizeof *cu);
    if (!cu) return hx_errf(err, HX_ENOMEM, "no memory");
    for (uint64_t i = 0; i <= np; ++i) cu[i] = (int64_t)(i * P < o->rows ? i * P : o->rows);
    hx_status s = battn_plan_patches(pl, cu, (uint32_t)np, (uint32_t)o->bucket, err);
    free(cu);
    return s;
  }
  return hx_errf(err, HX_EINVAL, "unknown plan '%s' (plain, swin:K, stride:S, patches)", p);
}

static double plan_flops(const battn_plan *pl, int H, int D) {
  double f = 0.0;
  for (uint32_t s = 0; s < pl->num_scopes; ++s) {
    double r = 0.0;
    for (uint32_t j = 0; j < pl->buckets_per_scope; ++j) {
      uint32_t b = pl->scope[(size_t)s * pl->buckets_per_scope + j];
      if (b != BATTN_EMPTY) r += pl->bucket_count[b];
    }
    f += r * r;
  }
  return 4.0 * f * H * D;
}


/* ---- one variant ------------------------------------------------------------------------------------ */

typedef struct attn_data {
  battn_params hp;       /* host pointers */
  battn_plan plan;
  uint16_t *h_in, *h_o;  /* h_in: q,k,v (one buffer, packed or three blocks) */
  float *h_lse;
  size_t n_in, n_o;
  int64_t *sel;
  int64_t n_sel;
} attn_data;

static void report_check(const char *vname, const battn_check_report *r, hx_status s, const hx_err *e) {
  printf("check %-4s rows %lld: max|o-ref| %.3e naive %.3e tol %.3e lse %.2e -> %s\n", vname,
         (long long)r->rows_checked, r->o_err, r->o_naive_err, r->o_tol, r->lse_err, s == HX_OK ? "pass" : "FAIL");
  if (s != HX_OK) attn_fail("%s: %s", vname, e->msg);
}

static hx_status cpu_forward(void *arg, void *stream, hx_err *err) {
  (void)stream;
  attn_data *a = arg;
  return battn_forward_cpu(&a->hp, &a->plan, err);
}

static int run_cpu(const attn_opts *o, attn_data *a) {
  hx_err e = {HX_OK, ""};
  const hx_closure c = {cpu_forward, NULL, a, 0.0, 0.0};
  const hx_timing_opts one = {0, 1}; /* the double reference is slow: one run, none discarded */
  double ms = 0.0;
  if (hx_time(&ms, HX_CLOCK_CPU, &one, &c, NULL, &e) != HX_OK) {
    attn_fail("cpu: %s", e.msg);
    return 1;
  }
  double fl = plan_flops(&a->plan, o->heads, o->head_dim);
  printf("attn cpu  %s D=%d H=%d rows=%llu plan=%s: %.3f ms, %.4f TFLOP/s (one run, double reference)\n",
         o->dtype == BATTN_F16 ? "fp16" : "bf16", o->head_dim, o->heads, (unsigned long long)o->rows, o->plan,
         ms, fl / (ms * 1e-3) / 1e12);
  return 0;
}

#if F3D_HAVE_CUDA
/* One launch of a variant, for the harness's GPU clock (it records the events around run() on `stream`). */
typedef struct attn_launch {
  const battn_variant *var;
  const battn_params *p;
  void *scratch;
  size_t *scratch_bytes;
} attn_launch;

static hx_status attn_launch_run(void *arg, void *stream, hx_err *err) {
  const attn_launch *l = arg;
  return l->var->fn(l->p, l->scratch, l->scratch_bytes, stream, err);
}

#define CU(call)                                                                                       \
  do {                                                                                                 \
    cudaError_t ce_ = (call);                                                                          \
    if (ce_ != cudaSuccess) {                                                                          \
      attn_fail("%s: %s", #call, cudaGetErrorString(ce_));                                             \
      goto done;                                                                                       \
    }                                                                                                  \
  } while (0)

/* One GPU variant: check, time, report; *skipped = 1 when the variant cannot run here (HX_EUNSUPPORTED). The
 * caller checked the device and this build's code for it (f3d_gpu_check). */
static int run_gpu(const attn_opts *o, attn_data *a, const battn_variant *var, int last, int *skipped) {
  int rc = 1;
  void *d_in = NULL, *d_o = NULL, *d_s = NULL;
  float *d_l = NULL;
  double *ms = NULL;
  uint32_t *d_st = NULL, *d_ct = NULL, *d_sc = NULL;
  cudaStream_t stream = NULL;
  hx_err e = {HX_OK, ""};
  const battn_plan *pl = &a->plan;
  size_t nsc = (size_t)pl->num_scopes * pl->buckets_per_scope;
  CU(cudaStreamCreate(&stream));
  CU(cudaMalloc(&d_in, a->n_in * 2));
  CU(cudaMalloc(&d_o, a->n_o * 2));
  CU(cudaMalloc((void **)&d_l, (size_t)o->rows * (size_t)o->heads * 4 + 4));
  CU(cudaMalloc((void **)&d_st, (size_t)pl->num_buckets * 4 + 4));
  CU(cudaMalloc((void **)&d_ct, (size_t)pl->num_buckets * 4 + 4));
  CU(cudaMalloc((void **)&d_sc, nsc * 4 + 4));
  CU(cudaMemcpy(d_in, a->h_in, a->n_in * 2, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(d_st, pl->bucket_start, (size_t)pl->num_buckets * 4, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(d_ct, pl->bucket_count, (size_t)pl->num_buckets * 4, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(d_sc, pl->scope, nsc * 4, cudaMemcpyHostToDevice));
  CU(cudaMemset(d_o, 0xFF, a->n_o * 2)); /* poison: NaN in fp16 and bf16 */
  CU(cudaMemset(d_l, 0xFF, (size_t)o->rows * (size_t)o->heads * 4));
  battn_params p = a->hp;
  const uint16_t *base = d_in;
  p.q = base + ((const uint16_t *)a->hp.q - a->h_in);
  p.k = base + ((const uint16_t *)a->hp.k - a->h_in);
  p.v = base + ((const uint16_t *)a->hp.v - a->h_in);
  p.o = d_o, p.lse = d_l;
  p.bucket_start = d_st, p.bucket_count = d_ct, p.scope = d_sc;
  size_t scratch = 0;
  hx_status s0 = var->fn(&p, NULL, &scratch, stream, &e);
  if (s0 == HX_EUNSUPPORTED) { /* e.g. v6 off an sm_90a image: skip this variant, not an error */
    printf("attn %-3s skipped: %s\n", var->name, e.msg);
    *skipped = 1;
    rc = 0;
    goto done;
  }
  if (s0 != HX_OK) {
    attn_fail("%s: %s", var->name, e.msg);
    goto done;
  }
  if (scratch) CU(cudaMalloc(&d_s, scratch));
  void *sp = d_s ? d_s : (void *)d_in; /* any non-NULL pointer: the variant needs no scratch */
  if (var->fn(&p, sp, &scratch, stream, &e) != HX_OK) {
    attn_fail("%s: %s", var->name, e.msg);
    goto done;
  }
  CU(cudaStreamSynchronize(stream));
  if (o->check || (o->save && last)) {
    CU(cudaMemcpy(a->h_o, d_o, a->n_o * 2, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(a->h_lse, d_l, (size_t)o->rows * (size_t)o->heads * 4, cudaMemcpyDeviceToHost));
  }
  if (o->check) {
    battn_check_report r;
    hx_status s = battn_check_rows(&a->hp, pl, a->h_o, a->h_lse, a->sel, a->n_sel, &r, &e);
    report_check(var->name, &r, s, &e);
    if (s != HX_OK) goto done; /* no timing for a variant that computes the wrong thing */
  }
  ms = malloc((size_t)o->reps * sizeof *ms);
  if (!ms) {
    attn_fail("no memory");
    goto done;
  }
  const attn_launch launch = {var, &p, sp, &scratch};
  const hx_closure c = {attn_launch_run, NULL, (void *)&launch, 0.0, 0.0};
  const hx_timing_opts to = {(uint32_t)o->warmup, (uint32_t)o->reps};
  hx_stats_desc d;
  if (hx_time(ms, HX_CLOCK_GPU, &to, &c, stream, &e) != HX_OK || hx_stats_describe(&d, ms, (size_t)o->reps, &e) != HX_OK) {
    attn_fail("%s: %s", var->name, e.msg);
    goto done;
  }
  double fl = plan_flops(pl, o->heads, o->head_dim);
  struct cudaDeviceProp prop;
  int dev = 0;
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  printf("attn %-3s %s D=%-3d H=%d rows=%llu bucket=%d scope=%d plan=%-9s%s %s: median %.4f ms "
         "[min %.4f max %.4f, %d reps] %.1f TFLOP/s\n",
         var->name, o->dtype == BATTN_F16 ? "fp16" : "bf16", o->head_dim, o->heads,
         (unsigned long long)o->rows, o->bucket, o->scope_buckets, o->plan, o->packed ? " packed" : "", prop.name, d.median,
         d.min, d.max, o->reps, fl / (d.median * 1e-3) / 1e12);
  rc = 0;
done:
  if (stream) cudaStreamDestroy(stream);
  cudaFree(d_in), cudaFree(d_o), cudaFree(d_l), cudaFree(d_st), cudaFree(d_ct), cudaFree(d_sc), cudaFree(d_s);
  free(ms);
  return rc;
}
#endif

/* What a save writes (f3d_stage_save's arg). */
typedef struct attn_save {
  const attn_opts *o;
  attn_data *a;
} attn_save;

/* Every file written into st's staging folder (f3d_stage_save commits them together or aborts). */
static hx_status save_files(f3d_stage *st, void *arg, hx_err *err) {
  const attn_opts *o = ((const attn_save *)arg)->o;
  attn_data *a = ((const attn_save *)arg)->a;
  const char *dt = o->dtype == BATTN_F16 ? "<f2" : "<u2"; /* numpy has no bf16: raw bits as uint16 */
  const size_t R = (size_t)o->rows, H = (size_t)o->heads, D = (size_t)o->head_dim;
  size_t blk = (size_t)(R * H * D);
  uint16_t *tmp = malloc(blk * 2 + 2);
  if (!tmp) return hx_errf(err, HX_ENOMEM, "no memory");
  const void *srcs[3] = {a->hp.q, a->hp.k, a->hp.v};
  const int64_t rs[3] = {a->hp.q_row_stride, a->hp.k_row_stride, a->hp.v_row_stride};
  const char *names[3] = {"q", "k", "v"};
  const size_t shape[3] = {R, H, D};
  for (int t = 0; t < 3; ++t) {
    for (size_t r = 0; r < R; ++r)
      memcpy(tmp + r * H * D, (const uint16_t *)srcs[t] + (int64_t)r * rs[t], H * D * 2);
    hx_status s = npy_write(st, names[t], dt, 2, shape, 3, tmp, err);
    if (s != HX_OK) {
      free(tmp);
      return s;
    }
  }
  free(tmp);
  HX_TRY(npy_write(st, "o", dt, 2, shape, 3, a->h_o, err));
  const size_t ls[2] = {R, H};
  HX_TRY(npy_write(st, "lse", "<f4", 4, ls, 2, a->h_lse, err));
  const size_t nb[1] = {a->plan.num_buckets};
  HX_TRY(npy_write(st, "bucket_start", "<u4", 4, nb, 1, a->plan.bucket_start, err));
  HX_TRY(npy_write(st, "bucket_count", "<u4", 4, nb, 1, a->plan.bucket_count, err));
  const size_t ss[2] = {a->plan.num_scopes, a->plan.buckets_per_scope};
  HX_TRY(npy_write(st, "scope", "<u4", 4, ss, 2, a->plan.scope, err));
  return HX_OK;
}

/* --save: all of q, k, v, o, lse, bucket_start, bucket_count and scope, or none of them (f3d_stage_save, cli.h): a
 * failure while writing, or a destination that is a folder, leaves DIR as it was. */
static hx_status save_all(const attn_opts *o, attn_data *a, hx_err *err) {
  attn_save sv = {o, a};
  return f3d_stage_save(o->save, "attn", save_files, &sv, err);
}

int f3d_cmd_attn(int argc, char **argv) {
  attn_opts o = {1048576, 1, 4, 16, 512, 8, 30, 5, 1, 0, 256, BATTN_F16, "plain", "auto", NULL};
  enum { O_ROWS = 256, O_HEADS, O_HD, O_BS, O_SB, O_PLAN, O_DT, O_VAR, O_CHECK, O_NOCHECK, O_CROWS,
         O_PACKED, O_REPS, O_WARM, O_SEED, O_SAVE, O_HELP };
  static const struct option lo[] = {
      {"rows", required_argument, 0, O_ROWS},        {"heads", required_argument, 0, O_HEADS},
      {"head-dim", required_argument, 0, O_HD},      {"bucket-size", required_argument, 0, O_BS},
      {"scope-buckets", required_argument, 0, O_SB}, {"plan", required_argument, 0, O_PLAN},
      {"dtype", required_argument, 0, O_DT},         {"variant", required_argument, 0, O_VAR},
      {"check", no_argument, 0, O_CHECK},            {"no-check", no_argument, 0, O_NOCHECK},
      {"check-rows", required_argument, 0, O_CROWS}, {"packed", no_argument, 0, O_PACKED},
      {"reps", required_argument, 0, O_REPS},        {"warmup", required_argument, 0, O_WARM},
      {"seed", required_argument, 0, O_SEED},        {"save", required_argument, 0, O_SAVE},
      {"help", no_argument, 0, O_HELP},              {0, 0, 0, 0}};
  optind = 1;
  int c;
  uint64_t u = 0;
  static const char *const dtypes[] = {"fp16", "bf16"}; /* in battn_dtype's order */
  _Static_assert(BATTN_F16 == 0 && BATTN_BF16 == 1, "dtypes[] follows battn_dtype");
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    int bad = 0, dt = 0; /* bad: 2 after a message naming the option, its value and what it takes */
    switch (c) {
    case O_ROWS: bad = f3d_opt_count("attn", "--rows", optarg, 1, INT32_MAX, &o.rows); break;
    case O_HEADS: bad = f3d_opt_count("attn", "--heads", optarg, 1, 65535, &u), o.heads = (int)u; break;
    case O_HD: { /* the kernels' head dims; checked here, so a wrong one is a usage error before any device */
      static const char *const dims[] = {"16", "32", "64", "128"};
      bad = f3d_opt_word("attn", "--head-dim", optarg, dims, 4, &dt), o.head_dim = atoi(dims[dt]);
      break;
    }
    case O_BS: bad = f3d_opt_count("attn", "--bucket-size", optarg, 1, 1u << 30, &u), o.bucket = (int)u; break;
    case O_SB:
      bad = f3d_opt_count("attn", "--scope-buckets", optarg, 1, BATTN_MAX_SCOPE_BUCKETS, &u);
      o.scope_buckets = (int)u;
      break;
    case O_PLAN: o.plan = optarg; break;
    case O_DT: bad = f3d_opt_word("attn", "--dtype", optarg, dtypes, 2, &dt), o.dtype = (battn_dtype)dt; break;
    case O_VAR: o.variant = optarg; break;
    case O_CHECK: o.check = 1; break;
    case O_NOCHECK: o.check = 0; break;
    case O_CROWS:
      bad = f3d_opt_count("attn", "--check-rows", optarg, 0, INT32_MAX, &u), o.check_rows = (int64_t)u;
      break;
    case O_PACKED: o.packed = 1; break;
    case O_REPS: bad = f3d_opt_count("attn", "--reps", optarg, 1, 100000, &u), o.reps = (int)u; break;
    case O_WARM: bad = f3d_opt_count("attn", "--warmup", optarg, 0, 100000, &u), o.warmup = (int)u; break;
    case O_SEED: bad = f3d_opt_count("attn", "--seed", optarg, 0, (uint64_t)1e15, &o.seed); break;
    case O_SAVE: o.save = optarg; break;
    case O_HELP: usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
    if (bad) return 2;
  }
  if (optind < argc) {
    attn_fail("unexpected argument '%s'", argv[optind]);
    return 2;
  }
  /* the variants to run */
  size_t nv = 0;
  const battn_variant *vars = battn_variants(&nv);
  const battn_variant *run[16];
  size_t nrun = 0;
  int want_cpu = strcmp(o.variant, "cpu") == 0;
  /* auto: the recommended variant (README), v9, and v24 in its place where v9 reports it cannot run; a user
   * who does not name a variant gets the fastest one, not the first kernel written */
  const int autov = strcmp(o.variant, "auto") == 0;
  if (autov) {
    run[nrun++] = battn_variant_find("v9");
    run[nrun++] = battn_variant_find("v24");
    if (!run[0] || !run[1]) {
      attn_fail("--variant auto: v9 or v24 is missing from the variant table");
      return 1;
    }
  } else if (strcmp(o.variant, "all") == 0) {
    for (size_t i = 0; i < nv && nrun < 16; ++i) run[nrun++] = &vars[i];
  } else if (!want_cpu) { /* a name or a comma-separated list */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", o.variant);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && nrun < 16; tok = strtok_r(NULL, ",", &save)) {
      const battn_variant *v = battn_variant_find(tok);
      if (!v) {
        if (strcmp(tok, "cpu") == 0 || strcmp(tok, "all") == 0 || strcmp(tok, "auto") == 0)
          attn_fail("'%s' runs alone (--variant %s), not in a list", tok, tok);
        else attn_fail("unknown variant '%s' (--help lists them)", tok);
        return 2;
      }
      run[nrun++] = v;
    }
    if (nrun == 0) {
      attn_fail("--variant '%s' names no variant", o.variant);
      return 2;
    }
  }
  attn_data a;
  memset(&a, 0, sizeof a);
  hx_err e = {HX_OK, ""};
  if (o.save && f3d_save_dir_check(o.save, &e) != HX_OK) { /* before the run, not after it */
    attn_fail("--save: %s", e.msg);
    return 2;
  }
  if (build_plan(&o, &a.plan, &e) != HX_OK) {
    attn_fail("%s", e.msg);
    return 2;
  }
  int rc = 1;
#if F3D_HAVE_CUDA
  /* a device with machine code of this build for it, before any input is made (GPU variants only) */
  if (nrun && f3d_gpu_check(NULL, &e) != HX_OK) {
    attn_fail("%s: %s (try --variant cpu)", run[0]->name, e.msg);
    goto out;
  }
#endif
  const size_t hd = (size_t)o.heads * (size_t)o.head_dim, R = (size_t)o.rows;
  a.n_in = 3 * R * hd;
  a.n_o = R * hd;
  a.h_in = malloc(a.n_in * 2 + 16);
  a.h_o = malloc(a.n_o * 2 + 16);
  a.h_lse = malloc(R * (size_t)o.heads * 4 + 4);
  int64_t ns = o.check_rows == 0 || o.check_rows > (int64_t)R ? (int64_t)R : o.check_rows;
  a.sel = malloc((size_t)(ns ? ns : 1) * sizeof *a.sel);
  if (!a.h_in || !a.h_o || !a.h_lse || !a.sel) {
    attn_fail("no host memory for %llu rows", (unsigned long long)o.rows);
    goto out;
  }
  battn_params_init(&a.hp, (int64_t)R, o.heads, o.head_dim, o.dtype, &a.plan);
  if (o.packed) { /* [rows, 3, H, D] */
    a.hp.q = a.h_in, a.hp.k = a.h_in + hd, a.hp.v = a.h_in + 2 * hd;
    a.hp.q_row_stride = a.hp.k_row_stride = a.hp.v_row_stride = (int64_t)(3 * hd);
  } else {
    a.hp.q = a.h_in, a.hp.k = a.h_in + R * hd, a.hp.v = a.h_in + 2 * R * hd;
  }
  a.hp.o = a.h_o, a.hp.lse = a.h_lse;
  if (battn_validate(&a.hp, &a.plan, &e) != HX_OK) {
    attn_fail("%s", e.msg);
    rc = 2;
    goto out;
  }
  for (size_t r = 0; r < R; ++r)
    for (size_t t = 0; t < 3; ++t) {
      uint16_t *dst = (uint16_t *)(t == 0 ? a.hp.q : t == 1 ? a.hp.k : a.hp.v) + (int64_t)r * a.hp.q_row_stride;
      double amp = t == 2 ? 1.0 : 2.0;
      for (size_t i = 0; i < hd; ++i)
        dst[i] = battn_from_float(o.dtype, (float)(amp * (2.0 * hx_rng_unit(o.seed, t, r * hd + i) - 1.0)));
    }
  /* sampled rows: first, last, and a spread of random rows */
  for (int64_t i = 0; i < ns; ++i)
    a.sel[i] = ns == (int64_t)R ? i : i == 0 ? 0 : i == 1 ? (int64_t)R - 1 : (int64_t)(hx_rng_u64(o.seed, 99, (uint64_t)i) % R);
  a.n_sel = ns;
  printf("attn: rows %llu, %u buckets, %u scopes of %u buckets (max %u rows), plan %s, %.3g GFLOP counted\n",
         (unsigned long long)o.rows, a.plan.num_buckets, a.plan.num_scopes, a.plan.buckets_per_scope,
         a.plan.max_scope_rows, o.plan, plan_flops(&a.plan, o.heads, o.head_dim) / 1e9);
  rc = 0;
  if (want_cpu) {
    rc = run_cpu(&o, &a);
    if (rc == 0 && o.check) {
      battn_check_report r;
      hx_status s = battn_check_rows(&a.hp, &a.plan, a.h_o, a.h_lse, a.sel, a.n_sel, &r, &e);
      report_check("cpu", &r, s, &e);
      rc = s != HX_OK;
    }
  }
  int saveable = nrun == 0; /* the host output buffers hold the result that --save writes */
#if F3D_HAVE_CUDA
  size_t ran = 0;
  for (size_t i = 0; i < nrun; ++i) {
    int skipped = 0;
    const int last = autov || i + 1 == nrun;
    rc |= run_gpu(&o, &a, run[i], last, &skipped);
    if (!skipped) ran++, saveable = last;
    if (autov && !skipped) break; /* v9 ran (or failed): v24 was only its stand-in */
    if (autov && i + 1 < nrun) printf("attn: --variant auto: running %s instead\n", run[i + 1]->name);
  }
  if (nrun && !ran && rc == 0) { /* every variant skipped: nothing was checked or timed */
    attn_fail("no variant could run on this device (see 'skipped' above)");
    rc = 1;
  }
#else
  if (nrun) {
    attn_fail("%s: this build has no CUDA (try --variant cpu)", run[0]->name);
    rc = 1;
  }
#endif
  if (rc == 0 && o.save && !saveable) { /* e.g. --variant v1,v6 --save off sm_90a: v6's output was never made */
    attn_fail("--save: the last variant did not run here; nothing saved");
    rc = 1;
  }
  if (rc == 0 && o.save) {
    if (save_all(&o, &a, &e) != HX_OK) {
      attn_fail("--save: %s", e.msg);
      rc = 1;
    } else {
      printf("attn: wrote .npy files to %s\n", o.save);
    }
  }
out:
  battn_plan_free(&a.plan);
  free(a.h_in), free(a.h_o), free(a.h_lse), free(a.sel);
  return rc;
}
