/*
 * cmd_sweep.c - `f3dbench sweep`: the main job. For every workload x size it builds the host clouds once
 * (exactly n points per cloud after one-point-per-voxel deduplication, `batch` clouds), runs every selected
 * pipeline of the registry (sweep.h) on them, and writes results/<run-id>/.
 *
 * GPU stages are measured through hx_bench (--timing nvbench, the default, or paper): cold/hot timing,
 * then a counter pass of their own; --timing basic keeps the foundation's hx_time. The pipelines measure the
 * main path (app/pipe_plan.h: the best entry of each operation, PTv3's path, the naive ablations the paper's
 * ratios need); --ladder adds every rung of every kernel ladder. With nvbench timing a time budget
 * (--time-budget) lowers the per-stage sampling cap (hx_measure_opts max_time_s) once the stages left,
 * estimated from the cases done, would not fit; the context records whether it did and the smallest cap
 * used. --shard I/N runs the cases whose index (workload-major, in the order given) is I modulo N, so N shards
 * together run every case once (`f3dbench merge` joins them).
 *
 * The default run's time, worked out (6 sizes, 100k..600k, one lidar cloud each; README "Timing"):
 *   GPU stages per case on the main path: ptv3 10 (grid, serialize, padding, 4 gathers, pool, 2 attention plans)
 *   and flash3d 23 (4 hashes x {v1, v2, best, best as a graph}, the floor plainly and as a graph, scatter_feat,
 *   pool, 3 attention plans); at the smallest case the unfused attention v0 adds 2 + 3 (at most 131072 rows):
 *   5 x 33 + 38 = 203 stages (the ladder: 36 + 123, 159 per case).
 *   A stage costs at most its cold-sampling cap plus ~0.3 s (warm-up, check, hot batches of 0.1 s GPU time,
 *   counter pass), so with the main path's cap of 0.75 s: 203 x 1.05 s = 213 s at worst, plus 6 x 2 s of hold
 *   time-outs (ptv3's pool synchronises the host inside its call), ~3 s of ceilings and 50-75 s on the host
 *   (attention checks against the double reference, 256 rows x 5 plans x ~1.3 s per case; workload preparation;
 *   the CPU references run once): 280-300 s if every stage ran to its cap. They do not: a stage stops at 1000
 *   samples or once 0.5 s of GPU time is in with the noise under 0.5%, 0.2-0.7 s here (the 3-size run of
 *   2026-11-25: 363 s for ~475 stages with the host work, ~0.63 s a stage), so ~190 s is expected. The
 *   budget's default, 320 s, is then a safety net the default run does not reach: context time_budget_cut
 *   says whether it lowered any cap. The ladder keeps the bench's 3 s cap and a 540 s budget (159 stages x 6
 *   cases does not fit 9 minutes at 3 s: the budget lowers the caps there, as it always did).
 *   Not in these figures: the backbone pipelines (ptv3-net, flash3d-net, pipe_net.c), registered after them: 4
 *   whole forwards per case (5 at the largest size), each plainly and as a graph (tens to hundreds of ms a call),
 *   their set-up and their CPU checks. Measured with them: the default run took 290 s on an H200 (1bb4b2f:
 *   ptv3-net 44 s, flash3d-net 81 s), 30 s under the budget (docs/measurement.md has the runs).
 *
 * Invariant: the run directory is committed (INCOMPLETE removed, status complete) only when every case of every
 * selected pipeline succeeded or was skipped for want of device memory (skipped_bytes_needed/_free rows,
 * f3d_pipeline_run). An error aborts it: INCOMPLETE, the status in context.csv, no results.csv. SIGINT/SIGTERM
 * stops it keeping the cases that finished: results.csv and samples.csv hold their rows only, INCOMPLETE stays,
 * context status interrupted with cases_done of cases_total and cases_finished (hx_results_stop).
 * Cloud b of a case uses seed + b, so `f3dbench gen --voxel` with the
 * same kind, size and seed reproduces cloud 0.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "f3d_config.h"
#include "app/cli.h"
#include "app/stop.h"
#include "app/sweep.h"

#define MAX_SIZES 64
#define MAX_WORKLOADS 16
#define MAX_PIPES 32

/* Signals: f3d_signals_install(orderly) (stop.h): the handler sets f3d_stop_signal, which the sweep loop polls
 * between measurements; a second signal 2 s or more later kills at once, the run staying marked INCOMPLETE. */

typedef struct workload {
  char name[128];
  wl_kind kind;
  const char *path; /* recorded input, or NULL */
  wl_cloud source;  /* the recorded cloud as read */
} workload;

typedef enum timing_mode { TIMING_NVBENCH = 0, TIMING_PAPER, TIMING_BASIC } timing_mode;
static const char *const timing_names[] = {"nvbench", "paper", "basic"};

#define DEFAULT_TIME_BUDGET_S 320.0 /* the main path: about 5 minutes; the arithmetic is at the top of this file */
#define DEFAULT_STAGE_CAP_S 0.75    /* the main path's per-stage cap on cold sampling (--max-time), same arithmetic */
#define LADDER_TIME_BUDGET_S 540.0  /* --ladder: 9 minutes, with the bench's own per-stage cap (3 s) */
/* --preset ci: the CI perf check (compare --baseline), under 2 minutes on an H100. ptv3 and flash3d on the main
 * path at 100k and 300k: 33 GPU stages per case plus the unfused attention v0's 5 at 100k (<= 131072 rows), 71
 * stages; without the counter pass a stage costs its cold cap plus ~0.2 s (warm-up, check, hot batches), so at
 * most 71 x 0.7 s = 50 s, ~30 s at the 0.2-0.5 s a stage takes to reach 0.5% noise; the host (attention checks
 * against the double reference, workload preparation, CPU references once) ~10 s per case, ceilings ~3 s, CUDA
 * start ~2 s: 55-75 s expected. The backbones (ptv3-net, flash3d-net in the gate's form, pipe_net.c: PTv3-m1 and
 * flash3d-46m, each forward plainly and as a graph, 20 forwards of breakdown) add 4 stages a case and, once per
 * run, the two CPU checks (~2-4 s each); at 300k a forward takes ~12 and ~40 ms, so ~3 s a network and case: ~20 s
 * more (measured: 58-60 s on an H200 at dcc67eb, ptv3-net 10 s and flash3d-net 8 s of it). The budget caps the
 * worst case. */
#define CI_SIZES "100k,300k"
#define CI_PIPELINES "ptv3,flash3d,ptv3-net,flash3d-net"
#define CI_STAGE_CAP_S 0.5
#define CI_TIME_BUDGET_S 120.0
#define MIN_STAGE_CAP_S 0.05        /* the budget never cuts a stage's sampling below this */

typedef struct sweep_opts {
  workload wl[MAX_WORKLOADS];
  size_t nwl;
  uint64_t sizes[MAX_SIZES];
  size_t nsizes;
  uint32_t batch;
  hx_timing_opts timing;
  int reps_set, warmup_set; /* given on the command line (they then also shape GPU sampling) */
  const f3d_pipeline *pipes[MAX_PIPES];
  size_t npipes;
  const char *out_dir, *run_id;
  uint64_t seed;
  double voxel;
  int verbose;
  int ladder; /* --ladder: every rung of every kernel ladder (pipe_plan.h) */
  timing_mode mode;
  int no_counters;
  const char *metrics;
  double max_time;    /* per-stage cold sampling cap (s); 0: the bench's default */
  double time_budget; /* whole sweep (s); 0: none; < 0: default */
  unsigned shard_i, shard_n; /* shard_n == 0: no sharding */
  int check_args; /* --check-args: every option parsed and checked, then exit 0; nothing read or created */
  uint64_t device_memory;    /* --device-memory: the pipelines' arena capacity in bytes; 0: the device's */
  size_t stop_after_cases;   /* --stop-after-cases (tests only): raise SIGINT once this many cases finished */
  const char *preset;        /* --preset: NULL or "ci" */
  net_dtype dtype;           /* --dtype */
} sweep_opts;

