#!/bin/sh
# test_signals.sh - SIGINT/SIGTERM leave no temporary behind (app/stop.c): a command other than sweep, stopped while
# its output is being written under a temporary name, removes that temporary (a file "<out>.tmp.<pid>", the folder
# plots.tmp.<pid>/ and an OUT_DIR plot created), prints one line "f3dbench: <command>: interrupted (SIG... received),
# its temporary files removed" and exits 128 + signal; an earlier output of the same name is kept. A later plot
# removes the plots.tmp.<pid>/ of a plot whose process is gone (one killed outright). Before, gen left its 240 MB
# g.ply.tmp.XXXXXX, serialize/psh/pool their "<out>.tmp.<pid>", plot its plots.tmp.<pid>/ for good. A plot signalled
# alone (not its process group) kills and reaps the gnuplot it runs first, so nothing writes into the removed folder.
# merge writes OUT.tmp.<pid>/ and renames it at the end: stopped before, nothing of it is left.
# usage: test_signals.sh PATH/TO/f3dbench SOURCE_ROOT
set -u
BIN=$1
SRC=$2
. "$(dirname "$0")/../lib.sh"
t_setup test-signals
pid=
gp=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; [ -n "$gp" ] && kill -KILL "$gp" 2>/dev/null; rm -rf "$T"' EXIT

# gen: the cloud is made in memory, then written to g.ply.tmp.<pid>: stopped while writing
echo old >"$T/g.ply"
"$BIN" gen --kind uniform --points 30M --out "$T/g.ply" >"$T/out" 2>"$T/err" &
pid=$!
has_gen_tmp() { ls "$T" | grep -q '^g\.ply\.tmp\.'; }
t_await "$pid" 6000 has_gen_tmp || fail "gen: no temporary appeared"
kill -INT "$pid"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 130 ] || fail "gen under SIGINT exited $rc, expected 130"
[ "$(cat "$T/err")" = "f3dbench: gen: interrupted (SIGINT received), its temporary files removed" ] ||
  fail "gen under SIGINT: $(cat "$T/err")"
ls "$T" | grep -q '\.tmp\.' && fail "gen under SIGINT left $(ls "$T" | grep '\.tmp\.')"
[ "$(cat "$T/g.ply")" = old ] || fail "gen under SIGINT replaced the earlier g.ply"

# serialize and psh: "<out>.tmp.<pid>" exists from the start of the run; SIGTERM and SIGINT
expect 0 "$BIN" gen --kind uniform --points 2M --out "$T/big.bin"
for cmd in serialize psh; do
  for sig in TERM INT; do
    # up to 3 tries: a fast machine may finish the run between the temporary appearing and the signal
    for try in 1 2 3; do
      rm -f "$T/$cmd.csv"
      "$BIN" "$cmd" --out "$T/$cmd.csv" "$T/big.bin" >"$T/out" 2>"$T/err" &
      pid=$!
      t_await "$pid" 6000 test -e "$T/$cmd.csv.tmp.$pid"
      kill "-$sig" "$pid" 2>/dev/null && break
      wait "$pid"
      pid=
    done
    [ -n "$pid" ] || fail "$cmd: finished before SIG$sig in 3 tries"
    wait "$pid"
    rc=$?
    pid=
    want=130
    [ "$sig" = TERM ] && want=143
    [ "$rc" -eq "$want" ] || fail "$cmd under SIG$sig exited $rc, expected $want"
    grep -q "^f3dbench: $cmd: interrupted (SIG$sig received), its temporary files removed\$" "$T/err" ||
      fail "$cmd under SIG$sig: $(cat "$T/err")"
    ls "$T" | grep -q '\.tmp\.' && fail "$cmd under SIG$sig left $(ls "$T" | grep '\.tmp\.')"
    [ -e "$T/$cmd.csv" ] && fail "$cmd under SIG$sig wrote $cmd.csv"
  done
done

# plot: figures are drawn into OUT/plots.tmp.<pid>/ by gnuplot (seconds for a recorded H200 run); stopped then, the
# folder and the OUT_DIR plot created are removed
RUN=$(ls -d "$SRC"/results/h200-default-* 2>/dev/null | head -n 1)
if command -v gnuplot >/dev/null 2>&1 && [ -n "$RUN" ]; then
  "$BIN" plot -o "$T/pint" "$RUN" >"$T/out" 2>"$T/err" &
  pid=$!
  t_await "$pid" 6000 test -d "$T/pint/plots.tmp.$pid" || fail "plot: no plots.tmp.<pid> appeared"
  kill -INT "$pid"
  wait "$pid"
  rc=$?
  pid=
  [ "$rc" -eq 130 ] || fail "plot under SIGINT exited $rc, expected 130"
  grep -q '^f3dbench: plot: interrupted (SIGINT received), its temporary files removed$' "$T/err" ||
    fail "plot under SIGINT: $(cat "$T/err")"
  [ -e "$T/pint" ] && fail "plot under SIGINT left $(ls -a "$T/pint")"
else
  echo "no gnuplot or no recorded run in $SRC/results: the interrupted plot is not checked"
fi

# merge: written into OUT.tmp.<pid>/ and renamed to OUT at the end; stopped before that, neither is left, and the
# same merge then runs (it once left OUT with part of its files, no INCOMPLETE, and refused the next merge)
t_shard "$T/sh0" 0 300 1000
t_shard "$T/sh1" 1 300 1000
"$BIN" merge -o "$T/m" "$T/sh0" "$T/sh1" >"$T/out" 2>"$T/err" &
pid=$!
t_await "$pid" 6000 test -d "$T/m.tmp.$pid" || fail "merge: no m.tmp.<pid> appeared"
kill -INT "$pid"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 130 ] || fail "merge under SIGINT exited $rc, expected 130"
grep -q '^f3dbench: merge: interrupted (SIGINT received), its temporary files removed$' "$T/err" ||
  fail "merge under SIGINT: $(cat "$T/err")"
