#!/bin/sh
# psh-ab.sh - A/B of the PSH kernels of two trees in one device call: the working tree, or NEW, ("new")
# against another copy of the repository ("old", e.g. `git archive <commit> | tar -x -C build-ab/old`, a git-ignored
# folder named in the device call's carry), both built here with Meson, psh_bench run in alternating
# rounds over the PSH seeds and clouds given. Run on the GPU machine from the repository root, .deps carried.
#   OLD=build-ab/old sh lab/kernels/psh-ab.sh
#   NEW=build-ab/x       (the "new" tree, default the working tree: two pairs in one call, each its own OUT)
#   VARIANTS=v4,v9  HASHES=xor-div  SIZES=100000,600000  REPS=10  ROUNDS=2   (VARIANTS=floor,v10: also
#                        psh_bench's floor line, v10's launch with nothing computed, hash "-")
#   SEEDS="sweep 3407"   (psh_bench's F3D_BENCH_SEED per run; "sweep" = the sweep's per-hash seed)
#   CLOUDS="sweep"       (F3D_BENCH_CLOUD: sweep = the sweep's deduplicated cloud, raw = wl_generate's)
#   COLD=1               (also the cold graph: L2 flushed before each replay)
#   RUN_TIMEOUT=600      (seconds per psh_bench run: a hung kernel costs that run, not the whole call)
#   FLAGS="-DX=1"        (NVCC_APPEND_FLAGS for the new tree's build only: a define variant of it; a warm
#                        machine keeps build-ab-dev, so touch the .cu files when FLAGS changes between calls)
# Why: a phase C change (d0f16b2) measured 7-16% faster in psh_bench with one seed and 8-20% slower in the
# sweep with another on the same cloud (docs/measurement.md); a phase C change is judged on several seeds, both trees
# in the same call. Output: $OUT (default ./psh-ab-out) holds every psh_bench log and ab.txt, one line per
# (cloud, seed, n, variant, hash): old and new graph medians per round, the change of their means in %,
# and with COLD=1 the same for the cold figure. A variant that failed its check prints FAILED and no time.
set -u
OUT=${OUT:-$PWD/psh-ab-out}
OLD=${OLD:?set OLD to the other tree (a folder holding a copy of the repository)}
NEW=${NEW:-.}
VARIANTS=${VARIANTS:-v4,v9}; HASHES=${HASHES:-xor-div}; SIZES=${SIZES:-100000,600000}
REPS=${REPS:-10}; ROUNDS=${ROUNDS:-2}; SEEDS=${SEEDS:-sweep 3407}; CLOUDS=${CLOUDS:-sweep}
# shellcheck source=lab/harness/device-common.sh
. "$(dirname "$0")/../harness/device-common.sh"
for t in "$OLD" "$NEW"; do [ -f "$t/meson.build" ] || { note "FAIL: $t is not a copy of the repository"; exit 2; }; done
bld() { # bld TREE LABEL FLAGS
  ( cd "$1" && { [ -f build-ab-dev/build.ninja ] || meson setup build-ab-dev -Dgpu_arch="$ARCH" > "$OUT/setup-$2.log" 2>&1; } &&
    NVCC_APPEND_FLAGS="$3" ninja -C build-ab-dev lab/psh_bench > "$OUT/build-$2.log" 2>&1 )
}
bld "$NEW" new "${FLAGS:-}" & p1=$!
bld "$OLD" old "" & p2=$!
ok=1
wait $p1 || { note "FAIL build new (build-new.log)"; ok=0; }
wait $p2 || { note "FAIL build old (build-old.log)"; ok=0; }
[ $ok = 1 ] || exit 1
r=1
while [ $r -le "$ROUNDS" ]; do
  for cl in $CLOUDS; do for sd in $SEEDS; do for t in old new; do
    b="$NEW/build-ab-dev/lab/psh_bench"; [ $t = old ] && b="$OLD/build-ab-dev/lab/psh_bench"
    if [ "$sd" = sweep ]; then unset F3D_BENCH_SEED; else export F3D_BENCH_SEED="$sd"; fi
    F3D_BENCH_CLOUD=$cl F3D_BENCH_POOL=0 F3D_PSH_VARIANTS=$VARIANTS F3D_BENCH_HASHES=$HASHES F3D_BENCH_COLD=${COLD:-0} \
      timeout "${RUN_TIMEOUT:-600}" "$b" "$SIZES" "$REPS" > "$OUT/$cl-$sd-$t-$r.txt" 2>&1
    echo "round $r: $cl cloud, seed $sd, $t: rc $?"
  done; done; done
  r=$((r + 1))
done
# one line per case: graph (and cold) medians of each round, old then new, and the change of the means
for f in "$OUT"/*-old-*.txt "$OUT"/*-new-*.txt; do
  [ -f "$f" ] || continue
  base=$(basename "$f" .txt); t=$(echo "$base" | awk -F- '{print $(NF-1)}'); key=$(echo "$base" | sed "s/-$t-[0-9]*\$//")
  awk -v t="$t" -v key="$key" '/^## n =/{n=$4} /^(v[0-9]|floor )/{v=$1; h=$2; if (tolower($0) ~ /failed/) print key, n, v, h, t, "graph", "FAILED"; else if ($5 ~ /^[0-9.]+$/) print key, n, v, h, t, "graph", $5}
    /cold graph/{print key, n, v, h, t, "cold", $(NF-1)}' "$f"
done | awk '{k=$1" n="$2" "$3" "$4" "$6; a[k, $5] = a[k, $5] " " $7; if ($7 != "FAILED") {s[k, $5] += $7; c[k, $5]++} keys[k] = 1}
  END {for (k in keys) {d = (c[k, "old"] && c[k, "new"]) ? sprintf("%+.1f%%", 100 * (s[k, "new"] / c[k, "new"]) / (s[k, "old"] / c[k, "old"]) - 100) : "-";
       printf "%-44s old%s | new%s | %s\n", k, a[k, "old"], a[k, "new"], d}}' | sort > "$OUT/ab.txt"
tee -a "$SUM" < "$OUT/ab.txt"
