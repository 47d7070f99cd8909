#!/bin/sh
# test_merge_rename.sh - merge where the file system or kernel has no renameat2 RENAME_NOREPLACE (it answers EINVAL or
# ENOSYS; renameat2_shim.so, preloaded, answers so): the merged run still appears whole, never over anything, and when
# its name appeared meanwhile the one error line names it, says the file system has no rename that refuses to replace
# and that the merged run was removed, instead of a bare "Invalid argument"; the folder that appeared is left as it
# was and no OUT.tmp.<pid>/ stays.
# usage: test_merge_rename.sh PATH/TO/f3dbench PATH/TO/renameat2_shim.so
set -u
BIN=$1
SHIM=$2
. "$(dirname "$0")/../lib.sh"
t_setup test-merge-rename

# under AddressSanitizer (CI's second pass) the shim comes before ASan's runtime in the preload list, which ASan
# refuses unless told the order does not matter here (it does not intercept renameat2)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
export ASAN_OPTIONS
t_shard "$T/s0" 0 4 3
t_shard "$T/s1" 1 4 3

# no RENAME_NOREPLACE, nothing in the way: the merge creates OUT, then renames the run onto it
for e in EINVAL ENOSYS; do
  LD_PRELOAD=$SHIM F3D_SHIM_ERRNO=$e "$BIN" merge -o "$T/m$e" "$T/s0" "$T/s1" >"$T/out" 2>"$T/err"
  rc=$?
  [ "$rc" -eq 0 ] || fail "merge without RENAME_NOREPLACE ($e) exited $rc: $(cat "$T/err")"
  [ "$(wc -l <"$T/m$e/samples.csv" 2>/dev/null)" = 25 ] ||
    fail "merge without RENAME_NOREPLACE ($e): not whole: $(ls "$T/m$e")"
  [ -s "$T/err" ] && fail "merge without RENAME_NOREPLACE ($e) said: $(cat "$T/err")"
done

# no RENAME_NOREPLACE, and OUT appears (an empty folder) after merge's first look: refused in words, OUT untouched
LD_PRELOAD=$SHIM F3D_SHIM_APPEAR=1 "$BIN" merge -o "$T/mb" "$T/s0" "$T/s1" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 1 ] || fail "merge onto a folder that appeared exited $rc, expected 1: $(cat "$T/err")"
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "merge onto a folder that appeared: not one line: $(cat "$T/err")"
want="^f3dbench: merge: $T/mb: cannot put the merged run in place: it appeared while merging: .*(this file system"
want="$want has no atomic rename that refuses to replace, .*); the merged run was removed\$"
grep -q "$want" "$T/err" ||
  fail "merge onto a folder that appeared: $(cat "$T/err")"
grep -q 'Invalid argument' "$T/err" && fail "merge onto a folder that appeared names EINVAL: $(cat "$T/err")"
[ -d "$T/mb" ] && [ -z "$(ls -A "$T/mb")" ] || fail "the folder that appeared was changed: $(ls -A "$T/mb" 2>&1)"
ls "$T" | grep -q '\.tmp\.' && fail "merge onto a folder that appeared left $(ls "$T" | grep '\.tmp\.')"

# no RENAME_NOREPLACE, and the rename onto the folder merge made fails (EXDEV): that folder and the run are removed,
# the one error line says so
LD_PRELOAD=$SHIM F3D_SHIM_RENAME_EXDEV=$T/mx "$BIN" merge -o "$T/mx" "$T/s0" "$T/s1" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 1 ] || fail "merge whose last rename fails exited $rc, expected 1: $(cat "$T/err")"
grep -q "^f3dbench: merge: $T/mx: cannot put the merged run in place: .*; the merged run was removed\$" "$T/err" ||
  fail "merge whose last rename fails: $(cat "$T/err")"
[ -e "$T/mx" ] && fail "merge whose last rename fails left $T/mx: $(ls -A "$T/mx" 2>&1)"
ls "$T" | grep -q '\.tmp\.' && fail "merge whose last rename fails left $(ls "$T" | grep '\.tmp\.')"

t_done "merge_rename: no RENAME_NOREPLACE: whole or refused in words"