static void usage(FILE *f) {
  fprintf(f,
          "usage: f3dbench sweep [options]\n"
          "Run the registered pipelines over workloads x sizes and write results/<run-id>/\n"
          "(results.csv, samples.csv, context.csv; see results/README.md).\n"
          "  -w, --workloads LIST  synthetic workloads, comma-separated: lidar, uniform, indoor, clusters\n"
          "                        (default lidar; none by default when --input is given)\n"
          "  -i, --input FILE      a recorded cloud (.pcd .ply .bin .pcd.bin .xyz .txt .csv), resampled to\n"
          "                        each size; repeatable; the workload is named after the file\n"
          "  -n, --sizes LIST      points per cloud after voxel dedup: 100k,200k or 100k..600k:100k\n"
          "                        (default 100k..600k:100k)\n"
          "  -b, --batch B         clouds per batch (default 1; ptv3, backbones: at most 64 on a GPU)\n"
          "  -r, --reps N          timed repetitions of CPU stages and of --timing basic (default %u);\n"
          "                        --warmup N discarded first (default %u). With --timing paper: kept GPU\n"
          "                        samples (default 19) and CPU reps (default 19 then); with nvbench: the\n"
          "                        minimum of kept cold samples (default 10)\n"
          "  -p, --pipelines LIST  pipelines to run, comma-separated (default: all registered)\n"
          "  -o, --out-dir DIR     parent of the run directory (default results)\n"
          "      --run-id ID       name of the run directory (default UTC time + git hash)\n"
          "  -s, --seed S          seed (default 1); cloud b of a case uses S + b\n"
          "  -x, --voxel V         voxel size in metres for deduplication (default 0.05, as PTv3)\n"
          "  -L, --ladder          every rung of every kernel ladder (every variant, and the stages that\n"
          "                        split one into its parts) instead of the main path: the best variant\n"
          "                        of each operation, PTv3's path and the naive ablations (PSH v1 vs v2,\n"
          "                        attention v0 on small cases); also --max-time 3, --time-budget %.0f\n"
          "      --preset ci       CI perf check (< 2 min on an H100): ptv3, flash3d and the backbones\n"
          "                        (ptv3-net, flash3d-net: PTv3-m1 and flash3d-46m only) at 100k,300k, no\n"
          "                        counters, --max-time 0.5 --time-budget 120 unless given\n"
          "  -l, --list-pipelines  list registered and planned pipelines and exit\n"
          "      --check-args      check the options and exit (0, or 2 naming the problem); nothing is\n"
          "                        read, created or run (./f3d run: before fetching recorded clouds)\n"
          "  -v, --verbose         one line per pipeline and case on stderr (-vv: per stage)\n"
          "  -h, --help            this text\n",
          HX_TIMING_DEFAULT_REPS, HX_TIMING_DEFAULT_WARMUP, LADDER_TIME_BUDGET_S);
  fprintf(f,
          "GPU measurement (see README.md, \"Timing\"):\n"
          "  -t, --timing MODE     nvbench (default): warm-up, cold samples with the L2 flushed behind a\n"
          "                        blocking kernel until the noise (std/mean) is under 0.5%% or a cap, SM\n"
          "                        clock per sample with throttled samples dropped, then hot back-to-back\n"
          "                        batches; paper: 20 runs, first discarded (mean, std of 19); basic: CUDA\n"
          "                        events around --reps runs, no counters\n"
          "      --no-counters     no CUPTI counter pass (timing only)\n"
          "      --metrics LIST    counters, comma-separated CUPTI or short names (default sm_active,\n"
          "                        sm_issue, tensor_active, dram_read_bw, gpu_time); an unknown name is\n"
          "                        an error listing close names\n"
          "      --max-time S      nvbench: per-stage cap on cold sampling, seconds (default %.2g; 3 with\n"
          "                        --ladder)\n"
          "      --time-budget S   nvbench: whole-sweep budget in seconds (default %.0f; 0 = none); when\n"
          "                        the stages left would not fit, their sampling caps are lowered (context\n"
          "                        time_budget_cut says whether it happened)\n"
          "      --device-memory BYTES  device memory a pipeline may use (e.g. 512M, 2G); a pipeline that\n"
          "                        needs more is skipped with skipped_bytes_needed/_free rows, the sweep goes\n"
          "                        on (so it is when the device itself runs out)\n"
          "      --shard I/N       run only the cases whose index is I modulo N (I = 0..N-1; N/N means\n"
          "                        0/N, for 1-based job arrays); f3dbench merge joins the shards\n"
          "      --dtype fp16|bf16 the 16-bit type of the backbones, the attention stages and the\n"
          "                        convolution stage (default fp16; fp32 accumulation either way); their\n"
          "                        floors take that type's cuBLAS ceiling; bf16 needs a CUDA device.\n"
          "                        compare and merge refuse runs of different types\n",
          DEFAULT_STAGE_CAP_S, DEFAULT_TIME_BUDGET_S);
  fputs("Without a CUDA device, pipelines run their CPU references (variant \"cpu\"), timed on the CPU; the GPU-only\n"
        "ones (", f);
  for (size_t i = 0, k = 0; i < f3d_pipeline_count; i++)
    if (f3d_pipelines[i].gpu_only) fprintf(f, "%s%s", k++ ? ", " : "", f3d_pipelines[i].name);
  fputs(") add no rows, and a sweep of them alone is refused.\n", f);
}

static void list_pipelines(FILE *f) {
  fprintf(f, "registered pipelines:\n");
  for (size_t i = 0; i < f3d_pipeline_count; i++)
    fprintf(f, "  %-10s %s\n", f3d_pipelines[i].name, f3d_pipelines[i].description);
  int any = 0;
  for (size_t i = 0; i < f3d_planned_pipeline_count; i++)
    if (!f3d_pipeline_find(f3d_planned_pipelines[i])) {
      if (!any) fprintf(f, "planned, not registered yet:\n");
      any = 1;
      fprintf(f, "  %s\n", f3d_planned_pipelines[i]);
    }
}

/* Split a comma list in place; returns the count, or -1 for more than cap items or an empty one ("a,,b", a comma
 * first or last, an empty list), which strtok would have skipped without a word. */
static int split_list(char *s, char **items, int cap) {
  int n = 0;
  for (char *p = s;;) {
    char *c = strchr(p, ',');
    if (c) *c = '\0';
    if (!*p || n == cap) return -1;
    items[n++] = p;
    if (!c) return n;
    p = c + 1;
  }
}

/* Points per cloud a size may ask for: above what any pipeline holds on a 141 GB device (PTv3's forward ~2 GB a
 * million rows), so a typo such as 1e15 is a usage error before the run, not an allocation failure inside it. */
#define SWEEP_MAX_POINTS 100000000ull

/* "100k,200k" or "A..B:STEP" (inclusive), each at most SWEEP_MAX_POINTS. Appends to o->sizes. arg is not modified
 * (argv is recorded in the context as typed). */
static int parse_sizes(sweep_opts *o, const char *arg) {
  char buf[1024], *items[MAX_SIZES];
  if (strlen(arg) >= sizeof buf) return -1;
  snprintf(buf, sizeof buf, "%s", arg);
  int n = split_list(buf, items, MAX_SIZES);
  if (n <= 0) return -1;
  for (int i = 0; i < n; i++) {
    char *dots = strstr(items[i], "..");
    if (!dots) {
      uint64_t v;
      if (f3d_parse_count(items[i], &v) != 0 || v == 0 || v > SWEEP_MAX_POINTS || o->nsizes == MAX_SIZES) return -1;
      o->sizes[o->nsizes++] = v;
      continue;
    }
    *dots = '\0';
    char *colon = strchr(dots + 2, ':');
    if (!colon) return -1;
    *colon = '\0';
    uint64_t a, b, step;
    if (f3d_parse_count(items[i], &a) || f3d_parse_count(dots + 2, &b) || f3d_parse_count(colon + 1, &step) ||
        a == 0 || step == 0 || b < a || b > SWEEP_MAX_POINTS)
      return -1;
    for (uint64_t v = a; v <= b; v += step) {
      if (o->nsizes == MAX_SIZES) return -1;
      o->sizes[o->nsizes++] = v;
    }
  }
  return 0;
}

