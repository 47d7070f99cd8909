#!/bin/sh
# serialize_cli.sh F3DBENCH [gpu] - end-to-end test of `f3dbench serialize`: a cloud whose grid
# coordinates are (0,0,0), (1234,567,89), (1999,1999,159) at grid 0.05 (depth 11) must give the
# ptv3.md 1.3 reference codes; a second cloud gets the batch bit 1 << 33; with "gpu" the GPU path must
# write a byte-identical file (exit 77 = skip when there is no CUDA device or no CUDA build).
set -u
bin=$1
mode=${2:-cpu}
dir=$(mktemp -d "${TMPDIR:-/tmp}/f3d-ser-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
printf '0.01 0.01 0.01\n61.71 28.36 4.46\n99.96 99.96 7.96\n' > "$dir/a.xyz"
printf '0.01 0.01 0.01\n0.06 0.01 0.01\n0.07 0.02 0.02\n' > "$dir/b.xyz"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$bin" serialize --out "$dir/cpu.csv" "$dir/a.xyz" "$dir/b.xyz" || fail "cpu run"
if [ "$mode" = gpu ]; then
  "$bin" serialize --device gpu --out "$dir/gpu.csv" "$dir/a.xyz" "$dir/b.xyz" 2> "$dir/err"
  rc=$?
  if [ $rc -ne 0 ]; then
    if grep -q -i "no cuda\|no CUDA device\|no device" "$dir/err"; then echo "skip: $(cat "$dir/err")"; exit 77; fi
    cat "$dir/err" >&2; fail "gpu run"
  fi
  cmp "$dir/cpu.csv" "$dir/gpu.csv" || fail "GPU and CPU files differ"
  "$bin" serialize --device gpu --dedup --orders hilbert-trans,z --out "$dir/gpu2.csv" "$dir/a.xyz" "$dir/b.xyz" || fail "gpu dedup"
  "$bin" serialize --dedup --orders hilbert-trans,z --out "$dir/cpu2.csv" "$dir/a.xyz" "$dir/b.xyz" || fail "cpu dedup"
  cmp "$dir/cpu2.csv" "$dir/gpu2.csv" || fail "GPU and CPU files differ (dedup)"
  exit 0
fi
cat > "$dir/want.csv" <<'CSV'
cloud,index,gx,gy,gz,depth,z,z-trans,hilbert,hilbert-trans
0,0,0,0,0,11,0,0,0,0
0,1,1234,567,89,11,4573196979,2689495861,8256659060,4175623750
0,2,1999,1999,159,11,7364681727,7364681727,4607981421,4607981421
1,0,0,0,0,11,8589934592,8589934592,8589934592,8589934592
1,1,1,0,0,11,8589934596,8589934594,8589934595,8589934593
1,2,1,0,0,11,8589934596,8589934594,8589934595,8589934593
CSV
cmp "$dir/want.csv" "$dir/cpu.csv" || { diff "$dir/want.csv" "$dir/cpu.csv" >&2; fail "reference codes"; }
"$bin" serialize --dedup --orders hilbert --out "$dir/d.csv" "$dir/a.xyz" "$dir/b.xyz" 2> "$dir/err" || fail "dedup run"
grep -q "dropped 1 of 6" "$dir/err" || fail "dedup count not reported"
[ "$(wc -l < "$dir/d.csv")" -eq 6 ] || fail "dedup rows"
head -1 "$dir/d.csv" | grep -qx "cloud,index,gx,gy,gz,depth,hilbert" || fail "header with --orders"
"$bin" serialize --out "$dir/x.csv" "$dir/nonexistent.xyz" 2>/dev/null && fail "missing input accepted"
"$bin" serialize --grid 0.0001 --out "$dir/x.csv" "$dir/a.xyz" 2> "$dir/err" && fail "depth overflow accepted"
grep -q "grid size of" "$dir/err" || fail "depth error names no grid size"
[ ! -e "$dir/x.csv" ] || fail "partial output left behind"
exit 0
