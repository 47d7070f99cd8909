/*
 * wl_generate.c - seeded synthetic point clouds: lidar, uniform, indoor, clusters.
 *
 * Every generator is a pure function of (kind, n, seed): point i depends only on the seed and on
 * counters, drawn from the counter-based hx_rng_*; wl_generate(kind, n, seed) is always a prefix of
 * wl_generate(kind, m > n, seed). Reproducible across machines: only +, -, *, /, sqrt and floor (all
 * exactly rounded under IEEE 754), a local polynomial sine/cosine instead of libm's, sums of uniforms
 * instead of log-based Gaussians, and this folder is compiled with -ffp-contract=off so no compiler fuses
 * a multiply-add differently.
 *
 * lidar: a spinning 32-beam sensor (elevations -30..+10 degrees evenly spaced, 1080 azimuth steps per
 * turn, 1.84 m above ground, 1..70 m range, ~1.5 cm range noise, 4% dropout; nuScenes' HDL-32E-like
 * numbers) ray-cast analytically into an endless street along +x: ground z = 0, raised sidewalks,
 * building boxes behind the sidewalks, poles, parked and passing vehicles (body + cabin boxes), trees
 * (trunk cylinder + crown sphere) and hedges; crowns and hedges are "fuzzy": a ray passes through with
 * probability 0.35, otherwise it returns from a random depth inside (vegetation-like clutter). The scene
 * is made of 20 m segments, segment j a pure function of (seed, j). Sweeps from poses 4 m apart along
 * the street accumulate (world frame), columns in azimuth order, beams inside a column, until n points.
 */
#include "workloads/wl_internal.h"

#include <math.h>
#include <stdlib.h>

/* RNG streams: one per independent use, so that changing one draw never shifts another. */
enum {
  S_UNIFORM = 1, S_CLUSTER_PARAM, S_CLUSTER_PT, S_INDOOR_ROOM, S_INDOOR_PT,
  S_POSE, S_SEGMENT, S_DROP, S_NOISE, S_FUZZ
};

/* ---- deterministic sine/cosine ------------------------------------------------------------------- */
/* Cody-Waite reduction by pi/2 (three parts, exact for |x| < 1e5) then Taylor polynomials on
 * |r| <= pi/4, where the truncated terms are below 1e-17. */
void wl_sincos(double x, double *s, double *c) {
  static const double pio2_1 = 1.57079632673412561417e+00, pio2_2 = 6.07710050650619224932e-11,
                      pio2_3 = 2.02226624879595063154e-21, two_over_pi = 6.36619772367581382433e-01;
  double k = floor(x * two_over_pi + 0.5);
  double r = ((x - k * pio2_1) - k * pio2_2) - k * pio2_3;
  double r2 = r * r;
  double sp = r * (1.0 + r2 * (-1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880 +
              r2 * (-1.0 / 39916800 + r2 * (1.0 / 6227020800.0 + r2 * (-1.0 / 1307674368000.0))))))));
  double cp = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320 +
              r2 * (-1.0 / 3628800 + r2 * (1.0 / 479001600.0 + r2 * (-1.0 / 87178291200.0)))))));
  long q = (long)(k - 4.0 * floor(k / 4.0)); /* quadrant 0..3 */
  switch (q) {
    case 0: *s = sp; *c = cp; break;
    case 1: *s = cp; *c = -sp; break;
    case 2: *s = -sp; *c = -cp; break;
    default: *s = -cp; *c = sp; break;
  }
}

/* Approximately standard normal: sum of four uniforms, centred, scaled to unit variance (Irwin-Hall;
 * tails end at +-3.46 sigma, which is harmless for blobs and range noise). */
static double gauss4(uint64_t seed, uint64_t stream, uint64_t ctr) {
  double s = 0.0;
  for (uint64_t j = 0; j < 4; j++) s += hx_rng_unit(seed, stream, 4 * ctr + j);
  return (s - 2.0) * 1.7320508075688772; /* sqrt(3): var of the sum is 4/12 */
}

static double urand(uint64_t seed, uint64_t stream, uint64_t ctr, double lo, double hi) {
  return lo + (hi - lo) * hx_rng_unit(seed, stream, ctr);
}

