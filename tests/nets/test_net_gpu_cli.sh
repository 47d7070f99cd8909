#!/bin/sh
# test_net_gpu_cli.sh F3DBENCH - `f3dbench net` on a GPU as a user meets it: a PTv3 forward (ptv3-tiny, 3000
# points) passes its check against the CPU, prints its latency, its components and the time by part of the network
# (stem, every encoder and decoder level, head), and each component's time summed over the parts is its total
# (within 1% + 0.01 ms: each part is printed to 0.001 ms); with --spconv v3 (and v0) the xCPE convolutions on
# another variant still pass the check; flash3d-tiny with --rehash off, and with --scope 1 and 2, passes its check;
# ptv3-tiny with --patch 256 and ptv3-patch4096 on 9000 points (several patches of 4096) pass theirs;
# two clouds in bf16 with --graph and --save pass, time the graph and write both clouds, the weights and the orders
# (as the CPU run of the seed does); the estimate before allocation is at least each run's arena peak; and
# --device-memory below the estimate is refused before any allocation; the LayerNorms of ptv3-tiny's 32- and
# 64-channel levels run inside their Linears' kernels (no `norm` part there, one at the 16-channel level 0) and
# --ln separate puts them back as passes, checked; --tile-order last (v6's tiles last-first) passes its check and
# says so; --overlap off (the structure on the forward's one stream) passes its check and says so; --lt-tune off
# (cuBLASLt's first algorithm per shape) passes its check, says so and times no shape, where the default times some;
# the timed input's logits are said finite; a cloud 70 km from the origin (features past fp16's range) is refused
# with the way out. Exits 77 (skipped) without a CUDA device.
set -u
BIN=${1:?usage: test_net_gpu_cli.sh F3DBENCH}
. "$(dirname "$0")/../lib.sh"
t_setup net-gpu-cli
need_gpu "$BIN"
for v in main v3 v0; do
  extra=""
  [ "$v" = main ] || extra="--spconv $v"
  # shellcheck disable=SC2086
  "$BIN" net --model ptv3-tiny --points 3000 --reps 3 $extra > "$T/out-$v" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || { fail "net ($v) exited $rc: $(tail -3 "$T/out-$v")"; continue; }
  grep -q '^check: .*: pass$' "$T/out-$v" || fail "net ($v): no passing check line"
  grep -q '^forward  median ' "$T/out-$v" || fail "net ($v): no forward latency"
  [ "$v" = main ] || grep -q "xCPE convolutions on spconv $v" "$T/out-$v" || fail "net ($v): the variant is not named"
done
"$BIN" net --model flash3d-tiny --points 3000 --reps 3 --rehash off > "$T/out-f3d" 2>&1 ||
  fail "net flash3d-tiny --rehash off exited $?: $(tail -3 "$T/out-f3d")"
grep -q '^check: .*: pass$' "$T/out-f3d" || fail "net flash3d-tiny --rehash off: no passing check line"
grep -q 'in pooling order over fixed windows' "$T/out-f3d" ||
  fail "net flash3d-tiny --rehash off: the header does not say so"
# --scope: flash3d-tiny's attention over scopes of 1 and 2 buckets (the configuration's 4) passes its check
for k in 1 2; do
  "$BIN" net --model flash3d-tiny --points 3000 --reps 3 --scope $k > "$T/out-scope$k" 2>&1 ||
    fail "net flash3d-tiny --scope $k exited $?: $(tail -3 "$T/out-scope$k")"
  grep -q '^check: .*: pass$' "$T/out-scope$k" || fail "net flash3d-tiny --scope $k: no passing check line"
  grep -q "attention scopes of $k bucket" "$T/out-scope$k" || fail "net flash3d-tiny --scope $k: the header does not say so"
done
# --patch: ptv3-tiny over patches of 256 (the configuration's 64), and ptv3-patch4096 checked on 9000 points (two
# whole patches of 4096 and a last one that re-reads the points before it at level 0), pass their checks
"$BIN" net --model ptv3-tiny --points 3000 --reps 3 --patch 256 > "$T/out-patch" 2>&1 ||
  fail "net ptv3-tiny --patch 256 exited $?: $(tail -3 "$T/out-patch")"
grep -q '^check: .*: pass$' "$T/out-patch" || fail "net ptv3-tiny --patch 256: no passing check line"
grep -q 'attention: patches of 256 rows' "$T/out-patch" || fail "net ptv3-tiny --patch 256: the header does not say so"
"$BIN" net --model ptv3-patch4096 --points 9000 --check-points 9000 --reps 2 > "$T/out-p4k" 2>&1 ||
  fail "net ptv3-patch4096 exited $?: $(tail -3 "$T/out-p4k")"
