#!/usr/bin/env python3
"""ncu_stalls.py CSV [CSV ...] - what bounds each profiled kernel launch, from `ncu --csv --page raw` with the
sections SpeedOfLight, ComputeWorkloadAnalysis, WarpStateStats and MemoryWorkloadAnalysis_Tables (nets-device.sh's
NCU_STALLS knob; plain or .gz files).

One line per launch: the kernel (namespace and template arguments kept), grid, duration (us), the warps an SM holds
(CTAs an SM by the launch's occupancy limits times the CTA's warps; theoretical),
a warp's cycles between two issued instructions and its four largest stall reasons (cycles each), the SM's issued
instructions a cycle (of 4), and the busy share of the tensor pipe, shared memory's data pipe, L2 and DRAM. A
kernel bound by a unit shows that unit near 100%; one bound by latency shows all of them low and few warps."""
import csv
import gzip
import re
import sys

STALL = "smsp__average_warps_issue_stalled_"
SHORT = {"long_scoreboard": "long", "short_scoreboard": "short", "wait": "wait", "barrier": "bar",
         "mio_throttle": "mio", "math_pipe_throttle": "math", "lg_throttle": "lg", "selected": "sel",
         "not_selected": "notsel", "branch_resolving": "branch", "no_instruction": "noinst", "dispatch_stall": "disp"}


def num(r, key):
    v = r.get(key, "")
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return None


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", errors="replace") as f:
        lines = f.read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        raise SystemExit("ncu_stalls: no ncu CSV header (\"ID\",...) in %s" % path)
    return [r for r in csv.DictReader(lines[start:]) if r.get("ID", "").isdigit()]


def pct(r, key):
    v = num(r, key)
    return "%5.1f" % v if v is not None else "    ?"


def main(paths):
    if not paths:
        raise SystemExit(__doc__)
    print("%-44s %-10s %9s %5s %6s %-34s %4s %6s %6s %5s %5s" % (
        "kernel", "grid", "us", "warps", "cycles", "largest stalls (cycles)", "ipc", "tensor", "shared", "L2",
        "DRAM"))
    for path in paths:
        for r in load(path):
            name = re.sub(r"\(.*", "", r["Kernel Name"]).replace("void ", "").replace("<unnamed>::", "")
            stalls = []
            for k, v in r.items():
                if k.startswith(STALL) and k.endswith("_per_issue_active.ratio"):
                    x = num(r, k)
                    if x is not None:
                        reason = k[len(STALL):-len("_per_issue_active.ratio")]
                        stalls.append((x, SHORT.get(reason, reason)))
            stalls.sort(reverse=True)
            total = sum(x for x, _ in stalls)
            dur = num(r, "gpu__time_duration.sum")
            ctas = [num(r, "launch__occupancy_limit_" + k) for k in ("registers", "shared_mem", "warps", "blocks")]
            bs = num(r, "launch__block_size")
            warps = min(c for c in ctas if c is not None) * bs / 32 if bs and any(c is not None for c in ctas) else None
            print("%-44s %-10s %9.1f %5s %6.1f %-34s %4s %6s %6s %5s %5s" % (
                name[:44], r.get("Grid Size", "?").replace(" ", ""), (dur or 0) / 1e3,
                "%.0f" % warps if warps is not None else "?", total,
                " ".join("%s %.1f" % (n, x) for x, n in stalls[:4] if n not in ("sel",)),
                "%.2f" % num(r, "sm__inst_executed.avg.per_cycle_active") if num(
                    r, "sm__inst_executed.avg.per_cycle_active") is not None else "?",
                pct(r, "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
                pct(r, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed"),
                pct(r, "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
                pct(r, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")))


if __name__ == "__main__":
    main(sys.argv[1:])
