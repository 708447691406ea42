#!/usr/bin/python3
"""Times ds-to-universal and ds-retarget against the copy floor.

    bench/deepspeed-bench.py [--work DIR] [--layers 20 --hidden 1024
        --ffn 2816 --vocab 32000] [--dp 2] [--repetitions 3]
        [--deepspeed DS_TO_UNIVERSAL.py] [--pp N]

Generates a bf16, AdamW, ZeRO-2 checkpoint with ucp-make-deepspeed-checkpoint
(by default 322M parameters at DP 2, 4.5 GB), then runs, in turns, on a
warm page cache:

  copy floor   cp -r of the checkpoint folder, then sync: every byte read
               and written once, which no converter can beat
  affine-run   affine-run ds-to-universal (its outputs synced to disk)
    no scan    the same with --no-value-check: what scanning every master
               and moment for NaN, Inf and negative exp_avg_sq costs
  retarget     affine-run ds-retarget to DP dp + 1 (synced)
    no scan    the same with --no-value-check
  to ZeRO-3    affine-run ds-retarget to DP dp + 1 and ZeRO-3 (synced),
               which DeepSpeed's own route cannot do
  from univ.   affine-run universal-to-ds to DP dp + 1 from the Universal
               form (made once, untimed): the offline load_universal
  export       affine-run export: the fp32 model as one safetensors file
               (synced), what zero_to_fp32.py makes
  export bf16  the same in bf16, in files of at most 200 MB
  DeepSpeed    with --deepspeed, DeepSpeed's ds_to_universal.py, then sync
               (the first half of its way to another topology; the second,
               loading the Universal checkpoint in a job, is not timed)

then, on the same model generated at TP 2 x DP dp (AutoTP, llama preset),
the copy floor and ds-retarget to TP 1 x DP dp, which DeepSpeed cannot
load; and prints, per command, the median wall time, its ratio to the copy floor
of the same run (the ratio of the medians, and the median of the ratios
of each round to that round's floor, which the disk's drift from round to
round disturbs less), the peak resident memory of the process and its children,
With --pp N, only a pipeline-parallel checkpoint instead (DeepSpeed's
PipelineModule, N stages x DP dp, ZeRO-1, bf16, --layers blocks of
--hidden and --ffn with a head of its own): the copy floor, ds-to-universal,
ds-retarget to one stage and to N + 1 stages (DeepSpeed's uniform
partition of the --layers + 3 layers), universal-to-ds from its Universal
form (made once, untimed) at DP dp + 1, layer files made from the masters,
and export.

Each table gives the peak extra disk: the most the free space fell below what it was at
the start, less the size of the final output (so, the temporary files),
and the largest file written (for a retarget, the largest target
partition's optimizer file: the memory target is that plus 256 MiB; for
an export, whose memory is bounded by the largest tensor, that tensor's
size is printed below the table).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                   "bin")

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--work", default="/tmp/ucp-deepspeed-bench")
parser.add_argument("--layers", type=int, default=20)
parser.add_argument("--hidden", type=int, default=1024)
parser.add_argument("--ffn", type=int, default=2816)
parser.add_argument("--vocab", type=int, default=32000)
parser.add_argument("--dp", type=int, default=2)
parser.add_argument("--repetitions", type=int, default=3)
parser.add_argument("--deepspeed", help="DeepSpeed's ds_to_universal.py")
parser.add_argument("--pp", type=int, default=0,
                    help="time a pipeline of this many stages only")
parser.add_argument("--python", default="/usr/bin/python3",
                    help="the Python that runs DeepSpeed's converter")
parser.add_argument("--deepspeed-pythonpath", default="",
                    help="PYTHONPATH entries DeepSpeed's converter needs "
                    "(its dependencies), for its run only")
args = parser.parse_args()


def folder_bytes(root):
    total = 0
    for folder, _, names in os.walk(root):
        total += sum(os.path.getsize(os.path.join(folder, n)) for n in names)
    return total


def free_bytes(path):
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def largest_file(root):
    largest = 0
    for folder, _, names in os.walk(root):
        for n in names:
            largest = max(largest, os.path.getsize(os.path.join(folder, n)))
    return largest


def measure(command, output, env=None):
    """Runs `command`; returns (seconds, peak RSS bytes, extra disk bytes,
    largest output file bytes)."""
    start_free = free_bytes(args.work)
    lowest = [start_free]
    done = threading.Event()

    def watch():
        while not done.is_set():
            lowest[0] = min(lowest[0], free_bytes(args.work))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    start = time.perf_counter()
    log = os.path.join(args.work, "stderr.log")
    with open(log, "w") as errors:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                   stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    done.set()
    watcher.join()
    if status != 0:
        sys.exit(f"{' '.join(command)} failed ({status}):\n" + open(log).read())
    lowest[0] = min(lowest[0], free_bytes(args.work))
    extra = (start_free - lowest[0]) - folder_bytes(output)
    return seconds, usage.ru_maxrss * 1024, max(extra, 0), largest_file(output)


def make_checkpoint(name, tp, pp=0):
    """Generates the benchmark's checkpoint at TP degree `tp` (once), or
    with `pp` a pipeline of that many stages."""
    checkpoint = os.path.join(args.work, name)
    layout = ["--pp", str(pp), "--stage", "1"] if pp else \
        ["--tp", str(tp), "--stage", "2"]
    if not os.path.isdir(checkpoint):
        subprocess.run([os.path.join(BIN, "ucp-make-deepspeed-checkpoint"),
                        "--out", checkpoint, "--dp", str(args.dp), *layout,
                        "--dtype", "bf16", "--layers", str(args.layers),
                        "--hidden", str(args.hidden), "--ffn", str(args.ffn),
                        "--vocab", str(args.vocab)], check=True)
    return os.path.join(checkpoint, "step3")


def affine_run(*arguments):
    return [os.path.join(BIN, "affine-run"), *arguments, "--quiet"]


def run_rounds(commands, warm, env):
    """Runs every command in turn, args.repetitions rounds, on a page cache
    warmed with the files under `warm`; returns each one's samples."""
    inputs = [os.path.join(d, f) for top in warm
              for d, _, names in os.walk(top) for f in names]
    subprocess.run(["cat"] + inputs, stdout=subprocess.DEVNULL, check=True)
    out = os.path.join(args.work, "out")
    samples = {name: [] for name in commands}
    for _ in range(args.repetitions):
        for name, command in commands.items():
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            target = os.path.join(out, "step3_universal")
            os.sync()  # The last run's deletions are not charged to this one.
            samples[name].append(measure(command(target), target,
                                         env if name == "DeepSpeed" else None))
        shutil.rmtree(out, ignore_errors=True)
    return samples


