#!/usr/bin/env python3
"""Runs build/bench/ucp-copy-bench and prints one table: GB/s of memcpy, of
our executor and of libtorch's as_strided().copy_() loop on the same bytes,
on 1 and 2 threads, with the ratios the targets are stated in.

    bench/run-benchmarks.py [BENCH_BINARY | RUN.json...] [--repetitions N]

The binary runs N times (default 5). Each run measures every case once, in
an order that puts the two cases of a ratio next to each other (ours and
torch on one thread, then memcpy, then both on two threads; every other
run with torch first in each pair, so that running second favours
neither). The table
shows each case's median GB/s over the runs and, for each ratio, the
median of its per-run ratios: on a shared machine bandwidth drifts by tens
of percent, at times by 2x, over seconds to minutes, and two cases measured
a second apart see the same machine, where the medians of two cases need
not.

With .json arguments (`ucp-copy-bench --benchmark_format=json`, one file
per run of the binary), prints the table of those runs.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("sources", nargs="*",
                    default=["build/bench/ucp-copy-bench"],
                    help="the benchmark binary, or .json files of its runs")
parser.add_argument("--repetitions", type=int, default=5,
                    help="runs of the binary; the table shows medians")
args = parser.parse_args()


def parse(text):
    """GB/s of each (kind, workload, threads) in one run of the binary."""
    samples = {}
    for b in json.loads(text)["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        kind, workload, threads = b["name"].split("/")[:3]
        key = (kind, workload, int(threads.split(":")[-1]))
        samples.setdefault(key, []).append(b["bytes_per_second"] / 1e9)
    return {key: statistics.median(values) for key, values in samples.items()}


runs = []
if all(source.endswith(".json") for source in args.sources):
    for source in args.sources:
        with open(source) as f:
            runs.append(parse(f.read()))
else:
    for run in range(args.repetitions):
        print(f"run {run + 1} of {args.repetitions}", file=sys.stderr)
        env = dict(os.environ)
        env.pop("UCP_BENCH_TORCH_FIRST", None)
        if run % 2:
            env["UCP_BENCH_TORCH_FIRST"] = "1"
        runs.append(parse(subprocess.run(
            [args.sources[0], "--benchmark_format=json"], env=env,
            check=True, capture_output=True, text=True).stdout))


def rate(key):
    """Median GB/s of a case, or None where no run measured it."""
    values = [run[key] for run in runs if key in run]
    return statistics.median(values) if values else None


def ratio(a, b):
    """Median of the per-run ratios of two cases, or None."""
    values = [run[a] / run[b] for run in runs if a in run and b in run]
    return statistics.median(values) if values else None


def cell(value, width):
    return f"{value:{width}.2f}" if value is not None else f"{'-':>{width}}"


workloads = []
for run in runs:
    for (_, w, _) in run:
        if w not in workloads:
            workloads.append(w)
print(f"{'workload':22} {'memcpy':>7} {'ours x1':>8} {'ours x2':>8}"
      f" {'torch x1':>8} {'torch x2':>8} {'via F':>7} {'x1/memcpy':>9}"
      f" {'x2/x1':>6} {'x1/torch x1':>11} {'x2/torch x2':>11}"
      f" {'x1/via F':>8}")
for w in workloads:
    memcpy, full = ("memcpy", w, 1), ("torchfull", w, 1)
    ours1, ours2 = ("ours", w, 1), ("ours", w, 2)
    torch1, torch2 = ("torch", w, 1), ("torch", w, 2)
    print(f"{w:22} {cell(rate(memcpy), 7)} {cell(rate(ours1), 8)}"
          f" {cell(rate(ours2), 8)} {cell(rate(torch1), 8)}"
          f" {cell(rate(torch2), 8)} {cell(rate(full), 7)}"
          f" {cell(ratio(ours1, memcpy), 9)} {cell(ratio(ours2, ours1), 6)}"
          f" {cell(ratio(ours1, torch1), 11)} {cell(ratio(ours2, torch2), 11)}"
          f" {cell(ratio(ours1, full), 8)}")
print(f"GB/s: median of {len(runs)} runs; ratios: median of the {len(runs)}"
      " per-run ratios of cases measured one after the other. torch: the"
      " as_strided().copy_() loop over the same segments, with 1 or 2"
      " intra-op threads; via F: the reference's reshard (rebuild F, then"
      " extract) in libtorch, 1 thread")
