/*
 * f3dbench.c - the program's entry point: a const table of subcommands and a dispatcher.
 *
 * Adding a subcommand: write cmd_<name>.c (see cli.h for the contract), append it to f3dbench_sources
 * in meson.build and add one line to cmds[] below. Nothing else dispatches on names.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "f3d_config.h"
#include "app/cli.h"
#include "app/stop.h"

typedef struct f3d_cmd {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary;
  int error_rc; /* the status when the standard output could not be written: 1 (or the command's own non-zero
                 * status), compare's 2 always (its 1 says "slower", which a gate must never read off a failed write) */
} f3d_cmd;

static const f3d_cmd cmds[] = {
    {"info", f3d_cmd_info, "build configuration and CUDA devices", 1},
    {"gen", f3d_cmd_gen, "write a synthetic point cloud (PLY or .bin)", 1},
    {"sweep", f3d_cmd_sweep, "run the registered pipelines over workloads x sizes, write results/<run-id>/", 1},
    {"serialize", f3d_cmd_serialize, "PTv3 serialization codes (4 orders) of clouds as CSV", 1},
    {"compare", f3d_cmd_compare, "regression gate: per key a U test and a threshold from its noise, exit 1 if slower", 2},
    {"merge", f3d_cmd_merge, "join the result directories of a sharded sweep (--shard I/N)", 1},
    {"plot", f3d_cmd_plot, "figures (PNG, SVG via gnuplot) and REPORT.md from one or several result directories", 1},
    {"psh", f3d_cmd_psh, "PSH bucketing of clouds: CSV of (bucket, offset, slot), balance and locality statistics", 1},
    {"pool", f3d_cmd_pool, "PSH then in-bucket pooling (rho 2/4/8): CSV of pooled rows, pooling statistics", 1},
    {"attn", f3d_cmd_attn, "bucket-swin attention: one configuration, checked, timed (TFLOP/s)", 1},
    {"net", f3d_cmd_net, "one backbone forward (PTv3-m1 or Flash3D): checked, timed, memory, time per component", 1},
    /* one line per subcommand (and one declaration in cli.h); `f3dbench --help` lists them in this order */
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: f3dbench <command> [options]   (f3dbench <command> --help for its options)\n"
          "       f3dbench --version\n\ncommands:\n");
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
}

/* Every command's status is final only once its standard output is written: `f3dbench info > /dev/full` or
 * a full disk must not end with status 0 and a truncated report. (A closed pipe kills the process with
 * SIGPIPE before this runs, which the shell reports as such.) */
static int finish(int rc, int error_rc) {
  int bad = ferror(stdout), e = 0;
  errno = 0;
  if (fflush(stdout) != 0) bad = 1, e = errno;
  if (!bad) return rc;
  fprintf(stderr, "f3dbench: standard output: write error%s%s\n", e ? ": " : "", e ? strerror(e) : "");
  return error_rc > 1 ? error_rc : rc ? rc : error_rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *name = argv[1];
  if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
    usage(stdout);
    return finish(0, 1);
  }
  if (strcmp(name, "--version") == 0) {
    printf("f3dbench %s (%s build, CUDA %s)\n", F3D_VERSION, F3D_BUILD_TYPE, F3D_HAVE_CUDA ? "on" : "off");
    return finish(0, 1);
  }
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (strcmp(name, cmds[i].name) == 0) {
      /* getopt names argv[0] in its own messages ("unrecognized option"): "f3dbench: <command>" gives them the
       * form of every other error line; commands read their name from nowhere else */
      char label[64];
      snprintf(label, sizeof label, "f3dbench: %s", cmds[i].name);
      argv[1] = label;
      /* SIGINT/SIGTERM remove the temporaries the command registered and end it, 128 + signal (stop.h); the sweep
       * installs its orderly stop once its run directory exists */
      f3d_signals_install(cmds[i].name, 0);
      return finish(cmds[i].fn(argc - 1, argv + 1), cmds[i].error_rc);
    }
  f3d_fail(name, "unknown command (f3dbench --help lists them)");
  return 2;
}
