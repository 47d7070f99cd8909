#!/usr/bin/env bash
# run.sh - NVIDIA compute-sanitizer over the main path's GPU kernels at small sizes (suite gpu-sanitize).
#
# usage: run.sh [--tool LIST] [--only LIST] [--exclude SUBSTR]... [--forwards] [--net-kernels K]
#               [--nets-tests LAYERS,SPCONV] F3DBENCH|BUILD_DIR
#   --tool LIST      memcheck,racecheck,synccheck,initcheck (default: all four)
#   --only LIST      commands to run (default: all): psh serialize pool attn net-ptv3 net-flash3d nets-layers
#                    nets-spconv
#   --forwards       racecheck and initcheck over the net-* forwards too (by default their lines say SKIP: the
#                    forwards' cuBLAS GEMMs stop racecheck and give initcheck false reports; docs/measurement.md)
#   --exclude S      do not check kernels whose name contains S (compute-sanitizer --kernel-name-exclude
#                    kns=S; repeatable): for a library kernel with a known false positive, named in the docs
#   --net-kernels all|nets|NAME,...   what racecheck checks in the net-* commands (implies --forwards; default
#                    nets: the kernels of nets/, layers and sparse convolution; all: every launch, libraries
#                    included; or the kernels whose names contain one of NAME,...)
#   --nets-tests L,S the nets GPU test programs (default: BUILD/tests/nets/test_nets_{layers,spconv}_gpu beside
#                    BUILD/app/f3dbench); a requested one that is missing is a FAIL
#   OUT=DIR          where the logs and summary.txt go (default: a new folder under ${TMPDIR:-/tmp}, printed)
#   COMPUTE_SANITIZER=PATH  the sanitizer (default: on PATH, then $CUDA_HOME/bin, /usr/local/cuda*/bin)
#
# Each (tool, command) runs once under `compute-sanitizer --tool T --error-exitcode 99` (memcheck adds
# --leak-check full) and prints one line: PASS, or FAIL with the error count, the kernels named in the
# reports and the log, or SKIP with the reason. The summary table comes last. Exit 0 when no line failed, 1 when
# one failed, 2 on a usage error, 77 (Meson: SKIP) when there is no compute-sanitizer, no CUDA build or no CUDA
# device.
#
# What runs (one synthetic lidar cloud of N points and a second seed of it, so the batch paths run too):
#   psh          f3dbench psh --device gpu (variant v9, the main path's PSH) on 2 clouds
#   serialize    f3dbench serialize --device gpu --dedup (PTv3's grid, dedup and four curve codes) on 2 clouds
#   pool         f3dbench pool --device gpu (PSH v9, then in-bucket pooling v9) on 2 clouds
#   attn         f3dbench attn --variant auto (v9 on sm_90a, else v24): 2 heads of 16, buckets of 128 rows (the
#                last one partial), scopes of 4 buckets shifted by 2 (swin), checked, one timed launch
#   net-ptv3     f3dbench net --model ptv3-tiny: one forward checked against the CPU (cuBLAS GEMMs inside)
#   net-flash3d  f3dbench net --model flash3d-tiny, likewise
#   nets-layers  BUILD/tests/nets/test_nets_layers_gpu's tests without a cuBLAS GEMM (LayerNorm both kernels, the
#                fused MLP, fc1 + SwiGLU, the LayerNorm inside the qkv and MLP kernels, affine, SwiGLU, add, gather,
#                gather and add, conversions, segment max, windows), each checked against its CPU reference
#   nets-spconv  BUILD/tests/nets/test_nets_spconv_gpu's tests without cuBLAS: the kernel map and rulebook, v1's
#                boundary cases, v2 (the stem's widths), v3's mask order, and test_conv_fused: v1 and v3-v8 where
#                they take the widths, at k = 3 on 32, 64 and 256 channels, fp16 and bf16, v5's pages included
# The nets-* lines check the networks' own kernels apart from cuBLAS. Under racecheck (compute-sanitizer
# 2025.3.1, H200) both forwards stop at their first cuBLAS or cuBLASLt GEMM with "Internal Sanitizer Error: failed
# to handle a hardware exception", even with no kernel selected for checking (the probe's GEMMs,
# lab/kernels/probe_sanitize_cublaslt.cu, run clean under racecheck: the trigger in f3dbench is not isolated),
# and initcheck misses a cuBLASLt GEMM's stores, so it reports later reads of its output (the probe shows that
# with no code of ours). So racecheck and initcheck skip the net-* forwards unless --forwards.
# N is 4000 points (attention: 4000 rows); racecheck, which tracks every shared-memory access, gets 1500
# points and 1000 rows so that each pass stays near a minute on an H100.
# None of these commands opens CUPTI (only `sweep` does, and CUPTI and the sanitizers cannot share a
# process), and `net` runs without --graph: each launch is checked as itself.
# cuBLAS's own kernels are checked too: an out-of-bounds GEMM is our bug (a wrong leading dimension). Where a
# library kernel reports a hazard that is its own, the line names the kernel; --exclude takes it out.
# With --forwards, racecheck in a net-* command checks the kernels of nets/ only (compute-sanitizer --kernel-name kns=NAME
# per kernel; every other launch runs unchecked): the forward's other kernels (PSH, serialization, pooling,
# attention, gathers) are those of the commands above, and following every shared-memory access of ~700
# launches, cuBLAS's and CUB's included, did not finish a ptv3-tiny forward of 1500 points in 110 s on an H200.
# initcheck is never filtered: it tracks which bytes were written, and writes by unchecked kernels are unseen
# (filtered, it reported the serialization's grid as uninitialized where the map kernels read it).
# memcheck and synccheck check every launch of the forward.
set -u
tools="memcheck,racecheck,synccheck,initcheck"
only="psh,serialize,pool,attn,net-ptv3,net-flash3d,nets-layers,nets-spconv"
forwards=0
nets_progs=""
excl=()
net_kernels=nets
# the __global__ functions of nets/layers.cu, nets/mlp*.cu, nets/swiglu_wgmma.cu and nets/spconv*.cu (tests/sanitize/test_run.sh checks
# the list)
NETS_KERNELS="add_kernel affine_kernel from_f32_kernel to_f32_kernel ln_block_kernel ln_warp_kernel segmax_kernel
  windows_kernel swiglu_kernel mlp_kernel mlp_wg_kernel lnl_kernel lla_kernel lsw_kernel lsw_wg_kernel insert_kernel place_kernel
  lookup_kernel rule_kernel count_kernel gather_kernel gather_add_kernel scatter_add_kernel finalize_kernel conv_kernel
  conv_wg_kernel mask_kernel steps_kernel sort_kernel stem_kernel"