/* ---- uniform --------------------------------------------------------------------------------------- */
static void gen_uniform(float *xyz, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    xyz[3 * i + 0] = (float)urand(seed, S_UNIFORM, 3 * i + 0, -50.0, 50.0);
    xyz[3 * i + 1] = (float)urand(seed, S_UNIFORM, 3 * i + 1, -50.0, 50.0);
    xyz[3 * i + 2] = (float)urand(seed, S_UNIFORM, 3 * i + 2, 0.0, 8.0);
  }
}

/* ---- clusters -------------------------------------------------------------------------------------- */
#define CL_K 24
static void gen_clusters(float *xyz, size_t n, uint64_t seed) {
  double cen[CL_K][3], sig[CL_K], cum[CL_K], tot = 0.0;
  for (int k = 0; k < CL_K; k++) {
    uint64_t b = 8 * (uint64_t)k;
    cen[k][0] = urand(seed, S_CLUSTER_PARAM, b + 0, -45.0, 45.0);
    cen[k][1] = urand(seed, S_CLUSTER_PARAM, b + 1, -45.0, 45.0);
    cen[k][2] = urand(seed, S_CLUSTER_PARAM, b + 2, 1.0, 7.0);
    sig[k] = urand(seed, S_CLUSTER_PARAM, b + 3, 0.6, 3.0);
    /* weight (k+1)^-1.5: the heaviest blob holds ~45% of the points, the lightest ~0.4% */
    double kk = (double)(k + 1);
    tot += 1.0 / (kk * sqrt(kk));
    cum[k] = tot;
  }
  for (size_t i = 0; i < n; i++) {
    double u = hx_rng_unit(seed, S_CLUSTER_PT, 4 * i) * tot;
    int k = 0;
    while (k < CL_K - 1 && u >= cum[k]) k++;
    for (int a = 0; a < 3; a++) {
      double s = a == 2 ? 0.5 * sig[k] : sig[k]; /* flatter in z, like objects on a floor */
      xyz[3 * i + (size_t)a] = (float)(cen[k][a] + s * gauss4(seed, S_CLUSTER_PT, 4 * i + 1 + (uint64_t)a));
    }
  }
}

/* ---- indoor ---------------------------------------------------------------------------------------- */
/* An axis-aligned rectangle: fixed coordinate `at` on axis `ax`, spanning [lo,hi] on the other two. */
typedef struct rect {
  int ax;
  double at, lo[2], hi[2];
} rect;

typedef struct rects {
  rect *r;
  size_t n, cap;
} rects;

static void rect_add(rects *rs, int ax, double at, double lo0, double hi0, double lo1, double hi1) {
  if (rs->n == rs->cap || hi0 <= lo0 || hi1 <= lo1) return;
  rect *r = &rs->r[rs->n++];
  r->ax = ax;
  r->at = at;
  r->lo[0] = lo0;
  r->hi[0] = hi0;
  r->lo[1] = lo1;
  r->hi[1] = hi1;
}

/* The five visible faces of a box (no bottom face: it rests on something). Other axes in order. */
static void box_add(rects *rs, double x0, double x1, double y0, double y1, double z0, double z1) {
  rect_add(rs, 2, z1, x0, x1, y0, y1);
  rect_add(rs, 0, x0, y0, y1, z0, z1);
  rect_add(rs, 0, x1, y0, y1, z0, z1);
  rect_add(rs, 1, y0, x0, x1, z0, z1);
  rect_add(rs, 1, y1, x0, x1, z0, z1);
}

static void table_add(rects *rs, double cx, double cy, double w, double d, double h) {
  box_add(rs, cx - w / 2, cx + w / 2, cy - d / 2, cy + d / 2, h - 0.04, h);
  for (int i = 0; i < 4; i++) {
    double lx = cx + (i & 1 ? 1 : -1) * (w / 2 - 0.06), ly = cy + (i & 2 ? 1 : -1) * (d / 2 - 0.06);
    box_add(rs, lx - 0.025, lx + 0.025, ly - 0.025, ly + 0.025, 0.0, h - 0.04);
  }
}

