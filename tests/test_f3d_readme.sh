#!/bin/sh
# test_f3d_readme.sh SRC_ROOT - `./f3d readme RUN_DIR` on copies: the README's results table is replaced by the
# headline of a fake REPORT.md (the backbones' summary, the paper's table and the targets, the first device's kernel
# tables up to its gathers, a line for the rest), every byte outside the markers is kept, a second run changes nothing, and
# each refusal (no REPORT.md, no markers, two begin markers, markers in the wrong order, a report without its
# Headline section, a REPORT.md whose copied part holds a marker line, no RUN_DIR, a --readme that is a directory,
# missing or a link to nothing, each named so) exits 2 and leaves the README as it was; a --readme that is a link is
# written through to its target, the link kept. The real README.md is only read.
set -u
src=${1:?usage: test_f3d_readme.sh SRC_ROOT}
f3d="$src/f3d"
. "$(dirname "$0")/lib.sh"
t_setup readme
ok() { printf 'ok: %s\n' "$*"; }

real_sum=$(cksum <"$src/README.md")
mkdir "$T/run" "$T/empty"
cat >"$T/run/REPORT.md" <<'EOF'
# flash3d-bench report

| run | device | git commit | date | status |
|---|---|---|---|---|
| results/fake-run | NVIDIA Test GPU | 0123abc | 2026-11-28T10:00:00Z | complete |

NVIDIA Test GPU: measured ceilings: copy 3000.0 GB/s (read + write), cuBLAS GEMM bf16 700.0 / fp16 710.0 TFLOP/s; counters: on

## Backbones: PTv3 vs Flash3D, whole forward passes

- Test GPU, 600000 points (`lidar`): **Flash3D-46m is 3.06x SLOWER than PTv3-m1** at equal parameters.

### The paper's table: equal parameters and equal memory

| configuration | params |
|---|---:|
| PTv3-m1 (`ptv3`) | 46,159,312 |

### Targets

| target | configuration | Test GPU |
|---|---|---|
| whole forward within 1.5x of the sum of its components' floors | PTv3-m1 | 1.47x at 600k: met |

### Backbone forward latency vs points (mean +- std; dashed: least-squares line)

![net_latency](plots/net_latency.png)

## Headline (fastest variant of each kernel, named in each cell)

### NVIDIA Test GPU, lidar

| n_points | PTv3 serialize | psh.xor-div |
|---:|---:|---:|
| 600000 | 0.315 (v2) | 0.0952 (v10.graph, 3.31x) |

PTv3 gathers: bytes moved / median time (GB/s) and % of the measured copy ceiling (in GB/s: 3000.0).

| n_points | gather_qkv_C64 |
|---:|---:|
| 600000 | 2900 (97%, v3) |

### NVIDIA Other GPU, lidar

| n_points | PTv3 serialize | psh.xor-div |
|---:|---:|---:|
| 600000 | 0.999 (v2) | 0.0999 (v10.graph, 9.99x) |

## Figures

![latency](plots/latency.png)

## All rows: latency (time_mean +- time_std, ms)

| pipeline/kernel/variant | workload |
EOF

# outside FILE: the file's bytes up to the begin marker's line and from the end marker's line on (head and
# tail copy bytes as they are, a last line without its newline included)
outside() {
  b=$(grep -n -x -F '<!-- results:begin -->' "$1" | cut -d: -f1)
  e=$(grep -n -x -F '<!-- results:end -->' "$1" | cut -d: -f1)
  head -n "$b" "$1"
  tail -n +"$e" "$1"
}

