# device-common.sh - the prologue the device scripts share (lab/baselines/ptv3-device.sh,
# lab/kernels/psh-device.sh); sourced, not run, from the repository root after the caller has set OUT
# (its log folder) and its own knobs. Sets ARCH (default 90) and BUILD (default build-dev), creates $OUT
# with an empty summary file $SUM, defines note (echo a line into the summary) and step (run a command
# into a log, recording PASS/SKIP/FAIL), and records date, nvidia-smi and the git state next to the logs
# so a result can be traced back to the tree and the GPU that made it.
ARCH=${ARCH:-90}
BUILD=${BUILD:-build-dev}
mkdir -p "$OUT"
SUM="$OUT/summary.txt"
: > "$SUM"
note() { echo "$*" | tee -a "$SUM"; }
step() { # step NAME LOGFILE CMD...: run, record rc (77 = skip)
  name=$1; logf=$2; shift 2
  "$@" > "$logf" 2>&1
  rc=$?
  case $rc in 0) note "PASS $name";; 77) note "SKIP $name";; *) note "FAIL $name (rc $rc, see $(basename "$logf"))";; esac
  return $rc
}
# cmocka / liblzf from the carried .deps/*.deb (the device image has neither and no package registry): unpacked
# into /tmp/deps and found through pkg-config's sysroot (cmocka and liblzf are the only pkg-config
# dependencies of meson.build, so the sysroot prefix touches nothing else); a build dir configured before
# this existed keeps its own settings.
if ! pkg-config --exists cmocka 2>/dev/null && ls .deps/*.deb > /dev/null 2>&1; then
  for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
  export PKG_CONFIG_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu/pkgconfig PKG_CONFIG_SYSROOT_DIR=/tmp/deps
  export LD_LIBRARY_PATH="/tmp/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
date -u > "$OUT/date.txt"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
git rev-parse HEAD > "$OUT/git-head.txt" 2>/dev/null || true
git status --short > "$OUT/git-status.txt" 2>/dev/null || true
