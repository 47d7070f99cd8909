#!/bin/sh
# test_net_cli.sh F3DBENCH - `f3dbench net` as a user meets it, on the CPU path (--device cpu): --help, usage errors
# (exit 2, a message naming the option), bad weight files and inputs (exit 1, a message naming the file and the
# problem, nothing written), --rehash off reaching the Flash3D forward (level 0 as with on, the logits not),
# --bucket-fill's buckets, --scope and --patch reaching the forward (the logits differ), and --save writing the input, every
# level and the logits as .npy files that start with NumPy's magic and hold float32 arrays of the stated shape, the
# weights the forward ran and PTv3's orders, all or none of them (a save that fails, at a rename or mid-write, leaves
# its folder as it was; a failed write is named by its destination file).
set -u
BIN=${1:?usage: test_net_cli.sh F3DBENCH}
. "$(dirname "$0")/../lib.sh"
t_setup net-cli
# expect_out RC PATTERN CMD...: exit status RC and stderr+stdout matching PATTERN (grep -E)
expect_out() {
  rc=$1 pat=$2
  shift 2
  out=$("$@" 2>&1)
  got=$?
  [ "$got" -eq "$rc" ] || fail "$* exited $got, expected $rc: $out"
  printf '%s' "$out" | grep -Eq -- "$pat" || fail "$*: output does not match '$pat': $out"
}
expect_out 0 'ptv3-tiny.*flash3d-46m' "$BIN" net --help
expect_out 2 "unknown network 'bogus'.*valid: ptv3" "$BIN" net --model bogus --device cpu
expect_out 2 '--model is required' "$BIN" net --device cpu
expect_out 2 "--points '0'" "$BIN" net --model ptv3-tiny --points 0 --device cpu
expect_out 2 '--points and --input exclude' "$BIN" net --model ptv3-tiny --points 100 --input x.ply --device cpu
expect_out 2 "--batch '17'" "$BIN" net --model ptv3-tiny --batch 17 --device cpu
expect_out 2 "--device-memory '0'" "$BIN" net --model ptv3-tiny --device-memory 0 --device cpu
expect_out 2 "--device-memory '2X'" "$BIN" net --model ptv3-tiny --device-memory 2X --device cpu
expect_out 0 'note: --device-memory has no effect with --device cpu' "$BIN" net --model ptv3-tiny --points 300 \
  --device-memory 1M --device cpu
expect_out 2 "--dtype 'fp8'" "$BIN" net --model ptv3-tiny --dtype fp8 --device cpu
expect_out 2 "--device 'tpu'" "$BIN" net --model ptv3-tiny --device tpu
expect_out 2 "unexpected argument" "$BIN" net --model ptv3-tiny --device cpu extra
expect_out 2 "--spconv 'v9': one of v0, v1" "$BIN" net --model ptv3-tiny --spconv v9 --device cpu
expect_out 2 "--spconv: flash3d-tiny has no sparse convolution" "$BIN" net --model flash3d-tiny --spconv v1 --device cpu
# --attn names a fused attention variant (v0's whole-scope scores are not what the forwards size their scratch for)
expect_out 2 "--attn 'v99': one of v1, v2" "$BIN" net --model flash3d-tiny --attn v99 --device cpu
expect_out 2 "--attn 'v0': one of v1, v2" "$BIN" net --model ptv3-tiny --attn v0 --device cpu
expect_out 2 "--rehash 'maybe': on or off" "$BIN" net --model flash3d-tiny --rehash maybe --device cpu
expect_out 2 "--rehash: ptv3-tiny has no PSH levels" "$BIN" net --model ptv3-tiny --rehash off --device cpu
expect_out 2 "--tile-order 'shortest': longest or last" "$BIN" net --model ptv3-tiny --tile-order shortest --device cpu
expect_out 2 "--tile-order: flash3d-tiny has no sparse convolution" "$BIN" net --model flash3d-tiny --tile-order last --device cpu
expect_out 0 'note: --tile-order has no effect with --device cpu' "$BIN" net --model ptv3-tiny --points 300 \
  --tile-order last --device cpu
expect_out 2 "--stem 'dense': fused or map" "$BIN" net --model ptv3-tiny --stem dense --device cpu
expect_out 2 "--stem: flash3d-tiny has no sparse convolution stem" "$BIN" net --model flash3d-tiny --stem map --device cpu
expect_out 0 'note: --stem has no effect with --device cpu' "$BIN" net --model ptv3-tiny --points 300 --stem map \
  --device cpu