/* Workload name of a recorded file: its base name without the known extensions. */
static void stem_of(const char *path, char *out, size_t cap) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  snprintf(out, cap, "%s", base);
  static const char *const exts[] = {".pcd.bin", ".pcd", ".ply", ".bin", ".xyz", ".txt", ".csv"};
  size_t len = strlen(out);
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
    size_t e = strlen(exts[i]);
    if (len > e && strcmp(out + len - e, exts[i]) == 0) {
      out[len - e] = '\0';
      return;
    }
  }
}

static int parse_args(sweep_opts *o, int argc, char **argv, int *exit_code) {
  enum { OPT_RUN_ID = 256, OPT_WARMUP, OPT_NO_COUNTERS, OPT_METRICS, OPT_MAX_TIME, OPT_BUDGET, OPT_SHARD,
         OPT_DEVICE_MEMORY, OPT_STOP_AFTER, OPT_PRESET, OPT_DTYPE };
  static const struct option longopts[] = {
      {"workloads", required_argument, NULL, 'w'}, {"input", required_argument, NULL, 'i'},
      {"sizes", required_argument, NULL, 'n'},     {"batch", required_argument, NULL, 'b'},
      {"reps", required_argument, NULL, 'r'},      {"warmup", required_argument, NULL, OPT_WARMUP},
      {"pipelines", required_argument, NULL, 'p'}, {"out-dir", required_argument, NULL, 'o'},
      {"run-id", required_argument, NULL, OPT_RUN_ID}, {"seed", required_argument, NULL, 's'},
      {"voxel", required_argument, NULL, 'x'},     {"list-pipelines", no_argument, NULL, 'l'},
      {"verbose", no_argument, NULL, 'v'},         {"help", no_argument, NULL, 'h'},
      {"ladder", no_argument, NULL, 'L'},          {"check-args", no_argument, NULL, 'C'},
      {"timing", required_argument, NULL, 't'},    {"no-counters", no_argument, NULL, OPT_NO_COUNTERS},
      {"metrics", required_argument, NULL, OPT_METRICS}, {"max-time", required_argument, NULL, OPT_MAX_TIME},
      {"time-budget", required_argument, NULL, OPT_BUDGET}, {"shard", required_argument, NULL, OPT_SHARD},
      {"device-memory", required_argument, NULL, OPT_DEVICE_MEMORY},
      {"stop-after-cases", required_argument, NULL, OPT_STOP_AFTER}, /* for tests; not in --help */
      {"preset", required_argument, NULL, OPT_PRESET}, {"dtype", required_argument, NULL, OPT_DTYPE},
      {NULL, 0, NULL, 0}};
  const char *workloads = NULL;
  char *pipes = NULL;
  int c;
  uint64_t v;
  *exit_code = 2;
  while ((c = getopt_long(argc, argv, "w:i:n:b:r:p:o:s:x:t:Llvh", longopts, NULL)) != -1) {
    switch (c) {
    case 'w':
      workloads = optarg;
      break;
    case 'i':
      if (!*optarg) {
        f3d_fail("sweep", "--input '': an empty path (name a point-cloud file)");
        return -1;
      }
      if (o->nwl == MAX_WORKLOADS) {
        f3d_fail("sweep", "at most %d workloads", MAX_WORKLOADS);
        return -1;
      }
      o->wl[o->nwl].path = optarg;
      stem_of(optarg, o->wl[o->nwl].name, sizeof o->wl[o->nwl].name);
      o->nwl++;
      break;
    case 'n':
      if (parse_sizes(o, optarg) != 0) {
        f3d_fail("sweep", "--sizes '%s': expected counts from 1 to 100M like 100k,200k or 100k..600k:100k (at most %d)",
                 optarg, MAX_SIZES);
        return -1;
      }
      break;
    case 'b':
      if (f3d_parse_u64(optarg, &v) || v == 0 || v > 4096) {
        f3d_fail("sweep", "--batch '%s': expected 1..4096", optarg);
        return -1;
      }
      o->batch = (uint32_t)v;
      break;
    case 'r':
      if (f3d_parse_u64(optarg, &v) || v == 0 || v > HX_TIMING_MAX_REPS) {
        f3d_fail("sweep", "--reps '%s': expected 1..%u", optarg, HX_TIMING_MAX_REPS);
        return -1;
      }
      o->timing.reps = (uint32_t)v;
      o->reps_set = 1;
      break;
    case OPT_WARMUP:
      if (f3d_parse_u64(optarg, &v) || v > HX_TIMING_MAX_REPS) {
        f3d_fail("sweep", "--warmup '%s': expected 0..%u", optarg, HX_TIMING_MAX_REPS);
        return -1;
      }
      o->timing.warmup = (uint32_t)v;
      o->warmup_set = 1;
      break;
    case 't': {
      int found = 0;
      for (int m = 0; m < 3; m++)
        if (strcmp(optarg, timing_names[m]) == 0) o->mode = (timing_mode)m, found = 1;
      if (!found) {
        f3d_fail("sweep", "--timing '%s': expected nvbench, paper or basic", optarg);
        return -1;
      }
      break;
    }
    case OPT_NO_COUNTERS:
      o->no_counters = 1;
      break;
    case OPT_METRICS:
      o->metrics = optarg;
      break;
    case OPT_MAX_TIME:
      if (f3d_parse_pos_double(optarg, &o->max_time)) {
        f3d_fail("sweep", "--max-time '%s': expected a positive number of seconds", optarg);
        return -1;
      }
      break;
    case OPT_BUDGET: {
      double tb = 0.0;
      if (f3d_parse_nonneg_double(optarg, &tb) || tb > 1e9) {
        f3d_fail("sweep", "--time-budget '%s': expected seconds >= 0 (0 = no budget)", optarg);
        return -1;
      }
      o->time_budget = tb;
      break;
    }
    case OPT_DEVICE_MEMORY:
      if (f3d_parse_bytes(optarg, &o->device_memory)) {
        f3d_fail("sweep", "--device-memory '%s': expected bytes >= 1, e.g. 1048576, 512M or 2G (powers of 1024)", optarg);
        return -1;
      }
      break;
    case OPT_PRESET:
      if (strcmp(optarg, "ci") != 0) {
        f3d_fail("sweep", "--preset '%s': expected ci", optarg);
        return -1;
      }
      o->preset = optarg;
      break;
    case OPT_STOP_AFTER: /* tests: an interruption at a known point, as Ctrl-C after that many cases */
      if (f3d_parse_u64(optarg, &v) || v == 0 || v > 1000000) {
        f3d_fail("sweep", "--stop-after-cases '%s': expected 1..1000000", optarg);
        return -1;
      }
      o->stop_after_cases = (size_t)v;
      break;
    case OPT_SHARD: {
      uint64_t si, sn;
      char buf[64];
      snprintf(buf, sizeof buf, "%s", optarg);
      char *slash = strchr(buf, '/');
      if (slash) *slash = '\0';
      if (!slash || f3d_parse_u64(buf, &si) || f3d_parse_u64(slash + 1, &sn) || sn == 0 || sn > 4095 || si > sn) {
        f3d_fail("sweep", "--shard '%s': expected I/N with 0 <= I < N <= 4095 (N/N = 0/N)", optarg);
        return -1;
      }
      o->shard_i = (unsigned)si;
      o->shard_n = (unsigned)sn;
      break;
    }
    case 'p':
      pipes = optarg;
      break;
    case 'o':
      if (!*optarg) {
        f3d_fail("sweep", "--out-dir '': an empty path (name the folder the run directory goes in)");
        return -1;
      }
      o->out_dir = optarg;
      break;
    case OPT_RUN_ID: /* hx_results_open's rule, checked here so that --check-args refuses what the run would */
      if (!*optarg || strchr(optarg, '/') || !strcmp(optarg, ".") || !strcmp(optarg, "..")) {
        f3d_fail("sweep", "--run-id '%s': a plain directory name (no '/', not empty, '.' or '..')", optarg);
        return -1;
      }
      if (strlen(optarg) > 255) { /* a directory name's limit (NAME_MAX); it was cut to 255 bytes silently */
        f3d_fail("sweep", "--run-id '%.40s...': %zu bytes, a directory name holds at most 255", optarg,
                 strlen(optarg));
        return -1;
      }
      o->run_id = optarg;
      break;
    case 's':
      if (f3d_parse_u64(optarg, &o->seed)) {
        f3d_fail("sweep", "--seed '%s': expected an unsigned integer", optarg);
        return -1;
      }
      break;
    case 'x':
      if (f3d_parse_pos_double(optarg, &o->voxel)) {
        f3d_fail("sweep", "--voxel '%s': expected a positive size in metres", optarg);
        return -1;
      }
      break;
    case 'C':
      o->check_args = 1;
      break;
    case OPT_DTYPE: {
      hx_err derr;
      if (net_dtype_parse(optarg, &o->dtype, &derr) != HX_OK) {
        f3d_fail("sweep", "--dtype '%s': expected fp16 or bf16", optarg);
        return -1;
      }
      break;
    }
    case 'L':
      o->ladder = 1;
      break;
    case 'l':
      list_pipelines(stdout);
      *exit_code = 0;
      return -1;
    case 'v':
      o->verbose++;
      break;
    case 'h':
      usage(stdout);
      *exit_code = 0;
      return -1;
    default:
      usage(stderr);
      return -1;
    }
  }
  if (optind < argc) {
    f3d_fail("sweep", "unexpected argument '%s'", argv[optind]);
    return -1;
  }
  if (o->preset) { /* ci: what the options given leave open; the main path, no counters */
    if (o->ladder || o->metrics) {
      f3d_fail("sweep", "--preset ci measures the main path without counters: %s does not apply",
               o->ladder ? "--ladder" : "--metrics");
      return -1;
    }
    if (o->nsizes == 0) parse_sizes(o, CI_SIZES);
    if (!pipes) pipes = CI_PIPELINES;
    o->no_counters = 1;
    if (o->mode == TIMING_NVBENCH && o->max_time == 0.0) o->max_time = CI_STAGE_CAP_S;
    if (o->time_budget < 0.0) o->time_budget = CI_TIME_BUDGET_S;
  }
  if (o->mode == TIMING_BASIC && o->metrics) {
    f3d_fail("sweep", "--metrics needs --timing nvbench or paper (basic has no counter pass)");
    return -1;
  }
  if (o->mode != TIMING_NVBENCH && o->max_time > 0.0) {
    f3d_fail("sweep", "--max-time applies to --timing nvbench only");
    return -1;
  }
  if (o->mode == TIMING_PAPER) { /* the paper's protocol on the CPU too: 20 runs, first discarded */
    if (!o->reps_set) o->timing.reps = 19;
    if (!o->warmup_set) o->timing.warmup = 1;
  }
  if (!workloads && o->nwl == 0) workloads = "lidar";
  if (workloads) {
    char buf[512], *items[MAX_WORKLOADS];
    const int fits = strlen(workloads) < sizeof buf; /* a longer list would be cut, not refused */
    snprintf(buf, sizeof buf, "%s", workloads);
    int n = fits ? split_list(buf, items, MAX_WORKLOADS) : -1;
    if (n <= 0) {
      f3d_fail("sweep", "--workloads '%.60s%s': an empty item, or too long a list", workloads, fits ? "" : "...");
      return -1;
    }
    for (int i = 0; i < n; i++) {
      if (o->nwl == MAX_WORKLOADS) {
        f3d_fail("sweep", "at most %d workloads", MAX_WORKLOADS);
        return -1;
      }
      workload *w = &o->wl[o->nwl];
      if (wl_kind_parse(items[i], &w->kind) != HX_OK) {
        f3d_fail("sweep", "--workloads: unknown workload '%s' (lidar, uniform, indoor, clusters)", items[i]);
        return -1;
      }
      snprintf(w->name, sizeof w->name, "%s", wl_kind_name(w->kind));
      w->path = NULL;
      o->nwl++;
    }
  }
  if (o->nsizes == 0) parse_sizes(o, "100k..600k:100k");
  if (pipes) {
    char pbuf[1024], *items[MAX_PIPES];
    const int fits = strlen(pipes) < sizeof pbuf;
    snprintf(pbuf, sizeof pbuf, "%s", pipes);
    int n = fits ? split_list(pbuf, items, MAX_PIPES) : -1;
    if (n <= 0) {
      f3d_fail("sweep", "--pipelines '%.60s%s': an empty item, or too long a list", pipes, fits ? "" : "...");
      return -1;
    }
    for (int i = 0; i < n; i++) {
      const f3d_pipeline *p = f3d_pipeline_find(items[i]);
      if (!p) {
        int planned = 0;
        for (size_t j = 0; j < f3d_planned_pipeline_count; j++)
          planned |= strcmp(items[i], f3d_planned_pipelines[j]) == 0;
        f3d_fail("sweep", "--pipelines: '%s' %s (f3dbench sweep --list-pipelines)", items[i],
                 planned ? "is planned but not implemented yet" : "is not a pipeline");
        return -1;
      }
      o->pipes[o->npipes++] = p;
    }
  } else {
    for (size_t i = 0; i < f3d_pipeline_count && o->npipes < MAX_PIPES; i++) o->pipes[o->npipes++] = &f3d_pipelines[i];
  }
  /* A repeated size, workload or pipeline would record every key twice (compare would pool them
   * unawares); two --input files with one stem would share a workload name. */
  for (size_t i = 0; i < o->nsizes; i++)
    for (size_t j = 0; j < i; j++)
      if (o->sizes[i] == o->sizes[j]) {
        f3d_fail("sweep", "--sizes: %llu points given twice", (unsigned long long)o->sizes[i]);
        return -1;
      }
  for (size_t i = 0; i < o->nwl; i++)
    for (size_t j = 0; j < i; j++)
      if (strcmp(o->wl[i].name, o->wl[j].name) == 0) {
        f3d_fail("sweep", "workload '%s' given twice%s", o->wl[i].name,
                 o->wl[i].path ? " (two --input files with one name: rename one)" : "");
        return -1;
      }
  for (size_t i = 0; i < o->npipes; i++)
    for (size_t j = 0; j < i; j++)
      if (o->pipes[i] == o->pipes[j]) {
        f3d_fail("sweep", "--pipelines: '%s' given twice", o->pipes[i]->name);
        return -1;
      }
  for (size_t i = 0; i < o->npipes && F3D_HAVE_CUDA; i++) /* the limits are the GPU paths' */
    if (o->pipes[i]->max_batch && o->batch > o->pipes[i]->max_batch) {
      f3d_fail("sweep", "--batch %u: pipeline '%s' takes at most %u clouds (--pipelines leaves it out)", o->batch,
               o->pipes[i]->name, o->pipes[i]->max_batch);
      return -1;
    }
  return 0;
}

