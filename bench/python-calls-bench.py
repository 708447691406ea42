#!/usr/bin/env python3
"""The everyday calls of DeepSpeed's affine module, affine_ucp.affine's
against DeepSpeed's way (a torch.as_strided(...).copy_() loop per piece,
as deepspeed.checkpoint.affine runs them), measured in one run.

    bench/python-calls-bench.py [--scale 1.0] [--repeat 3] [--dtype bf16]

Two tensors at TP 8, as the calls meet them: a fused QKV [12288, 4096]
with GQA (8192 query rows, 2048 key and 2048 value rows, each split over
the ranks) and a vocabulary [128256, 4096] split by rows (--scale shrinks
the rows). For each, on one thread and on every core (torch's threads,
which the affine module's executor follows):

* extract: ``m.extract(full, rank)`` once per rank, each call making its
  shard (the loop: torch.empty, then its pieces copied in);
* rebuild: ``m.rebuild(shards)`` from contiguous shards, and from shards
  that are views into one buffer (the loop flattens each view first, as
  DeepSpeed's module does).

Prints each time (the best of --repeat, the ways alternated), the ratio
loop / affine_ucp, the copy floor (the same bytes moved into torch.empty
outputs by one contiguous copy each: where the loop is at it, no way of
copying is faster) and its ratio floor / affine_ucp, and the peak memory
a call adds beyond its inputs (the process's peak RSS, reset before the
call), against the output's size. affine_ucp's large outputs come from
its caching allocator: the times "kept" reuse the memory of the outputs
the call before freed (as a loop converting tensor after tensor does);
the times "fresh", taken after the others, empty the cache first, so
that every output is fresh memory (on huge pages), and the peak memory
is the fresh call's. The loop's torch.empty maps outputs above 32 MiB
afresh each time, 4 KiB page by page; smaller ones the C library hands
back warm.
"""

import argparse
import gc
import os
import time

import torch

import affine_ucp
from affine_ucp import affine


def peak_and_time(fn):
    """Seconds of fn(), and the most resident memory it added (bytes)."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # Resets the peak RSS to the current RSS.
    base = rss("VmRSS")
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    extra = rss("VmHWM") - base
    del result
    return seconds, extra


def rss(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def loop_extract(m, full, rank):
    """DeepSpeed's extract: the shard made, its pieces copied in."""
    shard = torch.empty(affine._product(m.shard_shapes[rank]),
                        dtype=full.dtype)
    flat = full.reshape(-1)
    for piece in m.pieces_by_rank[rank]:
        piece.dest_view(shard).copy_(piece.source_view(flat))
    return shard.view(m.shard_shapes[rank])


def loop_rebuild(m, shards):
    """DeepSpeed's rebuild: F made, each shard flattened to storage offset
    0 (a copy for a view), its pieces copied out."""
    any_shard = next(iter(shards.values()))
    full = torch.empty(m.numel, dtype=any_shard.dtype)
    for rank, pieces in m.pieces_by_rank.items():
        shard = shards[rank]
        flat = shard.reshape(-1)
        if flat.storage_offset() != 0 or not flat.is_contiguous():
            flat = flat.clone()
        for piece in pieces:
            piece.source_view(full).copy_(piece.dest_view(flat))
    return full.view(m.logical_shape)


def plain_copies(source, outputs, count):
    """The copy floor of a call: `count` outputs of `outputs` elements each
    made with torch.empty and filled by one contiguous copy of the last
    `count` slices of that size of `source` (distinct bytes, as the call
    reads), the memcpy a call could at best be."""
    flat = source.reshape(-1)
    return [torch.empty(outputs, dtype=source.dtype).copy_(
                flat[flat.numel() - outputs * (count - i):][:outputs])
            for i in range(count)]