usage() { sed -n '4,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
  --tool) [ $# -ge 2 ] || usage; tools=$2; shift 2 ;;
  --only) [ $# -ge 2 ] || usage; only=$2; shift 2 ;;
  --exclude) [ $# -ge 2 ] || usage; excl+=(--kernel-name-exclude "kns=$2"); shift 2 ;;
  --forwards) forwards=1; shift ;;
  --nets-tests) [ $# -ge 2 ] || usage; nets_progs=$2; shift 2
    case $nets_progs in ?*,?*) ;; *) echo "run.sh: --nets-tests takes LAYERS,SPCONV, not '$nets_progs'" >&2; exit 2 ;; esac ;;
  --net-kernels) [ $# -ge 2 ] || usage; net_kernels=$2; forwards=1; shift 2
    case $net_kernels in all|nets|[A-Za-z_]*) ;; *) echo "run.sh: --net-kernels takes all, nets or kernel names, not '$net_kernels'" >&2; exit 2 ;; esac ;;
  -h|--help) usage ;;
  -*) echo "run.sh: unknown option '$1'" >&2; usage ;;
  *) break ;;
  esac
done
[ $# -eq 1 ] || usage
bin=$1
[ -d "$bin" ] && bin=$bin/app/f3dbench
[ -x "$bin" ] || { echo "run.sh: no f3dbench program at '$bin'" >&2; exit 2; }
for t in ${tools//,/ }; do
  case $t in memcheck|racecheck|synccheck|initcheck) ;; *) echo "run.sh: unknown tool '$t'" >&2; exit 2 ;; esac
done
for c in ${only//,/ }; do
  case $c in psh|serialize|pool|attn|net-ptv3|net-flash3d|nets-layers|nets-spconv) ;; *) echo "run.sh: unknown command '$c'" >&2; exit 2 ;; esac