cp "$src/README.md" "$T/README.md"
if "$f3d" readme --readme "$T/README.md" "$T/run/" >"$T/out" 2>&1; then ok "readme exits 0"; else fail "readme failed: $(cat "$T/out")"; fi
outside "$src/README.md" >"$T/outside.want"
outside "$T/README.md" >"$T/outside.got"
if cmp -s "$T/outside.want" "$T/outside.got"; then ok "every byte outside the markers kept"; else fail "text outside the markers changed"; fi
block=$(awk '/^<!-- results:end -->$/ { inb = 0 } inb { print } /^<!-- results:begin -->$/ { inb = 1 }' "$T/README.md")
case "$block" in *'| 600000 | 0.315 (v2) | 0.0952 (v10.graph, 3.31x) |'*) ok "headline row copied" ;; *) fail "headline row missing" ;; esac
case "$block" in *'| results/fake-run | NVIDIA Test GPU | 0123abc |'*) ok "run, device and commit copied" ;; *) fail "run table missing" ;; esac
case "$block" in *'measured ceilings: copy 3000.0 GB/s'*) ok "ceilings copied" ;; *) fail "ceilings missing" ;; esac
case "$block" in *'#### NVIDIA Test GPU, lidar'*) ok "headings one level deeper" ;; *) fail "sub-heading not demoted" ;; esac
case "$block" in *'flash3d-bench report'* | *'plots/latency.png'* | *'All rows'*) fail "text outside the headline copied" ;; *) ok "title, figures and row dump left out" ;; esac
case "$block" in *"./f3d readme $T/run"*) ok "block names its command" ;; *) fail "block does not say how it was made" ;; esac
case "$block" in *'**Flash3D-46m is 3.06x SLOWER than PTv3-m1**'*) ok "backbone summary copied" ;; *) fail "backbone summary missing" ;; esac
case "$block" in *'#### The paper'"'"'s table'*'| PTv3-m1 (`ptv3`) | 46,159,312 |'*) ok "paper's table copied" ;; *) fail "paper's table missing" ;; esac
case "$block" in *'#### Targets'*'| PTv3-m1 | 1.47x at 600k: met |'*) ok "targets copied" ;; *) fail "targets missing" ;; esac
case "$block" in *'net_latency'* | *'least-squares'*) fail "a backbone figure copied" ;; *) ok "backbone figures left out" ;; esac
case "$block" in *'gather_qkv_C64'* | *'0.999 (v2)'* | *'NVIDIA Other GPU'*) fail "gathers or a second device copied" ;;
  *) ok "gathers and the second device left out" ;; esac
case "$block" in *"The gathers' and the pipelines' peak memory tables, and the kernel tables of the other devices, are in the run's REPORT.md."*)
  ok "a line says where the rest is" ;; *) fail "no pointer to what was left out" ;; esac

cp "$T/README.md" "$T/once"
"$f3d" readme --readme "$T/README.md" "$T/run" >/dev/null 2>&1
if cmp -s "$T/once" "$T/README.md"; then ok "a second run changes nothing"; else fail "not idempotent"; fi

# refusals: exit 2 and the README untouched
refuse() { # refuse WHAT README RUN_DIR
  cp "$2" "$T/before"
  "$f3d" readme --readme "$2" "$3" >"$T/out" 2>&1
  rc=$?
  if [ $rc -eq 2 ] && cmp -s "$T/before" "$2" && [ -s "$T/out" ]; then ok "refused: $1"
  else fail "$1: exit $rc (want 2 with a message, README unchanged): $(cat "$T/out")"; fi
}
refuse "RUN_DIR without REPORT.md" "$T/README.md" "$T/empty"
refuse "RUN_DIR missing" "$T/README.md" "$T/nonexistent"
grep -v -x -F '<!-- results:end -->' "$src/README.md" >"$T/nomark.md"
refuse "README without its end marker" "$T/nomark.md" "$T/run"
printf '<!-- results:begin -->\n' | cat - "$src/README.md" >"$T/twice.md"
refuse "two begin markers" "$T/twice.md" "$T/run"
printf 'a\n<!-- results:end -->\nb\n<!-- results:begin -->\nc\n' >"$T/order.md"
refuse "markers in the wrong order" "$T/order.md" "$T/run"
mkdir "$T/nohead" && grep -v '^## Headline' "$T/run/REPORT.md" >"$T/nohead/REPORT.md"
refuse "REPORT.md without a Headline section" "$T/README.md" "$T/nohead"
mkdir "$T/notable" && grep -v '^|' "$T/run/REPORT.md" >"$T/notable/REPORT.md" # as plot writes for a run of no rows
refuse "REPORT.md whose sections hold no table" "$T/README.md" "$T/notable"
# --readme naming a directory: said so (it said "no such file"), exit 2
mkdir "$T/readme-dir"
"$f3d" readme --readme "$T/readme-dir" "$T/run" >"$T/out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "^f3d: readme: $T/readme-dir: is a directory" "$T/out"; then ok "refused: --readme DIR"
else fail "--readme DIR: exit $rc: $(cat "$T/out")"; fi
"$f3d" readme --readme "$T/no-such.md" "$T/run" >"$T/out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "^f3d: readme: $T/no-such.md: no such file" "$T/out"; then ok "refused: --readme missing"
else fail "--readme missing: exit $rc: $(cat "$T/out")"; fi
# a REPORT.md whose copied part holds a marker line (its Headline section here): refused, naming the file and the
# line, the README as it was (copied between the markers it left two, and every later readme run refused it)
for m in '<!-- results:end -->' '<!-- results:begin -->'; do
  rm -rf "$T/marker" && mkdir "$T/marker"
  awk -v m="$m" '{ print } /^PTv3 gathers:/ { exit } /^\| 600000 \| 0.315/ { print m }' "$T/run/REPORT.md" >"$T/marker/REPORT.md"
  at=$(grep -n -x -F -- "$m" "$T/marker/REPORT.md" | cut -d: -f1)
  refuse "REPORT.md holding the line $m" "$T/README.md" "$T/marker"
  grep -q "^f3d: readme: $T/marker/REPORT.md: a results marker line (line $at: " "$T/out" && ok "the marker's line named" ||
    fail "marker $m: message does not name the line: $(cat "$T/out")"