def measure(label, ours, theirs, floor, output_bytes, repeat):
    # Alternated, so that all meet the allocator in the same states.
    kept, fresh, runs_theirs, runs_floor = [], [], [], []
    for _ in range(repeat):
        kept.append(peak_and_time(ours))
        runs_theirs.append(peak_and_time(theirs))
        runs_floor.append(peak_and_time(floor))
    # Then with nothing kept: unmapping memory just before the loop's calls
    # would hand the loop memory the host has just backed (cheaper faults).
    for _ in range(repeat):
        affine_ucp.empty_cache()
        fresh.append(peak_and_time(ours))
    t_kept = min(t for t, _ in kept)
    t_fresh = min(t for t, _ in fresh)
    t_theirs = min(t for t, _ in runs_theirs)
    t_floor = min(t for t, _ in runs_floor)
    print(f"  {label:28} affine_ucp kept {t_kept * 1e3:7.1f} ms, fresh "
          f"{t_fresh * 1e3:7.1f} ms  loop {t_theirs * 1e3:7.1f} ms  ratio "
          f"{t_theirs / t_kept:5.2f}x, {t_theirs / t_fresh:5.2f}x  memcpy "
          f"{t_floor * 1e3:7.1f} ms ({t_floor / t_kept:4.2f}x, "
          f"{t_floor / t_fresh:4.2f}x)  peak extra "
          f"{max(e for _, e in fresh) / 2**20:7.1f} MiB (output "
          f"{output_bytes / 2**20:7.1f} MiB, loop "
          f"{max(e for _, e in runs_theirs) / 2**20:7.1f})", flush=True)


def bench(name, m, dtype, threads, repeat):
    torch.set_num_threads(threads)
    full = torch.randn(m.logical_shape).to(dtype)
    size = full.element_size()
    ranks = sorted(m.pieces_by_rank)
    shards = {r: loop_extract(m, full, r) for r in ranks}
    for r in ranks:  # Both ways give the same shards and F.
        assert torch.equal(m.extract(full, r), shards[r])
    assert torch.equal(m.rebuild(shards), full)
    buffer = torch.cat([shards[r].reshape(-1) for r in ranks])
    views, at = {}, 0
    for r in ranks:
        n = shards[r].numel()
        views[r] = buffer[at:at + n].view(shards[r].shape)
        at += n
    print(f"{name} {list(m.logical_shape)} {dtype}, TP {len(ranks)}, "
          f"{threads} thread(s)")
    last = shards[ranks[-1]].numel()
    measure("extract, a call per rank",
            lambda: [m.extract(full, r) for r in ranks],
            lambda: [loop_extract(m, full, r) for r in ranks],
            lambda: plain_copies(full, last, len(ranks)),
            full.numel() * size, repeat)
    measure("extract, one rank",
            lambda: m.extract(full, ranks[-1]),
            lambda: loop_extract(m, full, ranks[-1]),
            lambda: plain_copies(full, last, 1), last * size, repeat)
    measure("rebuild, contiguous shards", lambda: m.rebuild(shards),
            lambda: loop_rebuild(m, shards),
            lambda: plain_copies(buffer, buffer.numel(), 1),
            full.numel() * size, repeat)
    measure("rebuild, views of one buffer", lambda: m.rebuild(views),
            lambda: loop_rebuild(m, views),
            lambda: plain_copies(buffer, buffer.numel(), 1),
            full.numel() * size, repeat)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dtype", default="bf16",
                        choices=["bf16", "fp16", "fp32"])
    args = parser.parse_args()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16,
             "fp32": torch.float32}[args.dtype]
    tp, cols = 8, 4096
    rows = [max(tp, int(n * args.scale)) // tp * tp
            for n in (8192, 2048, 2048)]
    qkv = affine.sub_param_map((sum(rows), cols), rows,
                               [[n // tp] * tp for n in rows], 0)
    vocab_rows = max(tp, int(128256 * args.scale)) // tp * tp
    vocab = affine.contiguous_split_map((vocab_rows, cols),
                                        [vocab_rows // tp] * tp, 0)
    cores = len(os.sched_getaffinity(0))
    for threads in sorted({1, cores}):
        bench("fused QKV", qkv, dtype, threads, args.repeat)
        bench("vocabulary", vocab, dtype, threads, args.repeat)


if __name__ == "__main__":
    main()
