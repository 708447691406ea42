#!/usr/bin/python3
"""Times affine-run check against reading the checkpoint's bytes once.

    bench/check-bench.py [--work DIR] [--layers 20 --hidden 1024 --ffn 2816
        --vocab 32000] [--dp 2] [--repetitions 3] [--bin DIR] [--warm-only]

Generates a bf16, AdamW, ZeRO-2 checkpoint with ucp-make-deepspeed-checkpoint
(by default 322M parameters at DP 2, 4.3 GB), then, in turns, each round:
`cat` of its files to /dev/null and `affine-run check` on a warm page
cache, then both again on a cold one (the page cache dropped before each,
where this process may write /proc/sys/vm/drop_caches; otherwise the cold
rows are left out). Prints per command the median wall time, its ratio to
the `cat` of the same cache state (the ratio of the medians, and the median
of each round's ratio) and the peak resident memory.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                   "bin")

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--work", default="/tmp/ucp-check-bench")
parser.add_argument("--layers", type=int, default=20)
parser.add_argument("--hidden", type=int, default=1024)
parser.add_argument("--ffn", type=int, default=2816)
parser.add_argument("--vocab", type=int, default=32000)
parser.add_argument("--dp", type=int, default=2)
parser.add_argument("--repetitions", type=int, default=3)
parser.add_argument("--bin", default=BIN, help="the folder of the tools")
parser.add_argument("--warm-only", action="store_true",
                    help="leave the page cache as it is (no cold rows)")
args = parser.parse_args()


def measure(command):
    """Runs `command`; returns (seconds, peak RSS bytes)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        sys.exit(f"{' '.join(command)} failed ({status})")
    return time.perf_counter() - start, usage.ru_maxrss * 1024


def drop_caches():
    """Empties the page cache; False where this process may not."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def main():
    folder = os.path.join(args.work, "checkpoint", "step3")
    if not os.path.isdir(folder):
        subprocess.run([os.path.join(args.bin, "ucp-make-deepspeed-checkpoint"),
                        "--out", os.path.dirname(folder), "--dp",
                        str(args.dp), "--stage", "2", "--layers",
                        str(args.layers), "--hidden", str(args.hidden),
                        "--ffn", str(args.ffn), "--vocab", str(args.vocab)],
                       check=True)
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder))
    size = sum(os.path.getsize(f) for f in files)
    commands = {
        "cat": ["sh", "-c", 'cat "$@" > /dev/null', "cat"] + files,
        "check": [os.path.join(args.bin, "affine-run"), "check", "--quiet",
                  folder],
    }
    cold = not args.warm_only and drop_caches()
    samples = {}
    for _ in range(args.repetitions):
        for cache in ("warm", "cold") if cold else ("warm",):
            for name, command in commands.items():
                if cache == "cold":
                    drop_caches()
                else:
                    subprocess.run(commands["cat"], check=True)
                samples.setdefault((cache, name), []).append(measure(command))
    print(f"checkpoint: {size / 1e9:.2f} GB in {len(files)} files, "
          f"{args.repetitions} rounds, medians")
    print(f"{'cache':<6} {'command':<8} {'wall s':>8} {'x cat':>7} "
          f"{'paired':>7} {'GB/s':>6} {'peak RSS MB':>12}")
    for (cache, name), runs in samples.items():
        floor = samples[(cache, "cat")]
        wall = statistics.median(r[0] for r in runs)
        paired = statistics.median(r[0] / f[0] for r, f in zip(runs, floor))
        print(f"{cache:<6} {name:<8} {wall:8.2f} "
              f"{wall / statistics.median(f[0] for f in floor):7.2f} "
              f"{paired:7.2f} {size / wall / 1e9:6.2f} "
              f"{max(r[1] for r in runs) / 1e6:12.0f}")


if __name__ == "__main__":
    main()
