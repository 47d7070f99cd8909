#!/usr/bin/env python3
"""ncu_forward.py CSV START_REGEX [TOP | seq] - where one network forward's GPU time goes, kernel by kernel, from an
`ncu --metrics gpu__time_duration.sum --csv` log of `f3dbench net` (nets-device.sh's NCU_MODEL knob).

The log holds several forwards (the check's, the warm-up, the timed ones, the breakdown's); a forward starts at
each launch whose kernel name matches START_REGEX (PTv3: 'stem_kernel|lookup_kernel<5>', its stem in one pass or
its stem's map, launched once a forward).
Prints every forward's launch count and summed duration, then for the forward with the median sum the TOP
kernels (default 25) by summed time: launches, total and per-launch microseconds; `seq` instead lists that
forward's launches in order (which level and which stream a kernel served shows in its neighbours; a forward
split at START_REGEX ends with the next one's launches before it). ncu serialises launches, so
the sum is an upper bound of the stream's time (no overlap), near the eager forward for a forward of
back-to-back kernels."""
import csv
import re
import statistics
import sys


def load(path):
    lines = open(path, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        raise SystemExit("ncu_forward: no ncu CSV header (\"ID\",...) in %s" % path)
    rows = list(csv.reader(lines[start:]))
    head, rows = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    ki, vi, ui = head.index("Kernel Name"), head.index("Metric Value"), head.index("Metric Unit")
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
    out = []
    for r in rows:
        name = re.sub(r"\(.*", "", r[ki]).replace("void ", "").replace("<unnamed>::", "")
        out.append((name, float(r[vi].replace(",", "")) * scale.get(r[ui], 1.0)))
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    launches = load(argv[1])
    start = re.compile(argv[2])
    seq = len(argv) > 3 and argv[3] == "seq"
    top = int(argv[3]) if len(argv) > 3 and not seq else 25
    marks = [i for i, (n, _) in enumerate(launches) if start.search(n)]
    if not marks:
        print("ncu_forward: no launch matches %r (%d launches)" % (argv[2], len(launches)), file=sys.stderr)
        return 1
    fw = [launches[a:b] for a, b in zip(marks, marks[1:] + [len(launches)])]
    sums = [sum(d for _, d in f) for f in fw]
    for i, (f, s) in enumerate(zip(fw, sums)):
        print("forward %d: %d launches, %.1f us" % (i, len(f), s))
    med = sorted(range(len(fw)), key=lambda i: sums[i])[len(fw) // 2]
    if seq:
        print("forward %d (the median sum, %.1f us), every launch in order:" % (med, sums[med]))
        for i, (n, d) in enumerate(fw[med]):
            print("  %4d %-80s %9.1f us" % (i, n[:80], d))
        return 0
    agg = {}
    for n, d in fw[med]:
        c, t = agg.get(n, (0, 0.0))
        agg[n] = (c + 1, t + d)
    print("forward %d (the median sum, %.1f us), top %d kernels:" % (med, sums[med], top))
    for n, (c, t) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:top]:
        print("  %-64s %5d launches %10.1f us %8.1f us each %5.1f%%" % (n[:64], c, t, t / c, 100 * t / sums[med]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