/* A chair facing +-x or +-y (dir 0..3): seat, backrest on the far side, four legs. */
static void chair_add(rects *rs, double cx, double cy, int dir) {
  table_add(rs, cx, cy, 0.44, 0.44, 0.46);
  double bx = cx, by = cy, hx = 0.22, hy = 0.02;
  if (dir == 0) bx -= 0.20; else if (dir == 1) bx += 0.20; else if (dir == 2) by -= 0.20; else by += 0.20;
  if (dir < 2) { hx = 0.02; hy = 0.22; }
  box_add(rs, bx - hx, bx + hx, by - hy, by + hy, 0.46, 0.92);
}

/* Two storeys of a 6 x 4 grid of furnished rooms. Why so many for "a few rooms": sweeps need 600k points
 * that survive 5 cm deduplication, and a surface holds ~400 voxels per square metre, so the building
 * needs well over 1500 m^2 of surface; this one has ~4400 m^2 (~1.8M voxels), so 600k unique points
 * come from ~700k raw ones instead of saturating. */
#define IN_MAX_RECTS 32768
#define IN_NX 6
#define IN_NY 4
#define IN_STOREYS 2
#define IN_STOREY_PITCH 3.3
static void wall_add(rects *rs, int ax, double at, double lo, double hi, double z0, double height, double door) {
  if (door < 0.0) { /* solid (outer) wall */
    rect_add(rs, ax, at, lo, hi, z0, z0 + height);
    return;
  }
  /* a 0.9 x 2.1 m door at `door` along the wall */
  rect_add(rs, ax, at, lo, door, z0, z0 + height);
  rect_add(rs, ax, at, door + 0.9, hi, z0, z0 + height);
  rect_add(rs, ax, at, door, door + 0.9, z0 + 2.1, z0 + height);
}

static void build_indoor(rects *rs, uint64_t seed) {
  uint64_t c = 0;
  double xs[IN_NX + 1] = {0.0}, ys[IN_NY + 1] = {0.0};
  for (int i = 0; i < IN_NX; i++) xs[i + 1] = xs[i] + urand(seed, S_INDOOR_ROOM, c++, 4.0, 7.0);
  for (int i = 0; i < IN_NY; i++) ys[i + 1] = ys[i] + urand(seed, S_INDOOR_ROOM, c++, 4.0, 6.0);
  double height = urand(seed, S_INDOOR_ROOM, c++, 2.6, 3.0);
  for (int st = 0; st < IN_STOREYS; st++) {
    double z0 = st * IN_STOREY_PITCH;
    for (int ix = 0; ix <= IN_NX; ix++) /* walls across x, one per room row */
      for (int iy = 0; iy < IN_NY; iy++) {
        int outer = ix == 0 || ix == IN_NX;
        double door = outer ? -1.0 : urand(seed, S_INDOOR_ROOM, c++, ys[iy] + 0.3, ys[iy + 1] - 1.2);
        wall_add(rs, 0, xs[ix], ys[iy], ys[iy + 1], z0, height, door);
      }
    for (int iy = 0; iy <= IN_NY; iy++)
      for (int ix = 0; ix < IN_NX; ix++) {
        int outer = iy == 0 || iy == IN_NY;
        double door = outer ? -1.0 : urand(seed, S_INDOOR_ROOM, c++, xs[ix] + 0.3, xs[ix + 1] - 1.2);
        wall_add(rs, 1, ys[iy], xs[ix], xs[ix + 1], z0, height, door);
      }
    for (int ix = 0; ix < IN_NX; ix++)
      for (int iy = 0; iy < IN_NY; iy++) {
        double x0 = xs[ix], x1 = xs[ix + 1], y0 = ys[iy], y1 = ys[iy + 1];
        rect_add(rs, 2, z0, x0, x1, y0, y1);          /* floor */
        rect_add(rs, 2, z0 + height, x0, x1, y0, y1); /* ceiling */
        size_t first = rs->n;
        int tables = 1 + (int)(hx_rng_unit(seed, S_INDOOR_ROOM, c++) * 2.0);
        for (int t = 0; t < tables; t++) {
          double w = urand(seed, S_INDOOR_ROOM, c++, 1.2, 1.8), d = 0.8;
          double cx = x0 + (x1 - x0) * (t + 0.5) / tables, cy = urand(seed, S_INDOOR_ROOM, c++, y0 + 1.5, y1 - 1.5);
          table_add(rs, cx, cy, w, d, 0.75);
          int chairs = 2 + (int)(hx_rng_unit(seed, S_INDOOR_ROOM, c++) * 3.0);
          for (int k = 0; k < chairs; k++) {
            double off = (k / 2 - (chairs - 1) / 4.0) * 0.6; /* spread along the table */
            if (k % 2 == 0) chair_add(rs, cx + off, cy - d / 2 - 0.35, 2);
            else chair_add(rs, cx + off, cy + d / 2 + 0.35, 3);
          }
        }
        /* a cabinet against the back wall */
        double cx = urand(seed, S_INDOOR_ROOM, c++, x0 + 0.8, x1 - 0.8), ch = urand(seed, S_INDOOR_ROOM, c++, 0.9, 2.0);
        box_add(rs, cx - 0.5, cx + 0.5, y1 - 0.45, y1 - 0.01, 0.0, ch);
        for (size_t k = first; k < rs->n; k++) { /* furniture was built on z = 0: lift it to the storey */
          rect *r = &rs->r[k];
          if (r->ax == 2) r->at += z0;
          else { r->lo[1] += z0; r->hi[1] += z0; } /* a vertical face's second span is z */
        }
      }
  }
}

