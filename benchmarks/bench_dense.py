"""Our dense solvers beside PyTorch's dp_knapsack_sliding_hirschberg, in one run.

Paper-like instances (``remat_knapsack.instances.paper``): memory uniform in
[100, 1000] with 4 decimals, runtimes uniform in [1, 100], budget half the
total, so W is about 0.65e8, 1.5e8 and 3.1e8 for n = 20, 50 and 100.

Every (solver, n, repeat) runs in a fresh subprocess, which reports the solve's
wall time and its peak extra memory (peak RSS during the solve minus RSS just
before it). Solvers alternate within each repeat, so load on the machine hits
both alike. The table gives medians and the ratios of the medians.

    python benchmarks/bench_dense.py                     # n = 20 50 100, 3 repeats
    python benchmarks/bench_dense.py --sizes 20 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

PEERS = {
    "ours": "remat_knapsack.compat:dp_knapsack_sliding_hirschberg",
    "pytorch": "torch._functorch._activation_checkpointing.knapsack:dp_knapsack_sliding_hirschberg",
}


def _rss(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def worker(peer: str, n: int, seed: int) -> None:
    import importlib

    from remat_knapsack import instances

    module, name = PEERS[peer].split(":")
    fn = getattr(importlib.import_module(module), name)
    inst = instances.paper(n, seed)
    fn([0.1, 0.2], [1.0, 2.0], 0.2)  # warm up imports and lazy initialisation
    with open("/proc/self/clear_refs", "w") as f:  # reset VmHWM to the current RSS
        f.write("5")
    before = _rss("VmRSS:")
    start = time.perf_counter()
    value, saved, _ = fn(inst.memory, inst.runtimes, inst.max_memory)
    seconds = time.perf_counter() - start
    peak = _rss("VmHWM:")
    weight = sum(round(inst.memory[i] * 10_000) for i in saved)
    print(json.dumps({
        "seconds": seconds,
        "peak_extra": peak - before,
        "value": float(value),
        "feasible": weight <= round(inst.max_memory * 10_000),
        "W": round(inst.max_memory * 10_000),
    }))


def run(peer: str, n: int, seed: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", peer, str(n), str(seed)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 50, 100])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", nargs=3, metavar=("PEER", "N", "SEED"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), int(args.worker[2]))
        return
    rows = []
    for n in args.sizes:
        res: dict[str, list[dict]] = {p: [] for p in PEERS}
        for rep in range(args.repeats):
            order = list(PEERS) if rep % 2 == 0 else list(PEERS)[::-1]
            for peer in order:
                res[peer].append(run(peer, n, args.seed))
                r = res[peer][-1]
                print(f"n={n} rep={rep} {peer:8s} {r['seconds']:8.3f} s  {r['peak_extra'] / 2**20:8.1f} MiB  value={r['value']:.6f}",
                      file=sys.stderr, flush=True)
        med = {p: statistics.median(r["seconds"] for r in res[p]) for p in PEERS}
        mem = {p: statistics.median(r["peak_extra"] for r in res[p]) for p in PEERS}
        same = all(abs(a["value"] - b["value"]) <= 1e-4 * max(1.0, abs(b["value"])) for a, b in zip(res["ours"], res["pytorch"]))
        rows.append((n, res["ours"][0]["W"], med, mem, same, all(r["feasible"] for r in res["ours"]),
                     all(r["feasible"] for r in res["pytorch"])))
    print(f"\nPaper-like instances, seed {args.seed}, median of {args.repeats} runs each, one subprocess per run.\n")
    print("| n | W | PyTorch s | ours s | speed-up | PyTorch peak extra MiB | ours peak extra MiB | memory ratio | same value | feasible (PyTorch/ours) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, W, med, mem, same, f_ours, f_pt in rows:
        print(f"| {n} | {W:.3g} | {med['pytorch']:.3g} | {med['ours']:.3g} | {med['pytorch'] / med['ours']:.1f}x "
              f"| {mem['pytorch'] / 2**20:.0f} | {mem['ours'] / 2**20:.0f} | {mem['ours'] / mem['pytorch']:.2f} "
              f"| {'yes' if same else 'NO'} | {'yes' if f_pt else 'NO'}/{'yes' if f_ours else 'NO'} |")


if __name__ == "__main__":
    main()
