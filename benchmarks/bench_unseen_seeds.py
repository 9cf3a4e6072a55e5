"""Seeds 3-7 (not the benchmark's 0-2, on which 0.4's changes were tuned):
``auto`` on multiple strongly correlated and circle items, median over the
seeds. Run it beside an older tree to compare:

    PYTHONPATH=src python benchmarks/bench_unseen_seeds.py
    PYTHONPATH=/path/to/old/src python benchmarks/bench_unseen_seeds.py
"""

import statistics
import time

from remat_knapsack import instances, solve
for cls,n,R in [("multiple_strongly",10000,10**4),("multiple_strongly",1000,10**6),("circle",1000,10**6)]:
    ts=[]
    for seed in range(3,8):
        inst=instances.pisinger(cls,n,R,seed)
        t=time.perf_counter(); solve(inst.memory,inst.runtimes,inst.max_memory,solver="auto",scale=1); ts.append(time.perf_counter()-t)
    print(cls,n,R,"median over seeds 3-7: %.1f ms"%(statistics.median(ts)*1e3), "max %.1f ms"%(max(ts)*1e3), flush=True)
