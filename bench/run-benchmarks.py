#!/usr/bin/env python3
"""Runs build/bench/ucp-copy-bench and prints one table: GB/s of memcpy, of
our executor (1 and 2 threads) and of libtorch's as_strided().copy_() loop
on the same bytes, with the ratios the targets are stated in.

    bench/run-benchmarks.py [BENCH_BINARY | RESULTS.json]

With a .json argument, prints the table of an earlier run's results
(`ucp-copy-bench --benchmark_format=json`).
"""

import json
import subprocess
import sys

source = sys.argv[1] if len(sys.argv) > 1 else "build/bench/ucp-copy-bench"
if source.endswith(".json"):
    with open(source) as f:
        out = f.read()
else:
    out = subprocess.run([source, "--benchmark_format=json"], check=True,
                         capture_output=True, text=True).stdout
rate = {}
for b in json.loads(out)["benchmarks"]:
    kind, workload, threads = b["name"].split("/")[:3]
    threads = threads.split(":")[-1]
    rate[(kind, workload, int(threads))] = b["bytes_per_second"] / 1e9

workloads = sorted({w for (_, w, _) in rate}, key=lambda w: list(rate).index(("memcpy", w, 1)))
print(f"{'workload':22} {'memcpy':>8} {'ours x1':>8} {'ours x2':>8} {'torch':>8}"
      f" {'via F':>8} {'x1/memcpy':>10} {'x2/x1':>6} {'x1/torch':>9}"
      f" {'x1/via F':>9}   (GB/s)")
for w in workloads:
    m, o1, o2, t = (rate[("memcpy", w, 1)], rate[("ours", w, 1)],
                    rate[("ours", w, 2)], rate[("torch", w, 1)])
    full = rate.get(("torchfull", w, 1))
    via = f"{full:8.2f}" if full else f"{'-':>8}"
    ratio = f"{o1 / full:9.2f}" if full else f"{'-':>9}"
    print(f"{w:22} {m:8.2f} {o1:8.2f} {o2:8.2f} {t:8.2f} {via} {o1 / m:10.2f}"
          f" {o2 / o1:6.2f} {o1 / t:9.2f} {ratio}")
print("torch: the as_strided().copy_() loop over the same segments; via F:"
      " the reference's reshard (rebuild F, then extract), in libtorch")
