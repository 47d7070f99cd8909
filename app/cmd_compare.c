/*
 * cmd_compare.c - `f3dbench compare BASE NEW` (or `--baseline BASE NEW`): the CI regression gate over two result
 * directories, and `compare --calibrate FILE RUN RUN...`: the A/A calibration the gate may use.
 *
 * Exit status: 0 nothing slower; 1 at least one key slower; 2 usage or input error (including runs, or a
 * calibration, from different devices, builds or dtypes, or incomplete runs, unless --force, and runs of which no key
 * could be tested: a gate that tested nothing must not pass). The verdict logic is hx_gate_runs (harness/compare.c);
 * docs/measurement.md, "Regression gate", has the rule and the CI recipe.
 */
#include "app/cli.h"
#include "app/stop.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: f3dbench compare [options] BASE_DIR NEW_DIR\n"
          "       f3dbench compare [options] --baseline BASE_DIR NEW_DIR\n"
          "       f3dbench compare --calibrate FILE RUN_DIR RUN_DIR...\n"
          "Gate NEW against BASE key by key (pipeline, kernel, variant, workload, n_points, batch, metric) on\n"
          "their raw samples: a key is slower (faster) when a two-sided Mann-Whitney U test gives p < alpha and\n"
          "its median moved by at least its threshold, max(min effect, k x batch noise, 3.72 x sqrt(2) x A/A\n"
          "sigma): batch noise is the range of the medians of %d consecutive batches of the key's samples (summed\n"
          "over the two runs), the A/A sigma the spread of its median between the runs of --calibration. Prints\n"
          "the verdict first, then one row per key with the threshold and the term that set it (min, batch, aa).\n"
          "Exit status: 0 nothing slower, 1 something slower, 2 error (also: no key could be tested).\n"
          "  -b, --baseline DIR    the baseline run (then NEW_DIR is the only argument)\n"
          "  -a, --alpha P         significance level of the U test (default 0.01)\n"
          "  -e, --min-effect F    smallest threshold, a fraction (default 0.03 = 3%%)\n"
          "  -k, --noise-k K       multiplier of the batch noise (default 2)\n"
          "  -c, --calibration FILE  A/A calibration of this device and build (written by --calibrate)\n"
          "      --calibrate FILE  write the calibration of RUN_DIRs (2 or more runs of one build, 8 or more\n"
          "                        to keep thresholds tight: the same sweep run back to back) to FILE: per key,\n"
          "                        the standard deviation of its median between them, relative, at its 90%%\n"
          "                        upper confidence bound\n"
          "      --include-cpu     gate CPU stages (variant cpu) too; by default they are gated only when\n"
          "                        neither run timed a GPU stage (no GPU, or CPU pipelines alone)\n"
          "      --keys PATTERNS   gate only keys whose pipeline/kernel/variant matches one of these\n"
          "                        comma-separated globs (e.g. 'flash3d/psh.*/*,ptv3/gather_*/*')\n"
          "      --normalize       scale NEW by the ratio of the runs' ceilings measured in each run (copy\n"
          "                        bandwidth; cuBLAS GEMM for stages that declare FLOPs) before gating\n"
          "      --csv FILE        every compared key as CSV too (- for stdout)\n"
          "  -f, --force           compare runs (or a calibration) from different devices, builds or\n"
          "                        dtypes (sweep --dtype), or incomplete runs\n"
          "  -q, --quiet           print only the verdict line\n"
          "  -h, --help            this text\n",
          HX_GATE_BATCHES);
}

static int parse_fraction(const char *s, double *out) {
  double v;
  if (f3d_parse_nonneg_double(s, &v) || v >= 1.0) return -1;
  *out = v;
  return 0;
}