/* Build the `batch` clouds of one case: cloud b = wl_make_exact(kind or source, n, voxel, seed + b). */
static hx_status build_case(wl_batch *out, const workload *w, size_t n, const sweep_opts *o, hx_err *err) {
  wl_cloud *clouds = calloc(o->batch, sizeof *clouds);
  if (!clouds) return hx_errf(err, HX_ENOMEM, "no memory for %u clouds", o->batch);
  hx_status st = HX_OK;
  int warned = 0;
  for (uint32_t b = 0; b < o->batch && st == HX_OK; b++) {
    int tiled = 0;
    st = wl_make_exact(&clouds[b], w->kind, w->path ? &w->source : NULL, n, o->voxel, o->seed + b, &tiled, err);
    if (st == HX_OK && tiled && !warned) {
      fprintf(stderr, "%sf3dbench: sweep: warning: %s has fewer than %zu voxels at %g m: tiled copies with jitter\n",
              isatty(STDERR_FILENO) ? "\r\033[K" : "", w->name, n, o->voxel);
      warned = 1;
    }
  }
  if (st == HX_OK) st = wl_batch_from_clouds(out, clouds, o->batch, err);
  for (uint32_t b = 0; b < o->batch; b++) wl_cloud_free(&clouds[b]);
  free(clouds);
  return st;
}

