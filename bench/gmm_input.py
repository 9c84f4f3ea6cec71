#!/usr/bin/env python3
"""Writes an ADBench GMM input (FORMATS.md 1.1) whose posterior weights are
all normal floating-point numbers: means, points and log-weights spread over
[-0.5, 0.5), inverse-covariance factors near the identity (icf entries in
[-0.05, 0.05)), so every beta_ij - logsumexp_j is small. In ADBench's own
d=64 K=100 input 45% of the (point, component) weights are zero and 3.6%
subnormal; arithmetic on subnormals takes a microcode assist on x86 (JAX's
jit flushes subnormal results to zero, which IEEE-exact code cannot). Timing both files
separates that cost from the rest (README, Benchmarks).

    bench/gmm_input.py D K N > file.txt
"""
import sys


def value(a: int, b: int) -> float:
    return ((a * 7919 + b * 104729) % 1000) / 1000.0 - 0.5


def main():
    d, k, n = (int(a) for a in sys.argv[1:4])
    rows = [f"{d} {k} {n}"]
    rows += [f"{value(j, 1):.6f}" for j in range(k)]
    rows += [" ".join(f"{value(j, r + 3):.6f}" for r in range(d)) for j in range(k)]
    rows += [" ".join(f"{0.1 * value(j + 5, r):.6f}" for r in range(d * (d + 1) // 2)) for j in range(k)]
    rows += [" ".join(f"{value(i + 11, r):.6f}" for r in range(d)) for i in range(n)]
    rows += ["1.000000 0"]
    sys.stdout.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
