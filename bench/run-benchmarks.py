#!/usr/bin/env python3
"""Runs build/bench/ucp-copy-bench and prints one table: GB/s of memcpy, of
our executor and of libtorch's as_strided().copy_() loop on the same bytes,
on 1 and 2 threads, with the ratios the targets are stated in.

    bench/run-benchmarks.py [BENCH_BINARY | RESULTS.json] [--repetitions N]

Each case runs N times (default 5) in random order interleaved with the
other cases, and the table shows the median: on a shared machine bandwidth
drifts by tens of percent over seconds, and interleaving spreads that drift
over every case instead of charging it to whichever ran at the time.

With a .json argument, prints the table of an earlier run's results
(`ucp-copy-bench --benchmark_format=json`, with or without repetitions).
"""

import argparse
import json
import statistics
import subprocess

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("source", nargs="?", default="build/bench/ucp-copy-bench",
                    help="the benchmark binary, or a .json of its results")
parser.add_argument("--repetitions", type=int, default=5,
                    help="runs of each case; the table shows the median")
args = parser.parse_args()

if args.source.endswith(".json"):
    with open(args.source) as f:
        out = f.read()
else:
    out = subprocess.run(
        [args.source, "--benchmark_format=json",
         f"--benchmark_repetitions={args.repetitions}",
         "--benchmark_enable_random_interleaving=true"],
        check=True, capture_output=True, text=True).stdout

samples = {}
for b in json.loads(out)["benchmarks"]:
    if b.get("run_type") == "aggregate":
        continue
    kind, workload, threads = b["name"].split("/")[:3]
    threads = int(threads.split(":")[-1])
    samples.setdefault((kind, workload, threads), []).append(
        b["bytes_per_second"] / 1e9)
rate = {key: statistics.median(values) for key, values in samples.items()}
runs = min(len(values) for values in samples.values())

workloads = []
for (_, w, _) in rate:
    if w not in workloads:
        workloads.append(w)
print(f"{'workload':22} {'memcpy':>7} {'ours x1':>8} {'ours x2':>8}"
      f" {'torch x1':>8} {'torch x2':>8} {'via F':>7} {'x1/memcpy':>9}"
      f" {'x2/x1':>6} {'x1/torch x1':>11} {'x2/torch x2':>11}"
      f" {'x1/via F':>8}")
for w in workloads:
    m, o1, o2 = rate[("memcpy", w, 1)], rate[("ours", w, 1)], rate[("ours", w, 2)]
    t1, t2 = rate[("torch", w, 1)], rate[("torch", w, 2)]
    full = rate.get(("torchfull", w, 1))
    via = f"{full:7.2f}" if full else f"{'-':>7}"
    ratio = f"{o1 / full:8.2f}" if full else f"{'-':>8}"
    print(f"{w:22} {m:7.2f} {o1:8.2f} {o2:8.2f} {t1:8.2f} {t2:8.2f} {via}"
          f" {o1 / m:9.2f} {o2 / o1:6.2f} {o1 / t1:11.2f} {o2 / t2:11.2f}"
          f" {ratio}")
print(f"GB/s, median of {runs} interleaved runs. torch: the as_strided().copy_()"
      " loop over the same segments, with 1 or 2 intra-op threads; via F: the"
      " reference's reshard (rebuild F, then extract) in libtorch, 1 thread")