static hx_status write_context(hx_results *r, const sweep_opts *o, const hx_device_info *dev, int argc,
                               char **argv, hx_err *err) {
  char buf[2048];
  size_t len = 0;
  buf[0] = '\0';
  /* The command line as typed (argv[0] is the dispatcher's label, not a word the user typed). */
  len += (size_t)snprintf(buf, sizeof buf, "f3dbench sweep");
  for (int i = 1; i < argc && len < sizeof buf; i++) len += (size_t)snprintf(buf + len, sizeof buf - len, " %s", argv[i]);
  HX_TRY(hx_results_context(r, "command_line", buf, err));
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  HX_TRY(hx_results_context(r, "date_utc", buf, err));
  HX_TRY(f3d_context_build(r, err));
  HX_TRY(f3d_context_device(r, dev, err));
  HX_TRY(hx_results_contextf(r, err, "seed", "%llu", (unsigned long long)o->seed));
  HX_TRY(hx_results_context(r, "seed_rule", "cloud b of a case is generated or resampled with seed + b", err));
  HX_TRY(hx_results_contextf(r, err, "voxel_m", "%g", o->voxel));
  HX_TRY(hx_results_context(r, "dtype", net_dtype_name(o->dtype), err));
  HX_TRY(hx_results_contextf(r, err, "batch", "%u", o->batch));
  HX_TRY(hx_results_contextf(r, err, "reps", "%u", o->timing.reps));
  HX_TRY(hx_results_contextf(r, err, "warmup", "%u", o->timing.warmup));
  len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < o->nsizes && len < sizeof buf; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%llu", i ? " " : "", (unsigned long long)o->sizes[i]);
  HX_TRY(hx_results_context(r, "sizes", buf, err));
  len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < o->nwl && len < sizeof buf; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? " " : "", o->wl[i].name);
  HX_TRY(hx_results_context(r, "workloads", buf, err));
  for (size_t i = 0; i < o->nwl; i++) {
    if (!o->wl[i].path) continue;
    char key[160];
    snprintf(key, sizeof key, "input_%s", o->wl[i].name);
    HX_TRY(hx_results_contextf(r, err, key, "%s (%zu finite points, %zu non-finite dropped)", o->wl[i].path,
                               o->wl[i].source.n, o->wl[i].source.dropped_nonfinite));
  }
  len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < o->npipes && len < sizeof buf; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? " " : "", o->pipes[i]->name);
  HX_TRY(hx_results_context(r, "pipelines", buf, err));
  len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < f3d_planned_pipeline_count && len < sizeof buf; i++)
    if (!f3d_pipeline_find(f3d_planned_pipelines[i]))
      len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", len ? " " : "", f3d_planned_pipelines[i]);
  HX_TRY(hx_results_context(r, "pipelines_missing", buf, err));
  if (o->shard_n) HX_TRY(hx_results_contextf(r, err, "shard", "%u/%u", o->shard_i, o->shard_n));
  if (o->preset) HX_TRY(hx_results_context(r, "preset", o->preset, err));
  HX_TRY(hx_results_context(r, "stage_selection",
                            o->ladder ? "ladder (every rung of every kernel ladder)"
                                      : "main (best entry per operation, PTv3's path, naive ablations)",
                            err));
  return HX_OK;
}

/* ---- the run: progress line and time budget (called by f3d_measure around every stage) ----------- */

typedef struct sweep_run {
  const sweep_opts *o;
  int tty;
  double t_start_ms;
  size_t case_no, ncases; /* 1-based number of the case running, among this shard's cases */
  double budget_s;        /* 0: none */
  double cap_user_s;      /* the per-stage cap the budget may lower, never raise */
  double cap_min_used_s;  /* smallest cap given to a stage (reported in the context) */
  int budget_noted;
  /* estimates for the budget, from finished cases */
  size_t gpu_stages_case, gpu_stages_max;
  double case_start_ms, gpu_ms_case, other_ms_max; /* time outside GPU stages, per case */
  double stage_start_ms, stage_cap_s;
  double over_sum_s; /* sum over GPU stages that ran past their cap of (wall - cap): hot runs, counter
                      * pass, warm-up; over_n of them */
  size_t over_n;
  double last_case_stage_s; /* mean wall time of a GPU stage in the last finished case */
  char stages_list[1024];   /* "workload:n_points:GPU stages" per finished case (context gpu_stages_per_case) */
  size_t stages_len;
  double pipe_wall_s[MAX_PIPES];  /* wall time of each pipeline over all cases (context pipeline_wall_s) */
  double pipe_stage_s[MAX_PIPES]; /* the part of it inside GPU stages (sampling, hot runs, counter pass) */
  size_t cur_pipe;
} sweep_run;

static void clear_line(const sweep_run *r) {
  if (r->tty) fputs("\r\033[K", stderr);
}

static void progress(const sweep_run *r, const f3d_ctx *ctx, const char *what1, const char *what2,
                     const char *what3) {
  if (r->tty)
    fprintf(stderr, "\r\033[K[%zu/%zu] %s n=%zu batch=%u: %s%s%s%s%s (%.0f s elapsed)", r->case_no, r->ncases,
            ctx->c.workload, ctx->c.n_points, ctx->c.batch, what1, what2 ? " " : "", what2 ? what2 : "",
            what3 ? " " : "", what3 ? what3 : "", (hx_now_ms() - r->t_start_ms) / 1e3);
  else if (r->o->verbose >= (what2 ? 2 : 1))
    fprintf(stderr, "[%zu/%zu] %s n=%zu batch=%u: %s%s%s%s%s\n", r->case_no, r->ncases, ctx->c.workload,
            ctx->c.n_points, ctx->c.batch, what1, what2 ? " " : "", what2 ? what2 : "", what3 ? " " : "",
            what3 ? what3 : "");
}

/* The cap for the next GPU stage. What is left of the budget, less the CPU-side time the cases left will
 * take (the largest seen per case), is what the GPU stages left (as many per case as the largest
 * finished case had) may use. While they fit at the pace of the last finished case (mean stage wall
 * time, with a 15% margin) the user's cap stands; otherwise each gets an equal share, less the
 * measured per-stage time outside cold sampling (hot runs, counter pass), as if every stage ran to its
 * cap. Before the first case finishes nothing is known: the user's cap. */
static double stage_cap(sweep_run *r) {
  double cap = r->cap_user_s;
  if (r->budget_s <= 0.0 || r->gpu_stages_max == 0) return cap;
  const double now_s = (hx_now_ms() - r->t_start_ms) / 1e3;
  const size_t cases_left = r->ncases - r->case_no + 1; /* the running one included */
  double left_s = r->budget_s - now_s - r->other_ms_max / 1e3 * (double)(cases_left - 1);
  double stages = (double)r->gpu_stages_max * (double)cases_left - (double)r->gpu_stages_case;
  if (stages < 1.0) stages = 1.0;
  if (r->last_case_stage_s * stages <= 0.85 * left_s) return cap;
  double over = r->over_n ? r->over_sum_s / (double)r->over_n : 0.2;
  if (over < 0.1) over = 0.1;
  double fit = 0.85 * left_s / stages - over;
  if (fit < cap) cap = fit;
  return cap < MIN_STAGE_CAP_S ? MIN_STAGE_CAP_S : cap;
}