/* --calibrate FILE DIR...: exit 0 written, 2 bad input. */
static int calibrate(const char *path, char **dirs, size_t n) {
  if (n < 2) {
    f3d_fail("compare", "--calibrate %s: expected 2 or more run directories of one build (got %zu)", path, n);
    return 2;
  }
  /* the same run twice would pass for two runs that agree exactly: a noise of zero, which every key then fails */
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < i; j++) {
      struct stat a, b;
      if (stat(dirs[i], &a) == 0 && stat(dirs[j], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        f3d_fail("compare", "--calibrate %s: %s and %s are the same run directory (an A/A calibration needs "
                 "separate runs)", path, dirs[j], dirs[i]);
        return 2;
      }
    }
  hx_run *runs = f3d_runs_load("compare", dirs, n);
  if (!runs) return 2;
  hx_err err;
  int rc = 0;
  if (hx_gate_calibrate(runs, n, path, &err) != HX_OK) {
    f3d_fail("compare", "--calibrate: %s", err.msg);
    rc = 2;
  } else {
    hx_gate_calib c;
    if (hx_gate_calib_load(&c, path, &err) == HX_OK) {
      printf("calibration of %zu runs: %zu keys -> %s\n", n, c.n_keys, path);
      hx_gate_calib_free(&c);
    }
  }
  f3d_runs_free(runs, n);
  return rc;
}

/* A planted-slowdown build (meson -Dplant_delay_pct, for the gate's proof) says so in its context. */
static void note_plant(const hx_run *r, const char *which) {
  const char *v = hx_run_context(r, "plant_delay_pct");
  if (v && strcmp(v, "0") != 0)
    fprintf(stderr, "f3dbench: compare: note: %s (%s) is a planted-slowdown build (plant_delay_pct %s)\n", which,
            r->dir, v);
}

