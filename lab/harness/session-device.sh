#!/bin/sh
# session-device.sh - one device call that checks and measures the whole tree on the GPU machine, from
# the repository root with .deps carried (cmocka/liblzf debs): build through ./f3d (no package access:
# F3D_NO_APT=1), every test suite (GPU tests included), then `./f3d run` on a short sweep whose result
# directory comes back packed, so figures and cross-device comparisons are made on the dev machine.
#   OUT=...            log folder (default ./session-out); what comes back: summary.txt, test.log.gz,
#                      results.tar.gz (results/<run-id>/ without samples.csv when that is large)
#   STEPS=build,test,run   (default: all three)   SIZES=100k,300k,600k   RUN_ID=<gpu>-<commit>
#   SWEEP_ARGS="..."   extra sweep options (e.g. --pipelines flash3d)   TEST_ARGS="..." (meson test)
#   F3D_GIT_COMMIT     the commit this tree is (the device copy has no .git)
set -u
OUT=${OUT:-$PWD/session-out}
mkdir -p "$OUT"
SUM="$OUT/summary.txt"
: > "$SUM"
note() { echo "$*" | tee -a "$SUM"; }
STEPS=${STEPS:-build,test,run}
has() { case ",$STEPS," in *",$1,"*) return 0;; esac; return 1; }
export F3D_NO_APT=1 F3D_GPU_ARCH=${F3D_GPU_ARCH:-90} F3D_JOBS=${F3D_JOBS:-16}
export F3D_GIT_COMMIT=${F3D_GIT_COMMIT:-unknown}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr -c 'A-Za-z0-9\n' '-' | sed 's/-*$//')
RUN_ID=${RUN_ID:-${gpu:-gpu}-$F3D_GIT_COMMIT}
date -u | tee -a "$SUM"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee -a "$SUM"
t0=$(date +%s)
if has build; then
  sh lab/harness/touch-sources.sh # a warm machine may hold objects of an earlier call's sources
  ./f3d setup > "$OUT/setup.log" 2>&1 || { note "FAIL build (setup.log)"; tail -30 "$OUT/setup.log"; exit 1; }
  note "build ok $(( $(date +%s) - t0 )) s"
fi
if has test; then
  t0=$(date +%s)
  ./f3d test --num-processes 4 ${TEST_ARGS:-} > "$OUT/test.log" 2>&1
  note "test rc=$? $(( $(date +%s) - t0 )) s"
  grep -E '^ *[0-9]+/[0-9]+ .*(OK|FAIL|SKIP|TIMEOUT|ERROR)' "$OUT/test.log" | sed 's/  */ /g' | tee -a "$SUM"
  gzip -f "$OUT/test.log"
fi
if has run; then
  t0=$(date +%s)
  ./f3d run --sizes "${SIZES:-100k,300k,600k}" --run-id "$RUN_ID" ${SWEEP_ARGS:-} > "$OUT/run.log" 2>&1
  note "run rc=$? $(( $(date +%s) - t0 )) s (results/$RUN_ID)"
  tail -5 "$OUT/run.log" | tee -a "$SUM"
  if [ -d "results/$RUN_ID" ]; then
    sed -n '1,60p' "results/$RUN_ID/REPORT.md" >> "$SUM" 2>/dev/null
    tar czf /tmp/results.tar.gz -C results "$RUN_ID" && mv /tmp/results.tar.gz "$OUT/"
  fi
  gzip -f "$OUT/run.log"
fi
rm -f "$OUT/setup.log"