static hx_status gen_indoor(float *xyz, size_t n, uint64_t seed, hx_err *err) {
  rects rs = {malloc(IN_MAX_RECTS * sizeof(rect)), 0, IN_MAX_RECTS};
  double *cum = malloc(IN_MAX_RECTS * sizeof(double));
  if (!rs.r || !cum) {
    free(rs.r);
    free(cum);
    return hx_errf(err, HX_ENOMEM, "indoor generator: out of memory");
  }
  build_indoor(&rs, seed);
  double tot = 0.0;
  for (size_t k = 0; k < rs.n; k++) {
    tot += (rs.r[k].hi[0] - rs.r[k].lo[0]) * (rs.r[k].hi[1] - rs.r[k].lo[1]);
    cum[k] = tot;
  }
  for (size_t i = 0; i < n; i++) {
    double u = hx_rng_unit(seed, S_INDOOR_PT, 4 * i) * tot;
    size_t lo = 0, hi = rs.n - 1; /* first k with cum[k] > u */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (cum[mid] > u) hi = mid; else lo = mid + 1;
    }
    const rect *r = &rs.r[lo];
    double a = urand(seed, S_INDOOR_PT, 4 * i + 1, r->lo[0], r->hi[0]);
    double b = urand(seed, S_INDOOR_PT, 4 * i + 2, r->lo[1], r->hi[1]);
    double e = r->at + 0.003 * (hx_rng_unit(seed, S_INDOOR_PT, 4 * i + 3) - 0.5) * 2.0; /* 3 mm noise */
    double p[3];
    p[r->ax] = e;
    p[r->ax == 0 ? 1 : 0] = a;
    p[r->ax == 2 ? 1 : 2] = b;
    for (int k = 0; k < 3; k++) xyz[3 * i + (size_t)k] = (float)p[k];
  }
  free(rs.r);
  free(cum);
  return HX_OK;
}

/* ---- lidar ----------------------------------------------------------------------------------------- */
enum { PR_BOX, PR_CYL, PR_SPHERE };
typedef struct prim {
  int type, fuzzy;
  double a[3], b[3]; /* box: lo, hi; cylinder: (cx, cy, r), (z0, z1, -); sphere: centre, (r, -, -) */
  double bx, by, br; /* bounding circle in the xy plane */
} prim;

#define LD_BEAMS 32
#define LD_COLS 1080
#define LD_SEG 20.0
#define LD_MAX_RANGE 70.0
#define LD_MIN_RANGE 1.0
#define LD_HEIGHT 1.84
#define LD_POSE_STEP 4.0
#define LD_SEG_SLOTS 256 /* RNG counters per segment */
#define LD_MAX_PRIMS 2048

