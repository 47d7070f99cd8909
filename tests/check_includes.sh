#!/bin/sh
# check_includes.sh SRC_ROOT - the floors of STYLE.md, enforced: a file of a leaf folder (kernels, baselines,
# workloads) includes only its own folder's headers, base/base.h and the generated f3d_config.h; nets/ may
# also include the leaves' public headers (kernels/kernels.h, baselines/baselines.h, workloads/workloads.h);
# base/ includes only itself. Nothing below the program includes harness/ or app/. Prints every offending line (file:line: include) and exits 1 on any, 0 otherwise.
set -u
root=${1:?usage: check_includes.sh SRC_ROOT}
cd "$root" || exit 2
bad=0
for dir in base kernels baselines workloads nets; do
  [ -d "$dir" ] || continue
  extra=""
  [ "$dir" = nets ] && extra='\|kernels/kernels\.h"\|baselines/baselines\.h"\|workloads/workloads\.h"'
  # quoted includes only: system headers (<...>) are not floors
  out=$(find "$dir" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \) \
          -exec grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' {} + |
        grep -v "#[[:space:]]*include[[:space:]]*\"\\($dir/\\|base/base\\.h\"\\|f3d_config\\.h\"$extra\\)")
  if [ -n "$out" ]; then
    printf '%s\n' "$out" | sed "s|^|leaf include above base ($dir): |"
    bad=1
  fi
done
[ $bad -eq 0 ] && echo "includes: every leaf folder includes only itself and base/"
exit $bad