done

# -- the sanitizer and a device, else SKIP --
san=${COMPUTE_SANITIZER:-}
if [ -z "$san" ]; then
  san=$(command -v compute-sanitizer 2>/dev/null)
  for d in ${CUDA_HOME:+"$CUDA_HOME/bin"} ${CUDA_PATH:+"$CUDA_PATH/bin"} /usr/local/cuda/bin /usr/local/cuda-*/bin \
           /opt/nvidia/compute-sanitizer; do
    [ -n "$san" ] && break
    [ -x "$d/compute-sanitizer" ] && san=$d/compute-sanitizer
  done
fi
[ -n "$san" ] && [ -x "$san" ] || { echo "run.sh: no compute-sanitizer (PATH, \$CUDA_HOME/bin, /usr/local/cuda*/bin): skipped"; exit 77; }
info=$("$bin" info 2>&1) || { echo "run.sh: f3dbench info failed: skipped"; printf '%s\n' "$info"; exit 77; }
if printf '%s\n' "$info" | grep -q '^devices: no CUDA device'; then
  echo "run.sh: $(printf '%s\n' "$info" | grep '^devices:'): skipped"
  exit 77
fi

# -- logs --
if [ -n "${OUT:-}" ]; then
  out=$OUT
  mkdir -p "$out" || exit 2
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/f3d-sanitize-XXXXXX") || exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/f3d-sanitize-work-XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
echo "compute-sanitizer: $san ($("$san" --version 2>/dev/null | grep -i -m 1 'version' || echo 'version ?'))"
echo "f3dbench: $bin; device $(printf '%s\n' "$info" | sed -n 's/^  \[0\] //p' | head -n 1)"
echo "logs: $out"

# clouds of each size class, made once outside the sanitizer
mkcloud() { # $1 points, $2 seed, $3 path
  [ -f "$3" ] || "$bin" gen --kind lidar --points "$1" --seed "$2" --voxel 0.05 --out "$3" >/dev/null 2>&1 ||
    { echo "run.sh: f3dbench gen --points $1 failed" >&2; exit 2; }
}

# the nets GPU test programs: as given, else beside f3dbench in its build (BUILD/app/f3dbench -> BUILD/tests/nets)
if [ -n "$nets_progs" ]; then
  layers_prog=${nets_progs%%,*}
  spconv_prog=${nets_progs#*,}
else
  nets_tests=$(cd "$(dirname "$bin")/.." 2>/dev/null && pwd)/tests/nets
  layers_prog=$nets_tests/test_nets_layers_gpu
  spconv_prog=$nets_tests/test_nets_spconv_gpu
fi

# args_of COMMAND POINTS ROWS: the program (prog) and its arguments (the array cmd) of one command
args_of() {
  local c=$1 n=$2 r=$3 a=$work/cloud-$2-1.ply b=$work/cloud-$2-2.ply
  prog=$bin
  case $c in
  nets-layers) prog=$layers_prog
    cmd=(test_layernorm test_mlp test_linear_swiglu test_ln_fused test_mlp_split test_affine_swiglu test_add_gather_convert test_segment_max
      test_windows); return ;;
  nets-spconv) prog=$spconv_prog
    cmd=(test_map test_conv_v1_boundary test_conv_v2 test_stem test_mask_order_v3 test_conv_fused); return ;;
  esac
  mkcloud "$n" 1 "$a"
  mkcloud "$n" 2 "$b"
  case $c in
  psh) cmd=(psh --device gpu --out "$work/psh.csv" "$a" "$b") ;;
  serialize) cmd=(serialize --device gpu --dedup --out "$work/ser.csv" "$a" "$b") ;;
  pool) cmd=(pool --device gpu --out "$work/pool.csv" "$a" "$b") ;;
  attn) cmd=(attn --rows "$r" --heads 2 --head-dim 16 --bucket-size 128 --scope-buckets 4 --plan swin:2
             --variant auto --check-rows 64 --reps 1 --warmup 0) ;;
  net-ptv3) cmd=(net --model ptv3-tiny --points "$n" --check-points "$n" --reps 1) ;;
  net-flash3d) cmd=(net --model flash3d-tiny --points "$n" --check-points "$n" --reps 1) ;;
  esac
}