static void stage_hook(void *arg, f3d_ctx *ctx, const char *pipeline, const char *kernel, const char *variant,
                       hx_clock clock, int done) {
  sweep_run *r = arg;
  const double now = hx_now_ms();
  if (done) {
    if (r->stage_start_ms > 0.0) {
      double wall_s = (now - r->stage_start_ms) / 1e3;
      r->gpu_ms_case += now - r->stage_start_ms;
      if (r->cur_pipe < MAX_PIPES) r->pipe_stage_s[r->cur_pipe] += wall_s;
      if (wall_s > r->stage_cap_s) r->over_sum_s += wall_s - r->stage_cap_s, r->over_n++;
      r->stage_start_ms = 0.0;
    }
    return;
  }
  progress(r, ctx, pipeline, kernel, variant);
  if (clock != HX_CLOCK_GPU) return;
  r->gpu_stages_case++;
  if (!ctx->bench) return;
  r->stage_start_ms = now;
  r->stage_cap_s = ctx->bench->opts.max_time_s;
  if (r->o->mode != TIMING_NVBENCH) return;
  double cap = stage_cap(r);
  ctx->bench->opts.max_time_s = cap;
  r->stage_cap_s = cap;
  if (cap < r->cap_min_used_s) r->cap_min_used_s = cap;
  if (cap < r->cap_user_s && !r->budget_noted) {
    clear_line(r);
    fprintf(stderr,
            "f3dbench: sweep: note: time budget %.0f s: GPU stages now sample for at most %.2f s (instead of "
            "%.2f s); --time-budget 0 turns the budget off\n",
            r->budget_s, cap, r->cap_user_s);
    r->budget_noted = 1;
  }
}

/* A case ended: its GPU stage count and its time outside GPU stages feed the budget's estimates; the count is
 * also listed for the context. */
static void case_done(sweep_run *r, const char *wl_name, size_t n_points) {
  const double now = hx_now_ms();
  if (r->stages_len < sizeof r->stages_list) {
    int w = snprintf(r->stages_list + r->stages_len, sizeof r->stages_list - r->stages_len, "%s%s:%zu:%zu",
                     r->stages_len ? " " : "", wl_name, n_points, r->gpu_stages_case);
    if (w > 0) r->stages_len += (size_t)w;
    if (r->stages_len >= sizeof r->stages_list) r->stages_len = sizeof r->stages_list - 1; /* truncated */
  }
  if (r->gpu_stages_case > r->gpu_stages_max) r->gpu_stages_max = r->gpu_stages_case;
  if (r->gpu_stages_case) r->last_case_stage_s = r->gpu_ms_case / 1e3 / (double)r->gpu_stages_case;
  double other = now - r->case_start_ms - r->gpu_ms_case;
  if (other > r->other_ms_max) r->other_ms_max = other;
  r->gpu_stages_case = 0;
  r->gpu_ms_case = 0.0;
}

/* Print the time_median/time_std rows of the committed results.csv as a table on stdout. */
static void print_summary(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/results.csv", dir);
  FILE *f = fopen(path, "r");
  if (!f) return;
  char buf[4096], *fld[16];
  size_t n;
  char last_key[1024] = "";
  double median = 0.0;
  /* first pass: column widths of the text columns (recorded workloads have long names) */
  int w[6] = {8, 8, 5, 8, 6, 7};
  while (hx_csv_read(f, buf, sizeof buf, fld, 16, &n, NULL) == HX_OK)
    for (size_t i = 0; i < 6 && n == 9; i++)
      if ((int)strlen(fld[i]) > w[i]) w[i] = (int)strlen(fld[i]);
  rewind(f);
  printf("%-*s %*s %*s %-*s %-*s %-*s %12s %10s\n", w[0], "workload", w[1], "n_points", w[2], "batch", w[3],
         "pipeline", w[4], "kernel", w[5], "variant", "median_ms", "std_ms");
  if (hx_csv_read(f, buf, sizeof buf, fld, 16, &n, NULL) != HX_OK) { /* header */
    fclose(f);
    return;
  }
  while (hx_csv_read(f, buf, sizeof buf, fld, 16, &n, NULL) == HX_OK) {
    if (n != 9) continue;
    char key[1024];
    snprintf(key, sizeof key, "%s|%s|%s|%s|%s|%s", fld[0], fld[1], fld[2], fld[3], fld[4], fld[5]);
    if (strcmp(fld[6], "time_median") == 0) {
      median = strtod(fld[7], NULL);
      snprintf(last_key, sizeof last_key, "%s", key);
    } else if (strcmp(fld[6], "time_std") == 0 && strcmp(key, last_key) == 0) {
      printf("%-*s %*s %*s %-*s %-*s %-*s %12.3f %10.3f\n", w[0], fld[0], w[1], fld[1], w[2], fld[2], w[3], fld[3],
             w[4], fld[4], w[5], fld[5], median, strtod(fld[7], NULL));
    }
  }
  fclose(f);
}

/* A run that fails after `done` finished cases keeps them, as an interrupted one does (hx_results_stop: the rows up
 * to the last finished case, status failed, INCOMPLETE); with none it is aborted, and the caller removes it. */
static void end_failed(hx_results *res, size_t done, const char *why) {
  hx_err e = {HX_OK, ""};
  if (!done) {
    hx_results_abort(res, "failed", why, NULL);
    return;
  }
  if (hx_results_stop(res, "failed", why, &e) != HX_OK) {
    f3d_fail("sweep", "%s", e.msg);
    return;
  }
  f3d_fail("sweep", "the %zu finished case%s kept, run marked incomplete in %s", done, done == 1 ? " is" : "s are",
           hx_results_dir(res));
}

static const char *signal_status(int sig) { return sig == SIGTERM ? "SIGTERM received" : "SIGINT received"; }