grep -q '^check: .*: pass$' "$T/out-p4k" || fail "net ptv3-patch4096: no passing check line"
# a batch of two clouds in bf16, also replayed as one CUDA graph, saved: checked, timed both ways, written
"$BIN" net --model ptv3-tiny --points 3000 --reps 3 --batch 2 --dtype bf16 --graph --save "$T/save" > "$T/out-b2" 2>&1 ||
  fail "net --batch 2 --dtype bf16 --graph --save exited $?: $(tail -3 "$T/out-b2")"
grep -q '^net: ptv3-tiny, .*, 6000 points in 2 clouds, .*, bf16, ' "$T/out-b2" || fail "net --batch 2: header: $(head -1 "$T/out-b2")"
grep -q '^check: .*: pass$' "$T/out-b2" || fail "net --batch 2 --dtype bf16: no passing check line"
grep -q '^graph    median ' "$T/out-b2" || fail "net --graph: no graph latency"
[ "$(tr '\n' ' ' < "$T/save/offset.txt" 2>/dev/null)" = '0 3000 6000 ' ] || fail "net --save: offset.txt is not '0 3000 6000'"
[ "$(wc -c < "$T/save/logits.npy" 2>/dev/null || echo 0)" -eq $((128 + 6000 * 16 * 4)) ] ||
  fail "net --save: logits.npy is not 6000 x 16 float32"
# the GPU run's save holds the weights and orders files, the same bytes as the CPU run of the same seed writes
"$BIN" net --model ptv3-tiny --points 3000 --batch 2 --device cpu --save "$T/save-cpu" > "$T/out-b2-cpu" 2>&1 ||
  fail "net --device cpu --batch 2 --save exited $?: $(tail -3 "$T/out-b2-cpu")"
for f in weights.safetensors orders.txt; do
  cmp -s "$T/save/$f" "$T/save-cpu/$f" || fail "net --save: the GPU run's $f is not the CPU run's"
done
# the estimate made before any allocation covers what each forward then held (the arena's peak)
for f in out-main out-f3d out-b2; do
  awk '/^memory: arena peak/ { for (i = 1; i <= NF; i++) { if ($i == "peak") p = $(i + 1); if ($i == "allocation") e = $(i + 1) } }
       END { if (p == "" || e == "" || e + 0 < p + 0) { printf "arena peak %s MiB, estimate %s MiB\n", p, e; exit 1 } }' \
    "$T/$f" > "$T/est" || fail "$f: the estimate is below the peak: $(cat "$T/est")"
done
# --device-memory below the estimate: refused before any allocation, exit 1, both sizes named
"$BIN" net --model ptv3-tiny --points 3000 --device-memory 1M > "$T/out-cap" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "net --device-memory 1M exited $rc, expected 1"
grep -q 'needs [0-9.]* MiB of device memory, more than the 1.0 MiB of --device-memory .*refused before any allocation' \
  "$T/out-cap" || fail "net --device-memory 1M: $(tail -2 "$T/out-cap")"
grep -q '^forward ' "$T/out-cap" && fail "net --device-memory 1M still timed a forward"
# the timed input's logits are checked finite after the timing
grep -q '^logits: 3000 points x 16 classes of the timed input, all finite' "$T/out-main" ||
  fail "net: no finite-logits line: $(grep '^logits' "$T/out-main")"
# a cloud 70 km from the origin: its coordinate features are past fp16's range, refused before any forward, exit 1
awk 'BEGIN { for (i = 0; i < 2000; i++) printf "%.3f %.3f %.3f\n", 70000 + (i % 20) * 0.05 + 0.01,
             (int(i / 20) % 20) * 0.05 + 0.01, int(i / 400) * 0.05 + 0.01 }' > "$T/far.xyz"
"$BIN" net --model ptv3-tiny --input "$T/far.xyz" --reps 2 > "$T/out-far" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "net on a cloud 70 km out exited $rc, expected 1: $(tail -2 "$T/out-far")"
grep -q 'input feature 0 of point [0-9]* is 70000.*past the largest finite fp16 value (65504): subtract an origin' \
  "$T/out-far" || fail "net on a cloud 70 km out: $(tail -2 "$T/out-far")"
