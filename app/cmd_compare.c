/*
 * cmd_compare.c - `f3dbench compare BASE NEW`: the CI regression gate over two result directories.
 *
 * Exit status: 0 nothing slower; 1 at least one key slower; 2 usage or input error (including runs from
 * different devices or builds, or incomplete runs, unless --force, and runs of which no key could be
 * tested: a gate that tested nothing must not pass). The verdict logic is hx_compare_runs.
 */
#include "app/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fputs("usage: f3dbench compare [options] BASE_DIR NEW_DIR\n"
        "Compare the raw samples of two result directories key by key (pipeline, kernel, variant,\n"
        "workload, n_points, batch, metric) with a two-sided Mann-Whitney U test and a minimum relative\n"
        "change of the medians. Prints faster / slower / same / unknown per key.\n"
        "Exit status: 0 nothing slower, 1 something slower, 2 error (also: no key could be tested).\n"
        "  -a, --alpha P         significance level of the U test (default 0.01)\n"
        "  -e, --min-effect F    minimum relative change of the medians (default 0.03 = 3%)\n"
        "  -f, --force           compare runs from different devices or builds, or incomplete runs\n"
        "  -q, --quiet           print only the summary line\n"
        "  -h, --help            this text\n",
        f);
}

static int parse_fraction(const char *s, double *out) {
  double v;
  if (f3d_parse_nonneg_double(s, &v) || v >= 1.0) return -1;
  *out = v;
  return 0;
}

int f3d_cmd_compare(int argc, char **argv) {
  static const struct option opts[] = {{"alpha", required_argument, NULL, 'a'},
                                       {"min-effect", required_argument, NULL, 'e'},
                                       {"force", no_argument, NULL, 'f'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  double alpha = 0.01, min_effect = 0.03;
  int force = 0, quiet = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "a:e:fqh", opts, NULL)) != -1) {
    switch (c) {
    case 'a':
      if (parse_fraction(optarg, &alpha) != 0 || alpha <= 0.0) {
        fprintf(stderr, "f3dbench: compare: --alpha %s: expected a number in (0, 1)\n", optarg);
        return 2;
      }
      break;
    case 'e':
      if (parse_fraction(optarg, &min_effect) != 0) {
        fprintf(stderr, "f3dbench: compare: --min-effect %s: expected a fraction in [0, 1) (0.03 = 3%%)\n", optarg);
        return 2;
      }
      break;
    case 'f': force = 1; break;
    case 'q': quiet = 1; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (argc - optind != 2) {
    fprintf(stderr, "f3dbench: compare: expected BASE_DIR and NEW_DIR\n");
    usage(stderr);
    return 2;
  }
  hx_run base, cur;
  hx_err err;
  if (hx_run_load(&base, argv[optind], &err) != HX_OK) {
    fprintf(stderr, "f3dbench: compare: %s\n", err.msg);
    return 2;
  }
  if (hx_run_load(&cur, argv[optind + 1], &err) != HX_OK) {
    fprintf(stderr, "f3dbench: compare: %s\n", err.msg);
    hx_run_free(&base);
    return 2;
  }
  int rc = 0;
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
      fprintf(stderr, "f3dbench: compare: refusing to compare: %s (--force compares anyway)\n", err.msg);
      rc = 2;
    }
  }
  if (rc == 0) {
    hx_compare_counts n;
    if (hx_compare_runs(&base, &cur, alpha, min_effect, quiet ? NULL : stdout, &n, &err) != HX_OK) {
      fprintf(stderr, "f3dbench: compare: %s\n", err.msg);
      rc = 2;
    } else {
      if (quiet)
        printf("%zu faster, %zu slower, %zu same, %zu unknown\n", n.faster, n.slower, n.same, n.unknown);
      rc = n.slower > 0 ? 1 : 0;
      if (n.faster + n.slower + n.same == 0) {
        fprintf(stderr, "f3dbench: compare: no key could be tested (%zu unknown: no shared keys with raw samples); "
                        "the gate does not pass\n", n.unknown);
        rc = 2;
      }
    }
  }
  hx_run_free(&base);
  hx_run_free(&cur);
  return rc;
}
