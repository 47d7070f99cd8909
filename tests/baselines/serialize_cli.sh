#!/bin/sh
# serialize_cli.sh F3DBENCH [gpu] - end-to-end test of `f3dbench serialize`: a cloud whose grid
# coordinates are (0,0,0), (1234,567,89), (1999,1999,159) at grid 0.05 (depth 11) must give the
# ptv3.md 1.3 reference codes; a second cloud gets the batch bit 1 << 33; with "gpu" the GPU path must
# write a byte-identical file (exit 77 = skip when there is no CUDA device or no CUDA build).
set -u
bin=$1
mode=${2:-cpu}
. "$(dirname "$0")/../lib.sh"
t_setup ser
printf '0.01 0.01 0.01\n61.71 28.36 4.46\n99.96 99.96 7.96\n' > "$T/a.xyz"
printf '0.01 0.01 0.01\n0.06 0.01 0.01\n0.07 0.02 0.02\n' > "$T/b.xyz"
"$bin" serialize --out "$T/cpu.csv" "$T/a.xyz" "$T/b.xyz" || die "cpu run"
if [ "$mode" = gpu ]; then
  "$bin" serialize --device gpu --out "$T/gpu.csv" "$T/a.xyz" "$T/b.xyz" 2> "$T/err"
  rc=$?
  if [ $rc -ne 0 ]; then
    if grep -q -i "no cuda\|no CUDA device\|no device" "$T/err"; then echo "skip: $(cat "$T/err")"; exit 77; fi
    cat "$T/err" >&2; die "gpu run"
  fi
  cmp "$T/cpu.csv" "$T/gpu.csv" || die "GPU and CPU files differ"
  "$bin" serialize --device gpu --dedup --orders hilbert-trans,z --out "$T/gpu2.csv" "$T/a.xyz" "$T/b.xyz" || die "gpu dedup"
  "$bin" serialize --dedup --orders hilbert-trans,z --out "$T/cpu2.csv" "$T/a.xyz" "$T/b.xyz" || die "cpu dedup"
  cmp "$T/cpu2.csv" "$T/gpu2.csv" || die "GPU and CPU files differ (dedup)"
  exit 0
fi
cat > "$T/want.csv" <<'CSV'
cloud,index,gx,gy,gz,depth,z,z-trans,hilbert,hilbert-trans
0,0,0,0,0,11,0,0,0,0
0,1,1234,567,89,11,4573196979,2689495861,8256659060,4175623750
0,2,1999,1999,159,11,7364681727,7364681727,4607981421,4607981421
1,0,0,0,0,11,8589934592,8589934592,8589934592,8589934592
1,1,1,0,0,11,8589934596,8589934594,8589934595,8589934593
1,2,1,0,0,11,8589934596,8589934594,8589934595,8589934593
CSV
cmp "$T/want.csv" "$T/cpu.csv" || { diff "$T/want.csv" "$T/cpu.csv" >&2; die "reference codes"; }
"$bin" serialize --dedup --orders hilbert --out "$T/d.csv" "$T/a.xyz" "$T/b.xyz" 2> "$T/err" || die "dedup run"
grep -q "dropped 1 of 6" "$T/err" || die "dedup count not reported"
[ "$(wc -l < "$T/d.csv")" -eq 6 ] || die "dedup rows"
head -1 "$T/d.csv" | grep -qx "cloud,index,gx,gy,gz,depth,hilbert" || die "header with --orders"
"$bin" serialize --out "$T/x.csv" "$T/nonexistent.xyz" 2>/dev/null && die "missing input accepted"
"$bin" serialize --grid 0.0001 --out "$T/x.csv" "$T/a.xyz" 2> "$T/err" && die "depth overflow accepted"
grep -q "grid size of" "$T/err" || die "depth error names no grid size"
[ ! -e "$T/x.csv" ] || die "partial output left behind"
# an --out that is an input (its path, or a link to it) is a usage error naming both; the cloud stays as it was
cp "$T/b.xyz" "$T/keep.xyz"
ln -s b.xyz "$T/link.csv"
for o in "$T/b.xyz" "$T/link.csv"; do
  "$bin" serialize --out "$o" "$T/a.xyz" "$T/b.xyz" 2> "$T/err"
  [ $? -eq 2 ] || die "--out $o (an input) did not exit 2"
  grep -q "serialize: --out $o is the input $T/b.xyz" "$T/err" || die "--out an input: $(cat "$T/err")"
  cmp -s "$T/b.xyz" "$T/keep.xyz" || die "--out $o replaced the input"
done
exit 0
