/*
 * harness.h - the one public header of the measurement library (prefix hx_): results writer and reader,
 * timing, NVBench-style measurement, CUPTI counters, NVTX ranges, the device arena, statistics, the
 * regression gate and plots. Built on the base layer (base/base.h: status codes, errors, RNG), which it
 * includes; plain C11, also compiles as CUDA C++.
 */
#ifndef F3D_HARNESS_H
#define F3D_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "base/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== Sections below are filled in by their modules; keep each section self-contained. ============ */

/* ---- results (harness/results.c) ---- */
/* One run writes results/<run-id>/ (run-id = UTC timestamp + short git hash, "20261121T224100Z-a711150"):
 *   results.csv  workload,n_points,batch,pipeline,kernel,variant,metric,value,unit  (one row per metric)
 *   samples.csv  workload,n_points,batch,pipeline,kernel,variant,metric,sample,value,unit  (raw samples)
 *   context.csv  key,value  (git commit, device, build, seed, ..., and status = running|complete|...)
 * Invariant: results.csv and samples.csv exist only for a run that finished; while a run is going (or
 * after it was interrupted) rows live in "*.csv.partial" files and an INCOMPLETE file names the reason.
 * Every file that appears under its final name was written to a temporary name, flushed and renamed.
 * CSV is RFC 4180: fields holding a comma, double quote, CR or LF are quoted, quotes doubled; records
 * end with LF (not CRLF, so gnuplot and shell tools read the last column cleanly). */
#define HX_RESULTS_SCHEMA 1
#define HX_RESULTS_HEADER "workload,n_points,batch,pipeline,kernel,variant,metric,value,unit"
#define HX_SAMPLES_HEADER "workload,n_points,batch,pipeline,kernel,variant,metric,sample,value,unit"
/* What a row may hold, checked when it is written (hx_results_add) and when it is read (hx_run_load): n_points at most
 * HX_MAX_POINTS (no cloud is larger), and no negative value in a unit that cannot go below zero (hx_unit_not_negative:
 * a time, a size, a count, a percentage or a rate). A rate is a unit ending in "/s" (hx_unit_is_rate), higher being
 * better for the gate. */
#define HX_MAX_POINTS 1000000000000ull
int hx_unit_is_rate(const char *unit);
int hx_unit_not_negative(const char *unit);

/* Write one CSV field with RFC 4180 quoting (NULL writes an empty field). Returns 0 or EOF. */
int hx_csv_field(FILE *f, const char *s);
/* Split one CSV record (RFC 4180, quoted fields may hold commas, quotes and newlines) read from f.
 * *fields receives up to cap pointers into buf (NUL-terminated, unquoted); *count the field number.
 * Returns HX_OK, HX_EIO at end of file (nothing read), HX_EFORMAT for a malformed or too long record. */
hx_status hx_csv_read(FILE *f, char *buf, size_t buf_size, char **fields, size_t cap, size_t *count,
                      hx_err *err);

/* run-id for time t (UTC) and a short git hash (NULL or "" gives "nogit"): "YYYYmmddTHHMMSSZ-<hash>".
 * Returns HX_EINVAL if the buffer is too small or the hash holds anything but [0-9a-zA-Z]. */
hx_status hx_run_id(char *buf, size_t cap, int64_t unix_time, const char *git_hash, hx_err *err);

/* The identity of one result row (everything but metric, value, unit). Strings must not be NULL. */
typedef struct hx_key {
  const char *workload; /* "lidar", "uniform", ... or the stem of a recorded file */
  uint64_t n_points;    /* points per cloud after voxel deduplication */
  uint32_t batch;       /* clouds in the batch */
  const char *pipeline; /* registered sweep pipeline ("workload", "ptv3", "flash3d", ...) */
  const char *kernel;   /* stage inside the pipeline ("generate", "serialize", "psh", ...) */
  const char *variant;  /* "cpu" for CPU references, "v0", "v1", ... for GPU variants */
} hx_key;

typedef struct hx_results hx_results; /* an open run directory; opaque */

/* Create <root>/<run_id>/ (root is created if missing; the run directory must not exist), write
 * INCOMPLETE and context.csv with status=running, open the partial row files. */