void wl_lidar_pose(uint64_t seed, uint32_t pose, double origin[3]) {
  origin[0] = LD_POSE_STEP * pose + urand(seed, S_POSE, 4 * (uint64_t)pose + 0, -0.25, 0.25);
  origin[1] = -1.75 + urand(seed, S_POSE, 4 * (uint64_t)pose + 1, -0.15, 0.15); /* right-hand lane */
  origin[2] = LD_HEIGHT;
}

static void prim_box(prim *p, int fuzzy, double x0, double x1, double y0, double y1, double z0, double z1) {
  p->type = PR_BOX;
  p->fuzzy = fuzzy;
  p->a[0] = x0 < x1 ? x0 : x1; p->b[0] = x0 < x1 ? x1 : x0;
  p->a[1] = y0 < y1 ? y0 : y1; p->b[1] = y0 < y1 ? y1 : y0;
  p->a[2] = z0; p->b[2] = z1;
  double hx = (p->b[0] - p->a[0]) / 2, hy = (p->b[1] - p->a[1]) / 2;
  p->bx = p->a[0] + hx;
  p->by = p->a[1] + hy;
  p->br = sqrt(hx * hx + hy * hy);
}

static void prim_cyl(prim *p, double cx, double cy, double r, double z0, double z1) {
  p->type = PR_CYL;
  p->fuzzy = 0;
  p->a[0] = cx; p->a[1] = cy; p->a[2] = r;
  p->b[0] = z0; p->b[1] = z1; p->b[2] = 0.0;
  p->bx = cx; p->by = cy; p->br = r;
}

static void prim_sphere(prim *p, double cx, double cy, double cz, double r) {
  p->type = PR_SPHERE;
  p->fuzzy = 1;
  p->a[0] = cx; p->a[1] = cy; p->a[2] = cz;
  p->b[0] = r; p->b[1] = p->b[2] = 0.0;
  p->bx = cx; p->by = cy; p->br = r;
}

/* Append the primitives of street segment j (x in [20j, 20j+20)); returns the new count. */
static size_t segment_prims(prim *p, size_t np, int64_t j, uint64_t seed) {
  uint64_t c = (uint64_t)j * LD_SEG_SLOTS;
#define U(lo, hi) urand(seed, S_SEGMENT, c++, (lo), (hi))
  double x0 = (double)j * LD_SEG, x1 = x0 + LD_SEG;
  if (np + 64 > LD_MAX_PRIMS) return np;
  for (int side = -1; side <= 1; side += 2) {
    double s = side;
    prim_box(&p[np++], 0, x0, x1, s * 7.0, s * 10.5, 0.0, 0.15); /* raised sidewalk */
    double front = U(10.0, 12.0);
    if (U(0, 1) < 0.85) { /* a building, sometimes with an alley on either end */
      double g0 = U(0, 1) < 0.5 ? 0.0 : U(1.0, 3.0), g1 = U(0, 1) < 0.5 ? 0.0 : U(1.0, 3.0);
      prim_box(&p[np++], 0, x0 + g0, x1 - g1, s * front, s * (front + 12.0), 0.0, U(6.0, 24.0));
      if (U(0, 1) < 0.4) { /* hedge in front of it (draws in separate statements: argument order is unspecified) */
        double h0 = U(0.0, 4.0), h1 = U(0.0, 4.0), hh = U(0.8, 1.4);
        prim_box(&p[np++], 1, x0 + h0, x1 - h1, s * (front - 0.9), s * front, 0.15, hh);
      }
    } else { /* open lot with a few trees */
      for (int t = 0; t < 3; t++) {
        double tx = U(x0 + 2.0, x1 - 2.0), ty = s * U(12.0, 20.0), r = U(1.5, 3.0);
        prim_cyl(&p[np++], tx, ty, 0.2, 0.0, 2.5);
        prim_sphere(&p[np++], tx, ty, 2.5 + 0.8 * r, r);
      }
    }
    double px = U(x0, x1), ph = U(5.0, 9.0);
    prim_cyl(&p[np++], px, s * 7.4, 0.1, 0.0, ph); /* pole */
    for (int t = 0; t < 2; t++) { /* street trees */
      if (U(0, 1) < 0.5) continue;
      double tx = U(x0 + 1.0, x1 - 1.0), r = U(1.2, 2.2);
      prim_cyl(&p[np++], tx, s * 8.6, 0.15, 0.0, 2.6);
      prim_sphere(&p[np++], tx, s * 8.6, 2.6 + 0.8 * r, r);
    }
    for (int k = 0; k < 3; k++) { /* parked cars, 6.5 m slots */
      if (U(0, 1) < 0.4) continue;
      double cx = x0 + 3.3 + 6.5 * k + U(-0.5, 0.5), len = U(4.0, 4.9), w = 1.85, cy = s * 5.95;
      prim_box(&p[np++], 0, cx - len / 2, cx + len / 2, cy - w / 2, cy + w / 2, 0.25, 1.0);
      prim_box(&p[np++], 0, cx - len / 4, cx + len / 4, cy - 0.8, cy + 0.8, 1.0, U(1.4, 1.6));
    }
  }
  if (U(0, 1) < 0.5) { /* a car or truck in the opposite lane (never the sensor's lane) */
    double cx = U(x0 + 5.0, x1 - 5.0);
    if (U(0, 1) < 0.25)
      prim_box(&p[np++], 0, cx - 4.0, cx + 4.0, 0.5, 3.0, 0.4, 3.4);
    else {
      prim_box(&p[np++], 0, cx - 2.3, cx + 2.3, 0.82, 2.68, 0.25, 1.0);
      prim_box(&p[np++], 0, cx - 1.1, cx + 1.1, 0.95, 2.55, 1.0, 1.5);
    }
  }
#undef U
  return np;
}

