#!/bin/sh
# check_pdl.sh SRC_ROOT - hx_launch's invariant (base/base.h), enforced: in every CUDA file of the library folders
# that launches through hx_launch, every kernel defined there (its probes aside, which are launched plainly) calls
# hx_pdl_wait() as its first statement, so no kernel touches memory before the previous grid in the stream has
# completed. Kernels are file-local, so a kernel hx_launch can name is defined in the file that names it.
# Prints each offending kernel (file: signature) and exits 1 on any; 0 with a count otherwise; 2 on a usage error.
set -u
root=${1:?usage: check_pdl.sh SRC_ROOT}
cd "$root" || exit 2
files=$(find base kernels baselines workloads nets -type f \( -name '*.cu' -o -name '*.cuh' \) 2>/dev/null |
        xargs grep -l 'hx_launch(' 2>/dev/null)
bad=0
checked=0
for f in $files; do
  out=$(awk '
    { text = text $0 "\n" }
    END {
      n = length(text); pos = 1; bad = 0; ok = 0
      while ((i = index(substr(text, pos), "__global__")) > 0) {
        start = pos + i - 1; j = start + 10; depth = 0; paren = 0
        # the signature ends at the first { or ; outside parentheses after a parameter list
        while (j <= n) {
          c = substr(text, j, 1)
          if (c == "(") { depth++; paren = 1 }
          else if (c == ")") depth--
          else if (depth == 0 && paren && (c == "{" || c == ";")) break
          j++
        }
        sig = substr(text, start, j - start)
        pos = j + 1
        if (c == ";" || sig ~ /probe/) continue
        body = substr(text, j + 1, 200)
        sub(/^[ \t\n]+/, "", body)
        gsub(/[ \t\n]+/, " ", sig)
        if (substr(body, 1, 14) == "hx_pdl_wait();") ok++
        else { print FILENAME ": kernel without hx_pdl_wait() first: " substr(sig, 1, 160); bad = 1 }
      }
      print "ok " ok
      exit bad
    }' "$f")
  rc=$?
  printf '%s\n' "$out" | grep -v '^ok ' || true
  checked=$((checked + $(printf '%s\n' "$out" | sed -n 's/^ok //p')))
  [ $rc -ne 0 ] && bad=1
done
[ $bad -eq 0 ] && echo "pdl: $checked kernels in $(printf '%s\n' $files | grep -c .) files launched through hx_launch wait first"
exit $bad
