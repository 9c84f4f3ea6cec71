"""Runs the ADBench suite in linad and JAX side by side (see bench/compare).

Each measurement is one process (linad: the `adbench` example's `time`
command, the `gmm` example's `time-np` for the NumPy-style GMM; JAX: jax_adbench.py) pinned to the first THREADS cores with
taskset, reporting medians over repeated calls. The systems take turns case
by case, in an order that rotates every round, so that machine noise hits
them alike; a system's figure for a case is the median over the rounds.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LINAD = os.path.join(ROOT, "target", "release", "examples", "adbench")
# The NumPy-style GMM (kind gmm-np) is timed by the `gmm` example's `time-np`.
LINAD_GMM = os.path.join(ROOT, "target", "release", "examples", "gmm")

# (problem, size, kind, file relative to the data folder, quick?)
CASES = [
    ("GMM", "d10 K25 n1000", "gmm", "gmm/1k/gmm_d10_K25.txt", True),
    ("GMM", "d64 K100 n1000", "gmm", "gmm/1k/gmm_d64_K100.txt", False),
    ("GMM", "d64 K200 n1000 (synthetic)", "gmm", "gmm/synthetic/gmm_d64_K200_1k_synth.txt", False),
    # No zero or subnormal posterior weights (bench/gmm_input.py): the same
    # shapes as ADBench's d64 K100 without the cost of subnormal arithmetic.
    ("GMM", "d64 K100 n1000 (normal weights)", "gmm", "gen:64 100 1000", False),
    ("GMM (NumPy style)", "d10 K25 n1000", "gmm-np", "gmm/1k/gmm_d10_K25.txt", True),
    ("BA (reverse)", "ba1 p=31843", "ba-rev", "ba/ba1_n49_m7776_p31843.txt", True),
    ("BA (forward)", "ba1 p=31843", "ba-fwd", "ba/ba1_n49_m7776_p31843.txt", True),
    ("BA (reverse)", "ba2 p=36455", "ba-rev", "ba/ba2_n21_m11315_p36455.txt", False),
    ("BA (forward)", "ba2 p=36455", "ba-fwd", "ba/ba2_n21_m11315_p36455.txt", False),
    ("BA (reverse)", "ba3 p=182072", "ba-rev", "ba/ba3_n161_m48126_p182072.txt", False),
    ("BA (forward)", "ba3 p=182072", "ba-fwd", "ba/ba3_n161_m48126_p182072.txt", False),
    ("BA (reverse)", "ba4 p=204472", "ba-rev", "ba/ba4_n372_m47423_p204472.txt", False),
    ("BA (forward)", "ba4 p=204472", "ba-fwd", "ba/ba4_n372_m47423_p204472.txt", False),
    ("BA (reverse)", "ba5 p=225911", "ba-rev", "ba/ba5_n257_m65132_p225911.txt", False),
    ("BA (forward)", "ba5 p=225911", "ba-fwd", "ba/ba5_n257_m65132_p225911.txt", False),
    ("LSTM", "l2 c1024", "lstm", "lstm/lstm_l2_c1024.txt", True),
    ("LSTM", "l2 c4096", "lstm", "lstm/lstm_l2_c4096.txt", False),
    ("HAND simple", "small N=100", "hand", "hand/simple_small/hand1_t26_c100.txt", True),
    ("HAND complicated", "small N=100", "hand", "hand/complicated_small/hand1_t26_c100.txt", True),
]


def generated(spec):
    """The GMM input `bench/gmm_input.py D K N` writes (under target/)."""
    d, k, n = spec.split()
    path = os.path.join(ROOT, "target", "bench-inputs", f"gmm_d{d}_K{k}_n{n}_normal.txt")
    if not os.path.isfile(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            subprocess.run([sys.executable, os.path.join(HERE, "gmm_input.py"), d, k, n],
                           stdout=f, check=True)
    return path


def resolve(data, rel):
    if rel.startswith("gen:"):
        return generated(rel[4:])
    for cand in (os.path.join(data, rel), os.path.join(ROOT, "examples", "adbench", "data", rel),
                 os.path.join(ROOT, "examples", "data", os.path.basename(rel))):
        if os.path.isfile(cand):
            return cand
    return None


def run(system, kind, path, threads, runs, secs):
    cpus = ",".join(str(c) for c in range(threads))
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    if system == "linad":
        if kind == "gmm-np":
            cmd = [LINAD_GMM, "time-np", path, str(runs), str(secs)]
        else:
            cmd = [LINAD, "time", kind, path, str(runs), str(secs)]
    else:
        if threads == 1:
            env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        cmd = [sys.executable, os.path.join(HERE, "jax_adbench.py"), kind, path, str(runs), str(secs)]
    pin = ["taskset", "-c", cpus] if shutil.which("taskset") else []
    out = subprocess.run(pin + cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"  {system} {kind} {path}: failed\n{out.stderr[-2000:]}", flush=True)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def load():
    return float(open("/proc/loadavg").read().split()[0])


def machine():
    model = "?"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem = open("/proc/meminfo").readline().split()[1]
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    import jax
    import numpy
    return dict(cpu=model, cores=os.cpu_count(), memory_gib=round(int(mem) / 2**20, 1),
                os=platform.platform(), python=platform.python_version(), jax=jax.__version__,
                numpy=numpy.__version__, rustc=rustc, linad_commit=git)


def fmt_ms(s):
    if s is None:
        return "-"
    ms = s * 1e3
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def rho(a, b):
    return abs(a - b) / max(1.0, abs(a) + abs(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes, fewer repetitions")
    ap.add_argument("--data", default=None, help="ADBench data folder (default ../shared/adbench, else bundled)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds of interleaved runs (default 3, quick 2)")
    ap.add_argument("--only", default=None, help="substring filter on 'problem size'")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    a = ap.parse_args()
    data = a.data or os.path.join(ROOT, "..", "shared", "adbench")
    if not os.path.isdir(data):
        data = os.path.join(ROOT, "examples", "adbench", "data")
    rounds = a.rounds or (2 if a.quick else 3)
    runs, secs = (3, 0.3) if a.quick else (10, 1.0)
    threads = [int(t) for t in a.threads.split(",") if int(t) <= (os.cpu_count() or 1)]
    systems = ["linad", "jax"]
    cases = []
    for problem, size, kind, rel, quick in CASES:
        if a.quick and not quick:
            continue
        if a.only and a.only not in f"{problem} {size}":
            continue
        path = resolve(data, rel)
        if path is None:
            print(f"{problem} {size}: {rel} not found under {data}, skipped")
            continue
        cases.append((problem, size, kind, path))
    info = machine()
    info.update(threads=threads, rounds=rounds, runs_per_process=f">= {runs} calls and >= {secs} s",
                data=os.path.abspath(data), mode="quick" if a.quick else "full",
                started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                load_before=load())
    print(json.dumps(info, indent=1), flush=True)
    samples = {}
    for r in range(rounds):
        for t in threads:
            for ci, (problem, size, kind, path) in enumerate(cases):
                k = (r + ci) % len(systems)
                for system in systems[k:] + systems[:k]:
                    res = run(system, kind, path, t, runs, secs)
                    if res is None:
                        continue
                    samples.setdefault((ci, t, system), []).append(res)
                    print(f"round {r + 1}/{rounds} {t} thr {problem:17} {size:27} {system:5} primal "
                          f"{fmt_ms(res['primal_s']):>8} ms  derivative {fmt_ms(res['deriv_s']):>8} ms  "
                          f"load {load():.1f}", flush=True)
    info["load_after"] = load()
    info["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")

    def med(ci, t, system, key):
        vals = [s[key] for s in samples.get((ci, t, system), []) if s.get(key) is not None]
        return statistics.median(vals) if vals else None

    rows = []
    for ci, (problem, size, kind, path) in enumerate(cases):
        for t in threads:
            row = dict(problem=problem, size=size, kind=kind, threads=t)
            for s in systems:
                row[f"{s}_primal"] = med(ci, t, s, "primal_s")
                row[f"{s}_deriv"] = med(ci, t, s, "deriv_s")
                sums = [x["checksum"] for x in samples.get((ci, t, s), [])]
                row[f"{s}_checksum"] = sums[0] if sums else None
            row["linad_hand"] = med(ci, t, "linad", "hand_s")
            rows.append(row)

    stamp = datetime.date.today().isoformat() + ("-quick" if a.quick else "")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, f"{stamp}.json"), "w") as f:
        json.dump(dict(machine=info, rows=rows), f, indent=1)
    md = render(info, rows, stamp)
    with open(os.path.join(a.out, f"{stamp}.md"), "w") as f:
        f.write(md)
    chart(rows, threads, os.path.join(a.out, f"{stamp}.png"), info)
    print("\n" + md)
    print(f"wrote {a.out}/{stamp}.md, .png, .json")


def render(info, rows, stamp):
    def ratio(a, b):
        return "-" if a is None or b is None else f"{a / b:.2f}"

    lines = [
        f"# ADBench: linad and JAX side by side ({stamp})",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB; {info['os']}. "
        f"linad {info['linad_commit']} ({info['rustc']}, release); JAX {info['jax']} (jit, float64, CPU; "
        f"compile time excluded), Python {info['python']}, NumPy {info['numpy']}. "
        f"PyTorch: not measured. Load average (1 min) {info['load_before']} before, {info['load_after']} after.",
        "",
        f"Each figure is the median over {info['rounds']} rounds of one process per system and case "
        f"(pinned to the first `threads` cores with taskset; linad `RAYON_NUM_THREADS`, JAX single-threaded "
        f"XLA flags at 1 thread), each process reporting the median of {info['runs_per_process']}; the systems "
        f"take turns case by case in a rotating order. Times in ms. `d/p`: derivative / primal. "
        f"`linad/JAX`: derivative time of linad over JAX's. `hand`: linad's hand-written Rust derivative "
        f"(GMM: reverse, sequential; BA: forward chain rule by hand, 15 directions at once). `agree`: "
        f"ADBench's rho between the sums of |entries| of the two derivatives.",
        "",
        "| problem | size | threads | linad primal | linad derivative | linad d/p | JAX primal | JAX derivative | JAX d/p | linad/JAX | hand | linad/hand | agree |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        agree = "-"
        if r["linad_checksum"] is not None and r["jax_checksum"] is not None:
            agree = f"{rho(r['linad_checksum'], r['jax_checksum']):.0e}"
        lines.append(
            f"| {r['problem']} | {r['size']} | {r['threads']} | {fmt_ms(r['linad_primal'])} | "
            f"{fmt_ms(r['linad_deriv'])} | {ratio(r['linad_deriv'], r['linad_primal'])} | "
            f"{fmt_ms(r['jax_primal'])} | {fmt_ms(r['jax_deriv'])} | {ratio(r['jax_deriv'], r['jax_primal'])} | "
            f"{ratio(r['linad_deriv'], r['jax_deriv'])} | {fmt_ms(r['linad_hand'])} | "
            f"{ratio(r['linad_deriv'], r['linad_hand'])} | {agree} |")
    lines += ["", f"Regenerate: `bench/compare{' --quick' if info['mode'] == 'quick' else ''}`. "
              f"Data: `{info['data']}`; {info['started']} to {info['finished']} (UTC).", ""]
    return "\n".join(lines)


def chart(rows, threads, path, info):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(threads), 1, figsize=(12, 4.2 * len(threads)), squeeze=False)
    for ax, t in zip(axes[:, 0], threads):
        sel = [r for r in rows if r["threads"] == t]
        labels = [f"{r['problem']}\n{r['size']}" for r in sel]
        x = range(len(sel))
        width = 0.38
        for k, (s, color) in enumerate((("linad", "tab:blue"), ("jax", "tab:orange"))):
            vals = [(r[f"{s}_deriv"] or float("nan")) * 1e3 for r in sel]
            ax.bar([i + (k - 0.5) * width for i in x], vals, width, label="linad" if s == "linad" else "JAX (jit)",
                   color=color)
        ax.set_yscale("log")
        ax.set_ylabel("derivative time (ms, log)")
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, fontsize=7, rotation=30, ha="right")
        ax.set_title(f"ADBench derivative time, {t} thread{'s' if t > 1 else ''} ({info['cpu']}, median)")
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