int f3d_cmd_compare(int argc, char **argv) {
  enum { OPT_CALIBRATE = 256, OPT_INCLUDE_CPU, OPT_KEYS, OPT_NORMALIZE, OPT_CSV };
  static const struct option opts[] = {{"alpha", required_argument, NULL, 'a'},
                                       {"min-effect", required_argument, NULL, 'e'},
                                       {"noise-k", required_argument, NULL, 'k'},
                                       {"baseline", required_argument, NULL, 'b'},
                                       {"calibration", required_argument, NULL, 'c'},
                                       {"calibrate", required_argument, NULL, OPT_CALIBRATE},
                                       {"include-cpu", no_argument, NULL, OPT_INCLUDE_CPU},
                                       {"keys", required_argument, NULL, OPT_KEYS},
                                       {"normalize", no_argument, NULL, OPT_NORMALIZE},
                                       {"csv", required_argument, NULL, OPT_CSV},
                                       {"force", no_argument, NULL, 'f'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  hx_gate_opts go = hx_gate_defaults();
  const char *baseline = NULL, *calib_path = NULL, *calibrate_path = NULL, *csv_path = NULL;
  int force = 0, quiet = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "a:e:k:b:c:fqh", opts, NULL)) != -1) {
    switch (c) {
    case 'a':
      if (parse_fraction(optarg, &go.alpha) != 0 || go.alpha <= 0.0) {
        fprintf(stderr, "f3dbench: compare: --alpha %s: expected a number in (0, 1)\n", optarg);
        return 2;
      }
      break;
    case 'e':
      if (parse_fraction(optarg, &go.min_effect) != 0) {
        fprintf(stderr, "f3dbench: compare: --min-effect %s: expected a fraction in [0, 1) (0.03 = 3%%)\n", optarg);
        return 2;
      }
      break;
    case 'k':
      if (f3d_parse_nonneg_double(optarg, &go.noise_k) || go.noise_k > 100.0) {
        fprintf(stderr, "f3dbench: compare: --noise-k %s: expected a number in [0, 100]\n", optarg);
        return 2;
      }
      break;
    case 'b': baseline = optarg; break;
    case 'c': calib_path = optarg; break;
    case OPT_CALIBRATE: calibrate_path = optarg; break;
    case OPT_INCLUDE_CPU: go.include_cpu = 1; break;
    case OPT_KEYS:
      if (!optarg[0] || optarg[0] == ',') {
        fprintf(stderr, "f3dbench: compare: --keys '%s': expected comma-separated globs on pipeline/kernel/variant\n",
                optarg);
        return 2;
      }
      go.keys = optarg;
      break;
    case OPT_NORMALIZE: go.normalize = 1; break;
    case OPT_CSV: csv_path = optarg; break;
    case 'f': force = 1; break;
    case 'q': quiet = 1; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (calibrate_path) {
    if (baseline || calib_path) {
      fprintf(stderr, "f3dbench: compare: --calibrate writes a calibration: --baseline and --calibration do not apply\n");
      return 2;
    }
    char parent[4096]; /* its folder first: the temporary written beside the file would be named instead */
    if (f3d_out_folder(calibrate_path, parent, sizeof parent) != 0) {
      fprintf(stderr, "f3dbench: compare: --calibrate '%s': %s is not a folder this user can write in\n",
              calibrate_path, parent);
      return 2;
    }
    return calibrate(calibrate_path, argv + optind, (size_t)(argc - optind));
  }
  const int npos = baseline ? 1 : 2;
  if (argc - optind != npos) {
    fprintf(stderr, "f3dbench: compare: expected %s\n", baseline ? "NEW_DIR after --baseline BASE_DIR" : "BASE_DIR and NEW_DIR");
    usage(stderr);
    return 2;
  }
  const char *base_dir = baseline ? baseline : argv[optind], *new_dir = argv[argc - 1];
  hx_run base, cur;
  hx_err err;
  if (hx_run_load(&base, base_dir, &err) != HX_OK) {
    fprintf(stderr, "f3dbench: compare: %s%s\n", baseline ? "--baseline: " : "", err.msg);
    return 2;
  }
  if (hx_run_load(&cur, new_dir, &err) != HX_OK) {
    fprintf(stderr, "f3dbench: compare: %s\n", err.msg);
    hx_run_free(&base);
    return 2;
  }
  hx_gate_calib calib;
  int have_calib = 0, rc = 0;
  if (calib_path) {
    if (hx_gate_calib_load(&calib, calib_path, &err) != HX_OK) {
      fprintf(stderr, "f3dbench: compare: --calibration: %s\n", err.msg);
      rc = 2;
    } else {
      have_calib = 1;
      go.calib = &calib;
    }
  }
  for (int k = 0; k < 2 && rc == 0; k++) {
    const hx_run *r = k ? &cur : &base;
    if (r->incomplete) { /* interrupted, killed (rows from .partial files) or failed: say which */
      char why[512];
      fprintf(stderr, "f3dbench: compare: %s%s: %s%s\n", force ? "warning: " : "", r->dir,
              hx_run_incomplete_why(r, why, sizeof why),
              force ? " (compared anyway: --force; keys it lacks are unknown)" : "; refusing (--force compares it anyway)");
      if (!force) rc = 2;
    }
    if (r->n_samples == 0) {
      fprintf(stderr, "f3dbench: compare: %s: no raw samples (samples.csv); every key will be unknown\n", r->dir);
    }
  }
  if (rc == 0 && hx_run_check_compatible(&base, &cur, 0, &err) != HX_OK) {
    if (force) {
      fprintf(stderr, "f3dbench: compare: warning: %s (compared anyway: --force)\n", err.msg);
    } else {
      fprintf(stderr, "f3dbench: compare: refusing to compare: %s%s (--force compares anyway)\n",
              baseline ? "the baseline is from another device, build or setting: " : "", err.msg);
      rc = 2;
    }
  }
  for (int k = 0; k < 2 && rc == 0 && have_calib; k++) {
    if (hx_gate_calib_check(&calib, k ? &cur : &base, &err) == HX_OK) continue;
    if (force) {
      fprintf(stderr, "f3dbench: compare: warning: calibration %s (used anyway: --force)\n", err.msg);
    } else {
      fprintf(stderr, "f3dbench: compare: refusing the calibration: %s (--force uses it anyway)\n", err.msg);
      rc = 2;
    }
  }
  /* --csv FILE is written whole when the gate reaches a verdict (exit 0 or 1), through a temporary and a rename; on
   * any other exit an existing FILE is left as it was. Its folder is checked first, so a typo costs no gate. */
  FILE *csv = NULL;
  char *csv_mem = NULL;
  size_t csv_len = 0;
  const int csv_file = csv_path && strcmp(csv_path, "-") != 0;
  if (rc == 0 && csv_file) {
    char parent[4096];
    if (f3d_out_folder(csv_path, parent, sizeof parent) != 0) {
      fprintf(stderr, "f3dbench: compare: --csv '%s': %s is not a folder this user can write in\n", csv_path, parent);
      rc = 2;
    }
  }
  if (rc == 0 && csv_path) {
    csv = csv_file ? open_memstream(&csv_mem, &csv_len) : stdout;
    if (!csv) {
      fprintf(stderr, "f3dbench: compare: --csv %s: no memory\n", csv_path);
      rc = 2;
    }
    go.csv = csv;
  }
  if (rc == 0) {
    note_plant(&base, "BASE");
    note_plant(&cur, "NEW");
    hx_compare_counts n;
    FILE *out = quiet ? NULL : stdout;
    if (hx_gate_runs(&base, &cur, &go, out, &n, &err) != HX_OK) {
      fprintf(stderr, "f3dbench: compare: %s\n", err.msg);
      rc = 2;
    } else {
      if (quiet) hx_gate_print_verdict(stdout, &n);
      rc = n.slower > 0 ? 1 : 0;
      if (n.faster + n.slower + n.same == 0) {
        /* the reasons the keys were not tested, with their counts (a run of --reps 2 shares every key, but has too
         * few samples for the U test: "no shared keys" would send the user looking for the wrong problem) */
        char why[512] = "";
        size_t wl = 0;
        if (n.unknown_few_samples)
          wl += (size_t)snprintf(why + wl, sizeof why - wl,
                                 "%s%zu with fewer than %d raw samples on a side (sweep --reps %d or more)",
                                 wl ? "; " : "", n.unknown_few_samples, HX_COMPARE_MIN_SAMPLES, HX_COMPARE_MIN_SAMPLES);
        if (n.unknown_one_side && wl < sizeof why)
          wl += (size_t)snprintf(why + wl, sizeof why - wl, "%s%zu with raw samples in one run only", wl ? "; " : "",
                                 n.unknown_one_side);
        if (n.unknown_other && wl < sizeof why)
          wl += (size_t)snprintf(why + wl, sizeof why - wl, "%s%zu with different units or a median not positive",
                                 wl ? "; " : "", n.unknown_other);
        if (!n.unknown) snprintf(why, sizeof why, "no key with raw samples");
        fprintf(stderr, "f3dbench: compare: no key could be tested (%zu unknown: %s%s); the gate does not pass\n",
                n.unknown, why,
                n.not_gated_cpu || n.not_gated_keys ? "; other keys left out by --keys or as CPU stages" : "");
        rc = 2;
      }
    }
  }
  if (csv && csv != stdout) {
    const int mem_ok = fclose(csv) == 0;
    if (rc != 2 && !mem_ok) {
      fprintf(stderr, "f3dbench: compare: --csv %s: no memory\n", csv_path);
      rc = 2;
    } else if (rc != 2) {
      char tmp[4200]; /* hx_write_file_atomic's temporary: removed if a signal ends the program (stop.h) */
      hx_tmp_path(tmp, sizeof tmp, csv_path);
      (void)f3d_tmp_add(tmp, F3D_TMP_FILE);
      if (hx_write_file_atomic(csv_path, csv_mem, csv_len, &err) != HX_OK) {
        fprintf(stderr, "f3dbench: compare: --csv: %s\n", err.msg);
        rc = 2;
      }
      f3d_tmp_drop(tmp);
    }
    free(csv_mem);
  }
  if (have_calib) hx_gate_calib_free(&calib);
  hx_run_free(&base);
  hx_run_free(&cur);
  return rc;
}