hx_status hx_results_open(hx_results **out, const char *root, const char *run_id, hx_err *err);
const char *hx_results_dir(const hx_results *r);
/* Add or replace a context key (written at open/commit/abort time, in insertion order). */
hx_status hx_results_context(hx_results *r, const char *key, const char *value, hx_err *err);
hx_status hx_results_contextf(hx_results *r, hx_err *err, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Append one row to results (value printed with %.10g; NaN/Inf are refused with HX_EINVAL). */
hx_status hx_results_add(hx_results *r, const hx_key *k, const char *metric, double value,
                         const char *unit, hx_err *err);
/* Append n raw samples (sample index 0..n-1) of one metric to samples. */
hx_status hx_results_add_samples(hx_results *r, const hx_key *k, const char *metric,
                                 const double *v, size_t n, const char *unit, hx_err *err);
/* Rewrite context.csv (still status=running) and flush the partial row files, e.g. once the context
 * is filled in and after every sweep case, so a killed run leaves its context and rows readable. */
hx_status hx_results_flush(hx_results *r, hx_err *err);
/* Finish: flush and rename the partial files to results.csv / samples.csv, rewrite context.csv with
 * status=complete, remove INCOMPLETE. On failure the run stays marked incomplete. */
hx_status hx_results_commit(hx_results *r, hx_err *err);
/* Give up (error or signal): delete the partial files, write context.csv with status=<status> and
 * INCOMPLETE holding `reason`. Never leaves a results.csv. */
hx_status hx_results_abort(hx_results *r, const char *status, const char *reason, hx_err *err);
/* The end of a unit of work that can stand alone (a sweep case): hx_results_flush, then remember where the
 * partial row files end, so hx_results_stop keeps exactly the rows written up to here. */
hx_status hx_results_checkpoint(hx_results *r, hx_err *err);
/* Stop early keeping what was finished (a signal): the partial files are cut back to the last checkpoint,
 * synced and renamed to results.csv / samples.csv, and the run stays marked as hx_results_abort marks it
 * (INCOMPLETE holding "<status>: <reason>", context status and status_reason), so it reads as incomplete.
 * Without a checkpoint, or when keeping fails, it is hx_results_abort (no rows kept). */
hx_status hx_results_stop(hx_results *r, const char *status, const char *reason, hx_err *err);
/* Remove the run directory of a run that keeps nothing measured (open, aborted, or stopped before any checkpoint: no
 * results.csv): its files and the directory itself, so a run that measured nothing leaves no directory (nor blocks
 * its run-id). HX_EINVAL for a committed run or one that kept rows; HX_EIO when the directory holds anything else
 * (it stays). Close it after. */
hx_status hx_results_discard(hx_results *r, hx_err *err);
/* Free; a run neither committed nor aborted is aborted with status "abandoned". NULL is fine. */
void hx_results_close(hx_results *r);

/* Write `size` bytes to path atomically: path.tmp.<pid>, fflush + fsync, rename; a symbolic link is followed to
 * the regular file it ends at, which is replaced so (the link kept); a target that hx_out_resolve (base.h) says
 * is written in place is opened and written (no fsync, no rename). */
hx_status hx_write_file_atomic(const char *path, const void *data, size_t size, hx_err *err);
/* hx_write_file_atomic's first half, for a caller that must put several things in place together: the bytes
 * written whole and synced to tmp ("<dest>.tmp.<pid>", cap bytes each), dest the file the rename is to replace;
 * the caller renames tmp over dest, or unlinks tmp. On failure nothing is left (tmp[0] = 0). *in_place 1, nothing
 * written, tmp[0] = 0: path is one hx_write_file_atomic writes in place. */
hx_status hx_stage_file(const char *path, const void *data, size_t size, char *tmp, char *dest, size_t cap,
                        int *in_place, hx_err *err);

/* ---- timing (harness/timing.c, harness/timing_gpu.cu) ---- */
/* One interface for CPU and GPU timing. The timed work is a closure: run() does one repetition (on the
 * given CUDA stream for the GPU clock; stream is NULL for the CPU clock); the optional reset() runs
 * before every repetition, untimed (restore inputs that run() consumes, or queue an L2 flush on the
 * stream the caller times on: it is ordered before the start event). `warmup` repetitions run first
 * and are discarded, then `reps` samples are kept in milliseconds.
 * CPU clock: CLOCK_MONOTONIC around run(). GPU clock: CUDA events recorded around run() on a
 * non-default stream (created when the caller passes NULL), elapsed time after the stop event
 * completes. A CPU-only build returns HX_ENODEV for the GPU clock. The stricter NVBench-style GPU
 * discipline (L2 flush, blocking kernel, noise target) is hx_meter_measure below.
 * A closure may declare the work of one run() (napkin math, counted by the caller): bytes moved and
 * floating-point operations; 0 declares nothing. The measurement layer then writes the rate rows at the
 * median time itself (hx_rates_record): no median has to travel back up to the caller. */
typedef struct hx_closure {
  hx_status (*run)(void *arg, void *stream, hx_err *err);
  hx_status (*reset)(void *arg, hx_err *err); /* optional */
  void *arg;
  double bytes; /* bytes one run() reads + writes; 0: not declared */
  double flops; /* floating-point operations of one run(); 0: not declared */
} hx_closure;
/* HX_OK when c can be timed: run is set, bytes and flops finite and >= 0 (HX_EINVAL naming the field). */
hx_status hx_closure_check(const hx_closure *c, hx_err *err);

typedef enum hx_clock { HX_CLOCK_CPU = 0, HX_CLOCK_GPU } hx_clock;

typedef struct hx_timing_opts {
  uint32_t warmup; /* discarded repetitions before sampling (default 1, as the paper drops its first) */
  uint32_t reps;   /* kept samples (default 20, as the paper) */
} hx_timing_opts;
#define HX_TIMING_DEFAULT_WARMUP 1u
#define HX_TIMING_DEFAULT_REPS 20u
#define HX_TIMING_MAX_REPS 100000u

hx_timing_opts hx_timing_defaults(void);
/* Milliseconds from CLOCK_MONOTONIC. */
double hx_now_ms(void);
/* Time a closure: samples_ms receives opts->reps values. A failing run()/reset() stops and returns. */
hx_status hx_time(double *samples_ms, hx_clock clock, const hx_timing_opts *opts, const hx_closure *c,
                  void *stream, hx_err *err);
/* The GPU clock on its own (timing_gpu.cu; stub returns HX_ENODEV). */
hx_status hx_time_gpu(double *samples_ms, const hx_timing_opts *opts, const hx_closure *c, void *stream,
                      hx_err *err);

/* ---- statistics (harness/stats.c) ---- */
/* The one summary of samples is hx_stats_describe (below, with the measurement's statistics). */

/* ---- device (harness/device.cu or device_stub.c) ---- */
/* What the context file and `f3dbench info` report about a CUDA device. Clocks are the peak rates
 * the driver reports (kHz); the SM clock actually reached under load is sampled per cold sample by
 * hx_meter_measure (hx_measurement.cold_sm_mhz). */
typedef struct hx_device_info {
  int index;
  char name[256];
  int cc_major, cc_minor;
  int sm_count;
  int l2_bytes;
  size_t mem_bytes;
  int sm_clock_khz, mem_clock_khz, mem_bus_bits;
  int driver_version, runtime_version; /* 1000*major + 10*minor, as CUDA reports them */
  char pci_bus_id[32];
} hx_device_info;

/* Number of usable CUDA devices. A CPU-only build, a missing driver or zero devices give *count = 0 and
 * HX_ENODEV with the reason in err (never an abort). */
hx_status hx_device_count(int *count, hx_err *err);
hx_status hx_device_query(hx_device_info *out, int index, hx_err *err);
/* "13.0" style text for a CUDA version number (1000*major + 10*minor). */
void hx_cuda_version_str(char *buf, size_t cap, int version);
/* Why the CUDA runtime found no device, in words, from what it reported (device.c): error_text its error string,
 * insufficient_driver 1 for cudaErrorInsufficientDriver, driver_version cudaDriverGetVersion's (0: no driver
 * installed), runtime_version cudaRuntimeGetVersion's. The runtime says "driver version is insufficient" also
 * when there is no driver at all; this says "no NVIDIA driver" then. */
void hx_no_device_reason(char *buf, size_t cap, const char *error_text, int insufficient_driver, int driver_version,
                         int runtime_version);
/* Whether a build's GPU code runs on a device of compute capability major.minor. archs is the build's list as
 * F3D_CUDA_ARCH spells it ("80,90": nvcc -gencode arch=compute_XY,code=sm_XY, machine code only, no PTX to
 * compile for a newer GPU). Machine code for sm_XY runs on major X with minor >= Y (sm_80 code on an sm_86 or
 * sm_89 device), and so does a family entry ("100f"); an arch-specific entry ("90a") only on exactly X.Y. 1 if
 * some entry runs, else 0 (an empty list, or one with any malformed entry, runs nowhere). */
int hx_arch_runs(const char *archs, int major, int minor);
/* HX_OK when archs runs on the device, else HX_EUNSUPPORTED with a message naming the device, its sm_XY and the
 * build's list, and how to rebuild (F3D_GPU_ARCH=<the list>,XY ./f3d setup): instead of CUDA's "no kernel image
 * is available for execution on the device" at the first launch. */
hx_status hx_arch_check(const char *archs, const hx_device_info *dev, hx_err *err);

/* ---- measurement / counters / stats (stats.c, measure*.cu, cupti.cpp, nvtx.c, resdir.c, plot.c) ---- */
/* Statistics (stats.c). Quantiles interpolate linearly between order statistics (type 7: NumPy's and R's
 * default); std uses n-1. rel_noise = std / |mean|, NVBench's "stdrel" noise. */
typedef struct hx_stats_desc {
  size_t n;
  double mean, std, min, max, median, q1, q3, rel_noise;
} hx_stats_desc;
/* The summary of n >= 1 finite samples (HX_EINVAL otherwise, naming the first bad sample); the input is
 * not modified. median = the mean of the middle two for even n; std 0 for n = 1; rel_noise 0 when the
 * mean is 0. Every published summary (result rows, the lab benches, `f3dbench attn`) comes from here. */
hx_status hx_stats_describe(hx_stats_desc *out, const double *x, size_t n, hx_err *err);
double hx_stats_median(const double *x, size_t n);                          /* NaN for n = 0 */
double hx_stats_quantile_sorted(const double *sorted, size_t n, double q);  /* q in [0, 1] */

/* Two-sided Mann-Whitney U test of samples a and b. u_a counts pairs with a_i > b_j (ties one half).
 * p is exact (null distribution of U) when there are no ties and both samples have at most
 * HX_MWU_EXACT_MAX values, otherwise the tie-corrected normal approximation with continuity correction
 * (SciPy's "asymptotic"). z is the uncorrected standard score of u_a. */
#define HX_MWU_EXACT_MAX 100
typedef struct hx_stats_mwu_result {
  size_t n_a, n_b, ties; /* ties: number of groups of equal values */
  double u_a, u_b, z, p;
  int exact;
} hx_stats_mwu_result;
hx_status hx_stats_mwu(hx_stats_mwu_result *out, const double *a, size_t na, const double *b, size_t nb,
                       hx_err *err);
/* Exact two-sided p-value of U = u for sample sizes (m, n) without ties. */
hx_status hx_stats_mwu_exact_p(double *p_two_sided, size_t m, size_t n, double u, hx_err *err);

/* Regression verdict of `cur` against `base` (lower is better, e.g. times): slower/faster when the U test
 * gives p < alpha AND the relative change of medians (cur - base) / base is at least min_effect in size;
 * same otherwise; unknown with fewer than HX_COMPARE_MIN_SAMPLES samples on either side. */
#define HX_COMPARE_MIN_SAMPLES 3
typedef enum hx_stats_verdict {
  HX_VERDICT_SAME = 0,
  HX_VERDICT_FASTER,
  HX_VERDICT_SLOWER,
  HX_VERDICT_UNKNOWN
} hx_stats_verdict;
hx_stats_verdict hx_stats_compare(const double *base, size_t nb, const double *cur, size_t nc, double alpha,
                                  double min_effect, double *rel_change, double *p_value);
const char *hx_stats_verdict_str(hx_stats_verdict v);
/* The drift inside one run (the regression gate's noise term): x[0..n) in the order the samples were taken, cut
 * into `batches` consecutive batches of n / batches samples (sizes differing by at most one; each sample its own
 * batch when n < batches); returns (largest batch median - smallest) / median of all. NaN for n < 2, batches < 2,
 * a median <= 0 or no memory. */
double hx_stats_batch_spread(const double *x, size_t n, size_t batches);
/* Levenshtein distance (for "did you mean" lists); (size_t)-1 when out of memory. */
size_t hx_edit_distance(const char *a, const char *b);


/* Result directories read back (resdir.c): what `compare`, `plot`, `merge` and the JSON export use.
 * Rows of results.csv have sample = -1; rows of samples.csv carry their sample index. */
typedef struct hx_run_row {
  char *workload, *pipeline, *kernel, *variant, *metric, *unit;
  uint64_t n_points;
  uint32_t batch;
  int64_t sample;
  double value;
} hx_run_row;
typedef struct hx_run_group {
  size_t first, count; /* a run of equal keys in hx_run.samples after hx_run_groups */
} hx_run_group;
typedef struct hx_run {
  char *dir;
  int incomplete; /* INCOMPLETE marker, status != complete, or read from *.csv.partial */
  int from_partial; /* rows read from *.csv.partial: a run killed while writing (its last case may be cut short) */
  hx_run_row *rows;
  size_t n_rows;
  hx_run_row *samples;
  size_t n_samples;
  char **ctx_keys, **ctx_vals;
  size_t n_ctx;
  hx_run_group *groups; /* filled by hx_run_groups */
  size_t n_groups;
} hx_run;
/* Load dir/{context,results,samples}.csv (samples optional). Refused (HX_EFORMAT naming the file and line): a
 * context key given twice, a schema_version missing or other than HX_RESULTS_SCHEMA, a results.csv without rows, a
 * row key (in samples.csv with its sample index) given twice, a NUL byte. On failure nothing stays allocated. */
hx_status hx_run_load(hx_run *out, const char *dir, hx_err *err);
void hx_run_free(hx_run *r);
const char *hx_run_context(const hx_run *r, const char *key); /* NULL when absent */
/* The 16-bit type the run's GPU stages computed in (context "dtype", written by sweep --dtype; "fp16" where absent)
 * and the context key of the cuBLAS ceiling in that type ("ceiling_gemm_<dtype>_tflops", into buf), at which its
 * floors and rooflines are priced. */
const char *hx_run_dtype(const hx_run *r);
const char *hx_run_gemm_ceiling_key(const hx_run *r, char *buf, size_t cap);
/* Why a run is incomplete, for messages, into buf: "incomplete run (interrupted after N of M cases)",
 * "incomplete run (killed while running: ...)", "incomplete run (failed: <reason>)"; "" for a complete run.
 * Returns buf. */
const char *hx_run_incomplete_why(const hx_run *r, char *buf, size_t cap);
/* Order: pipeline, kernel, variant, workload, n_points, batch, metric. */
int hx_run_row_key_cmp(const hx_run_row *a, const hx_run_row *b);
/* Sort the samples by key and sample index and fill groups (one per key). */
hx_status hx_run_groups(hx_run *r, hx_err *err);
/* HX_OK when device and build context keys agree, and the settings that change what every key measures (dtype, "fp16"
 * where a run has none), and git commit too when same_commit; otherwise HX_EINVAL with the first differing key in
 * err. */
hx_status hx_run_check_compatible(const hx_run *a, const hx_run *b, int same_commit, hx_err *err);
hx_status hx_run_write_rows(const char *dir, const hx_run_row *rows, size_t n, int with_sample, hx_err *err);
hx_status hx_run_write_context(const char *dir, const char *const *keys, const char *const *vals, size_t n,
                               hx_err *err);
/* JSON in a schema close to NVBench's: meta{context}, devices[], benchmarks[] (one per pipeline/kernel/
 * variant) -> states[] (one per workload/n_points/batch) -> summaries[] (one per metric) + raw samples. */
hx_status hx_run_write_json(hx_run *r, const char *path, hx_err *err);
/* Join shard outputs into out_dir (a new directory): rows concatenated and sorted; refuses incomplete runs,
 * different devices/builds/commits and missing shards (context key "shard" = "I/N", 0- or 1-based) unless force,
 * overlapping rows always. The context is the first run's without "shard", with the case counts summed and lists
 * joined over the runs; what force let through (missing or incomplete shards) is written with status "partial",
 * status_reason and an INCOMPLETE file. */
hx_status hx_run_merge(hx_run *runs, size_t n, const char *out_dir, int force, hx_err *err);

/* The regression gate (compare.c). A key (pipeline, kernel, variant, workload, n_points, batch, metric) with raw
 * samples in both runs is called slower (faster) when the U test gives p < alpha AND the relative change of the
 * medians, (new - base) / base, is worse (better) by at least the key's own threshold:
 *   threshold = max(min_effect, noise_k x batch_noise, HX_GATE_AA_Z x sqrt(2) x aa_sigma)
 *   batch_noise: hx_stats_batch_spread of the key's samples with HX_GATE_BATCHES batches, summed over the two
 *                runs: the drift the key showed inside each run;
 *   aa_sigma:    from a calibration of this device and build (hx_gate_calibrate): the standard deviation of the
 *                key's median between runs of one build (A/A, relative), the drift between runs, at its 90% upper
 *                confidence bound (x hx_gate_sigma_bound(runs): 3.08 for 3 runs, 1.57 for 8); 0 without one. A
 *                pair of runs differs by sqrt(2) sigma (sd): HX_GATE_AA_Z of it is crossed ~1e-4 of the time.
 * The table names the term that set each threshold ("min", "batch", "aa"). Lower is better for times, higher
 * for rates (unit ending in "/s", or "%"). Keys on one side only are unknown, never slower. Keys not gated get
 * no verdict and are counted apart: CPU stages (variant "cpu") unless include_cpu, keys outside `keys`.
 * normalize: NEW's samples are scaled by the ratio of the two runs' ceilings (context ceiling_copy_gbs, or
 * the GEMM ceiling in the runs' dtype, hx_run_gemm_ceiling_key, for a key with declared FLOPs: a flops row in
 * results.csv), time x new/base and rate x base/new, so a machine that is slower as a whole (its copy or GEMM
 * ceiling) does not read as a regression. */
#define HX_GATE_BATCHES 5
#define HX_GATE_AA_Z 3.72
/* sqrt((runs - 1) / chi2_{0.10}(runs - 1)): an sd from `runs` values times this is above the true sd 90% of the
 * time (NaN for runs < 2). */
double hx_gate_sigma_bound(size_t runs);
typedef struct hx_gate_calib {
  char *path;
  hx_run_row *keys;    /* sorted by hx_run_row_key_cmp; value = aa_sigma (ratio), sample = runs it came from */
  size_t n_keys, runs;
  char **ctx_keys, **ctx_vals; /* the context every calibration run shared (device, build, ...) */
  size_t n_ctx;
} hx_gate_calib;
/* Write the calibration of runs[0..n) (n >= 2, complete, from one device, build and dtype; 8 or more keep the bound
 * near the sd) to path: per key with raw samples in every run, aa_sigma = hx_gate_sigma_bound(n) x the sample standard
 * deviation of the runs' medians over their mean. HX_EINVAL naming the problem. */
hx_status hx_gate_calibrate(hx_run *runs, size_t n, const char *path, hx_err *err);
hx_status hx_gate_calib_load(hx_gate_calib *out, const char *path, hx_err *err); /* nothing left allocated on failure */
void hx_gate_calib_free(hx_gate_calib *c);
/* HX_OK when the calibration's device, build and dtype agree with the run's (hx_run_check_compatible). */
hx_status hx_gate_calib_check(const hx_gate_calib *c, const hx_run *r, hx_err *err);

typedef struct hx_gate_opts {
  double alpha;      /* U test significance (0.01) */
  double min_effect; /* the smallest threshold (0.03) */
  double noise_k;    /* multiplier of the batch noise (2); the calibration's term has its own (HX_GATE_AA_Z) */
  int include_cpu;   /* 1 gate CPU stages too, 0 never; -1 (default): only when neither run had a GPU (context
                      * device "none"), whose keys are all CPU stages */
  const char *keys;  /* NULL, or comma-separated fnmatch globs on "pipeline/kernel/variant": gate the matches only */
  int normalize;     /* scale NEW by the ceilings' ratio (above); both runs need the ceilings */
  const hx_gate_calib *calib; /* NULL: no aa term */
  FILE *csv;         /* NULL, or every compared key as CSV (HX_GATE_CSV_HEADER) */
} hx_gate_opts;
#define HX_GATE_CSV_HEADER \
  "pipeline,kernel,variant,workload,n_points,batch,metric,base_median,new_median,change,threshold,rule,p,verdict"
hx_gate_opts hx_gate_defaults(void);
typedef struct hx_compare_counts {
  size_t faster, slower, same, unknown;
  size_t not_gated_cpu, not_gated_keys; /* left out: CPU stages, keys outside opts.keys */
  /* why the unknown keys are unknown: on one side only, fewer than HX_COMPARE_MIN_SAMPLES samples on a side, other
   * (units differ, a median not positive); they add up to unknown */
  size_t unknown_one_side, unknown_few_samples, unknown_other;
  size_t by_rule[3];      /* gated keys whose threshold came from min_effect, batch noise, the calibration */
  double largest_change;  /* the gated key's change of largest magnitude (NaN when none had one) */
  double largest_threshold;
  char largest_key[320];  /* "pipeline/kernel/variant workload n_points metric" */
} hx_compare_counts;
/* One verdict per key of either run that is gated; the verdict line, the table and the totals line go to `out`
 * (NULL: silent). HX_EINVAL for normalize without ceilings, HX_ENOMEM. */
hx_status hx_gate_runs(hx_run *base, hx_run *cur, const hx_gate_opts *o, FILE *out, hx_compare_counts *counts,
                       hx_err *err);
/* The verdict line hx_gate_runs prints first: "gate: pass|FAIL|NOTHING TESTED: N faster, N slower, N same,
 * N unknown of N keys gated; largest change ...; not gated: ...". */
void hx_gate_print_verdict(FILE *out, const hx_compare_counts *counts);
/* hx_gate_runs with every key gated (CPU stages too), no calibration, no normalization. */
hx_status hx_compare_runs(hx_run *base, hx_run *cur, double alpha, double min_effect, FILE *out,
                          hx_compare_counts *counts, hx_err *err);

/* GPU performance counters (cupti.cpp; cupti_stub.c without CUPTI; table in counters.c): CUPTI Range
 * Profiler with user ranges and user replay, in a pass of its own after timing. Any call may return
 * HX_EUNSUPPORTED meaning "no counters here" (no permission, another profiler attached, unsupported
 * device or build) with the reason in err: the caller reports it once and goes on timing-only.
 * Values are in the metric's unit: % (0..100), B/s, ns. */
typedef struct hx_metric_info {
  const char *name;       /* CUPTI metric name */
  const char *short_name; /* `metric` column of the result rows ("sm_active") */
  const char *unit;
  const char *description;
} hx_metric_info;
/* The default set (SM active, SM issue, tensor active, DRAM read bandwidth, GPU time): one pass on GA100
 * and GH100. */
const char *const *hx_counters_default_names(size_t *n);
const hx_metric_info *hx_metric_lookup(const char *name_or_short); /* NULL if not in the table */
/* Split a comma/space separated list in place (short names map to CUPTI names). */
hx_status hx_counters_split(char *list, const char **names, size_t cap, size_t *n, hx_err *err);
/* Host-only check (no GPU, no driver needed): every name is a valid metric of `chip` ("GH100", "GA100",
 * ...; an unknown name is HX_EINVAL listing close names) and *passes receives the replay passes needed. */
hx_status hx_counters_validate(const char *chip, const char *const *names, size_t n, size_t *passes,
                               hx_err *err);
typedef struct hx_counters hx_counters; /* one device, one metric set; opaque */
/* Open on `device` (made current): checks support, names (for this chip) and builds the configuration.
 * max_ranges bounds the ranges of one session; nesting_levels > 1 profiles nested ranges (more passes). */
hx_status hx_counters_open(hx_counters **out, int device, const char *const *names, size_t n,
                           size_t max_ranges, unsigned nesting_levels, hx_err *err);
void hx_counters_close(hx_counters *c);
const char *hx_counters_chip(const hx_counters *c);
size_t hx_counters_num_passes(const hx_counters *c);
size_t hx_counters_num_metrics(const hx_counters *c);
const char *hx_counters_metric(const hx_counters *c, size_t i);
/* A session: begin; then passes (pass_begin, push/pop ranges around the work, pass_end) repeated with
 * the same work until *all_passes_done; then end decodes every range. Range i's values (one per metric,
 * in open order) via hx_counters_range; nested names read "outer/inner". */
hx_status hx_counters_session_begin(hx_counters *c, hx_err *err);
hx_status hx_counters_pass_begin(hx_counters *c, hx_err *err);
hx_status hx_counters_push(hx_counters *c, const char *name, hx_err *err);
hx_status hx_counters_pop(hx_counters *c, hx_err *err);
hx_status hx_counters_pass_end(hx_counters *c, int *all_passes_done, hx_err *err);
hx_status hx_counters_session_end(hx_counters *c, size_t *n_ranges, hx_err *err);
hx_status hx_counters_range(const hx_counters *c, size_t i, const char **name, double *values, hx_err *err);
/* One closure as one range, every pass (reset() before each, untimed): values[num_metrics]. */
hx_status hx_counters_profile(hx_counters *c, const char *range, const hx_closure *work, void *stream,
                              double *values, hx_err *err);
/* The ranges one session may hold (open's max_ranges until changed): the counter data image is sized again for
 * max_ranges (> 0) and the next session_begin uses it. Outside a pass only. A whole network profiled component
 * by component needs hundreds of ranges; a stage needs one, so callers put the old value back afterwards.
 * CUPTI sizes the trace buffer of a range profiler once, at its first pass, and loses the ranges beyond it
 * without a count: that first pass is sized for HX_COUNTERS_PASS_RANGES, the most a session may ask (cupti.cpp). */
#define HX_COUNTERS_PASS_RANGES 4096
hx_status hx_counters_set_max_ranges(hx_counters *c, size_t max_ranges, hx_err *err);
size_t hx_counters_max_ranges(const hx_counters *c);
/* The longest range name hx_counters_push takes: CUPTI sizes its trace buffer for names of 128 bytes a range. */
#define HX_COUNTERS_MAX_NAME 127

/* Nested ranges as one level of CUPTI user ranges (counters.c), so that one pass gives every kernel to exactly
 * one range. The range profiler counts each nesting level in passes of its own (numNestingLevels multiplies the
 * replay passes), while sibling ranges of one level share a pass; so nested names are flattened instead:
 * hx_flat_range(begin) closes the open flat range and opens one for the new range; an end closes it and opens
 * one for the enclosing range (its "gap": work of a range outside its children) or for the root. Flat range i is
 * pushed as "<i>:<path>" ('/' written '|'); seg[i] says which nested range it belongs to.
 * Invariant: between hx_flat_begin and hx_flat_end exactly one flat range is open, so the flat ranges cover
 * every launch in between, in launch order, each launch in one of them. Failures (a full table, ranges that do
 * not nest, a CUPTI push/pop) are kept, the first one, for hx_flat_end: the hook that drives hx_flat_range
 * returns nothing. */
#define HX_FLAT_MAX_DEPTH 16
#define HX_FLAT_PATH 96
typedef struct hx_flat_seg {
  char path[HX_FLAT_PATH]; /* the innermost nested range open while this flat range was (the root at depth 0) */
  int leaf;                /* 1: all of a nested range that has no nested range inside; 0: a gap or the root */
} hx_flat_seg;
typedef struct hx_flat {
  hx_counters *counters; /* NULL: bookkeeping only (no CUPTI call) */
  hx_flat_seg *seg;      /* [cap] */
  size_t n, cap;         /* flat ranges opened in this pass */
  char stack[HX_FLAT_MAX_DEPTH + 1][HX_FLAT_PATH]; /* [0] the root, then the open nested ranges */
  int child[HX_FLAT_MAX_DEPTH + 1];                /* 1 once the range at this depth opened a nested one */
  int depth;                                       /* open nested ranges */
  int open;                                        /* 1 while flat range n - 1 is open */
  hx_status st;                                    /* first failure since hx_flat_begin */
  hx_err err;
} hx_flat;
/* cap: the flat ranges of one pass, 1 + 2 x (nested ranges) at most. HX_ENOMEM, HX_EINVAL for cap 0. */
hx_status hx_flat_init(hx_flat *f, hx_counters *counters, size_t cap, hx_err *err);
void hx_flat_fini(hx_flat *f);
/* Start a pass: forget the last one, open flat range 0 for `root` (e.g. "forward"). */
void hx_flat_begin(hx_flat *f, const char *root);
void hx_flat_range(hx_flat *f, const char *name, int begin); /* name: the nested range's full path */
/* Close the last flat range; the pass's first failure, or HX_EINVAL when nested ranges are still open. */
hx_status hx_flat_end(hx_flat *f, hx_err *err);
/* A nested range's category: its last path element up to the first '.' ("enc2/block1/norm.1" -> "norm"), at
 * most cap - 1 characters; returns its length. */
size_t hx_range_category(const char *path, char *out, size_t cap);
/* The flat range a decoded CUPTI range name stands for ("<i>:..."), or -1 when it is not one of this pass's. */
long hx_flat_index(const hx_flat *f, const char *range_name);

/* Ranges summed into groups (counters.c): values[r * n_metrics + m] is metric m of range r, group[r] its group
 * (< n_groups) or -1 (left out); out[g * n_metrics + m] receives group g. Each metric by its CUPTI name:
 *   a count (no submetric: ".sum", ".avg", ".max", ".min")                      summed over the ranges
 *   ".peak_sustained" (a constant of the chip)                                  the largest
 *   ".pct_of_peak_sustained_active", ".per_cycle_active" (per active cycle)     mean weighted by the range's
 *       time x its sm__cycles_active.avg.pct_of_peak_sustained_elapsed (its active cycles) when that metric is
 *       in the set, else by time
 *   anything else (".per_second", ".pct_of_peak_sustained_elapsed", ".ratio")   mean weighted by the range's time
 * The time is gpu__time_duration.sum: rate x time is the count, so per_second and per-elapsed-cycle metrics are
 * exact; the active-cycle weighting is exact for sm__ metrics and approximate for smsp__ ones. A value that is
 * not finite (a range without a kernel) leaves its range out of that metric; a group with nothing left is NaN.
 * HX_EUNSUPPORTED when a weighted metric is asked without gpu__time_duration.sum in the set. */
hx_status hx_counters_aggregate(double *out, size_t n_groups, const double *values, const long *group,
                                size_t n_ranges, const char *const *names, size_t n_metrics, hx_err *err);

/* NVBench-style GPU measurement (measure.cu; measure_stub.c without CUDA; rules in measure_common.c).
 * Cold sample: reset() (untimed) -> the stream is held by a spinning kernel while the L2 is flushed (a
 * memset of twice its size), an SM-clock probe, start event, run(), stop event and a second probe are
 * queued -> released -> elapsed time between the events; so launch latency is not timed and every sample
 * starts with a cold L2. Samples whose SM clock (globaltimer/clock64 on SM 0 between the probes) is under
 * throttle_threshold x the device's rated clock are dropped (then a pause of throttle_recovery_s). Hot:
 * batches of back-to-back runs (no reset, no flush), time per run. Work that synchronizes the host inside
 * run() would deadlock the held stream: a timeout of a held cold sample detects it, the sample is
 * discarded and the rest runs without the blocking kernel (sync_detected = 1); the time lost waiting
 * does not count against max_time_s. Warm-up runs are never held (a kernel's first launch under lazy
 * module loading waits for the device to idle, which would look like a sync), and a time-out of a held
 * hot batch is a full launch queue, not a sync. noise is NaN until two samples are kept; the wall-time
 * cap waits for two. */
typedef struct hx_measure_opts {
  uint32_t warmup;            /* discarded cold runs first (1) */
  uint32_t min_samples;       /* kept cold samples before the noise rule may stop (10) */
  uint32_t max_samples;       /* hard cap (1000) */
  double min_time_s;          /* GPU time accumulated before the noise rule may stop (0.5) */
  double max_time_s;          /* wall-clock cap for the cold loop (15) */
  double max_noise;           /* stop when std/mean <= this (0.005); 0 = never stop on noise */
  double throttle_threshold;  /* fraction of the rated SM clock (0.75) */
  double throttle_recovery_s; /* pause after a throttled sample (0.05) */
  double hot_target_s;        /* GPU time of all hot batches together (0.1) */
  uint32_t hot_batches;       /* hot samples (5) */
  int flush_l2, blocking, cold, hot; /* all 1 by default */
  double sync_timeout_s;      /* blocking-kernel timeout that reveals a synchronizing run() (2) */
} hx_measure_opts;
hx_measure_opts hx_measure_defaults(void);
hx_measure_opts hx_measure_paper(void); /* 20 runs, first discarded: warmup 1, 19 kept, no flush/hold/hot */

typedef enum hx_measure_stop {
  HX_STOP_NO = 0,
  HX_STOP_NOISE,
  HX_STOP_MAX_SAMPLES,
  HX_STOP_MAX_TIME
} hx_measure_stop;
hx_measure_stop hx_measure_should_stop(const hx_measure_opts *o, size_t n_kept, double gpu_time_s,
                                       double wall_s, double rel_noise);
const char *hx_measure_stop_str(hx_measure_stop s);

typedef struct hx_measurement {
  double *cold_ms;      /* kept cold samples (ms), n_cold of them */
  double *cold_sm_mhz;  /* SM clock during each kept sample (MHz; NaN where SM 0 was not probed) */
  size_t n_cold, n_throttled;
  double noise;         /* std/mean of the kept cold samples (NaN with fewer than 2) */
  int noise_reached;    /* 1 when the noise rule stopped sampling */
  hx_measure_stop stop;
  double *hot_ms;       /* per-run time of each hot batch (ms), n_hot of them */
  size_t n_hot, hot_batch_size;
  double rated_sm_mhz;  /* the device's rated SM clock the throttle rule compares with */
  double wall_s;
  int sync_detected;    /* run() synchronizes the host: measured without the blocking kernel */
} hx_measurement;
void hx_measurement_free(hx_measurement *r);

typedef struct hx_meter hx_meter; /* device, stream, events, flush buffer, probe memory; opaque */
hx_status hx_meter_create(hx_meter **out, int device, hx_err *err);
void hx_meter_destroy(hx_meter *m);
void *hx_meter_stream(hx_meter *m); /* the non-default stream the work runs on */
hx_status hx_meter_measure(hx_meter *m, const hx_measure_opts *o, const hx_closure *c, hx_measurement *out,
                           hx_err *err);
/* Device memory in use now (total - free from cudaMemGetInfo), for per-stage deltas. */
hx_status hx_meter_mem_used(hx_meter *m, size_t *bytes, hx_err *err);
/* Flush the L2 (the same memset the cold samples use) and wait for it. */
hx_status hx_meter_flush_l2(hx_meter *m, hx_err *err);

/* Device memory arena (arena.c: bookkeeping, plain C; arena_gpu.cu / arena_stub.c: the cudaMalloc backend).
 * A pipeline allocates its device buffers through one arena, which keeps the numbers behind the mem_peak
 * rows: bytes in use, the high-water mark since init/reset (the pipeline's peak) and the high-water mark
 * since the last hx_arena_mark (one stage: what was held when it started plus whatever it allocated).
 * Every request is accounted rounded up to HX_ARENA_ALIGN (cudaMalloc's alignment, and what a
 * sub-allocator carving one block would need), and the backend must return pointers aligned to it.
 * capacity > 0 bounds bytes in use: a request that would pass it fails with HX_ENOMEM naming the request
 * and what is in use, before the backend is called. Memory a library allocates on its own (a create
 * function of kernels/) is entered with hx_arena_note, keyed by its handle, and leaves with hx_arena_free
 * of that handle (the backend is not called for it). The accounting never calls CUDA: tests run it on a
 * host backend; the device backend is the only GPU part (its stub returns HX_ENODEV). */
#define HX_ARENA_ALIGN 256u
typedef struct hx_arena_backend {
  hx_status (*alloc)(void *ctx, void **p, size_t bytes, hx_err *err); /* bytes: a multiple of HX_ARENA_ALIGN */
  void (*release)(void *ctx, void *p);
  void *ctx;
} hx_arena_backend;
/* cudaMalloc / cudaFree on the current device; device out-of-memory is HX_ENOMEM with the request named, any
 * other failure HX_ECUDA. */
hx_arena_backend hx_arena_device_backend(void);
/* Device memory in use now on the current device (total - free from cudaMemGetInfo; the driver hands
 * out memory in pages of about 2 MiB, so deltas of this are that coarse). */
hx_status hx_device_mem_used(size_t *bytes, hx_err *err);

typedef struct hx_arena_entry {
  const void *p;   /* the allocation, or the handle of a noted one */
  size_t bytes;    /* accounted (rounded) size */
  int external;    /* 1: entered with hx_arena_note, not allocated here */
  char label[48];
} hx_arena_entry;
typedef struct hx_arena {
  hx_arena_backend be;
  size_t capacity;  /* 0: no limit but the backend's */
  size_t in_use, peak, mark_peak;
  size_t n_allocs;  /* allocations and notes since init/reset */
  hx_arena_entry *live;
  size_t n_live, cap_live;
  char name[32];
  size_t refused, refused_in_use; /* the last request refused with HX_ENOMEM (over capacity, or the backend out of
                                   * memory): its accounted bytes and the bytes in use then; 0: none since init/reset */
} hx_arena;
/* be == NULL: the device backend. Never fails; the entry table grows on the first allocation. */
void hx_arena_init(hx_arena *a, const char *name, size_t capacity, const hx_arena_backend *be);
/* Free everything still live and the table. */
void hx_arena_destroy(hx_arena *a);
/* bytes is rounded up to HX_ARENA_ALIGN (0 counts as one unit); *p is NULL on failure, and the
 * accounting is unchanged. */
hx_status hx_arena_alloc(hx_arena *a, void **p, size_t bytes, const char *label, hx_err *err);
/* Enter `bytes` that `handle` holds on the device (allocated elsewhere): accounted as an allocation. */
hx_status hx_arena_note(hx_arena *a, const void *handle, size_t bytes, const char *label, hx_err *err);
/* Free an allocation (backend) or drop a note. NULL is a no-op; an unknown pointer is HX_EINVAL. */
hx_status hx_arena_free(hx_arena *a, const void *p, hx_err *err);
/* Free every live allocation and note (in_use = 0); the peaks stay. */
void hx_arena_release_all(hx_arena *a);
/* release_all, then the peaks, the mark and the allocation count start again from 0. */
void hx_arena_reset(hx_arena *a);
/* Start a stage: its high-water mark starts at the bytes in use now. */
void hx_arena_mark(hx_arena *a);
size_t hx_arena_in_use(const hx_arena *a);
size_t hx_arena_peak(const hx_arena *a);      /* since init/reset */
size_t hx_arena_mark_peak(const hx_arena *a); /* since the last mark (or init/reset) */
size_t hx_arena_count(const hx_arena *a);     /* allocations and notes since init/reset */
size_t hx_arena_live(const hx_arena *a);      /* live entries */

/* Ceilings measured at run start (measure_ceilings.cu): what this device really does. */
typedef struct hx_ceilings {
  double copy_gbs;      /* device-to-device cudaMemcpy, bytes read + written per second / 1e9 */
  double gemm_bf16_tflops, gemm_fp16_tflops; /* cuBLAS GEMM, fp32 accumulate, m = n = k = 8192 */
} hx_ceilings;
hx_status hx_meter_ceilings(hx_meter *m, hx_ceilings *out, hx_err *err);

/* Named ranges (nvtx.c): NVTX (domain "flash3d") always, plus a CUPTI user range of the same name when
 * `counters` is set (set it only around a counter pass: between hx_counters_pass_begin and _end). */
typedef struct hx_ranges {
  void *domain;          /* nvtxDomainHandle_t, NULL without NVTX */
  hx_counters *counters; /* NULL: NVTX only */
  int depth;
} hx_ranges;
void hx_ranges_init(hx_ranges *r, const char *domain, hx_counters *counters);
void hx_ranges_fini(hx_ranges *r);
hx_status hx_range_push(hx_ranges *r, const char *name, hx_err *err);
hx_status hx_range_pop(hx_ranges *r, hx_err *err);
int hx_ranges_have_nvtx(void); /* 1 when NVTX3 was compiled in */

/* What a study tells the plotting code (plot.c), as data: plot.c knows the sweep's conventions (metrics
 * such as time_mean and mem_peak, the kernel "total", "cpu" variants) but no pipeline, stage or hash name.
 * The program's tables are app/study.c. A NULL study: every kernel of every pipeline is a stage, default
 * legends, no comparison figure and no headline table. */
/* A stage that times part of a headline stage (the whole): shown in the whole's place, after it in order, by a
 * run that has no row of the whole (a CPU run times PTv3's serialization in parts), so figures still stack the
 * same work. */
typedef struct hx_study_part {
  const char *whole, *part;
} hx_study_part;
typedef struct hx_study_pipeline {
  const char *name;          /* the pipeline column */
  const char *display;       /* legends and table heads; NULL: the name */
  const char *const *stages; /* its headline stages (kernel names) in pipeline order; with n_stages 0, or when
                              * a run holds none of them, every kernel but "total" is one */
  size_t n_stages;
  int host_only;             /* 1: host work (input preparation): none of its kernels is a stage */
  int own_section;           /* 1: measured on its own (a whole network): its rows stay out of the generic
                              * figures, headline and memory tables; the study's section and plots show them */
  const hx_study_part *parts; /* stand-ins for a headline stage a run lacks, or NULL */
  size_t n_parts;
} hx_study_pipeline;
/* A legend rule: the first rule whose kernel matches names the series. label: "{v}" stands for the variant,
 * "{k}" for the kernel past the prefix; tag is appended when the variant contains variant_has. Without a
 * rule: the kernel with '_' and '.' as spaces, then the variant (not for a total or variant "all"). */
typedef struct hx_study_legend {
  const char *kernel; /* a kernel name, or a prefix ending in '*' */
  const char *label;
  const char *variant_has, *tag; /* optional */
} hx_study_legend;
/* A comparison figure (time_mean +- time_std vs size, log scale), drawn after the latency figure: series
 * chosen by fnmatch(3) patterns of "pipeline/kernel", the fastest variant of each kernel (every variant
 * of the all_series patterns under --all-series, and in <name>_all.dat). A run in which a pattern selects
 * nothing is left out of it (the figure compares the patterns' series), and the report says which. */
typedef struct hx_study_figure {
  const char *name;  /* file base */
  const char *title; /* REPORT.md heading and figure title */
  const char *const *series;
  size_t n_series;
  const char *const *all_series;
  size_t n_all;
  const char *missing; /* why a run without a CUDA device lacks a side (the CPU references' limits), said when
                        * such a run is left out; or NULL */
} hx_study_figure;
/* A headline table's cells (fastest variant of each column's kernel, named in the cell). */
typedef enum hx_study_cell {
  HX_CELL_TIME = 0, /* time_mean (ms) */
  HX_CELL_VS_FIRST, /* time_mean and, past the first column, first / this (x) */
  HX_CELL_TFLOPS,   /* the tflops row */
  HX_CELL_GBS       /* bytes / time_median (GB/s) and % of the run's ceiling_copy_gbs */
} hx_study_cell;
typedef struct hx_study_col {
  const char *pipeline, *kernel;
} hx_study_col;
/* One headline table per run and workload: a row per size (batch 1), a column per kernel of each group
 * (the kernels of group.pipeline whose name starts with group.kernel, in the order the run recorded
 * them). The workloads and sizes are those of the pipelines the tables name. */
typedef struct hx_study_table {
  const hx_study_col *groups;
  size_t n_groups;
  int every_group;        /* 1: written only when every group has a column; 0: when any has */
  const char *last;       /* a kernel whose column goes last (a reference, not a contender), or NULL */
  hx_study_cell cell;
  const char *first_head; /* written before the first column's kernel name, or NULL */
  const char *intro;      /* the paragraph above the table; "{ctx}" takes the run's context value of
                           * intro_key ("?" when absent), "{dtype}" the run's hx_run_dtype, in both */
  const char *intro_key;
  /* optional, below the table: tried from the largest size down until it writes (returns 1) */
  int (*note)(FILE *f, const hx_run *r, const char *workload, uint64_t n_points, const hx_study_col *cols,
              size_t n_cols);
  const char *missing; /* why a run without a CUDA device lacks its rows, said when such a run leaves the table
                        * out (a table left out always says which rows it lacks); or NULL */
} hx_study_table;
#define HX_STUDY_MAX_FIGURES 8
/* Text the study writes into REPORT.md itself (its section's tables), from every run plotted; labels[i] names
 * runs[i] (its device, or its directory where two runs share a device). */
typedef void (*hx_study_text)(FILE *f, const hx_run *runs, size_t n_runs, const char *const *labels);
/* A figure of the study's section, from every row whose "pipeline/kernel/variant" matches an include pattern
 * and no exclude pattern (fnmatch(3)); every variant is a series of its own (no fastest-variant choice: the
 * variants of a whole network are different models).
 *   HX_PLOT_LINES    metric x scale vs n_points, one series per key and run; err_metric as error bars;
 *                    metric2 (optional) dashed in its series' colour, out of the legend; fit: a least-squares
 *                    line per series of 3 sizes or more, dashed, with its slope and R^2 in the legend
 *   HX_PLOT_STACKED  metric at each (run, pipeline, variant)'s largest size: one bar each, a stack per kernel
 *   HX_PLOT_TREEMAP  the same as squarified areas, one panel per (run, pipeline, variant) */
typedef enum hx_study_plot_kind { HX_PLOT_LINES = 0, HX_PLOT_STACKED, HX_PLOT_TREEMAP } hx_study_plot_kind;
typedef struct hx_study_plot {
  hx_study_plot_kind kind;
  const char *name;          /* file base: [A-Za-z0-9_-], no other figure's */
  const char *title;         /* REPORT.md heading and figure title (no quote characters) */
  const char *ylabel, *unit; /* axis label; unit of metric x scale in legends ("ms") */
  const char *metric, *metric2, *err_metric;
  double scale;
  const char *const *include;
  size_t n_include;
  const char *const *exclude;
  size_t n_exclude;
  const char *label; /* a series, bar or panel: "{p}" the pipeline's display name, "{k}" the kernel, "{v}" the
                      * variant; the device is appended with several runs */
  int fit;
  hx_study_text after; /* written under the figure (its tables), or NULL */
} hx_study_plot;
#define HX_STUDY_MAX_PLOTS 16
typedef struct hx_study {
  const char *title; /* REPORT.md's first heading */
  const hx_study_pipeline *pipelines;
  size_t n_pipelines;
  const hx_study_legend *legends;
  size_t n_legends;
  const hx_study_figure *figures; /* at most HX_STUDY_MAX_FIGURES */
  size_t n_figures;
  const hx_study_table *tables;
  size_t n_tables;
  const char *mem_ratio[2]; /* peak memory table: the pipelines compared as mem_ratio[0] / mem_ratio[1] */
  const char *mem_all;      /* what its every-variant columns include (a parenthesis), or NULL */
  const char *section;      /* heading of the study's own section, before the headline; NULL: none */
  hx_study_text section_text; /* its first tables, or NULL */
  const hx_study_plot *plots; /* its figures, each with the text after it; at most HX_STUDY_MAX_PLOTS */
  size_t n_plots;
} hx_study;

/* Figures and REPORT.md (plot.c) from loaded runs: data files and PNG + SVG under out_dir/plots (scripts
 * from scripts_dir, i.e. plots/ of the source tree), REPORT.md in out_dir. Several runs (devices) share
 * each figure, series labelled by device, plus a ratio table. Without gnuplot the report and the data
 * files are still written and HX_EUNSUPPORTED says "gnuplot not found". HX_EINVAL, before anything is
 * created: no runs, a NULL directory, a path with a quote character (the gnuplot command line), or a
 * study with more than HX_STUDY_MAX_FIGURES figures. All or nothing: plots/ and REPORT.md are staged whole and
 * replace the previous ones together; on any failure (HX_EIO naming the file and the cause, e.g. a data file on a
 * full disk) both previous ones stay, no staging file is left, and an out_dir created here is removed. A plots path
 * that is not a directory of plain files (a file, a symbolic link, a directory holding a subdirectory) is refused
 * with HX_EIO before anything is drawn, and left as it was. An incomplete run (the caller decides whether to draw
 * one) gets a line under REPORT.md's title saying why (hx_run_incomplete_why), written with the report. */
hx_status hx_plot(hx_run *runs, size_t n_runs, const hx_study *study, const char *scripts_dir, const char *out_dir,
                  hx_err *err);
/* A caller told of each process the library starts (gnuplot) while it may still write into the staged output:
 * started(arg, pid) once it exists, ended(arg, pid) once it has exited and before it is reaped (so pid names it and no
 * other process in between), both with every signal blocked on the calling thread. With a watch the process leads a
 * process group of its own (kill(-pid, ...) ends it and anything it started; a Ctrl-C to the terminal's group no
 * longer reaches it: the watcher ends it), so a signal handler that records these can end and reap it before it
 * removes the temporaries the process writes into. Either function may be NULL. */
typedef struct hx_child_watch {
  void (*started)(void *arg, pid_t pid);
  void (*ended)(void *arg, pid_t pid);
  void *arg;
} hx_child_watch;
/* hx_plot with all_series = 0: each figure shows a few headline series (the fastest variant of each main
 * stage; the study's comparison figures by their patterns), every series kept in plots/<figure>_all.dat;
 * all_series = 1 draws every series as recorded. watch: told of each gnuplot process, or NULL (hx_plot). */
hx_status hx_plot_sel(hx_run *runs, size_t n_runs, const hx_study *study, const char *scripts_dir,
                      const char *out_dir, int all_series, const hx_child_watch *watch, hx_err *err);
/* The value of `metric` at n_points of the fastest variant of (pipeline, kernel) among a run's rows of
 * `workload` at batch 1 (the variant the figures draw: GPU before "cpu" variants, then the one timed at
 * the most sizes, then the lowest geometric mean of time_median over sizes). NAN when absent; *variant
 * names the winner ("" when there is none). For a study's notes. */
double hx_plot_best_value(const hx_run *r, const char *pipeline, const char *kernel, const char *workload,
                          uint64_t n_points, const char *metric, const char **variant);
hx_status hx_plot_have_gnuplot(hx_err *err);
/* Least-squares line y = slope x + intercept through n points and its coefficient of determination r2
 * (1 - residual / total sum of squares; 1 when every y is equal and the line meets them). HX_EINVAL for fewer
 * than 2 points, a non-finite value or x all equal. */
hx_status hx_plot_linear_fit(const double *x, const double *y, size_t n, double *slope, double *intercept,
                             double *r2);
/* Squarified treemap of n weights (>= 0) in the box (x, y, w, h): out[i] gets an area proportional to
 * weights[i]; rectangles tile the box without overlap. HX_EINVAL for negative/non-finite weights. */
typedef struct hx_rect {
  double x, y, w, h;
} hx_rect;
hx_status hx_treemap_squarify(hx_rect *out, const double *weights, size_t n, double x, double y, double w,
                              double h);

/* Result rows of one measurement (measure_common.c), for the sweep: cold samples as time_median, _mean,
 * _std, _min, _max (ms), reps, time_noise, noise_reached, throttled_dropped, sm_clock (MHz) and raw
 * samples "time"; hot batches as time_hot_median/_mean/_std, hot_batch and raw samples "time_hot";
 * sync_detected when it happened. Counter values as rows named by the metric table's short names.
 * No row carries a non-finite value: an undefined one is left out and noise_undefined (1 kept sample),
 * rows_undefined or counters_undefined (count of metrics without a value, e.g. a range with no kernel)
 * says so. */
hx_status hx_measure_record(hx_results *res, const hx_key *k, const hx_measurement *m, hx_err *err);
hx_status hx_counters_record(hx_results *res, const hx_key *k, const char *const *names, const double *values,
                             size_t n, hx_err *err);
/* The rate rows of a closure that declares its work, at the median time median_ms of its samples (the
 * time_median row's value): bytes (B) and bandwidth (GB/s = bytes / median) when c->bytes > 0, flops (FLOP)
 * and tflops (TFLOP/s) when c->flops > 0. A rate needs a finite median > 0, else only the declaration is
 * written. Nothing for a closure that declares nothing; HX_EINVAL (no row) for a negative or non-finite
 * declaration. hx_bench_stage and the sweep's f3d_measure call it after the time rows. */
hx_status hx_rates_record(hx_results *res, const hx_key *k, const hx_closure *c, double median_ms, hx_err *err);

/* One stage of a sweep measured in one call (bench.c): timing pass + rows, then a counter pass + rows.
 * Counters that cannot run here are reported once on `log` and switched off; --no-counters passes 1.
 * metrics: NULL for the default set, or a comma list of CUPTI or short names (validated at open).
 * paper: the paper's protocol (hx_measure_paper) instead of the NVBench discipline. */
#define HX_BENCH_MAX_METRICS 32
typedef struct hx_bench {
  hx_meter *meter;
  hx_counters *counters; /* NULL: timing only (counters_off says why) */
  hx_measure_opts opts;  /* may be edited after open */
  const char *metric_names[HX_BENCH_MAX_METRICS];
  size_t n_metrics;
  char metric_buf[2048];
  char counters_off[512];
  FILE *log;
  double last_median_ms; /* set by hx_bench_stage: median of the kept cold samples (of the hot batches
                          * when there are none), NaN when neither exists; the median its rate rows use */
  hx_ceilings ceilings;  /* what hx_bench_context measured (the context's ceiling_* keys); NaN each until then */
} hx_bench;
hx_status hx_bench_open(hx_bench *b, int device, const char *metrics, int no_counters, int paper, FILE *log,
                        hx_err *err);
void hx_bench_close(hx_bench *b);
void *hx_bench_stream(hx_bench *b);
/* Context keys: timing protocol and options, counters on/off and why, and (measure_ceilings) the copy
 * bandwidth and GEMM rates of this device (ceiling_copy_gbs, ceiling_gemm_bf16_tflops, ..._fp16_...), also kept
 * in b->ceilings for the stages that compare with them. */
hx_status hx_bench_context(hx_bench *b, hx_results *res, int measure_ceilings, hx_err *err);
/* Timing pass and its rows (hx_measure_record), the rate rows of the closure's declared bytes and FLOPs at
 * last_median_ms (hx_rates_record), then the counter pass and its rows. */
hx_status hx_bench_stage(hx_bench *b, hx_results *res, const hx_key *k, const hx_closure *c, hx_err *err);

#ifdef __cplusplus
}
#endif
#endif /* F3D_HARNESS_H */
