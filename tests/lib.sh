# tests/lib.sh - what the shell tests share; sourced by sh (dash) and bash scripts alike, from the script's own
# folder so it works when Meson runs the test from the build directory and when a person runs it by hand:
#   . "$(dirname "$0")/../lib.sh"
# A test counts its failed checks with fail, goes on to the next check, and ends with t_done: exit 0 when none
# failed, 1 when one did; 77 (Meson's SKIP) comes from need_gpu or the test's own reason.
#   t_setup NAME         T = a fresh directory ${TMPDIR:-/tmp}/f3d-NAME-XXXXXX, removed on exit (a test that must
#                        do more on exit sets its own EXIT trap after this, removing "$T" too); fails = 0
#   fail MSG...          "FAIL: MSG" on stdout, one more failed check
#   die MSG...           "FAIL: MSG" and exit 1 at once: a step the remaining checks need has failed
#   expect CODE CMD...   run CMD with stdout in $T/out and stderr in $T/err; a failed check (stderr shown) unless
#                        it exits CODE
#   has_gpu BIN          true when `BIN info` lists a CUDA device ("devices: N", N >= 1)
#   need_gpu BIN         exit 77 unless has_gpu; exit 1 instead when a check before it failed
#   t_done MSG           "MSG" and exit 0 when no check failed, else "N check(s) failed" and exit 1
#   t_shard DIR I K S    DIR: shard I/2 of a made-up sweep (what merge reads), K keys of S samples each
#   t_await PID N CMD... run CMD every 0.01 s until it succeeds, at most N more times and only while PID runs (a
#                        command's temporary appearing); the status of CMD's last run

t_setup() {
  T=$(mktemp -d "${TMPDIR:-/tmp}/f3d-$1-XXXXXX") || { echo "FAIL: mktemp -d in ${TMPDIR:-/tmp}"; exit 1; }
  trap 'rm -rf "$T"' EXIT
  fails=0
}

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

die() { echo "FAIL: $*"; exit 1; }

expect() {
  want=$1; shift
  "$@" >"$T/out" 2>"$T/err"
  got=$?
  [ "$got" -eq "$want" ] || { fail "$* exited $got, expected $want"; sed 's/^/  stderr: /' "$T/err"; }
}

has_gpu() { "$1" info 2>/dev/null | grep -q '^devices: [1-9]'; }

need_gpu() {
  has_gpu "$1" && return 0
  [ "${fails:-0}" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
  echo "no CUDA device: skipped"
  exit 77
}

t_done() {
  [ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
  echo "$*"
  exit 0
}

t_shard() {
  mkdir -p "$1"
  printf 'key,value\nstatus,complete\nschema_version,1\ndevice,none\nbuild_type,release\nshard,%s/2\n' "$2" \
    >"$1/context.csv"
  awk -v s="$2" -v dir="$1" -v keys="$3" -v samples="$4" 'BEGIN {
    print "workload,n_points,batch,pipeline,kernel,variant,metric,value,unit" > (dir "/results.csv")
    print "workload,n_points,batch,pipeline,kernel,variant,metric,sample,value,unit" > (dir "/samples.csv")
    for (k = 0; k < keys; k++) {
      printf "lidar,%d,1,workload,generate,cpu,time_median,1.5,ms\n", 1000 * (2 * k + s + 1) > (dir "/results.csv")
      for (i = 0; i < samples; i++)
        printf "lidar,%d,1,workload,generate,cpu,time,%d,1.%d,ms\n", 1000 * (2 * k + s + 1), i, i > (dir "/samples.csv")
    }
  }'
}

t_await() {
  _pid=$1 _n=$2 _i=0
  shift 2
  until "$@"; do
    [ "$_i" -lt "$_n" ] && kill -0 "$_pid" 2>/dev/null || return 1
    sleep 0.01
    _i=$((_i + 1))
  done
}