done
# a marker in a part left out of the block (after the Headline's first device) changes nothing: accepted
mkdir "$T/marker-out" && awk '{ print } /^## Figures/ { print "<!-- results:end -->" }' "$T/run/REPORT.md" >"$T/marker-out/REPORT.md"
cp "$T/README.md" "$T/mo.md"
if "$f3d" readme --readme "$T/mo.md" "$T/marker-out" >"$T/out" 2>&1 && [ "$(grep -c -x -F '<!-- results:end -->' "$T/mo.md")" -eq 1 ]
then ok "a marker outside the copied part is no harm"; else fail "marker outside the block: $(cat "$T/out")"; fi
# --readme a symbolic link: written through to its target (the link stays a link, the target gets the table);
# a link to nothing is named so; no temporary left beside the link or the target
mkdir "$T/real" "$T/links"
cp "$src/README.md" "$T/real/README.md"
ln -s ../real/README.md "$T/links/link.md"
ln -s link.md "$T/links/link2.md"
if "$f3d" readme --readme "$T/links/link2.md" "$T/run" >"$T/out" 2>&1; then ok "readme through a link exits 0"
else fail "readme through a link failed: $(cat "$T/out")"; fi
[ -L "$T/links/link.md" ] && [ -L "$T/links/link2.md" ] && ok "the links stay links" || fail "a link was replaced"
if cmp -s "$T/real/README.md" "$T/README.md"; then ok "the link's target got the table"
else fail "the link's target was not rewritten"; fi
grep -q "^f3d: readme: $T/links/link2.md (-> $T/real/README.md): results table" "$T/out" && ok "the link and its target named" ||
  fail "link: message: $(cat "$T/out")"
ln -s no-such-target.md "$T/links/dangling.md"
"$f3d" readme --readme "$T/links/dangling.md" "$T/run" >"$T/out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "^f3d: readme: $T/links/dangling.md: no such file (a link to nothing)" "$T/out" &&
  [ -L "$T/links/dangling.md" ] && [ ! -e "$T/links/no-such-target.md" ]; then ok "refused: --readme a link to nothing"
else fail "--readme dangling link: exit $rc: $(cat "$T/out")"; fi
if ls "$T"/links/*.f3d-readme.* "$T"/real/*.f3d-readme.* >/dev/null 2>&1; then fail "temporary left beside a link"
else ok "no temporary beside the link or its target"; fi
cp "$T/README.md" "$T/before"
"$f3d" readme --readme "$T/README.md" >/dev/null 2>&1
rc=$?
if [ $rc -eq 2 ] && cmp -s "$T/before" "$T/README.md"; then ok "refused: no RUN_DIR"; else fail "no RUN_DIR: exit $rc"; fi
if ls "$T"/*.f3d-readme.* >/dev/null 2>&1; then fail "temporary file left behind"; else ok "no temporary file left"; fi

if [ "$(cksum <"$src/README.md")" = "$real_sum" ]; then ok "the real README.md untouched"; else fail "the real README.md changed"; fi
t_done "f3d readme: all checks passed"
