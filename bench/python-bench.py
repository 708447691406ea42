#!/usr/bin/env python3
"""Benchmarks affine_ucp against the per-element and per-piece Python ways.

    bench/python-bench.py [--rows 4096] [--cols 4096] [--tp 8] [--repeat 3]

A fused QKV weight of rows x cols, its q/k/v rows (half, a quarter, a
quarter) each split over TP ranks, as affine_ucp.affine.sub_param_map
builds it (the map DeepSpeed's module would hold). Prints, in one run:

* validate_coverage: the verifier at O(pieces) against the element walk
  (every element's offset into a set and a holders dict, then each piece's
  elements checked against their holders: what an O(numel) check does);
* extract of every rank's shard and rebuild of the whole: the executor on
  one thread and on every core, against a loop of
  torch.as_strided(...).copy_() per piece with torch on as many threads,
  both writing into tensors allocated and touched beforehand.

Each ratio is baseline time / affine_ucp time, the best of --repeat runs
(the element walk runs once: it takes minutes).
"""

import argparse
import os
import time

import torch

from affine_ucp import affine
from affine_ucp import tensors


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def as_strided_extract(m, full, shards):
    """Every rank's shard into `shards` (rank -> flat tensor), piece by
    piece."""
    flat = full.reshape(-1)
    for rank, pieces in m.pieces_by_rank.items():
        for piece in pieces:
            piece.dest_view(shards[rank]).copy_(piece.source_view(flat))
    return shards


def as_strided_rebuild(m, shards, full):
    """The full tensor into `full` (flat), piece by piece."""
    for rank, pieces in m.pieces_by_rank.items():
        for piece in pieces:
            piece.source_view(full).copy_(piece.dest_view(shards[rank]))
    return full


def with_threads(m, threads):
    """extract and rebuild through the executor on `threads` threads, into
    given (already touched) tensors, as the loop above writes."""
    core = m._to_core()
    from affine_ucp import _core
    whole = _core.full_tensor_map(core)
    [cut] = _core.compose([whole], [core], "lowest")
    [join] = _core.compose([core], [whole], "lowest")
    return (lambda full, shards: tensors.run_plan(
                cut, {0: full.reshape(-1)}, shards, threads=threads),
            lambda shards, out: tensors.run_plan(
                join, shards, {0: out}, threads=threads))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=4096)
    parser.add_argument("--tp", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-walk", action="store_true",
                        help="leave out the element walk (minutes)")
    args = parser.parse_args()
    q, kv = args.rows // 2, args.rows // 4
    sizes = [q, kv, args.rows - q - kv]
    widths = [[s // args.tp + (r < s % args.tp) for r in range(args.tp)]
              for s in sizes]
    m = affine.sub_param_map((args.rows, args.cols), sizes, widths, 0)
    cores = len(os.sched_getaffinity(0))
    print(f"fused QKV [{args.rows}, {args.cols}] at TP {args.tp}: "
          f"{m.numel} elements, "
          f"{sum(len(p) for p in m.pieces_by_rank.values())} pieces; "
          f"{cores} cores")

    ours = best(m.validate_coverage, args.repeat)
    print(f"validate_coverage   affine_ucp {ours * 1e3:9.3f} ms")
    if not args.skip_walk:
        start = time.perf_counter()
        m._validate_by_walking()
        walk = time.perf_counter() - start
        print(f"validate_coverage   element walk {walk:9.3f} s  "
              f"ratio {walk / ours:,.0f}x")

    # Outputs allocated and touched once: the copies are timed, not the
    # page faults of fresh memory.
    full = torch.randn(args.rows, args.cols)
    shards = {r: torch.zeros(affine._product(m.shard_shapes[r]))
              for r in m.pieces_by_rank}
    out = torch.zeros(m.numel)
    reference = {r: t.clone() for r, t in
                 as_strided_extract(m, full, shards).items()}
    for threads in sorted({1, cores}):
        # The loop's copies on as many threads (torch's intra-op ones).
        torch.set_num_threads(threads)
        baselines = {
            "extract": best(lambda: as_strided_extract(m, full, shards),
                            args.repeat),
            "rebuild": best(lambda: as_strided_rebuild(m, reference, out),
                            args.repeat)}
        extract, rebuild = with_threads(m, threads)
        for t in shards.values():
            t.zero_()
        extract(full, shards)
        assert all(torch.equal(shards[r], reference[r]) for r in reference)
        out.zero_()
        rebuild(reference, out)
        assert torch.equal(out, full.reshape(-1))
        for name, fn in (("extract", lambda: extract(full, shards)),
                         ("rebuild", lambda: rebuild(reference, out))):
            t = best(fn, args.repeat)
            print(f"{name:8} {threads:2} thread(s)  affine_ucp {t * 1e3:8.2f} "
                  f"ms  as_strided loop {baselines[name] * 1e3:8.2f} ms  "
                  f"ratio {baselines[name] / t:5.2f}x  "
                  f"{full.numel() * 4 / t / 1e9:6.2f} GB/s")


if __name__ == "__main__":
    main()