/* Entry and exit distances of the ray o + t d with primitive q; 0 when missed. */
static int prim_hit(const prim *q, const double o[3], const double d[3], double *t0, double *t1) {
  if (q->type == PR_BOX) {
    double lo = 0.0, hi = 1e30;
    for (int a = 0; a < 3; a++) {
      if (d[a] == 0.0) {
        if (o[a] < q->a[a] || o[a] > q->b[a]) return 0;
        continue;
      }
      double inv = 1.0 / d[a], ta = (q->a[a] - o[a]) * inv, tb = (q->b[a] - o[a]) * inv;
      if (ta > tb) { double tmp = ta; ta = tb; tb = tmp; }
      lo = ta > lo ? ta : lo;
      hi = tb < hi ? tb : hi;
      if (lo > hi) return 0;
    }
    *t0 = lo;
    *t1 = hi;
    return 1;
  }
  double cx = q->a[0], cy = q->a[1], r;
  if (q->type == PR_CYL) {
    r = q->a[2];
    double ox = o[0] - cx, oy = o[1] - cy, A = d[0] * d[0] + d[1] * d[1];
    if (A < 1e-12) return 0;
    double B = ox * d[0] + oy * d[1], C = ox * ox + oy * oy - r * r, disc = B * B - A * C;
    if (disc < 0.0) return 0;
    double sq = sqrt(disc), ta = (-B - sq) / A, tb = (-B + sq) / A;
    double z = o[2] + ta * d[2];
    if (ta <= 0.0 || z < q->b[0] || z > q->b[1]) return 0; /* caps are never seen from outside */
    *t0 = ta;
    *t1 = tb;
    return 1;
  }
  r = q->b[0];
  double ox = o[0] - cx, oy = o[1] - cy, oz = o[2] - q->a[2];
  double B = ox * d[0] + oy * d[1] + oz * d[2], C = ox * ox + oy * oy + oz * oz - r * r, disc = B * B - C;
  if (disc < 0.0) return 0;
  double sq = sqrt(disc);
  *t0 = -B - sq;
  *t1 = -B + sq;
  return *t1 > 0.0;
}