def print_table(source, samples):
    floor = statistics.median(s[0] for s in samples["copy floor"])
    print(f"checkpoint: {folder_bytes(source) / 1e9:.2f} GB in {source}, "
          f"{args.repetitions} runs each, medians")
    print(f"{'command':<12} {'wall s':>8} {'x floor':>8} {'paired':>8} "
          f"{'peak RSS MB':>12} {'extra disk MB':>14} {'largest file MB':>16}")
    for name, runs in samples.items():
        wall = statistics.median(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        extra = max(r[2] for r in runs)
        largest = max(r[3] for r in runs)
        paired = statistics.median(
            r[0] / f[0] for r, f in zip(runs, samples["copy floor"]))
        print(f"{name:<12} {wall:8.2f} {wall / floor:8.2f} {paired:8.2f} "
              f"{rss / 1e6:12.0f} {extra / 1e6:14.0f} {largest / 1e6:16.0f}")


def pipeline_main():
    source = make_checkpoint(f"checkpoint-pp{args.pp}", 1, args.pp)
    universal = os.path.join(args.work, f"universal-pp{args.pp}", "u")
    if not os.path.isdir(universal):
        subprocess.run(affine_run("ds-to-universal", "--inject_missing_state",
                                  "--input_folder", source, "--output_folder",
                                  universal), check=True)
    print_table(source, run_rounds({
        "copy floor": lambda o: ["sh", "-c", f'cp -r "{source}" "{o}" && sync'],
        "affine-run": lambda o: affine_run(
            "ds-to-universal", "--inject_missing_state", "--input_folder",
            source, "--output_folder", o),
        "to PP 1": lambda o: affine_run(
            "ds-retarget", "--input_folder", source, "--output_folder", o,
            "--pp", "1", "--dp", str(args.dp)),
        f"to PP {args.pp + 1}": lambda o: affine_run(
            "ds-retarget", "--input_folder", source, "--output_folder", o,
            "--pp", str(args.pp + 1), "--pp-partition",
            f"uniform:{args.layers + 3}", "--dp", str(args.dp)),
        "from univ.": lambda o: affine_run(
            "universal-to-ds", "--input_folder", universal, "--output_folder",
            o, "--dp", str(args.dp + 1)),
        "export": lambda o: affine_run(
            "export", "--input_folder", source, "--out", o),
    }, [source, universal], None))


def main():
    os.makedirs(args.work, exist_ok=True)
    if args.pp:
        return pipeline_main()
    source = make_checkpoint("checkpoint", 1)
    universal = os.path.join(args.work, "universal", "step3_universal")
    if not os.path.isdir(universal):
        subprocess.run(affine_run("ds-to-universal", "--inject_missing_state",
                                  "--input_folder", source, "--output_folder",
                                  universal), check=True)
    dp = str(args.dp + 1)
    floor = lambda folder: lambda o: [  # noqa: E731
        "sh", "-c", f'cp -r "{folder}" "{o}" && sync']
    commands = {
        "copy floor": floor(source),
        "affine-run": lambda o: affine_run(
            "ds-to-universal", "--inject_missing_state", "--input_folder",
            source, "--output_folder", o),
        "  no scan": lambda o: affine_run(
            "ds-to-universal", "--inject_missing_state", "--input_folder",
            source, "--output_folder", o, "--no-value-check"),
        "retarget": lambda o: affine_run(
            "ds-retarget", "--input_folder", source, "--output_folder", o,
            "--dp", dp),
        "  no scan ": lambda o: affine_run(
            "ds-retarget", "--input_folder", source, "--output_folder", o,
            "--dp", dp, "--no-value-check"),
        "to ZeRO-3": lambda o: affine_run(
            "ds-retarget", "--input_folder", source, "--output_folder", o,
            "--dp", dp, "--zero-stage", "3"),
        "from univ.": lambda o: affine_run(
            "universal-to-ds", "--input_folder", universal, "--output_folder",
            o, "--dp", dp),
        "export": lambda o: affine_run(
            "export", "--input_folder", source, "--out", o),
        "export bf16": lambda o: affine_run(
            "export", "--input_folder", source, "--out", o, "--dtype",
            "bf16", "--max-shard-size", "200MB"),
    }
    env = None
    if args.deepspeed:
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(args.deepspeed))))
        env = dict(os.environ, DS_ACCELERATOR="cpu")
        extra = args.deepspeed_pythonpath
        env["PYTHONPATH"] = ":".join(p for p in (root, extra) if p)
        commands["DeepSpeed"] = lambda o: [
            "sh", "-c", f'"{args.python}" "{args.deepspeed}" --input_folder '
            f'"{source}" --output_folder "{o}" --inject_missing_state && sync']
    print_table(source, run_rounds(commands, [source, universal], env))
    # The embedding (or the untied head): vocab x hidden fp32 elements.
    print(f"export: largest tensor {args.vocab * args.hidden * 4 / 1e6:.0f} "
          "MB in fp32")
    # AutoTP's TP 2 x DP 2 to TP 1 x DP 2, which DeepSpeed cannot load.
    tp2 = make_checkpoint("checkpoint-tp2", 2)
    print_table(tp2, run_rounds({
        "copy floor": floor(tp2),
        "to TP 1": lambda o: affine_run(
            "ds-retarget", "--input_folder", tp2, "--output_folder", o,
            "--dp", str(args.dp), "--tp", "1"),
    }, [tp2], None))


main()
