/*
 * fuzz_cloud.c - libFuzzer target for the point-cloud readers of workloads/ (wl_read.c), compiled once per
 * reader with FZ_READER naming it (tests/fuzz/meson.build):
 *   pcd  wl_read_pcd   PCD v0.7: ascii, binary and binary_compressed (the corpus seeds all three)
 *   ply  wl_read_ply   PLY ascii, binary little and big endian
 *   bin  wl_read_bin   KITTI .bin (4 float32 per point) and nuScenes .pcd.bin (5): every input is read both ways
 *   xyz  wl_read_xyz   x y z text (.xyz, .txt, .csv)
 * Each reader gets the input as wl_read hands it over (wl_slurp: the whole file, NUL-terminated).
 * Checked on every input besides the sanitizers: HX_OK gives a non-empty cloud of finite points whose src
 * map (present exactly when points were dropped) is strictly increasing; a failure leaves the cloud empty.
 */
#include "fuzz_util.h"
#include "workloads/wl_internal.h"

#include <math.h>

#define FZ_PCD 1
#define FZ_PLY 2
#define FZ_BIN 3
#define FZ_XYZ 4
#ifndef FZ_READER
#error "compile with -DFZ_READER=FZ_PCD, FZ_PLY, FZ_BIN or FZ_XYZ"
#endif

static void check_cloud(hx_status st, const wl_cloud *c, const hx_err *err) {
  fz_check_status(st, err);
  if (st != HX_OK) {
    FZ_CHECK(c->n == 0 && c->xyz == NULL && c->src == NULL);
    return;
  }
  FZ_CHECK(c->n > 0 && c->xyz != NULL);
  for (size_t i = 0; i < 3 * c->n; i++) FZ_CHECK(isfinite(c->xyz[i]));
  FZ_CHECK((c->src != NULL) == (c->dropped_nonfinite > 0));
  if (c->src)
    for (size_t i = 0; i < c->n; i++) FZ_CHECK(c->src[i] >= i && (i == 0 || c->src[i] > c->src[i - 1]));
}

static void read_one(const unsigned char *d, size_t size, size_t nfloat) {
  wl_cloud c;
  wl_cloud_clear(&c); /* as wl_read does before it dispatches */
  hx_err err = {HX_OK, ""};
  hx_status st;
#if FZ_READER == FZ_PCD
  (void)nfloat;
  st = wl_read_pcd(&c, d, size, "fuzz.pcd", &err);
#elif FZ_READER == FZ_PLY
  (void)nfloat;
  st = wl_read_ply(&c, d, size, "fuzz.ply", &err);
#elif FZ_READER == FZ_BIN
  st = wl_read_bin(&c, d, size, nfloat, "fuzz.bin", &err);
#else
  (void)nfloat;
  st = wl_read_xyz(&c, d, size, "fuzz.xyz", &err);
#endif
  check_cloud(st, &c, &err);
  wl_cloud_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *d = fz_nul_copy(data, size);
  read_one(d, size, 4);
#if FZ_READER == FZ_BIN
  read_one(d, size, 5);
#endif
  free(d);
  return 0;
}
