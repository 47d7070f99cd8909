/*
 * cmd_info.c - `f3dbench info`: what this build can do and which CUDA devices it sees.
 * Never fails for lack of a GPU: "no CUDA device (<reason>)" is an answer, exit 0.
 */
#include <getopt.h>
#include <stdio.h>

#include "f3d_config.h"
#include "app/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: f3dbench info [--help]\n"
          "Print the build configuration (version, build type, compilers, GPU architectures, optional\n"
          "features) and every CUDA device with SM count, L2 size, memory, clocks and driver version.\n");
}

int f3d_cmd_info(int argc, char **argv) {
  static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    usage(stderr);
    return 2;
  }
  if (optind < argc) {
    f3d_fail("info", "unexpected argument '%s'", argv[optind]);
    return 2;
  }
  char hash[64];
  int dirty;
  f3d_git_state(hash, sizeof hash, &dirty);
  printf("f3dbench %s\n", F3D_VERSION);
  printf("  git commit     %s%s\n", hash[0] ? hash : "unknown", dirty == 1 ? " (dirty)" : "");
  printf("  build type     %s\n", F3D_BUILD_TYPE);
  printf("  C compiler     %s\n", F3D_C_COMPILER);
  printf("  CUDA           %s\n", F3D_HAVE_CUDA ? F3D_CUDA_COMPILER : "off (CPU-only build)");
  if (F3D_HAVE_CUDA) printf("  GPU arch       sm_%s\n", F3D_GPU_ARCH_LABEL);
  printf("  CUPTI          %s\n", F3D_HAVE_CUPTI ? "yes" : "no");
  printf("  liblzf         %s\n", F3D_HAVE_LZF ? "yes" : "no (PCD binary_compressed unreadable)");

  int n = 0;
  hx_err err = {HX_OK, ""};
  if (hx_device_count(&n, &err) != HX_OK) {
    printf("devices: %s\n", err.msg);
    return 0;
  }
  printf("devices: %d\n", n);
  for (int i = 0; i < n; i++) {
    hx_device_info d;
    if (hx_device_query(&d, i, &err) != HX_OK) {
      printf("  [%d] query failed: %s\n", i, err.msg);
      continue;
    }
    char drv[32], rt[32];
    hx_cuda_version_str(drv, sizeof drv, d.driver_version);
    hx_cuda_version_str(rt, sizeof rt, d.runtime_version);
    printf("  [%d] %s  (sm_%d%d, PCI %s)\n", i, d.name, d.cc_major, d.cc_minor, d.pci_bus_id);
    printf("      SMs %d, L2 %.1f MiB, memory %.1f GiB (%d-bit bus)\n", d.sm_count,
           (double)d.l2_bytes / 1048576.0, (double)d.mem_bytes / 1073741824.0, d.mem_bus_bits);
    printf("      peak clocks: SM %d MHz, memory %d MHz\n", d.sm_clock_khz / 1000, d.mem_clock_khz / 1000);
    printf("      driver supports CUDA %s, runtime %s\n", drv, rt);
    if (F3D_HAVE_CUDA) {
      hx_err ae = {HX_OK, ""};
      printf("      this build's GPU code (sm_%s): %s\n", F3D_CUDA_ARCH,
             hx_arch_check(F3D_CUDA_ARCH, &d, &ae) == HX_OK ? "runs here" : "does NOT run here");
      if (ae.status != HX_OK) printf("      %s\n", ae.msg);
    }
  }
  return 0;
}