expect_out 2 "--overlap 'both': on or off" "$BIN" net --model ptv3-tiny --overlap both --device cpu
expect_out 2 "--overlap: flash3d-tiny has no structure stream" "$BIN" net --model flash3d-tiny --overlap off --device cpu
expect_out 0 'note: --overlap has no effect with --device cpu' "$BIN" net --model ptv3-tiny --points 300 \
  --overlap off --device cpu
expect_out 2 "--cpe-fold 'yes': on or off" "$BIN" net --model ptv3-tiny --cpe-fold yes --device cpu
expect_out 2 "--lt-tune 'fast': on or off" "$BIN" net --model flash3d-tiny --lt-tune fast --device cpu
expect_out 0 'note: --lt-tune has no effect with --device cpu' "$BIN" net --model ptv3-tiny --points 300 \
  --lt-tune off --device cpu
expect_out 2 "--cpe-fold: flash3d-tiny has no xCPE" "$BIN" net --model flash3d-tiny --cpe-fold on --device cpu
for c in x -1 18446744073709551615; do
  expect_out 2 "--mlp-chunk '$c': a count of hidden elements" "$BIN" net --model ptv3-tiny --mlp-chunk "$c" --device cpu
done
expect_out 0 'note: --mlp-chunk has no effect with --device cpu' "$BIN" net --model flash3d-tiny --points 300 \
  --mlp-chunk 0 --device cpu
# --rehash off reaches the forward: the header says so, and the logits differ from the default's (re-hashed)
for r in on off; do
  expect_out 0 "pooled levels $( [ $r = on ] && echo 're-hashed' || echo 'in pooling order over fixed windows' )" \
    "$BIN" net --model flash3d-tiny --points 1500 --rehash $r --device cpu --save "$T/rehash-$r"
done
[ -s "$T/rehash-on/logits.npy" ] && [ -s "$T/rehash-off/logits.npy" ] || fail "--rehash: logits.npy not written"
cmp -s "$T/rehash-on/logits.npy" "$T/rehash-off/logits.npy" && fail "--rehash off: the same logits as on"
cmp -s "$T/rehash-on/enc0.npy" "$T/rehash-off/enc0.npy" || fail "--rehash: level 0 differs (PSH buckets it either way)"
for f in 0.05 1.5 0 x; do
  expect_out 2 "--bucket-fill '$f': a fraction from 0.1 to 1" \
    "$BIN" net --model flash3d-tiny --bucket-fill "$f" --device cpu
done
expect_out 2 "--bucket-fill: ptv3-tiny has no buckets" "$BIN" net --model ptv3-tiny --bucket-fill 0.5 --device cpu
for k in 0 65 x -1; do
  expect_out 2 "--scope '$k': buckets per attention scope, 1 to 64" "$BIN" net --model flash3d-tiny --scope "$k" --device cpu
done
expect_out 2 "--scope: ptv3-tiny has no bucket scopes" "$BIN" net --model ptv3-tiny --scope 2 --device cpu
for k in 0 16385 x -1; do
  expect_out 2 "--patch '$k': rows per attention patch, 1 to 16384" "$BIN" net --model ptv3-tiny --patch "$k" --device cpu
done
expect_out 2 "--patch: flash3d-tiny has no patches" "$BIN" net --model flash3d-tiny --patch 256 --device cpu
# --patch reaches the forward: the header names it, and the logits differ from the configuration's patches of 64
expect_out 0 "attention: patches of 64 rows" "$BIN" net --model ptv3-tiny --points 1500 --device cpu --save "$T/patch-64"
expect_out 0 "attention: patches of 256 rows" \
  "$BIN" net --model ptv3-tiny --points 1500 --patch 256 --device cpu --save "$T/patch-256"
[ -s "$T/patch-64/logits.npy" ] && [ -s "$T/patch-256/logits.npy" ] || fail "--patch: logits.npy not written"
cmp -s "$T/patch-64/logits.npy" "$T/patch-256/logits.npy" && fail "--patch 256: the same logits as patches of 64"
# ptv3-patch4096: PTv3-m1's parameters over patches of 4096 (a cloud of 200 points is one short patch)
expect_out 0 "attention: patches of 4096 rows" "$BIN" net --model ptv3-patch4096 --points 200 --device cpu
expect_out 0 "net: ptv3-patch4096, 46159312 parameters" "$BIN" net --model ptv3-patch4096 --points 200 --device cpu
expect_out 2 "--weights '': a safetensors file" "$BIN" net --model ptv3-tiny --weights '' --device cpu
expect_out 2 "^f3dbench: net: --save '': an empty path \(name the directory to write into\)\$" \
  "$BIN" net --model ptv3-tiny --save '' --device cpu
