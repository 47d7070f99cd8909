#!/bin/sh
# test_f3d_readme.sh SRC_ROOT - `./f3d readme RUN_DIR` on copies: the README's results table is replaced by the
# headline of a fake REPORT.md, every byte outside the markers is kept, a second run changes nothing, and
# each refusal (no REPORT.md, no markers, two begin markers, markers in the wrong order, a report without its
# Headline section, no RUN_DIR) exits 2 and leaves the README as it was. The real README.md is only read.
set -u
src=${1:?usage: test_f3d_readme.sh SRC_ROOT}
f3d="$src/f3d"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/f3d-readme-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { printf 'FAIL: %s\n' "$*"; fails=$((fails + 1)); }
ok() { printf 'ok: %s\n' "$*"; }

real_sum=$(cksum <"$src/README.md")
mkdir "$tmp/run" "$tmp/empty"
cat >"$tmp/run/REPORT.md" <<'EOF'
# flash3d-bench report

| run | device | git commit | date | status |
|---|---|---|---|---|
| results/fake-run | NVIDIA Test GPU | 0123abc | 2026-11-28T10:00:00Z | complete |

NVIDIA Test GPU: measured ceilings: copy 3000.0 GB/s (read + write), cuBLAS GEMM bf16 700.0 / fp16 710.0 TFLOP/s; counters: on

## Headline (fastest variant of each kernel, named in each cell)

### NVIDIA Test GPU, lidar

| n_points | PTv3 serialize | psh.xor-div |
|---:|---:|---:|
| 600000 | 0.315 (v2) | 0.0952 (v10.graph, 3.31x) |

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

cp "$src/README.md" "$tmp/README.md"
if "$f3d" readme --readme "$tmp/README.md" "$tmp/run/" >"$tmp/out" 2>&1; then ok "readme exits 0"; else fail "readme failed: $(cat "$tmp/out")"; fi
outside "$src/README.md" >"$tmp/outside.want"
outside "$tmp/README.md" >"$tmp/outside.got"
if cmp -s "$tmp/outside.want" "$tmp/outside.got"; then ok "every byte outside the markers kept"; else fail "text outside the markers changed"; fi
block=$(awk '/^<!-- results:end -->$/ { inb = 0 } inb { print } /^<!-- results:begin -->$/ { inb = 1 }' "$tmp/README.md")
case "$block" in *'| 600000 | 0.315 (v2) | 0.0952 (v10.graph, 3.31x) |'*) ok "headline row copied" ;; *) fail "headline row missing" ;; esac
case "$block" in *'| results/fake-run | NVIDIA Test GPU | 0123abc |'*) ok "run, device and commit copied" ;; *) fail "run table missing" ;; esac
case "$block" in *'measured ceilings: copy 3000.0 GB/s'*) ok "ceilings copied" ;; *) fail "ceilings missing" ;; esac
case "$block" in *'#### NVIDIA Test GPU, lidar'*) ok "headings one level deeper" ;; *) fail "sub-heading not demoted" ;; esac
case "$block" in *'flash3d-bench report'* | *'plots/latency.png'* | *'All rows'*) fail "text outside the headline copied" ;; *) ok "title, figures and row dump left out" ;; esac
case "$block" in *"./f3d readme $tmp/run"*) ok "block names its command" ;; *) fail "block does not say how it was made" ;; esac

cp "$tmp/README.md" "$tmp/once"
"$f3d" readme --readme "$tmp/README.md" "$tmp/run" >/dev/null 2>&1
if cmp -s "$tmp/once" "$tmp/README.md"; then ok "a second run changes nothing"; else fail "not idempotent"; fi

# refusals: exit 2 and the README untouched
refuse() { # refuse WHAT README RUN_DIR
  cp "$2" "$tmp/before"
  "$f3d" readme --readme "$2" "$3" >"$tmp/out" 2>&1
  rc=$?
  if [ $rc -eq 2 ] && cmp -s "$tmp/before" "$2" && [ -s "$tmp/out" ]; then ok "refused: $1"
  else fail "$1: exit $rc (want 2 with a message, README unchanged): $(cat "$tmp/out")"; fi
}
refuse "RUN_DIR without REPORT.md" "$tmp/README.md" "$tmp/empty"
refuse "RUN_DIR missing" "$tmp/README.md" "$tmp/nonexistent"
grep -v -x -F '<!-- results:end -->' "$src/README.md" >"$tmp/nomark.md"
refuse "README without its end marker" "$tmp/nomark.md" "$tmp/run"
printf '<!-- results:begin -->\n' | cat - "$src/README.md" >"$tmp/twice.md"
refuse "two begin markers" "$tmp/twice.md" "$tmp/run"
printf 'a\n<!-- results:end -->\nb\n<!-- results:begin -->\nc\n' >"$tmp/order.md"
refuse "markers in the wrong order" "$tmp/order.md" "$tmp/run"
mkdir "$tmp/nohead" && grep -v '^## Headline' "$tmp/run/REPORT.md" >"$tmp/nohead/REPORT.md"
refuse "REPORT.md without a Headline section" "$tmp/README.md" "$tmp/nohead"
cp "$tmp/README.md" "$tmp/before"
"$f3d" readme --readme "$tmp/README.md" >/dev/null 2>&1
rc=$?
if [ $rc -eq 2 ] && cmp -s "$tmp/before" "$tmp/README.md"; then ok "refused: no RUN_DIR"; else fail "no RUN_DIR: exit $rc"; fi
if ls "$tmp"/*.f3d-readme.* >/dev/null 2>&1; then fail "temporary file left behind"; else ok "no temporary file left"; fi

if [ "$(cksum <"$src/README.md")" = "$real_sum" ]; then ok "the real README.md untouched"; else fail "the real README.md changed"; fi
[ $fails -eq 0 ] || { printf '%d failure(s)\n' "$fails"; exit 1; }
echo "f3d readme: all checks passed"
