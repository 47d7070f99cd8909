#!/usr/bin/env python3
"""ncu_source_top.py CSV [N] - the N (default 30) source lines or SASS instructions with the most warp stall
samples in an `ncu --import R --page source --csv --print-source cuda|sass` export, with their share of
all samples, and the samples summed by opcode for a SASS export. Reads whatever sampling column the ncu
version names 'Warp Stall Sampling (All Samples)' (or the first column starting with 'Warp Stall')."""
import csv
import sys


def main(path, top):
    rows = list(csv.reader(open(path, errors="replace")))
    hi = next((i for i, r in enumerate(rows) if any(c.startswith("Warp Stall Sampling") for c in r)), None)
    if hi is None:
        print("no sampling column in", path)
        return 1
    head = rows[hi]
    si = next(i for i, c in enumerate(head) if c.startswith("Warp Stall Sampling (All"))
    src = next((i for i, c in enumerate(head) if c in ("Source", "Line Source")), 1)
    lin = next((i for i, c in enumerate(head) if c in ("#", "Line", "Address")), 0)
    data = []
    for r in rows[hi + 1:]:
        if len(r) <= max(si, src):
            continue
        try:
            v = float(r[si].replace(",", "") or 0)
        except ValueError:
            continue
        data.append((v, r[lin], r[src].strip()))
    total = sum(v for v, _, _ in data) or 1.0
    print("total samples %.0f" % total)
    for v, l, s in sorted(data, reverse=True)[:top]:
        print("%5.1f%%  %-8s %s" % (100.0 * v / total, l, s[:110]))
    ops = {}
    for v, _, s in data:
        op = s.split()[0] if s else ""
        if op.startswith("@"):
            op = s.split()[1] if len(s.split()) > 1 else op
        ops[op.split(".")[0]] = ops.get(op.split(".")[0], 0.0) + v
    if len(ops) > 3:
        print("by first word:", ", ".join("%s %.1f%%" % (k, 100.0 * v / total)
                                          for k, v in sorted(ops.items(), key=lambda x: -x[1])[:15]))
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 30))