ls "$T" | grep -q '^m' && fail "merge under SIGINT left $(ls "$T" | grep '^m')"
expect 0 "$BIN" merge -o "$T/m" "$T/sh0" "$T/sh1"
[ "$(wc -l <"$T/m/samples.csv")" -eq 600001 ] ||
  fail "merge after an interrupted one: $(wc -l <"$T/m/samples.csv") lines"
grep -q '"source": "'"$T"'/m"' "$T/m/results.json" || fail "merged results.json does not name $T/m as its source"
ls "$T" | grep -q '^m\.tmp' && fail "merge left $(ls "$T" | grep '^m\.tmp')"

# a plot killed outright leaves plots.tmp.<pid>/; the next plot into the folder removes it once that pid is gone and
# the folder is an hour old (a younger one may be a live plot's on another host sharing the file system)
expect 0 "$BIN" sweep --sizes 1000 --pipelines workload --reps 2 --timing basic --out-dir "$T/res" --run-id one
sh -c 'exit 0' &
dead=$!
wait "$dead"
sh -c 'exit 0' &
young=$!
wait "$young"
mkdir "$T/res/one/plots.tmp.$dead" "$T/res/one/plots.tmp.$$" "$T/res/one/plots.tmp.$young"
touch "$T/res/one/plots.tmp.$dead/fig.png"
touch -d '2 hours ago' "$T/res/one/plots.tmp.$dead" "$T/res/one/plots.tmp.$$"
"$BIN" plot "$T/res/one" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -le 1 ] || fail "plot of a sweep exited $rc: $(cat "$T/err")"
[ -e "$T/res/one/plots.tmp.$dead" ] && fail "plot kept the stale plots.tmp.$dead/ of a process that is gone"
[ -d "$T/res/one/plots.tmp.$$" ] || fail "plot removed plots.tmp.$$/ of a process still running"
[ -d "$T/res/one/plots.tmp.$young" ] || fail "plot removed plots.tmp.$young/, under an hour old"

# plot stopped by a signal to its process alone (a supervisor's kill, not a terminal's Ctrl-C to the whole group): the
# gnuplot it runs is killed and reaped before plots.tmp.<pid>/ is emptied, so it writes nothing after (one left running
# wrote its figure into the emptied folder, which then stayed). The stand-in gnuplot on PATH says when it starts,
# sleeps, then writes a file of its own: that file must never appear.
mkdir "$T/fakebin"
cat >"$T/fakebin/gnuplot" <<'EOF'
#!/bin/sh
[ "$1" = --version ] && { echo "gnuplot 5.4 patchlevel 4 (a test's stand-in)"; exit 0; }
echo $$ >"$FAKE_GP.pid.tmp" && mv "$FAKE_GP.pid.tmp" "$FAKE_GP.pid"
sleep 2
echo late >"$FAKE_GP.late"
EOF
chmod +x "$T/fakebin/gnuplot"
FAKE_GP="$T/gp" PATH="$T/fakebin:$PATH" "$BIN" plot -a -o "$T/pfake" "$T/res/one" >"$T/out" 2>"$T/err" &
pid=$!
if t_await "$pid" 3000 test -e "$T/gp.pid"; then
  gp=$(cat "$T/gp.pid")
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  pid=
  [ "$rc" -eq 143 ] || fail "plot under SIGTERM (gnuplot running) exited $rc, expected 143: $(cat "$T/err")"
  grep -q '^f3dbench: plot: interrupted (SIGTERM received), its temporary files removed$' "$T/err" ||
    fail "plot under SIGTERM (gnuplot running): $(cat "$T/err")"
  kill -0 "$gp" 2>/dev/null && fail "plot under SIGTERM left its gnuplot (pid $gp) running"
  sleep 3
  [ -e "$T/gp.late" ] && fail "plot under SIGTERM: its gnuplot went on and wrote after the plot had ended"
  [ -e "$T/pfake" ] && fail "plot under SIGTERM (gnuplot running) left $(ls -aR "$T/pfake")"
  kill -KILL "$gp" 2>/dev/null
  gp=
else
  fail "plot: the stand-in gnuplot never ran: $(cat "$T/err")"
  wait "$pid"
  pid=
fi

# net --save: the files are written into DIR/.net-save.XXXXXX and moved in at the end; stopped while they are written,
# the staging folder and the DIR this save created are removed (up to 3 tries: the window is the ~0.2 s of writing)
seen=0
has_staging() { ls -A "$T/sv" 2>/dev/null | grep -q '^\.net-save\.'; }
for try in 1 2 3; do
  rm -rf "$T/sv"
  "$BIN" net --device cpu --model flash3d-public --points 2k --save "$T/sv" >"$T/out" 2>"$T/err" &
  pid=$!
  if t_await "$pid" 6000 has_staging; then
    kill -INT "$pid"
    wait "$pid"
    rc=$?
    pid=
    seen=1
    break
  fi
  wait "$pid"
  pid=
done
[ "$seen" -eq 1 ] || fail "net --save: no staging folder seen in 3 runs"
[ "$rc" -eq 130 ] || fail "net --save under SIGINT exited $rc, expected 130: $(cat "$T/err")"
grep -q '^f3dbench: net: interrupted (SIGINT received), its temporary files removed$' "$T/err" ||
  fail "net --save under SIGINT: $(cat "$T/err")"
[ -e "$T/sv" ] && fail "net --save under SIGINT left $(ls -A "$T/sv" | head -3)"

t_done "signals: temporaries removed"
