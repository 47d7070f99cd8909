#!/bin/sh
# test_hardening.sh - f3dbench never replaces what is not its own to replace.
#  1. --out of psh, pool, serialize (and gen's): an existing target that is not a regular file (a FIFO, a
#     character device, a symbolic link such as /dev/stdout) is written in place and stays what it was;
#     `-` is standard output (the summary then goes to standard error); a directory is refused with exit 1,
#     and nothing is left beside it. Every special file is made in a temporary directory: the system's
#     /dev is never written (as root, the old rename would have replaced /dev/null or /dev/stdout).
#  3. One policy for huge coordinates in every command that reads a cloud (below).
#  5. Arguments checked before any work: sweep --check-args, ./f3d (below).
#  6. An input that is not a regular file (a FIFO, a device) is refused at once, naming it (below).
#  7. plot is all or nothing: plots/ and REPORT.md are replaced together or not at all (below).
# usage: test_hardening.sh PATH/TO/f3dbench [SOURCE_ROOT]
set -u
BIN=$1
SRC=${2:-}
. "$(dirname "$0")/../lib.sh"
t_setup test-hardening
# no_leftovers DIR: no temporary file of an output is left in DIR
no_leftovers() {
  left=$(ls -a "$1" | grep '\.tmp\.' || true)
  [ -z "$left" ] || { fail "temporary files left in $1: $left"; rm -f "$1"/*.tmp.*; }
}

"$BIN" gen --kind uniform --points 3000 --out "$T/c.ply" >/dev/null || die gen

# the header of each command's CSV, to recognise its output
header() {
  case $1 in
  psh) echo 'cloud,index,bucket,offset,slot' ;;
  pool) echo 'cloud,index,slot,pooled_row' ;;
  serialize) echo 'cloud,index,gx,gy,gz,depth,z,z-trans,hilbert,hilbert-trans' ;;
  esac
}

for cmd in psh pool serialize; do
  H=$(header $cmd)
  D="$T/$cmd"
  mkdir "$D"

  # a FIFO with a reader: the CSV flows through it and the FIFO stays a FIFO
  mkfifo "$D/fifo"
  timeout 60 cat "$D/fifo" >"$D/fifo.got" &
  reader=$!
  timeout 60 "$BIN" $cmd --out "$D/fifo" "$T/c.ply" >"$D/out" 2>"$D/err"
  rc=$?
  if [ -p "$D/fifo" ]; then
    wait $reader
    [ $rc -eq 0 ] || fail "$cmd --out FIFO exited $rc: $(cat "$D/err")"
    [ "$(head -n 1 "$D/fifo.got")" = "$H" ] || fail "$cmd --out FIFO: the reader got no CSV"
    [ "$(wc -l <"$D/fifo.got")" -eq 3001 ] || fail "$cmd --out FIFO: the reader got $(wc -l <"$D/fifo.got") lines, not 3001"
  else
    fail "$cmd --out FIFO replaced the FIFO (now: $(ls -l "$D/fifo"))"
    kill $reader 2>/dev/null
    wait $reader 2>/dev/null
  fi

  # `-` is standard output: the CSV alone there, the summary on standard error, no file named "-"
  (cd "$D" && "$BIN" $cmd --out - "$T/c.ply" >"$D/dash.got" 2>"$D/dash.err")
  rc=$?
  [ $rc -eq 0 ] || fail "$cmd --out - exited $rc: $(cat "$D/dash.err")"
  [ ! -e "$D/-" ] || fail "$cmd --out - wrote a file named '-'"
  [ "$(head -n 1 "$D/dash.got")" = "$H" ] || fail "$cmd --out -: standard output does not start with the CSV header"
  [ "$(wc -l <"$D/dash.got")" -eq 3001 ] || fail "$cmd --out -: $(wc -l <"$D/dash.got") lines on standard output, not 3001"

  # /dev/stdout when standard output is a regular file: the CSV there whole, not truncated under the summary (the
  # summary goes to standard error, as with `-`)
  if [ -e /dev/stdout ]; then
    "$BIN" $cmd --out /dev/stdout "$T/c.ply" >"$D/devout.got" 2>"$D/devout.err" ||
      fail "$cmd --out /dev/stdout > FILE failed: $(cat "$D/devout.err")"
    [ "$(head -n 1 "$D/devout.got")" = "$H" ] || fail "$cmd --out /dev/stdout > FILE: the file does not start with the CSV"
    [ "$(wc -l <"$D/devout.got")" -eq 3001 ] ||
      fail "$cmd --out /dev/stdout > FILE: $(wc -l <"$D/devout.got") lines, not the 3001 of the CSV"
  fi

  # a symbolic link (what /dev/stdout is): written through, the link kept
  : >"$D/target.csv"
  ln -s target.csv "$D/link.csv"
  "$BIN" $cmd --out "$D/link.csv" "$T/c.ply" >"$D/out" 2>"$D/err" || fail "$cmd --out LINK failed: $(cat "$D/err")"
  [ -L "$D/link.csv" ] || fail "$cmd --out LINK replaced the symbolic link"
  [ "$(head -n 1 "$D/target.csv")" = "$H" ] || fail "$cmd --out LINK: the link's target holds no CSV"

  # a directory is refused with a reason, exit 1, and left as it was
  mkdir "$D/dir"
  "$BIN" $cmd --out "$D/dir" "$T/c.ply" >"$D/out" 2>"$D/err"
  rc=$?
  [ $rc -eq 1 ] || fail "$cmd --out DIR exited $rc, expected 1"
  grep -q 'directory' "$D/err" || fail "$cmd --out DIR: the error does not say it is a directory: $(cat "$D/err")"
  [ -d "$D/dir" ] && [ -z "$(ls -A "$D/dir")" ] || fail "$cmd --out DIR changed the directory"

  # a character device, where one can be made here (as root with CAP_MKNOD): the null device's numbers,
  # in the temporary directory
  if mknod "$D/null" c 1 3 2>/dev/null; then
    "$BIN" $cmd --out "$D/null" "$T/c.ply" >"$D/out" 2>"$D/err" || fail "$cmd --out DEVICE failed: $(cat "$D/err")"
    [ -c "$D/null" ] || fail "$cmd --out DEVICE replaced the device node"
  fi
  no_leftovers "$D"
done

# gen: the same rule (the output's extension names the format)
D="$T/gen"
mkdir "$D"
mkfifo "$D/f.bin"
timeout 60 cat "$D/f.bin" >"$D/f.got" &
reader=$!
timeout 60 "$BIN" gen --kind uniform --points 100 --out "$D/f.bin" >"$D/out" 2>"$D/err"
if [ -p "$D/f.bin" ]; then
  wait $reader
  [ "$(wc -c <"$D/f.got")" -eq 1600 ] || fail "gen --out FIFO: the reader got $(wc -c <"$D/f.got") bytes, not 1600"
else
  fail "gen --out FIFO replaced the FIFO"
  kill $reader 2>/dev/null
  wait $reader 2>/dev/null
fi
mkdir "$D/d.ply"
"$BIN" gen --kind uniform --points 100 --out "$D/d.ply" >"$D/out" 2>"$D/err"
rc=$?
[ $rc -eq 1 ] || fail "gen --out DIR exited $rc, expected 1"
grep -q 'directory' "$D/err" || fail "gen --out DIR: the error does not say it is a directory: $(cat "$D/err")"
no_leftovers "$D"

# A symbolic link is followed to the regular file it ends at, which is replaced whole: the link stays a link, and a
# write that fails (here past the file-size limit, `ulimit -f`, with SIGXFSZ ignored so it fails as EFBIG) leaves
# the old target as it was and no temporary beside it or the link (writing through the link in place truncated it).
D="$T/link"
mkdir "$D" "$D/sub"
"$BIN" gen --kind uniform --points 100 --out "$D/sub/target.ply" >/dev/null || die "gen of a small target"
cp "$D/sub/target.ply" "$D/before.ply"
ln -s sub/target.ply "$D/link.ply"
for cmd in gen psh; do
  case $cmd in
  gen) args="gen --kind uniform --points 100k --out $D/link.ply" ;;
  psh) args="psh --out $D/link.ply $T/c.ply" ;;
  esac
  (trap '' XFSZ; ulimit -f 16; exec "$BIN" $args) >"$D/out" 2>"$D/err"
  rc=$?
  [ $rc -eq 1 ] || fail "$cmd --out LINK past the file-size limit exited $rc, expected 1"
  grep -q 'File too large' "$D/err" || fail "$cmd --out LINK past the file-size limit: $(cat "$D/err")"
  cmp -s "$D/sub/target.ply" "$D/before.ply" || fail "$cmd --out LINK: a failed write changed the link's target"
  [ -L "$D/link.ply" ] || fail "$cmd --out LINK: a failed write replaced the link"
  no_leftovers "$D"
  no_leftovers "$D/sub"
done
"$BIN" gen --kind uniform --points 2000 --out "$D/link.ply" >"$D/out" 2>"$D/err" || fail "gen --out LINK: $(cat "$D/err")"
[ -L "$D/link.ply" ] || fail "gen --out LINK replaced the link"
[ "$(wc -c <"$D/sub/target.ply")" -gt "$(wc -c <"$D/before.ply")" ] || fail "gen --out LINK did not write the target"
no_leftovers "$D/sub"

# 3. One policy for huge coordinates, in every command that reads a cloud: a finite coordinate beyond
#    +-1e5 m is refused when the file is read (exit 1, the file, the point and the bound named), never
#    turned into locality figures of 1e30 m; NaN/Inf points are dropped with a note, except by `net`, which
#    refuses them (a forward's input is never thinned silently).
D="$T/far"
mkdir "$D"
ply() { # ply FILE X: three points, the last at (X, 0, 0)
  printf 'ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nend_header\n0 0 0\n1 1 1\n%s 0 0\n' "$2" >"$1"
}
ply "$D/far.ply" 1e30
ply "$D/edge.ply" -100000
ply "$D/nan.ply" nan
for cmd in psh pool serialize; do
  rm -f "$D/o.csv"
  "$BIN" $cmd --out "$D/o.csv" "$D/far.ply" >"$D/out" 2>"$D/err"
  rc=$?
  [ $rc -eq 1 ] || fail "$cmd on a point at 1e30 m exited $rc, expected 1"
  grep -q 'far.ply: point 2 .*1e+05 m' "$D/err" || fail "$cmd on a point at 1e30 m: not refused by the reader: $(cat "$D/err")"
  grep -q 'e+[0-9][0-9]' "$D/out" && fail "$cmd on a point at 1e30 m printed huge figures: $(cat "$D/out")"
  [ ! -e "$D/o.csv" ] || { fail "$cmd on a point at 1e30 m wrote its CSV"; rm -f "$D/o.csv"; }
  # at the bound: accepted (serialize at a grid whose depth fits PTv3's 16 bits over 1e5 m)
  g=; [ $cmd = serialize ] && g="--grid 2"
  "$BIN" $cmd $g --out "$D/o.csv" "$D/edge.ply" >"$D/out" 2>"$D/err" || fail "$cmd refused a point at -1e5 m: $(cat "$D/err")"
  "$BIN" $cmd --out "$D/o.csv" "$D/nan.ply" >"$D/out" 2>"$D/err" || fail "$cmd refused a NaN point: $(cat "$D/err")"
  grep -q '1 point with non-finite coordinates dropped' "$D/err" || fail "$cmd: the NaN point was not noted: $(cat "$D/err")"
done
"$BIN" sweep --input "$D/far.ply" --sizes 3 --timing basic --out-dir "$D/res" >"$D/out" 2>"$D/err"
rc=$?
[ $rc -eq 1 ] || fail "sweep --input with a point at 1e30 m exited $rc, expected 1"
grep -q 'far.ply: point 2 .*1e+05 m' "$D/err" || fail "sweep --input: not refused by the reader: $(cat "$D/err")"
"$BIN" net --model ptv3-tiny --device cpu --input "$D/far.ply" >"$D/out" 2>"$D/err"
rc=$?
[ $rc -eq 1 ] || fail "net --input with a point at 1e30 m exited $rc, expected 1"
grep -q 'far.ply: point 2 .*1e+05 m' "$D/err" || fail "net --input: not refused by the reader: $(cat "$D/err")"
# a forward's input is never thinned silently: a NaN point is an error naming the count and its place in the file
"$BIN" net --model ptv3-tiny --device cpu --input "$D/nan.ply" --save "$D/nan-save" >"$D/out" 2>"$D/err"
rc=$?
[ $rc -eq 1 ] || fail "net --input with a NaN point exited $rc, expected 1"
grep -q 'nan.ply: 1 point with a non-finite (NaN or Inf) coordinate, the first at point 2 of the file' "$D/err" ||
  fail "net --input with a NaN point: $(cat "$D/err")"
[ ! -e "$D/nan-save" ] || fail "net --input with a NaN point created its --save directory"
printf 'ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\nproperty float z\nend_header\n0 0 0\n1 nan 1\ninf 2 2\n3 3 3\n' >"$D/nan2.ply"
"$BIN" net --model ptv3-tiny --device cpu --input "$D/nan2.ply" >"$D/out" 2>"$D/err"
rc=$?
[ $rc -eq 1 ] || fail "net --input with NaN and Inf points inside exited $rc, expected 1"
grep -q 'nan2.ply: 2 points with a non-finite (NaN or Inf) coordinate, the first at point 1 of the file' "$D/err" ||
  fail "net --input with NaN and Inf points inside: $(cat "$D/err")"

# 5. Arguments are checked before any work. `f3dbench sweep --check-args` parses and checks every option
#    and exits (0, or 2 with the reason) without reading, creating or running anything; ./f3d refuses an
#    unknown command before set-up and build, and `./f3d run` checks the sweep's options before it fetches
#    recorded clouds. ./f3d is run from a copy of the script alone in a temporary root, with stand-ins for
#    meson, ninja and the fetch script that leave a mark when called, and build/app/f3dbench linked to the
#    binary under test: nothing is built, fetched or installed (F3D_NO_APT=1), and no network is used.
D="$T/args"
mkdir "$D"
(cd "$D" && "$BIN" sweep --check-args --sizes 1k --timing basic --out-dir "$D/res" >"$D/out" 2>"$D/err")
rc=$?
[ $rc -eq 0 ] || fail "sweep --check-args with good options exited $rc: $(head -n 1 "$D/err")"
[ ! -e "$D/res" ] || fail "sweep --check-args created its result directory"
[ ! -s "$D/out" ] || fail "sweep --check-args printed: $(cat "$D/out")"
# a CUDA build refuses a batch larger than a selected pipeline's GPU path takes before the run, naming the
# pipeline; without such a pipeline, or in a CPU-only build, the batch is fine
if "$BIN" info | grep -q '^  GPU arch '; then
  (cd "$D" && "$BIN" sweep --check-args --batch 65 --pipelines flash3d-net --out-dir "$D/res" >"$D/out" 2>"$D/err")
  rc=$?
  [ $rc -eq 2 ] || fail "sweep --batch 65 with flash3d-net exited $rc, expected 2"
  grep -q "^f3dbench: sweep: --batch 65: pipeline 'flash3d-net' takes at most 64 clouds" "$D/err" ||
    fail "sweep --batch 65 with flash3d-net: $(head -n 1 "$D/err")"
  batch_bad="--batch 65"
else
  (cd "$D" && "$BIN" sweep --check-args --batch 65 --out-dir "$D/res" >"$D/out" 2>"$D/err") ||
    fail "CPU-only build: sweep --batch 65 exited $?: $(head -n 1 "$D/err")"
  batch_bad="--sizes 1k,1k"
fi
(cd "$D" && "$BIN" sweep --check-args --batch 65 --pipelines flash3d,workload --out-dir "$D/res" >"$D/out" 2>"$D/err") ||
  fail "sweep --batch 65 without the backbones and ptv3 exited $?: $(head -n 1 "$D/err")"
for bad in "--sizes abc" "--timing slow" "--pipelines nope" "--workloads mars" "--sizes 1k,1k" "stray" "$batch_bad"; do
  (cd "$D" && "$BIN" sweep --check-args $bad --out-dir "$D/res" >"$D/out" 2>"$D/err")
  rc=$?
  [ $rc -eq 2 ] || fail "sweep --check-args $bad exited $rc, expected 2"
  grep -q '^f3dbench: sweep: ' "$D/err" || fail "sweep --check-args $bad: no reason given: $(head -n 1 "$D/err")"
  [ ! -e "$D/res" ] || fail "sweep --check-args $bad created its result directory"
done
if [ -n "$SRC" ] && [ -f "$SRC/f3d" ]; then
  R="$D/root"
  mkdir -p "$R/build/app" "$R/workloads" "$D/stub"
  cp "$SRC/f3d" "$R/f3d"
  ln -s "$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")" "$R/build/app/f3dbench"
  : >"$R/build/build.ninja"
  for tool in meson ninja; do
    printf '#!/bin/sh\n: >"%s/%s.called"\n' "$D" "$tool" >"$D/stub/$tool"
    chmod +x "$D/stub/$tool"
  done
  printf ': >"%s/fetch.called"\n' "$D" >"$R/workloads/fetch-recorded.sh"
  f3d() { PATH="$D/stub:$PATH" F3D_NO_APT=1 F3D_ALLOW_MISSING=1 F3D_GIT_COMMIT=abcdef0 sh "$R/f3d" "$@"; }
  f3d bogus >"$D/out" 2>"$D/err"
  rc=$?
  [ $rc -eq 2 ] || fail "./f3d bogus exited $rc, expected 2: $(cat "$D/err")"
  grep -q 'bogus' "$D/err" || fail "./f3d bogus: the error does not name the command: $(cat "$D/err")"
  [ ! -e "$D/ninja.called" ] && [ ! -e "$D/meson.called" ] || fail "./f3d bogus set up or built before refusing"
  rm -f "$D/ninja.called" "$D/meson.called"
  f3d run --sizes abc >"$D/out" 2>"$D/err"
  rc=$?
  [ $rc -eq 2 ] || fail "./f3d run --sizes abc exited $rc, expected 2: $(cat "$D/err")"
  grep -q -- '--sizes' "$D/err" || fail "./f3d run --sizes abc: the error does not name --sizes: $(cat "$D/err")"
  [ ! -e "$D/fetch.called" ] || fail "./f3d run --sizes abc fetched recorded clouds before refusing the argument"
  [ -z "$(ls "$R/build" | grep -v -x -e app -e build.ninja)" ] || fail "./f3d run --sizes abc left files in build/"
  # every f3dbench command is one ./f3d knows (its list is written out so that a typo is refused unbuilt)
  for c in $("$BIN" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p'); do
    f3d "$c" --help >"$D/out" 2>"$D/err" || fail "./f3d $c --help failed: $(cat "$D/err")"
  done
else
  echo "note: no source root given: ./f3d's own checks not tested"
fi

# 6. An input that is not a regular file is refused at once with exit 1, "PATH: not a regular file": a FIFO
#    without a writer once made net, sweep, plot and compare wait forever; /dev/zero would never end. timeout
#    turns a hang into exit 124, a failed check.
D="$T/special"
mkdir "$D"
mkfifo "$D/in.ply"
for input in "$D/in.ply" /dev/zero; do
  [ -c "$input" ] || [ -p "$input" ] || continue
  expect 1 timeout 20 "$BIN" net --model flash3d-tiny --device cpu --input "$input"
  grep -q "$input: not a regular file" "$T/err" || fail "net --input $input: $(cat "$T/err")"
  expect 1 timeout 20 "$BIN" sweep --input "$input" --sizes 3 --timing basic --out-dir "$D/res"
  grep -q "$input: not a regular file" "$T/err" || fail "sweep --input $input: $(cat "$T/err")"
done
"$BIN" sweep --reps 2 --warmup 0 --pipelines workload --sizes 1000 --timing basic --out-dir "$D" --run-id run \
  >"$D/out" 2>&1 || die "a one-case sweep: $(cat "$D/out")"
cp -r "$D/run" "$D/fifo-run"
rm "$D/fifo-run/results.csv"
mkfifo "$D/fifo-run/results.csv"
expect 1 timeout 20 "$BIN" plot -o "$D/plot-out" "$D/fifo-run"
grep -q "fifo-run/results.csv: not a regular file" "$T/err" || fail "plot of a run with a FIFO results.csv: $(cat "$T/err")"
expect 2 timeout 20 "$BIN" compare "$D/run" "$D/fifo-run"
grep -q "fifo-run/results.csv: not a regular file" "$T/err" || fail "compare with a FIFO results.csv: $(cat "$T/err")"

# 7. plot writes plots/ and REPORT.md all or nothing: both are staged whole and swapped in together, so a failure
#    leaves the previous figures and report as they were (no plots/ of a new plot beside an old or missing
#    REPORT.md), names the real cause (a figure's data file that cannot be written, not gnuplot's error about it),
#    exits 1 and leaves no staging files; an output directory it created is removed again.
strays() { ls -a "$1" | grep -e '\.tmp\.' -e '\.old\.' || true; }
"$BIN" plot "$D/run" >"$D/out" 2>&1 || fail "plot of a one-case run: $(cat "$D/out")"
if [ -d "$D/run/plots" ]; then # gnuplot is here: figures were drawn
  : >"$D/run/plots/marker"     # the previous figures, recognisable
  mv "$D/run/REPORT.md" "$D/report.before"
  mkdir "$D/run/REPORT.md"
  expect 1 "$BIN" plot "$D/run"
  grep -q 'REPORT.md: is a directory' "$T/err" || fail "plot with REPORT.md a directory: $(cat "$T/err")"
  [ -e "$D/run/plots/marker" ] || fail "plot with REPORT.md a directory replaced plots/ all the same"
  [ -z "$(strays "$D/run")" ] || fail "plot with REPORT.md a directory left: $(strays "$D/run")"
  rmdir "$D/run/REPORT.md"
  mv "$D/report.before" "$D/run/REPORT.md"
  # no byte can be written to a file (ulimit -f 0, SIGXFSZ ignored): the first data file fails, and says so. The
  # messages and the exit status go through a pipe, which the limit does not cover.
  cp "$D/run/REPORT.md" "$D/report.before"
  for o in "-o $D/new-out" ""; do
    (trap '' XFSZ; ulimit -f 0; "$BIN" plot $o "$D/run" 2>&1; echo "rc=$?") | cat >"$D/err"
    grep -q '^rc=1$' "$D/err" || fail "plot $o past the file-size limit: $(cat "$D/err"), expected rc=1"
    grep -q '\.dat: write failed: File too large' "$D/err" || fail "plot $o past the file-size limit: $(cat "$D/err")"
  done
  [ ! -e "$D/new-out" ] || fail "plot past the file-size limit left $(ls -aR "$D/new-out")"
  [ -e "$D/run/plots/marker" ] || fail "a failed plot replaced the run's figures"
  cmp -s "$D/run/REPORT.md" "$D/report.before" || fail "a failed plot changed the run's REPORT.md"
  [ -z "$(strays "$D/run")" ] || fail "plot past the file-size limit left: $(strays "$D/run")"
else
  echo "note: no gnuplot: plot's staging of figures not tested"
fi

t_done ok
