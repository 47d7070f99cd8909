/*
 * cmd_gen.c - `f3dbench gen`: write one synthetic cloud to a PLY or .bin file.
 * With --voxel the file holds exactly --points points after one-point-per-voxel deduplication (the
 * cloud a sweep uses for the same kind, size, seed and voxel); without it, --points raw points.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "app/stop.h"
#include "workloads/workloads.h"

/* the sweep's largest size (cmd_sweep.c SWEEP_MAX_POINTS): a cloud past it is a typo, not a workload */
#define GEN_MAX_POINTS 100000000ull

static void usage(FILE *f) {
  fprintf(f,
          "usage: f3dbench gen --out FILE.ply|FILE.bin [--kind K] [--points N] [--seed S] [--voxel V]\n"
          "Write a synthetic point cloud (binary little-endian PLY, or KITTI-style .bin of 4 float32).\n"
          "  -k, --kind K     lidar (default), uniform, indoor, clusters\n"
          "  -n, --points N   point count up to 100M, k/M suffixes allowed (default 100k)\n"
          "  -s, --seed S     seed (default 1); the same (kind, points, seed, voxel) gives the same file\n"
          "  -x, --voxel V    deduplicate at voxel size V metres and keep exactly N points\n"
          "                   (`sweep` uses 0.05, so --voxel 0.05 --seed S reproduces its first cloud)\n"
          "  -o, --out FILE   output path; the extension picks the format\n"
          "  -h, --help       this text\n");
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

int f3d_cmd_gen(int argc, char **argv) {
  static const struct option longopts[] = {
      {"kind", required_argument, NULL, 'k'},  {"points", required_argument, NULL, 'n'},
      {"seed", required_argument, NULL, 's'},  {"voxel", required_argument, NULL, 'x'},
      {"out", required_argument, NULL, 'o'},   {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  wl_kind kind = WL_LIDAR;
  uint64_t points = 100000, seed = 1;
  double voxel = 0.0;
  const char *out = NULL;
  int c;
  while ((c = getopt_long(argc, argv, "k:n:s:x:o:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'k':
      if (wl_kind_parse(optarg, &kind) != HX_OK) {
        f3d_fail("gen", "--kind '%s': expected lidar, uniform, indoor or clusters", optarg);
        return 2;
      }
      break;
    case 'n':
      if (f3d_parse_count(optarg, &points) != 0 || points == 0 || points > GEN_MAX_POINTS) {
        f3d_fail("gen", "--points '%s': expected a positive count up to 100M, such as 100000 or 100k", optarg);
        return 2;
      }
      break;
    case 's':
      if (f3d_parse_u64(optarg, &seed) != 0) {
        f3d_fail("gen", "--seed '%s': expected an unsigned integer", optarg);
        return 2;
      }
      break;
    case 'x':
      if (f3d_parse_pos_double(optarg, &voxel) != 0) {
        f3d_fail("gen", "--voxel '%s': expected a positive size in metres", optarg);
        return 2;
      }
      break;
    case 'o':
      out = optarg;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind < argc) {
    f3d_fail("gen", "unexpected argument '%s'", argv[optind]);
    return 2;
  }
  if (!out) {
    f3d_fail("gen", "--out FILE is required (.ply or .bin)");
    return 2;
  }
  int ply = ends_with(out, ".ply");
  if (!ply && !ends_with(out, ".bin")) {
    f3d_fail("gen", "%s: unknown extension (use .ply or .bin)", out);
    return 2;
  }
  wl_cloud cloud = {0, NULL, 0, NULL};
  hx_err err = {HX_OK, ""};
  int tiled = 0;
  hx_status st = voxel > 0.0 ? wl_make_exact(&cloud, kind, NULL, (size_t)points, voxel, seed, &tiled, &err)
                             : wl_generate(&cloud, kind, (size_t)points, seed, &err);
  /* the writer's temporary, "<dest>.tmp.<pid>" (workloads.h), is removed if a signal ends the program (stop.h) */
  char dest[4096], tmp[4200] = "";
  int in_place = 0;
  if (st == HX_OK && hx_out_resolve(out, dest, sizeof dest, &in_place, &err) == HX_OK && !in_place) {
    hx_tmp_path(tmp, sizeof tmp, dest);
    (void)f3d_tmp_add(tmp, F3D_TMP_FILE);
  }
  if (st == HX_OK) { /* the writer resolves the path again and says why it cannot write; a failed generation's
                      * message stays */
    err.status = HX_OK;
    err.msg[0] = '\0';
  }
  if (st == HX_OK) st = ply ? wl_write_ply(&cloud, out, &err) : wl_write_bin(&cloud, out, &err);
  if (tmp[0]) f3d_tmp_drop(tmp);
  if (st != HX_OK) {
    f3d_fail("gen", "%s", err.msg[0] ? err.msg : hx_status_str(st));
    wl_cloud_free(&cloud);
    return 1;
  }
  printf("wrote %zu %s points (seed %llu%s) to %s\n", cloud.n, wl_kind_name(kind), (unsigned long long)seed,
         voxel > 0.0 ? ", one per voxel" : "", out);
  if (voxel > 0.0) printf("voxel %g m%s\n", voxel, tiled ? " (tiled: the generator gave too few voxels)" : "");
  wl_cloud_free(&cloud);
  return 0;
}
