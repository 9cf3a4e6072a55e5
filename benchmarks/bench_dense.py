"""Our dense solvers beside PyTorch's dp_knapsack_sliding_hirschberg, in one run.

Paper-like instances (``remat_knapsack.instances.paper``): memory uniform in
[100, 1000] with 4 decimals, runtimes uniform in [1, 100], budget half the
total, so W is about 0.65e8, 1.5e8 and 3.1e8 for n = 20, 50 and 100.

Every (solver, n, repeat) runs in a fresh subprocess, which reports the solve's
wall time, its CPU time and its peak extra memory (peak RSS during the solve
minus RSS just before it). Solvers alternate within each repeat, so load on the
machine hits both alike. The table gives medians and the ratios of the medians
to the first peer's. Run it with ``PYTHONPATH=src`` to measure this tree's build.

    python benchmarks/bench_dense.py --sizes 20 50 --repeats 5    # benchmarks/results/dense.csv
    python benchmarks/bench_dense.py                     # n = 20 50 100, 3 repeats
    python benchmarks/bench_dense.py --sizes 20 50 --seed 7 --out /tmp/held-out.csv   # another seed
    # this build against an older one (built in place), without PyTorch:
    python benchmarks/bench_dense.py --sizes 100 --peers ours before --before /tmp/before/src
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import _results  # benchmarks/_results.py: where each suite's CSV lives

PEERS = {
    "pytorch": "torch._functorch._activation_checkpointing.knapsack:dp_knapsack_sliding_hirschberg",
    "ours": "remat_knapsack.compat:dp_knapsack_sliding_hirschberg",
    "before": "remat_knapsack.compat:dp_knapsack_sliding_hirschberg",  # from --before's tree
}


def _rss(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def worker(peer: str, n: int, seed: int, path: str) -> None:
    import importlib

    if path != "-":
        sys.path.insert(0, path)

    from remat_knapsack import instances

    module, name = PEERS[peer].split(":")
    fn = getattr(importlib.import_module(module), name)
    inst = instances.paper(n, seed)
    fn([0.1, 0.2], [1.0, 2.0], 0.2)  # warm up imports and lazy initialisation
    with open("/proc/self/clear_refs", "w") as f:  # reset VmHWM to the current RSS
        f.write("5")
    before = _rss("VmRSS:")
    start, cpu = time.perf_counter(), time.process_time()
    value, saved, _ = fn(inst.memory, inst.runtimes, inst.max_memory)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = _rss("VmHWM:")
    weight = sum(round(inst.memory[i] * 10_000) for i in saved)
    print(json.dumps({
        "seconds": seconds,
        "cpu": cpu,
        "peak_extra": peak - before,
        "value": float(value),
        "feasible": weight <= round(inst.max_memory * 10_000),
        "W": round(inst.max_memory * 10_000),
    }))


def run(peer: str, n: int, seed: int, path: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", peer, str(n), str(seed), path],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 50, 100])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peers", nargs="+", choices=list(PEERS), default=["pytorch", "ours"],
                    help="what to run; ratios are to the first (default: pytorch ours)")
    ap.add_argument("--before", default="-", help="the src directory of the build the peer 'before' imports")
    ap.add_argument("--out", default=_results.default("dense"), metavar="CSV",
                    help="one row per (n, peer) (default benchmarks/results/dense.csv; '-' for none)")
    ap.add_argument("--worker", nargs=4, metavar=("PEER", "N", "SEED", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), int(args.worker[2]), args.worker[3])
        return
    peers = args.peers
    if "before" in peers and args.before == "-":
        ap.error("peer 'before' needs --before SRC")
    rows = []
    for n in args.sizes:
        res: dict[str, list[dict]] = {p: [] for p in peers}
        for rep in range(args.repeats):
            for peer in peers if rep % 2 == 0 else peers[::-1]:
                res[peer].append(run(peer, n, args.seed, args.before if peer == "before" else "-"))
                r = res[peer][-1]
                print(f"n={n} rep={rep} {peer:8s} {r['seconds']:8.3f} s  cpu {r['cpu']:8.3f} s  "
                      f"{r['peak_extra'] / 2**20:8.1f} MiB  value={r['value']:.6f}", file=sys.stderr, flush=True)
        med = {p: {k: statistics.median(r[k] for r in res[p]) for k in ("seconds", "cpu", "peak_extra")} for p in peers}
        base = res[peers[0]]
        same = all(abs(a["value"] - b["value"]) <= 1e-4 * max(1.0, abs(b["value"]))
                   for p in peers for a, b in zip(res[p], base))
        feasible = {p: all(r["feasible"] for r in res[p]) for p in peers}
        rows.append((n, base[0]["W"], med, same, feasible))
    first = peers[0]
    table = []
    for n, W, med, same, feasible in rows:
        b = med[first]
        for p in peers:
            m = med[p]
            table.append({"n": n, "W": W, "peer": p, "wall_s": m["seconds"], "cpu_s": m["cpu"],
                          "peak_extra_mib": m["peak_extra"] / 2**20, "speedup_wall": b["seconds"] / m["seconds"],
                          "speedup_cpu": b["cpu"] / m["cpu"], "memory_ratio": m["peak_extra"] / b["peak_extra"],
                          "same_value": same, "feasible": feasible[p], "repeats": args.repeats, "seed": args.seed})
    if args.out != "-":
        print(f"wrote {_results.write_rows(table, args.out)}", file=sys.stderr)
    print(f"\nPaper-like instances, seed {args.seed}, median of {args.repeats} runs each, one subprocess per run; "
          f"speed-up = {first}'s time / the peer's; memory ratio = the peer's peak extra / {first}'s.\n")
    print("| n | W | peer | wall s | CPU s | wall speed-up | CPU speed-up | peak extra MiB | memory ratio "
          "| same value | feasible |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n, W, med, same, feasible in rows:
        b = med[first]
        for p in peers:
            m = med[p]
            print(f"| {n} | {W:.3g} | {p} | {m['seconds']:.3g} | {m['cpu']:.3g} "
                  f"| {b['seconds'] / m['seconds']:.2f}x | {b['cpu'] / m['cpu']:.2f}x "
                  f"| {m['peak_extra'] / 2**20:.0f} | {m['peak_extra'] / b['peak_extra']:.2f} "
                  f"| {'yes' if same else 'NO'} | {'yes' if feasible[p] else 'NO'} |")


if __name__ == "__main__":
    main()