# errors_of TOOL LOG: the error count compute-sanitizer reported (racecheck: hazards of severity Error)
errors_of() {
  local e
  if [ "$1" = racecheck ]; then
    e=$(sed -n 's/.*RACECHECK SUMMARY: .*(\([0-9][0-9]*\) errors*,.*/\1/p' "$2" | tail -n 1)
    [ -n "$e" ] || e=$(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$2" | tail -n 1)
  else
    e=$(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$2" | tail -n 1)
  fi
  printf '%s' "${e:-?}"
}
# kernels_of LOG: the kernels named in the reports ("at [void ]NAME[<...>](ARGS)+0xOFF"), most frequent
# first, at most 3
kernels_of() {
  sed -n 's/.* at \(.*\)+0x[0-9a-fA-F][0-9a-fA-F]*.*/\1/p' "$1" | sed 's/^void //; s/[(<].*//' | sort | uniq -c |
    sort -rn | head -n 3 | awk '{printf "%s%s", (NR > 1 ? "," : ""), $2}'
}

summary=$out/summary.txt
: > "$summary"
fails=0
passes=0
skips=0
# report VERDICT ERRORS SECONDS NOTE [LOG]: the line of (t, c), printed, kept in the summary (with the log) and counted
report() {
  local line
  line=$(printf '%-9s %-11s %-4s errors %-3s %4ss  %s' "$t" "$c" "$1" "$2" "$3" "$4")
  echo "$line"
  printf '%s%s\n' "$line" "${5:+  log $5}" >> "$summary"
  case $1 in PASS) passes=$((passes + 1)) ;; SKIP) skips=$((skips + 1)) ;; *) fails=$((fails + 1)) ;; esac
}
for t in ${tools//,/ }; do
  n=4000; r=4000
  [ "$t" = racecheck ] && { n=1500; r=1000; }
  extra=()
  [ "$t" = memcheck ] && extra=(--leak-check full)
  for c in ${only//,/ }; do
    args_of "$c" "$n" "$r"
    log=$out/$t-$c.log
    why=""
    case $t/$c in
    racecheck/net-*|initcheck/net-*)
      [ $forwards -eq 1 ] || why="cuBLAS GEMMs inside (racecheck stops at them, initcheck misses their stores); --forwards runs it" ;;
    esac
    if [ "${c#nets-}" != "$c" ] && [ ! -x "$prog" ]; then
      report FAIL - 0 "no test program $prog (built with cmocka; --nets-tests names them)"
      continue
    fi
    if [ -n "$why" ]; then
      report SKIP - 0 "$why"
      continue
    fi
    only_k=()
    case $t/$c/$net_kernels in
    racecheck/net-*/all) ;;
    racecheck/net-*/nets) for k in $NETS_KERNELS; do only_k+=(--kernel-name "kns=$k"); done ;;
    racecheck/net-*/*) for k in ${net_kernels//,/ }; do only_k+=(--kernel-name "kns=$k"); done ;;
    esac
    start=$(date +%s)
    "$san" --tool "$t" --error-exitcode 99 --print-limit 200 "${extra[@]}" "${excl[@]}" "${only_k[@]}" "$prog" \
      "${cmd[@]}" >"$log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    e=$(errors_of "$t" "$log")
    if [ $rc -eq 0 ] && [ "$e" = 0 ]; then
      verdict=PASS; note=""
    else
      verdict=FAIL
      if [ $rc -eq 99 ] || { [ "$e" != "?" ] && [ "$e" != 0 ]; }; then
        note="kernels: $(kernels_of "$log")"
      else
        # the program or the sanitizer itself failed: its last words
        note="exit $rc: $(grep -v -e '^=========' -e '^[[:space:]]*$' "$log" | tail -n 1 | cut -c 1-100)"
      fi
    fi
    report "$verdict" "$e" "$took" "$note" "$log"
  done
done
echo
echo "summary (tool, command, verdict, errors, seconds; logs in $out):"
sed 's/  log .*//' "$summary"
echo "sanitize: $passes passed, $fails failed, $skips skipped"
[ $fails -eq 0 ]