static hx_status gen_lidar(float *xyz, size_t n, uint64_t seed, hx_err *err) {
  prim *pr = malloc(LD_MAX_PRIMS * sizeof(prim));
  int *cand = malloc(LD_MAX_PRIMS * sizeof(int));
  if (!pr || !cand) {
    free(pr);
    free(cand);
    return hx_errf(err, HX_ENOMEM, "lidar generator: out of memory");
  }
  double sel[LD_BEAMS], cel[LD_BEAMS];
  const double deg = 3.14159265358979323846 / 180.0;
  for (int b = 0; b < LD_BEAMS; b++) wl_sincos((-30.0 + 40.0 * b / (LD_BEAMS - 1)) * deg, &sel[b], &cel[b]);
  size_t got = 0;
  for (uint32_t pose = 0; got < n; pose++) {
    double o[3];
    wl_lidar_pose(seed, pose, o);
    size_t np = 0;
    int64_t j0 = (int64_t)floor((o[0] - LD_MAX_RANGE) / LD_SEG), j1 = (int64_t)floor((o[0] + LD_MAX_RANGE) / LD_SEG);
    for (int64_t j = j0; j <= j1; j++) np = segment_prims(pr, np, j, seed);
    double phase = hx_rng_unit(seed, S_POSE, 4 * (uint64_t)pose + 2) * (2.0 * 3.14159265358979323846 / LD_COLS);
    for (uint32_t col = 0; col < LD_COLS && got < n; col++) {
      double sa, ca;
      wl_sincos(phase + 2.0 * 3.14159265358979323846 * col / LD_COLS, &sa, &ca);
      /* 2-D cull shared by the 32 beams of this column: keep primitives whose bounding circle the
       * horizontal ray direction passes within range */
      size_t nc = 0;
      for (size_t k = 0; k < np; k++) {
        double vx = pr[k].bx - o[0], vy = pr[k].by - o[1];
        double along = vx * ca + vy * sa, across = vx * sa - vy * ca, r = pr[k].br;
        if (along < -r || along - r > LD_MAX_RANGE || across > r || across < -r) continue;
        cand[nc++] = (int)k;
      }
      for (int b = 0; b < LD_BEAMS && got < n; b++) {
        uint64_t ray = ((uint64_t)pose * LD_COLS + col) * LD_BEAMS + (uint64_t)b;
        double d[3] = {cel[b] * ca, cel[b] * sa, sel[b]};
        double best = LD_MAX_RANGE;
        if (d[2] < 0.0) {
          double tg = -o[2] / d[2];
          best = tg < best ? tg : best;
        }
        for (size_t k = 0; k < nc; k++) {
          const prim *q = &pr[cand[k]];
          double t0, t1;
          if (!prim_hit(q, o, d, &t0, &t1) || t0 >= best) continue;
          if (q->fuzzy) { /* foliage: pass through, or return from somewhere inside */
            uint64_t ctr = ray * LD_MAX_PRIMS + (uint64_t)cand[k];
            if (hx_rng_unit(seed, S_FUZZ, 2 * ctr) < 0.35) continue;
            double tin = t0 > 0.0 ? t0 : 0.0;
            t0 = tin + (t1 - tin) * 0.5 * hx_rng_unit(seed, S_FUZZ, 2 * ctr + 1);
            if (t0 >= best) continue;
          }
          if (t0 > 0.0) best = t0;
        }
        if (!(best < LD_MAX_RANGE) || best < LD_MIN_RANGE) continue;
        if (hx_rng_unit(seed, S_DROP, ray) < 0.04) continue;
        double t = best + 0.015 * gauss4(seed, S_NOISE, ray);
        float *p = xyz + 3 * got++;
        for (int a = 0; a < 3; a++) p[a] = (float)(o[a] + t * d[a]);
      }
    }
  }
  free(pr);
  free(cand);
  return HX_OK;
}

/* ---- entry point ----------------------------------------------------------------------------------- */
hx_status wl_generate(wl_cloud *out, wl_kind kind, size_t n, uint64_t seed, hx_err *err) {
  wl_cloud_clear(out);
  if ((unsigned)kind >= WL_KIND_COUNT) return hx_errf(err, HX_EINVAL, "generate: unknown kind %d", (int)kind);
  WL_PASS(wl_cloud_alloc(out, n, err));
  if (n == 0) return HX_OK;
  hx_status st = HX_OK;
  switch (kind) {
    case WL_LIDAR: st = gen_lidar(out->xyz, n, seed, err); break;
    case WL_UNIFORM: gen_uniform(out->xyz, n, seed); break;
    case WL_INDOOR: st = gen_indoor(out->xyz, n, seed, err); break;
    case WL_CLUSTERS: gen_clusters(out->xyz, n, seed); break;
    default: break;
  }
  if (st != HX_OK) wl_cloud_free(out);
  return st;
}
