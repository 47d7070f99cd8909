#!/usr/bin/env python3
"""ncu_durations.py CSV - summarise an `ncu --metrics gpu__time_duration.sum --csv` log (psh-device.sh's
NCUT knob): per (kernel, grid) the launch count and the median / min / max duration in microseconds.
ncu serialises kernels and flushes caches before each, so these are upper bounds of the in-stream times."""
import csv
import re
import statistics
import sys


def main(path):
    rows = [r for r in csv.reader(open(path, errors="replace")) if len(r) > 10]
    if not rows:
        print("no ncu rows in", path)
        return 1
    head, rows = rows[0], rows[1:]
    ki, gi = head.index("Kernel Name"), head.index("Grid Size")
    vi, ui = head.index("Metric Value"), head.index("Metric Unit")
    scale = {"ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
    agg = {}
    for r in rows:
        name = re.sub(r"\(.*", "", r[ki])[:60]
        v = float(r[vi].replace(",", "")) * scale.get(r[ui], 1.0)
        agg.setdefault((name, r[gi]), []).append(v)
    for (name, grid), v in sorted(agg.items()):
        print("%-60s %-16s n=%-4d median %8.1f us  min %8.1f  max %8.1f" % (name, grid, len(v), statistics.median(v),
                                                                          min(v), max(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]) if len(sys.argv) == 2 else print(__doc__) or 2)
