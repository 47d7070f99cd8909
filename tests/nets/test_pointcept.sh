#!/bin/sh
# test_pointcept.sh F3DBENCH CHECK_PY - the PTv3 forward against Pointcept's own PT-v3m1 (PyTorch, fp32, CPU) through
# lab/nets/pointcept_check.py: weights written by torch (PyTorch's initialisation, with BatchNorm's
# num_batches_tracked) go through `net --weights`, `net --device cpu --save` writes every level and the logits of a
# batch of two clouds, and Pointcept's forward (its flash path, as the nuScenes configuration runs it) of the same
# clouds, weights and order shuffles must match each within 1e-4 relative L2 (it reads ~1e-6); its plain path, which
# forms other patches for such a batch, is refused (exit 2). `f3dbench serialize`'s codes of a batch of two clouds must equal Pointcept's encode() bit for bit.
# The checks can fail: a save whose level 2 orders are swapped or with a NaN in a level, the seeded weights in place
# of the loaded ones, or one code changed must exit 1.
# Needs software CI does not have, so it is skipped (77) unless F3D_POINTCEPT names a Pointcept clone and
# ${F3D_PYTHON:-python3} imports torch, spconv (its CPU wheel), timm, addict, safetensors and numpy.
set -u
BIN=${1:?usage: test_pointcept.sh F3DBENCH CHECK_PY}
CHECK=${2:?usage: test_pointcept.sh F3DBENCH CHECK_PY}
PY=${F3D_PYTHON:-python3}
. "$(dirname "$0")/../lib.sh"
[ -n "${F3D_POINTCEPT:-}" ] || { echo "F3D_POINTCEPT (a clone of Pointcept) is unset: skipped"; exit 77; }
"$PY" -c 'import torch, spconv.pytorch, timm, addict, safetensors, numpy' 2>/dev/null ||
  { echo "$PY cannot import torch, spconv, timm, addict, safetensors and numpy: skipped"; exit 77; }
t_setup pointcept
pc() { "$PY" "$CHECK" --pointcept "$F3D_POINTCEPT" "$@"; }

expect 0 pc --init-weights "$T/w.safetensors" --seed 5
[ -s "$T/w.safetensors" ] || die "--init-weights wrote no $T/w.safetensors"
# two clouds whose deeper levels hold under 1024 rows each: padded patches and a patch per cloud in one batch
expect 0 "$BIN" net --model ptv3 --device cpu --points 3000 --batch 2 --seed 7 --weights "$T/w.safetensors" \
  --save "$T/a"
grep -q 'ignored.*num_batches_tracked' "$T/out" "$T/err" ||
  fail "net --weights did not note the ignored num_batches_tracked of a torch-written file"
expect 0 pc --weights "$T/w.safetensors" "$T/a"
grep -q '^PASS' "$T/out" || fail "the check of a matching save printed no PASS: $(cat "$T/out")"
[ "$(grep -cE '^(enc[0-4]|dec[0-3]|logits) ' "$T/out")" -eq 10 ] ||
  fail "the check did not compare the 9 levels and the logits: $(cat "$T/out")"

expect 2 pc --attention plain --weights "$T/w.safetensors" "$T/a"
grep -q 'holds under 1024 rows' "$T/err" || fail "the plain path on a batch of small clouds: $(cat "$T/err")"

cp -r "$T/a" "$T/b"
awk '$1 == "2" { t = $2; $2 = $3; $3 = t } { print }' "$T/a/orders.txt" >"$T/b/orders.txt"
expect 1 pc --weights "$T/w.safetensors" "$T/b"
grep -q '^FAIL' "$T/out" || fail "a save with level 2's orders swapped did not FAIL: $(cat "$T/out")"
cp "$T/a/orders.txt" "$T/b/orders.txt"
"$PY" -c 'import sys, numpy as np; a = np.load(sys.argv[1]); a[5, 3] = np.nan; np.save(sys.argv[1], a)' \
  "$T/b/dec1.npy" || die "could not write a NaN into $T/b/dec1.npy"
expect 1 pc --weights "$T/w.safetensors" "$T/b"
grep -q '^FAIL' "$T/out" || fail "a save with a NaN in dec1 did not FAIL: $(cat "$T/out")"
rm "$T/b/weights.safetensors"
expect 2 pc "$T/b"
grep -q 'missing weights.safetensors' "$T/err" || fail "a save without its weights: $(cat "$T/err")"
expect 0 "$BIN" net --model ptv3 --device cpu --points 3000 --batch 2 --seed 7 --save "$T/c"
expect 1 pc --weights "$T/w.safetensors" "$T/c"

expect 0 "$BIN" gen --kind lidar --points 20k --seed 1 --out "$T/l.ply"
expect 0 "$BIN" gen --kind uniform --points 5k --seed 2 --out "$T/u.ply"
expect 0 "$BIN" serialize --grid 0.01 --out "$T/codes.csv" "$T/l.ply" "$T/u.ply"
expect 0 pc --serialize "$T/codes.csv"
grep -q '^PASS' "$T/out" && [ "$(grep -c ' 0 differ$' "$T/out")" -eq 4 ] ||
  fail "serialize's codes against Pointcept's encode(): $(cat "$T/out")"
# the last digit of row 1000's last code changed as text (awk's numbers would print 2.19834e+12)
awk 'NR == 1000 { d = substr($0, length($0)); sub(/.$/, d == "9" ? "8" : d + 1) } { print }' "$T/codes.csv" \
  >"$T/bad.csv"
expect 1 pc --serialize "$T/bad.csv"
grep -q '^hilbert-trans .* 1 differ$' "$T/out" || fail "one changed code was not found: $(cat "$T/out" "$T/err")"
printf 'cloud,index,gx,gy,gz,depth,z\n0,0,1,2,3,2,x\n' >"$T/text.csv"
expect 2 pc --serialize "$T/text.csv"
grep -q 'text.csv: could not convert' "$T/err" || fail "a code that is not a number: $(cat "$T/err")"
t_done "ptv3's CPU forward and serialize's codes match Pointcept's; a swapped order, a NaN, other weights and a changed code are caught"