# a --save path too long for its files to be named inside it, or with a component past NAME_MAX: the message names
# the problem with the path quoted by its last 117 bytes (a whole 5000-byte path once filled the message before its reason)
long=$T
while [ ${#long} -lt 5000 ]; do long=$long/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; done
expect_out 2 "^f3dbench: net: --save '\.\.\..{117}': a path too long \(${#long} bytes; at most 4000, so its files can be named inside it\)\$" \
  "$BIN" net --model ptv3-tiny --save "$long" --device cpu
comp=$(printf '%0300d' 0)
expect_out 2 "^f3dbench: net: --save '\.\.\..{117}': a path too long: a component of 300 bytes \(at most 255\)\$" \
  "$BIN" net --model ptv3-tiny --save "$T/$comp" --device cpu
# a path under that length whose parent is missing: both paths cut to their last 117 bytes, so the reason is whole
mid=$T/$(printf 'b%.0s' $(seq 200))/$(printf 'c%.0s' $(seq 200))/out
expect_out 2 "^f3dbench: net: --save \.\.\.c+/out: its parent \.\.\.c+ is not an existing directory\$" \
  "$BIN" net --model ptv3-tiny --save "$mid" --device cpu
# the GPU forward's options are named as having no effect on the CPU forward, not silently dropped
expect_out 0 "note: --reps has no effect with --device cpu" "$BIN" net --model ptv3-tiny --points 300 --reps 3 --device cpu
expect_out 0 "note: --dtype, --graph have no effect with --device cpu" \
  "$BIN" net --model ptv3-tiny --points 300 --graph --dtype bf16 --device cpu
# --scope reaches the forward: the header names it, and the logits differ from the configuration's scope of 4
expect_out 0 "attention scopes of 2 buckets, 128 rows" \
  "$BIN" net --model flash3d-tiny --points 1500 --scope 2 --device cpu --save "$T/scope-2"
[ -s "$T/scope-2/logits.npy" ] || fail "--scope 2: logits.npy not written"
cmp -s "$T/rehash-on/logits.npy" "$T/scope-2/logits.npy" && fail "--scope 2: the same logits as scopes of 4"
expect_out 2 "--mlp 'fast': fused, partial or linear" "$BIN" net --model ptv3-tiny --mlp fast --device cpu
expect_out 2 "--mlp partial: ptv3-tiny has no SwiGLU MLP" "$BIN" net --model ptv3-tiny --mlp partial --device cpu
# flash3d-tiny's buckets hold 64 rows: 3000 points take 64 by the public rule, ceil(3000 / 48) = 63 at 0.75
expect_out 0 "buckets: 64 of 64 rows per cloud at level 0, 73% full \(the public rule\); attention scopes of 4 buckets, 256 rows" \
  "$BIN" net --model flash3d-tiny --points 3000 --device cpu
expect_out 0 "buckets: 63 of 64 rows per cloud at level 0, 74% full \(bucket fill 0.75\)" \
  "$BIN" net --model flash3d-tiny --points 3000 --device cpu --bucket-fill 0.75
# weights: a missing file, a file that is not safetensors, a valid file whose names are not the model's
expect_out 1 "$T/none.safetensors" "$BIN" net --model ptv3-tiny --device cpu --points 500 --weights "$T/none.safetensors"
printf 'not a safetensors file at all' > "$T/bad.safetensors"
expect_out 1 "bad.safetensors" "$BIN" net --model ptv3-tiny --device cpu --points 500 --weights "$T/bad.safetensors"
# 8-byte header length, then {"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} and 4 bytes of data
hdr='{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
len=$(printf '%s' "$hdr" | wc -c)
{ printf "$(printf '\\%03o' "$len")\\000\\000\\000\\000\\000\\000\\000"; printf '%s' "$hdr"; printf '\000\000\200\077'; } > "$T/other.safetensors"
expect_out 1 "other.safetensors.*(missing|extra|'x')" "$BIN" net --model ptv3-tiny --device cpu --points 500 --weights "$T/other.safetensors"
# an input file with no finite point: refused by the reader, nothing saved
printf 'nan nan nan\n' > "$T/empty.xyz"
expect_out 1 "empty.xyz" "$BIN" net --model ptv3-tiny --device cpu --input "$T/empty.xyz" --save "$T/nosave"
[ -e "$T/nosave" ] && fail "a refused input left $T/nosave behind"
# --save's folder is checked before the forward (exit 2, the user's path named after "net:", nothing run or made):
# a parent that does not exist, a file, and (not as root, whom permissions do not stop) a folder not writable
expect_out 2 "^f3dbench: net: --save $T/no/such/dir: its parent $T/no/such is not an existing directory\$" \
  "$BIN" net --model ptv3-tiny --device cpu --points 500 --save "$T/no/such/dir"
[ -e "$T/no" ] && fail "--save with no parent made $T/no"
printf 'x' > "$T/afile"
expect_out 2 "^f3dbench: net: --save $T/afile: not a directory\$" \
  "$BIN" net --model ptv3-tiny --device cpu --points 500 --save "$T/afile"
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$T/ro" && chmod 555 "$T/ro"
  expect_out 2 "^f3dbench: net: --save $T/ro: " "$BIN" net --model ptv3-tiny --device cpu --points 500 --save "$T/ro"
  expect_out 2 "^f3dbench: net: --save $T/ro/sub: cannot create it in $T/ro" \
    "$BIN" net --model ptv3-tiny --device cpu --points 500 --save "$T/ro/sub"
  chmod 755 "$T/ro"
fi
# --save: the files, NumPy's magic, and the logits' shape in the header
expect_out 0 "saved: $T/out" "$BIN" net --model ptv3-tiny --device cpu --points 1500 --save "$T/out"
for f in input_xyz input_feat enc0 enc1 enc2 dec1 dec0 logits; do
  [ -f "$T/out/$f.npy" ] || { fail "--save wrote no $f.npy"; continue; }
  magic=$(head -c 6 "$T/out/$f.npy" | od -An -c | tr -d ' \n')
  [ "$magic" = '223NUMPY' ] || fail "$f.npy does not start with NumPy's magic ($magic)"
done
head -c 128 "$T/out/logits.npy" | grep -q "'descr': '<f4', 'fortran_order': False, 'shape': (1500, 16)" ||
  fail "logits.npy's header is not float32 (1500, 16)"
[ "$(wc -c < "$T/out/logits.npy")" -eq $((128 + 1500 * 16 * 4)) ] || fail "logits.npy is not 1500 x 16 float32 values"
[ "$(tr '\n' ' ' < "$T/out/offset.txt")" = '0 1500 ' ] || fail "offset.txt is not '0 1500'"
ls -A "$T/out" | grep -q '^\.net-save' && fail "--save left its staging folder in $T/out"
# a save that cannot complete leaves its folder as it was: a folder where weights.safetensors goes is found before
# any file moves in, so the earlier logits.npy stays and no file of this save appears
mkdir -p "$T/keep/weights.safetensors"
printf 'earlier' > "$T/keep/logits.npy"
expect_out 1 "weights.safetensors: is a directory: nothing saved" "$BIN" net --model ptv3-tiny --device cpu \
  --points 1500 --save "$T/keep"
[ "$(cat "$T/keep/logits.npy")" = earlier ] || fail "a failed --save replaced the earlier logits.npy"
[ "$(ls -A "$T/keep" | tr '\n' ' ')" = 'logits.npy weights.safetensors ' ] ||
  fail "a failed --save left files behind: $(ls -A "$T/keep" | tr '\n' ' ')"
# a write that fails mid-save (past the file size limit: EFBIG, as a full disk fails one; root too, unlike a folder's
# permissions): exit 1, the message names the file's destination in DIR and never the staging folder it was written in,
# and DIR is left as it was: the earlier logits.npy kept, no file of this save, no staging folder; a DIR the save made
# is removed again. ulimit -f counts 512-byte blocks in dash, 1024 in bash: the inputs (18 and 24 KB) fit either way
# and enc0 (96 KB and more) does not
mkdir "$T/efbig"
printf 'earlier' > "$T/efbig/logits.npy"
out=$( (trap '' XFSZ; ulimit -f 64; exec "$BIN" net --model ptv3-tiny --device cpu --points 1500 --save "$T/efbig") 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "--save past the file size limit exited $rc, expected 1: $out"
printf '%s\n' "$out" | grep -Eq "^f3dbench: net: --save $T/efbig: $T/efbig/[a-z0-9_]+\.npy: File too large\$" ||
  fail "--save past the file size limit: the message names no destination file: $out"
printf '%s' "$out" | grep -q 'net-save' && fail "--save past the file size limit names its staging folder: $out"
[ "$(cat "$T/efbig/logits.npy")" = earlier ] || fail "a --save that failed mid-write replaced the earlier logits.npy"
[ "$(ls -A "$T/efbig" | tr '\n' ' ')" = 'logits.npy ' ] ||
  fail "a --save that failed mid-write left files behind: $(ls -A "$T/efbig" | tr '\n' ' ')"
out=$( (trap '' XFSZ; ulimit -f 64; exec "$BIN" net --model ptv3-tiny --device cpu --points 1500 --save "$T/efbig2") 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "--save into a new folder past the file size limit exited $rc, expected 1: $out"
[ -e "$T/efbig2" ] && fail "a --save that failed mid-write left the folder it made: $(ls -A "$T/efbig2" | tr '\n' ' ')"
# --save's weights are the ones the forward ran: loaded into a run of another seed, they come back byte for byte
# (every value read over the seed's own), and a run of their seed on them gives its logits bit for bit
expect_out 0 "saved: $T/w5" "$BIN" net --model ptv3-tiny --device cpu --points 1500 --seed 5 --save "$T/w5"
expect_out 0 "saved: $T/w5b" "$BIN" net --model ptv3-tiny --device cpu --points 1500 --seed 5 \
  --weights "$T/w5/weights.safetensors" --save "$T/w5b"
cmp -s "$T/w5/logits.npy" "$T/w5b/logits.npy" || fail "--save: its weights reloaded give other logits"
expect_out 0 "saved: $T/w5c" "$BIN" net --model ptv3-tiny --device cpu --points 1500 \
  --weights "$T/w5/weights.safetensors" --save "$T/w5c"
cmp -s "$T/w5/weights.safetensors" "$T/w5c/weights.safetensors" || fail "--save: the loaded weights not saved as read"
cmp -s "$T/out/weights.safetensors" "$T/w5/weights.safetensors" && fail "--save: seeds 3407 and 5 saved the same weights"
# finite but huge weights (every value 0x7e7e7e7e, 8.5e37, the header kept) overflow the fp32 forward: its logits
# are not a result, so the run exits 1 naming how many are non-finite and --save writes nothing
w=$T/w5/weights.safetensors
hlen=$(od -An -t u8 -N 8 "$w" | tr -d ' ')
size=$(wc -c < "$w")
{ head -c $((8 + hlen)) "$w"; head -c $((size - 8 - hlen)) /dev/zero | tr '\000' '\176'; } > "$T/huge.safetensors"
expect_out 1 "net: the cpu forward's logits hold 24000 non-finite values of 24000 .*nothing saved" \
  "$BIN" net --model ptv3-tiny --device cpu --points 1500 --weights "$T/huge.safetensors" --save "$T/huge"
[ -e "$T/huge" ] && fail "non-finite logits: --save left $T/huge behind"
# orders.txt (PTv3): a line per level, each a permutation of the four orders; other seeds, other shuffles
[ "$(grep -c '^[0-9]' "$T/out/orders.txt")" -eq 3 ] || fail "orders.txt has not 3 levels: $(cat "$T/out/orders.txt")"
grep '^[0-9]' "$T/out/orders.txt" | while read -r l a b c d; do
  [ "$(printf '%s\n' $a $b $c $d | sort | tr '\n' ' ')" = 'hilbert hilbert-trans z z-trans ' ] ||
    fail "orders.txt level $l is not a permutation of the four orders: $a $b $c $d"
done
cmp -s "$T/out/orders.txt" "$T/w5/orders.txt" && fail "orders.txt: seeds 3407 and 5 wrote the same orders"
[ -e "$T/rehash-on/orders.txt" ] && fail "--save wrote orders.txt for flash3d-tiny (no serialization)"
[ -s "$T/rehash-on/weights.safetensors" ] || fail "--save wrote no weights.safetensors for flash3d-tiny"
t_done "net cli: all checks passed"
