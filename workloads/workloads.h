/*
 * workloads.h - the one public header of the workloads folder (prefix wl_).
 *
 * Point clouds as the harness sees them: seeded synthetic generators (each a pure function of size,
 * seed and parameters), readers for recorded scans (PCD, PLY, KITTI/nuScenes .bin, xyz/txt/csv),
 * writers (PLY binary, .bin), one-point-per-voxel deduplication and resampling to an exact size.
 * Readers and generators return a status and never exit; points with NaN/Inf coordinates are dropped
 * and counted, never passed on; a finite coordinate beyond WL_COORD_MAX refuses the file.
 */
#ifndef F3D_WORKLOADS_H
#define F3D_WORKLOADS_H

#include "base/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One cloud: n points, xyz interleaved [n*3] float32 (metres). Owns its memory. */
typedef struct wl_cloud {
  size_t n;
  float *xyz;
  size_t dropped_nonfinite; /* points dropped by a reader because a coordinate was NaN/Inf */
  size_t *src;              /* [n] point i's position in the file when a reader dropped points, else NULL */
} wl_cloud;
/* Position in its source file of point i of c (i itself unless a reader dropped NaN/Inf points before it):
 * what a tool prints as the point's index, so that rows can be joined back to the file. */
static inline size_t wl_cloud_src_index(const wl_cloud *c, size_t i) { return c->src ? c->src[i] : i; }

/* Several clouds concatenated: cloud b spans points [offset[b], offset[b+1]). offset has B+1 entries,
 * offset[0] = 0, offset[B] = n. Owns its memory. */
typedef struct wl_batch {
  uint32_t b;
  size_t n;
  float *xyz;      /* [n*3] */
  size_t *offset;  /* [b+1] */
} wl_batch;

void wl_cloud_free(wl_cloud *c);
void wl_batch_free(wl_batch *bt);
/* Concatenate clouds (copies). On failure *out is left empty. */
hx_status wl_batch_from_clouds(wl_batch *out, const wl_cloud *clouds, uint32_t count, hx_err *err);

/* ---- generators ---------------------------------------------------------------------------------- */
typedef enum wl_kind { WL_LIDAR = 0, WL_UNIFORM, WL_INDOOR, WL_CLUSTERS, WL_KIND_COUNT } wl_kind;

const char *wl_kind_name(wl_kind k);
/* Parse "lidar" | "uniform" | "indoor" | "clusters"; HX_EINVAL for anything else. */
hx_status wl_kind_parse(const char *name, wl_kind *out);

/* Generate exactly n raw points (before voxel deduplication) as a pure function of (kind, n, seed);
 * the result for n is a prefix of the result for any larger n, and the bits are the same on every
 * IEEE-754 machine (no libm transcendental; see wl_generate.c). Frames, in metres:
 *   lidar     world frame of an endless street along +x, ground z = 0, sensor 1.84 m up; sweeps from
 *             poses 4 m apart (wl_lidar_pose) accumulate; 32 beams -30..+10 deg, 1080 columns, 1..70 m.
 *   uniform   x, y in [-50, 50), z in [0, 8).
 *   indoor    two storeys (3.3 m apart) of 6 x 4 furnished rooms from the origin, ~35 x 20 x 6 m.
 *   clusters  24 Gaussian-like blobs (sums of uniforms) centred in the uniform box, sigma 0.6..3 m,
 *             weights (k+1)^-1.5: the heaviest holds ~45% of the points. */
hx_status wl_generate(wl_cloud *out, wl_kind kind, size_t n, uint64_t seed, hx_err *err);

/* ---- voxel deduplication and resampling ------------------------------------------------------------ */
/* Keep the first point of each voxel floor(p / voxel) (input order preserved), as PTv3's GridSample.
 * *dropped (optional) receives how many points were removed. */
hx_status wl_voxel_dedup(wl_cloud *out, const wl_cloud *in, double voxel, size_t *dropped, hx_err *err);

/* A workload of exactly n points after one-point-per-voxel deduplication at `voxel`: generated (for a
 * synthetic kind) or resampled from `source` (a recorded cloud; NULL for synthetic). Larger sources are
 * subsampled without replacement (seeded); smaller ones are tiled with seeded jitter < voxel/2 per copy
 * into empty voxels, and *tiled (optional) is set so the caller can warn. */