int f3d_cmd_sweep(int argc, char **argv) {
  sweep_opts o;
  memset(&o, 0, sizeof o);
  o.batch = 1;
  o.timing = hx_timing_defaults();
  o.out_dir = "results";
  o.seed = 1;
  o.voxel = 0.05;
  o.time_budget = -1.0;
  int code = 1;
  if (parse_args(&o, argc, argv, &code) != 0) return code;
  if (o.check_args) return 0;

  hx_err err = {HX_OK, ""};
  hx_results *res = NULL;
  wl_batch cloud = {0, 0, NULL, NULL};
  hx_bench bench_store, *bench = NULL;
  /* the pipelines' device memory (mem_peak rows): reset before each pipeline; no device memory is
   * touched until a pipeline allocates */
  hx_arena arena;
  hx_arena_init(&arena, "sweep", (size_t)o.device_memory, NULL);
  int rc = 1;
  int discarded = 0; /* the run directory was removed (hx_results_discard) */
  /* Recorded inputs are read once, before anything is created. */
  for (size_t i = 0; i < o.nwl; i++) {
    if (!o.wl[i].path) continue;
    if (wl_read(&o.wl[i].source, o.wl[i].path, WL_FMT_AUTO, &err) != HX_OK) {
      f3d_fail("sweep", "%s", err.msg);
      goto out;
    }
    if (o.wl[i].source.dropped_nonfinite)
      fprintf(stderr, "f3dbench: sweep: note: %s: %zu points with NaN/Inf coordinates dropped\n", o.wl[i].path,
              o.wl[i].source.dropped_nonfinite);
  }

  /* The device: none is a normal case (CPU references, variant "cpu"). */
  hx_device_info dev;
  int have_gpu = 0;
  char counters_off[600] = "";
  const hx_status gs = f3d_gpu_check(&dev, &err);
  if (gs == HX_OK) {
    have_gpu = 1;
  } else if (gs == HX_EUNSUPPORTED) {
    /* a device this build has no machine code for is a build to fix, not a CPU-only run to fall back on */
    f3d_fail_msg("sweep", err.msg);
    rc = 1;
    goto out;
  } else {
    /* a pipeline with no CPU stage adds no row here: say which; with nothing else selected, there is no run */
    char gpu_only[256] = "";
    size_t n_gpu_only = 0;
    for (size_t i = 0, len = 0; i < o.npipes; i++)
      if (o.pipes[i]->gpu_only && len < sizeof gpu_only)
        len += (size_t)snprintf(gpu_only + len, sizeof gpu_only - len, "%s%s", n_gpu_only++ ? ", " : "",
                                o.pipes[i]->name);
    if (n_gpu_only == o.npipes) {
      f3d_fail("sweep", "%s need%s a CUDA device, and %s: nothing to measure, no run written", gpu_only,
               n_gpu_only == 1 ? "s" : "", err.msg);
      rc = 1;
      goto out;
    }
    if (o.dtype != NET_F16) { /* a run that says bf16 and measured nothing in it would be refused beside its twin */
      f3d_fail("sweep", "--dtype %s applies to the GPU stages, and %s: the CPU references compute in fp32, no run "
               "written", net_dtype_name(o.dtype), err.msg);
      rc = 1;
      goto out;
    }
    fprintf(stderr, "f3dbench: sweep: note: %s: running CPU references only (variant \"cpu\")\n", err.msg);
    if (n_gpu_only)
      fprintf(stderr, "f3dbench: sweep: note: %s: GPU only, no rows without a CUDA device\n", gpu_only);
    snprintf(counters_off, sizeof counters_off, "off (%s)", err.msg);
    /* Names can only be checked against a device's counters; say that they were not, rather than let a
     * typo pass for a checked list. */
    if (o.metrics) fprintf(stderr, "f3dbench: sweep: note: --metrics '%s' not checked and not used: no GPU counters\n", o.metrics);
  }

  /* The GPU measurement, opened before the run directory exists so that a bad --metrics name stops
   * here. No device or a CPU-only build: no bench, GPU stages do not run anyway. */
  if (have_gpu && o.mode != TIMING_BASIC) {
    hx_status bs = hx_bench_open(&bench_store, dev.index, o.metrics, o.no_counters, o.mode == TIMING_PAPER, stderr,
                                 &err);
    if (bs == HX_OK) {
      bench = &bench_store;
    } else if (bs == HX_ENODEV) {
      fprintf(stderr, "f3dbench: sweep: note: %s: GPU stages timed with --timing basic\n", err.msg);
      snprintf(counters_off, sizeof counters_off, "off (%s)", err.msg);
    } else {
      f3d_fail("sweep", "%s", err.msg);
      rc = bs == HX_EINVAL ? 2 : 1;
      goto out;
    }
  } else if (have_gpu) {
    snprintf(counters_off, sizeof counters_off, "off (--timing basic)");
  }
  if (bench) {
    hx_measure_opts *mo = &bench->opts;
    if (o.mode == TIMING_NVBENCH && o.max_time > 0.0) mo->max_time_s = o.max_time;
    else if (o.mode == TIMING_NVBENCH && !o.ladder) mo->max_time_s = DEFAULT_STAGE_CAP_S; /* --ladder: the bench's */
    if (o.warmup_set) mo->warmup = o.timing.warmup;
    if (o.reps_set) {
      mo->min_samples = o.timing.reps;
      if (o.mode == TIMING_PAPER || mo->max_samples < mo->min_samples) mo->max_samples = o.timing.reps;
    }
  }

  char missing[256] = "";
  for (size_t i = 0, len = 0; i < f3d_planned_pipeline_count; i++)
    if (!f3d_pipeline_find(f3d_planned_pipelines[i]))
      len += (size_t)snprintf(missing + len, sizeof missing - len, "%s%s", len ? ", " : "", f3d_planned_pipelines[i]);
  if (missing[0]) fprintf(stderr, "f3dbench: sweep: note: pipelines not registered yet: %s\n", missing);

  char run_id[256];
  if (o.run_id) {
    snprintf(run_id, sizeof run_id, "%s", o.run_id);
  } else {
    char hash[64];
    int dirty;
    f3d_git_state(hash, sizeof hash, &dirty);
    if (hx_run_id(run_id, sizeof run_id, (int64_t)time(NULL), hash, &err) != HX_OK) {
      f3d_fail("sweep", "%s", err.msg);
      goto out;
    }
    /* shards of one sweep often start in the same second on a shared file system */
    if (o.shard_n) {
      size_t l = strlen(run_id);
      snprintf(run_id + l, sizeof run_id - l, "-shard%uof%u", o.shard_i, o.shard_n);
    }
    /* Two runs in the same second: add -2, -3, ... rather than fail. */
    char probe[4096];
    struct stat sb;
    size_t base_len = strlen(run_id);
    for (int k = 2; k < 100; k++) {
      snprintf(probe, sizeof probe, "%s/%s", o.out_dir, run_id);
      if (stat(probe, &sb) != 0) break;
      snprintf(run_id + base_len, sizeof run_id - base_len, "-%d", k);
    }
  }
  /* Handlers first: once the run directory exists, a signal always ends in an orderly abort. */
  f3d_signals_install("sweep", 1);
  if (hx_results_open(&res, o.out_dir, run_id, &err) != HX_OK ||
      write_context(res, &o, have_gpu ? &dev : NULL, argc, argv, &err) != HX_OK) {
    f3d_fail("sweep", "%s", err.msg);
    goto out;
  }
  if (hx_results_context(res, "run_id", run_id, &err) != HX_OK) {
    f3d_fail("sweep", "%s", err.msg);
    goto out;
  }

  sweep_run run;
  memset(&run, 0, sizeof run);
  run.o = &o;
  run.tty = isatty(STDERR_FILENO);
  run.t_start_ms = hx_now_ms();
  const int tty = run.tty;
  size_t ncases = 0;
  for (size_t i = 0; i < o.nwl * o.nsizes; i++) ncases += !o.shard_n || i % o.shard_n == o.shard_i % o.shard_n;
  run.ncases = ncases;
  f3d_cases cases;
  if (f3d_cases_begin(&cases, res, ncases, &err) != HX_OK ||
      (o.device_memory &&
       hx_results_contextf(res, &err, "device_memory_cap_bytes", "%llu", (unsigned long long)o.device_memory) != HX_OK)) {
    f3d_fail("sweep", "%s", err.msg);
    hx_results_abort(res, "failed", err.msg, NULL);
    goto out;
  }
  if (o.device_memory && !have_gpu)
    fprintf(stderr, "f3dbench: sweep: note: --device-memory has no effect without a CUDA device\n");
  size_t mem_base = 0;
  /* Timing protocol, counters (on, or off and why) and the ceilings of this device, in the context. */
  if (bench) {
    if (tty) fputs("measuring ceilings (copy bandwidth, cuBLAS GEMM)", stderr);
    hx_status cs = hx_bench_context(bench, res, 1, &err);
    clear_line(&run);
    if (cs != HX_OK) {
      f3d_fail("sweep", "%s", err.msg);
      hx_results_abort(res, "failed", err.msg, NULL);
      goto out;
    }
    hx_err e;
    if (hx_meter_mem_used(bench->meter, &mem_base, &e) != HX_OK) mem_base = 0;
    const double budget_default = o.ladder ? LADDER_TIME_BUDGET_S : DEFAULT_TIME_BUDGET_S;
    run.budget_s = o.mode == TIMING_NVBENCH ? (o.time_budget < 0.0 ? budget_default : o.time_budget) : 0.0;
    run.cap_user_s = run.cap_min_used_s = bench->opts.max_time_s;
    if (run.budget_s > 0.0 && hx_results_contextf(res, &err, "time_budget_s", "%g", run.budget_s) != HX_OK) {
      f3d_fail("sweep", "%s", err.msg);
      hx_results_abort(res, "failed", err.msg, NULL);
      goto out;
    }
  } else if (hx_results_context(res, "timing", "basic", &err) != HX_OK ||
             hx_results_context(res, "counters", counters_off, &err) != HX_OK) {
    f3d_fail("sweep", "%s", err.msg);
    hx_results_abort(res, "failed", err.msg, NULL);
    goto out;
  }
  if (hx_results_flush(res, &err) != HX_OK) {
    f3d_fail("sweep", "%s", err.msg);
    hx_results_abort(res, "failed", err.msg, NULL);
    goto out;
  }
  if (o.shard_n)
    fprintf(stderr, "f3dbench: sweep: shard %u/%u: %zu of %zu cases\n", o.shard_i, o.shard_n, ncases,
            o.nwl * o.nsizes);

  size_t icase = 0;
  f3d_memo memo;
  memset(&memo, 0, sizeof memo);
  for (size_t w = 0; w < o.nwl; w++) {
    for (size_t s = 0; s < o.nsizes; s++, icase++) {
      if (o.shard_n && icase % o.shard_n != o.shard_i % o.shard_n) continue;
      run.case_no++;
      run.case_start_ms = hx_now_ms();
      size_t n = (size_t)o.sizes[s];
      if (tty)
        fprintf(stderr, "\r\033[K[%zu/%zu] %s n=%zu batch=%u: preparing clouds", run.case_no, ncases, o.wl[w].name,
                n, o.batch);
      if (build_case(&cloud, &o.wl[w], n, &o, &err) != HX_OK) {
        clear_line(&run);
        f3d_fail("sweep", "%s n=%zu: %s", o.wl[w].name, n, err.msg);
        end_failed(res, cases.done, err.msg);
        goto out;
      }
      f3d_ctx ctx;
      memset(&ctx, 0, sizeof ctx);
      ctx.results = res;
      ctx.timing = o.timing;
      ctx.have_gpu = have_gpu;
      ctx.dev = have_gpu ? &dev : NULL;
      ctx.bench = bench;
      ctx.stream = bench ? hx_bench_stream(bench) : NULL;
      ctx.mem_base = mem_base;
      ctx.arena = have_gpu ? &arena : NULL;
      ctx.stage_hook = stage_hook;
      ctx.stage_hook_arg = &run;
      ctx.seed = o.seed;
      ctx.verbose = o.verbose;
      ctx.ladder = o.ladder;
      ctx.gate = o.preset != NULL;
      ctx.dtype = o.dtype;
      ctx.max_points = 0;
      for (size_t q = 0; q < o.nsizes; q++)
        if (o.sizes[q] > ctx.max_points) ctx.max_points = (size_t)o.sizes[q];
      ctx.memo = &memo;
      ctx.c.workload = o.wl[w].name;
      ctx.c.n_points = n;
      ctx.c.batch = o.batch;
      ctx.c.voxel = o.voxel;
      ctx.c.cloud = &cloud;
      ctx.c.kind = o.wl[w].kind;
      ctx.c.source = o.wl[w].path ? &o.wl[w].source : NULL;
      ctx.c.source_path = o.wl[w].path;
      ctx.stop = &f3d_stop_signal;
      for (size_t p = 0; p < o.npipes; p++) {
        if (f3d_stop_signal) break;
        progress(&run, &ctx, o.pipes[p]->name, NULL, NULL);
        err.status = HX_OK;
        err.msg[0] = '\0';
        hx_arena_reset(&arena);
        snprintf(arena.name, sizeof arena.name, "%s", o.pipes[p]->name);
        ctx.mem_used_max = 0;
        const double pipe_t0 = hx_now_ms();
        run.cur_pipe = p;
        int skipped = 0; /* refused device memory: recorded as skipped_bytes_needed/_free, the sweep goes on */
        hx_status pst = f3d_pipeline_run(&ctx, o.pipes[p], &skipped, &err);
        if (p < MAX_PIPES) run.pipe_wall_s[p] += (hx_now_ms() - pipe_t0) / 1e3;
        if (pst == HX_OK) pst = f3d_record_mem_total(&ctx, o.pipes[p]->name, &err);
        if (pst == HX_OK && hx_arena_live(&arena) > 0) {
          /* a pipeline frees what it allocates (sweep.h); say so, and free it here so the next starts clean */
          clear_line(&run);
          fprintf(stderr, "f3dbench: sweep: note: pipeline %s left %zu B in %zu device allocations (freed)\n",
                  o.pipes[p]->name, hx_arena_in_use(&arena), hx_arena_live(&arena));
        }
        hx_arena_release_all(&arena);
        if (pst != HX_OK) {
          if (f3d_stop_signal) break; /* f3d_measure refused to start: reported as interrupted below */
          clear_line(&run);
          f3d_fail("sweep", "%s n=%zu pipeline %s: %s", o.wl[w].name, n, o.pipes[p]->name,
                   err.msg[0] ? err.msg : hx_status_str(err.status));
          end_failed(res, cases.done, err.msg);
          goto out;
        }
      }
      case_done(&run, o.wl[w].name, n);
      wl_batch_free(&cloud);
      /* A case is kept only when no stop was asked before its last pipeline returned: a pipeline cut short by
       * the signal may return without some of its rows. */
      if (!f3d_stop_signal) {
        if (f3d_case_finished(&cases, res, o.wl[w].name, n, &err) != HX_OK) {
          f3d_fail("sweep", "%s", err.msg);
          end_failed(res, cases.done, err.msg);
          goto out;
        }
        if (o.stop_after_cases && cases.done == o.stop_after_cases) raise(SIGINT); /* handled at once */
      }
      if (f3d_stop_signal) {
        clear_line(&run);
        hx_err serr = {HX_OK, ""};
        hx_status ss = hx_results_stop(res, "interrupted", signal_status(f3d_stop_signal), &serr);
        if (ss != HX_OK) f3d_fail("sweep", "%s", serr.msg);
        /* nothing measured kept: the run directory goes too (hx_results_discard), so it blocks no run-id */
        discarded = !cases.done && hx_results_discard(res, &serr) == HX_OK;
        f3d_fail("sweep", "interrupted (%s) after %zu of %zu cases: %s %s", signal_status(f3d_stop_signal),
                 cases.done, cases.total,
                 discarded                    ? "nothing kept, removed the run directory"
                 : ss == HX_OK && cases.done ? "the finished cases are kept, run marked incomplete in"
                                             : "nothing kept, run marked incomplete in",
                 hx_results_dir(res));
        rc = 128 + f3d_stop_signal;
        goto out;
      }
    }
  }
  clear_line(&run);
  hx_results_contextf(res, NULL, "duration_s", "%.1f", (hx_now_ms() - run.t_start_ms) / 1e3);
  {
    char walls[1024];
    size_t len = 0;
    walls[0] = '\0';
    for (size_t p = 0; p < o.npipes && p < MAX_PIPES && len < sizeof walls; p++) {
      int wr = snprintf(walls + len, sizeof walls - len, "%s%s:%.1f/%.1f", p ? " " : "", o.pipes[p]->name,
                        run.pipe_wall_s[p], run.pipe_stage_s[p]);
      if (wr > 0) len += (size_t)wr;
    }
    hx_results_context(res, "pipeline_wall_s", walls, NULL); /* name:total/inside GPU stages, seconds */
  }
  if (bench && o.mode == TIMING_NVBENCH) {
    hx_results_contextf(res, NULL, "stage_max_time_min_s", "%.3g", run.cap_min_used_s);
    hx_results_context(res, "time_budget_cut", run.budget_noted ? "yes" : "no", NULL);
  }
  if (run.stages_len) hx_results_context(res, "gpu_stages_per_case", run.stages_list, NULL);
  if (bench) hx_results_context(res, "counters_final", bench->counters ? "on" : bench->counters_off, NULL);
  if (hx_results_commit(res, &err) != HX_OK) {
    f3d_fail("sweep", "%s", err.msg);
    goto out;
  }
  print_summary(hx_results_dir(res));
  printf("results: %s\n", hx_results_dir(res));
  rc = 0;
out:
  /* a run that failed before keeping any case holds nothing measured (INCOMPLETE and context.csv): removed, so it
   * blocks no run-id; its error was said above */
  if (rc != 0 && res && !discarded) {
    hx_err derr;
    if (hx_results_discard(res, &derr) == HX_OK)
      f3d_fail("sweep", "nothing measured was kept: removed the run directory %s", hx_results_dir(res));
  }
  hx_arena_destroy(&arena);
  wl_batch_free(&cloud);
  hx_results_close(res);
  if (bench) hx_bench_close(bench);
  for (size_t i = 0; i < o.nwl; i++) wl_cloud_free(&o.wl[i].source);
  return rc;
}
