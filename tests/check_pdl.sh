#!/bin/sh
# check_pdl.sh SRC_ROOT - hx_launch's invariant (base/base.h), enforced on the library folders' CUDA files:
# - in every file that calls hx_launch, every kernel defined there calls hx_pdl_wait() as its first statement, so no
#   kernel touches memory before the previous grid in the stream has completed; the one exception is a kernel the
#   file launches plainly (`name<<<`, e.g. a device probe), which then needs no wait;
# - kernels are file-local: no header defines one, so a kernel hx_launch names is defined in the file that names it,
#   and a file that calls hx_launch defines at least one kernel.
# Comments and string literals are ignored. Prints each offence (file: what) and exits 1 on any; 0 with a count
# otherwise; 2 on a usage error.
set -u
root=${1:?usage: check_pdl.sh SRC_ROOT}
cd "$root" || exit 2
dirs=$(for d in base kernels baselines workloads nets; do [ -d "$d" ] && echo "$d"; done)
[ -n "$dirs" ] || { echo "check_pdl: no library folder under $root"; exit 2; }
bad=0
# the program below reads one file and prints "kernel NAME OK|BAD|PLAIN", "uses" when it calls hx_launch
scan='
  { text = text $0 "\n" }
  END {
    # comments and string literals out (their characters replaced by spaces, newlines kept)
    n = length(text); out = ""; i = 1
    while (i <= n) {
      c = substr(text, i, 1); d = substr(text, i + 1, 1)
      if (c == "/" && d == "*") {
        j = index(substr(text, i + 2), "*/"); if (j == 0) j = n; else j = i + 2 + j
        for (k = i; k <= j && k <= n; k++) out = out (substr(text, k, 1) == "\n" ? "\n" : " ")
        i = j + 1; continue
      }
      if (c == "/" && d == "/") { while (i <= n && substr(text, i, 1) != "\n") { out = out " "; i++ } continue }
      if (c == "\"" || c == "\047") {
        q = c; out = out " "; i++
        while (i <= n && substr(text, i, 1) != q) { if (substr(text, i, 1) == "\\") { out = out " "; i++ } out = out " "; i++ }
        out = out " "; i++; continue
      }
      out = out c; i++
    }
    text = out; n = length(text)
    if (text ~ /hx_launch[ \t\n]*\(/) print "uses"
    # names launched plainly: the identifier before <<< (template arguments skipped)
    pos = 1
    while ((i = index(substr(text, pos), "<<<")) > 0) {
      k = pos + i - 2; pos = pos + i + 2
      while (k > 0 && substr(text, k, 1) ~ /[ \t\n]/) k--
      if (substr(text, k, 1) == ">") {
        depth = 0
        while (k > 0) { c = substr(text, k, 1); if (c == ">") depth++; else if (c == "<") depth--; if (depth == 0) break; k-- }
        k--
      }
      e = k; while (k > 0 && substr(text, k, 1) ~ /[A-Za-z0-9_]/) k--
      if (e > k) plain[substr(text, k + 1, e - k)] = 1
    }
    # kernel definitions: the signature runs to the first { or ; outside parentheses after a parameter list
    pos = 1
    while ((i = index(substr(text, pos), "__global__")) > 0) {
      start = pos + i - 1; j = start + 10; depth = 0; paren = 0; name = ""
      while (j <= n) {
        c = substr(text, j, 1)
        if (c == "(") {
          if (depth == 0) {   # the identifier before a top-level ( : the last one is the kernel name
            k = j - 1; while (k > start && substr(text, k, 1) ~ /[ \t\n]/) k--
            e = k; while (k > start && substr(text, k, 1) ~ /[A-Za-z0-9_]/) k--
            name = substr(text, k + 1, e - k)
          }
          depth++; paren = 1
        } else if (c == ")") depth--
        else if (depth == 0 && paren && (c == "{" || c == ";")) break
        j++
      }
      pos = j + 1
      if (c == ";") continue
      body = substr(text, j + 1, 400); sub(/^[ \t\n]+/, "", body)
      if (body ~ /^hx_pdl_wait[ \t\n]*\([ \t\n]*\)[ \t\n]*;/) print "kernel " name " OK"
      else if (name in plain) print "kernel " name " PLAIN"
      else print "kernel " name " BAD"
    }
  }'
checked=0
nfiles=0
for f in $(find $dirs -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.c' -o -name '*.cpp' \) | sort); do
  res=$(awk "$scan" "$f")
  case "$f" in
    *.h|*.cuh)
      if printf '%s\n' "$res" | grep -q '^kernel '; then
        echo "$f: a header defines a kernel ($(printf '%s\n' "$res" | sed -n 's/^kernel \([^ ]*\) .*/\1/p' | head -3 | tr '\n' ' ')); kernels are file-local"
        bad=1
      fi ;;
  esac
  [ "$f" = base/base.h ] && continue # where hx_launch is defined
  printf '%s\n' "$res" | grep -qx 'uses' || continue
  nfiles=$((nfiles + 1))
  if ! printf '%s\n' "$res" | grep -q '^kernel '; then
    echo "$f: calls hx_launch but defines no kernel (kernels are file-local)"
    bad=1
  fi
  for k in $(printf '%s\n' "$res" | sed -n 's/^kernel \([^ ]*\) BAD$/\1/p'); do
    echo "$f: kernel $k does not call hx_pdl_wait() first (and is not launched plainly here)"
    bad=1
  done
  checked=$((checked + $(printf '%s\n' "$res" | grep -c ' OK$')))
done
[ $bad -eq 0 ] && echo "pdl: $checked kernels in $nfiles files that call hx_launch wait first"
exit $bad