hx_status wl_make_exact(wl_cloud *out, wl_kind kind, const wl_cloud *source, size_t n, double voxel,
                        uint64_t seed, int *tiled, hx_err *err);

/* Resampling policy of wl_make_exact (documented here because sweeps depend on it):
 *  1. Synthetic kind (source == NULL): generate m raw points (m starts at n and grows by the observed
 *     unique fraction, at most 24 rounds), deduplicate; since wl_generate(kind, m, seed) is a prefix of
 *     wl_generate(kind, m' > m, seed), growing m only adds points at the end.
 *  2. Recorded source: deduplicate the source (dropping nothing else).
 *  3. If more than n unique points remain: keep exactly n of them by a seeded selection sample
 *     (wl_subsample: without replacement, relative order preserved).
 *  4. If fewer than n remain (recorded source only): append translated copies of the deduplicated source
 *     on a square grid of tiles (tile pitch = bounding-box extent + 2 voxels, so copies never share a
 *     voxel with each other), each copy with its own seeded jitter in (-voxel/2, voxel/2) per axis so the
 *     copies do not repeat the original voxel pattern exactly; deduplicate again, subsample as in 3, set
 *     *tiled = 1 (the caller warns). The result never contains two points in one voxel. */

/* Keep exactly k of the in->n points, chosen by a seeded selection sample without replacement (Knuth's
 * algorithm S driven by hx_rng_unit(seed, ...)); relative order preserved. k > in->n is HX_EINVAL. */
hx_status wl_subsample(wl_cloud *out, const wl_cloud *in, size_t k, uint64_t seed, hx_err *err);

/* Sensor origin (metres) of pose `pose` of the `lidar` generator for `seed`: the scans of wl_generate
 * accumulate poses 0, 1, 2, ... in order. For tests and for plotting ranges. */
void wl_lidar_pose(uint64_t seed, uint32_t pose, double origin[3]);

/* ---- readers and writers --------------------------------------------------------------------------- */
typedef enum wl_format {
  WL_FMT_AUTO = 0, WL_FMT_PCD, WL_FMT_PLY, WL_FMT_BIN4, WL_FMT_BIN5, WL_FMT_XYZ
} wl_format;

/* The largest coordinate magnitude a reader accepts, in metres: float32 coordinates are 8 mm apart at
 * 1e5 m (2^-7 between 2^16 and 2^17) and 6 cm at 1e6 m, coarser than the 5 cm voxels, and a point at
 * 1e30 m made the locality figures 1e30 m. One policy for every command that reads a cloud. */
#define WL_COORD_MAX 1e5
/* Read a cloud; WL_FMT_AUTO picks by extension (.pcd, .ply, .bin = 4 floats, .pcd.bin = 5 floats,
 * .xyz/.txt/.csv). Malformed or truncated files give HX_EFORMAT with a message naming the file and the
 * problem; a file with zero finite points is HX_EFORMAT ("empty cloud"), one with a finite coordinate
 * beyond +-WL_COORD_MAX is HX_EFORMAT naming the point (its position in the file) and the bound. */
hx_status wl_read(wl_cloud *out, const char *path, wl_format fmt, hx_err *err);
/* Write binary little-endian PLY (x,y,z float) or .bin (4 floats, intensity 0). Written to a temporary
 * name and renamed, so a failure never leaves a partial file. The temporary is "<dest>.tmp.<pid>" beside dest, the
 * file the rename replaces (hx_out_resolve: path, or the regular file its symbolic link ends at): a caller that must
 * remove it when a signal ends the program can name it before the write starts. */
hx_status wl_write_ply(const wl_cloud *c, const char *path, hx_err *err);
hx_status wl_write_bin(const wl_cloud *c, const char *path, hx_err *err);

/* "auto", "pcd", "ply", "bin", "bin5" (alias "pcd.bin"), "xyz" (also "txt", "csv"); HX_EINVAL otherwise. */
hx_status wl_format_parse(const char *name, wl_format *out);
const char *wl_format_name(wl_format f);
/* Allocate a cloud of n points (contents uninitialised); n == 0 gives xyz == NULL. */
hx_status wl_cloud_alloc(wl_cloud *out, size_t n, hx_err *err);

#ifdef __cplusplus
}
#endif
#endif /* F3D_WORKLOADS_H */
