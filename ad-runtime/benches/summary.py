#!/usr/bin/env python3
"""Print the speedup table of the `kernels` bench from criterion's samples.

Usage: python3 ad-runtime/benches/summary.py [target/criterion]
Speedup = baseline time / ours time (> 1 means ad-runtime is faster). Each
time is the fastest of criterion's samples (time per iteration), which is
less sensitive than the median to other processes on a busy machine.
"""
import json, os, sys

root = sys.argv[1] if len(sys.argv) > 1 else "target/criterion"

def best_ns(group, fid, n):
    p = os.path.join(root, group, fid, str(n), "new", "sample.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        d = json.load(f)
    return min(t / i for t, i in zip(d["times"], d["iters"]))

def fmt_t(ns):
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns:.3g} ns"

groups = ["map", "zip_map", "build", "add_scaled", "outer", "sum", "sum_axis0",
          "sum_axis1", "product", "max_arg", "logsumexp", "scan_inclusive",
          "scan_reverse", "gather", "scatter_add", "scatter_add_100bins", "dot",
          "matvec", "matvec_t"]
print("| kernel | baseline | n=1e3 | n=1e5 | n=1e7 |")
print("|---|---|---|---|---|")
for g in groups:
    for base in ("plain", "ndarray"):
        cells = []
        for n in (1000, 100000, 10000000):
            o, b = best_ns(g, "ours", n), best_ns(g, base, n)
            cells.append("—" if o is None or b is None else f"{b / o:.2f}× ({fmt_t(o)})")
        if all(c == "—" for c in cells):
            continue
        print(f"| {g} | {base} loop | " + " | ".join(cells) + " |" if base == "plain"
              else f"| {g} | ndarray `dot` | " + " | ".join(cells) + " |")
print()
print("| matmul | n=256 | n=1024 |")
print("|---|---|---|")
for ours, base, label in (("ours", "ndarray", "A·B vs `a.dot(&b)`"),
                          ("ours_tn", "ndarray_tn", "Aᵀ·B vs `a.t().dot(&b)`")):
    cells = []
    for n in (256, 1024):
        o, b = best_ns("matmul", ours, n), best_ns("matmul", base, n)
        cells.append("—" if o is None or b is None else f"{b / o:.2f}× ({fmt_t(o)})")
    print(f"| {label} | " + " | ".join(cells) + " |")
