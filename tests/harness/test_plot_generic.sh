#!/bin/sh
# test_plot_generic.sh PLOT_C - the plotting code is generic: no name of the study's pipelines, stages, hashes
# or figures appears in it (code or comments, any case). They live in app/study.c and reach plot.c as data
# (hx_study). Prints each offending line and exits 1 on any.
set -u
f=${1:?usage: test_plot_generic.sh harness/plot.c}
[ -r "$f" ] || { echo "cannot read $f"; exit 2; }
if grep -n -i -E 'ptv3|flash3d|psh|serializ|serial_|attn|gather|patch[0-9]|xor-|zorder|swin|stride[0-9]|floor \(|workload"' "$f"; then
  echo "study-specific names in $f (move them to app/study.c)"
  exit 1
fi
echo "$f: no study-specific names"