grep -q '^forward ' "$T/out-far" && fail "net on a cloud 70 km out still timed a forward"
# the LayerNorms inside the kernels at 32 and 64 channels (enc1, enc2), a pass of their own at 16 (enc0)
grep -q '^  enc0 .* norm ' "$T/out-main" || fail "net: no norm part at enc0 (16 channels): $(grep '^  enc0 ' "$T/out-main")"
for part in enc1 enc2; do
  grep "^  $part " "$T/out-main" | grep -q ' norm ' && fail "net: a norm part at $part: $(grep "^  $part " "$T/out-main")"
done
"$BIN" net --model ptv3-tiny --points 3000 --reps 3 --ln separate > "$T/out-ln" 2>&1 ||
  fail "net --ln separate exited $?: $(tail -3 "$T/out-ln")"
grep -q '^check: .*: pass$' "$T/out-ln" || fail "net --ln separate: no passing check line"
grep -q 'LayerNorms as separate passes (--ln separate)' "$T/out-ln" || fail "net --ln separate: the header does not say so"
grep '^  enc1 ' "$T/out-ln" | grep -q ' norm ' || fail "net --ln separate: no norm part at enc1"
# --attn: both forwards on another attention variant (v23: the buckets one by one, v24 unforced's kernel), checked
for m in ptv3-tiny flash3d-tiny; do
  "$BIN" net --model $m --points 3000 --reps 3 --attn v23 > "$T/out-attn" 2>&1 ||
    fail "net --model $m --attn v23 exited $?: $(tail -3 "$T/out-attn")"
  grep -q '^check: .*: pass$' "$T/out-attn" || fail "net --model $m --attn v23: no passing check line"
  grep -q ', attention on v23' "$T/out-attn" || fail "net --model $m --attn v23: the header does not say so"
done
"$BIN" net --model ptv3-tiny --points 3000 --reps 3 --tile-order last > "$T/out-tiles" 2>&1 ||
  fail "net --tile-order last exited $?: $(tail -3 "$T/out-tiles")"
grep -q '^check: .*: pass$' "$T/out-tiles" || fail "net --tile-order last: no passing check line"
grep -q 'v6 tiles last-first (--tile-order last)' "$T/out-tiles" || fail "net --tile-order last: the header does not say so"
"$BIN" net --model ptv3-tiny --points 3000 --reps 3 --overlap off > "$T/out-overlap" 2>&1 ||
  fail "net --overlap off exited $?: $(tail -3 "$T/out-overlap")"
grep -q '^check: .*: pass$' "$T/out-overlap" || fail "net --overlap off: no passing check line"
grep -q 'the structure on one stream (--overlap off)' "$T/out-overlap" ||
  fail "net --overlap off: the header does not say so"
"$BIN" net --model flash3d-tiny --points 3000 --reps 3 --lt-tune off > "$T/out-first" 2>&1 ||
  fail "net --lt-tune off exited $?: $(tail -3 "$T/out-first")"
grep -q '^check: .*: pass$' "$T/out-first" || fail "net --lt-tune off: no passing check line"
grep -q "cuBLASLt's first algorithm per shape (--lt-tune off)" "$T/out-first" ||
  fail "net --lt-tune off: the header does not say so"
grep -Eq "^cuBLASLt: [1-9][0-9]* shapes planned, 0 timed" "$T/out-first" ||
  fail "net --lt-tune off: shapes timed, or none planned: $(grep '^cuBLASLt' "$T/out-first")"
grep -Eq "^cuBLASLt: [1-9][0-9]* shapes planned, [1-9][0-9]* timed" "$T/out-main" ||
  fail "net: no cuBLASLt shape timed by default: $(grep '^cuBLASLt' "$T/out-main")"
O="$T/out-main"
for part in serialize embed enc0 enc1 dec0 head; do
  grep -q "^  $part " "$O" || fail "no part '$part' in the time by part of the network"
done
# per component: the total line against the sum over the parts
awk '
  /^components / { sec = 1; next }
  /^by part of the network/ { sec = 2; next }
  sec == 1 && /^  [a-z]/ { total[$1] = $2; n++ }
  sec == 2 && /^  [a-z]/ { for (i = 2; i + 1 <= NF; i += 2) parts[$i] += $(i + 1) }
  sec == 2 && !/^  / { sec = 0 }
  END {
    bad = 0
    for (k in total) {
      d = total[k] - parts[k]; if (d < 0) d = -d
      if (d > 0.01 * total[k] + 0.01) { printf "component %s: %.3f ms total, %.3f ms over the parts\n", k, total[k], parts[k]; bad = 1 }
    }
    if (n < 5) { print "fewer than 5 components"; bad = 1 }
    exit bad
  }' "$O" > "$T/sum" || fail "components against the parts: $(cat "$T/sum")"
t_done "net on the GPU: check, components and parts agree"
