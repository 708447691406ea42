#!/usr/bin/python3
"""Times the DeepSpeed jobs under --mpi against one process and cp.

    bench/mpi-jobs-bench.py [--checkpoint DIR] [--processes 1,2,4]
        [--repetitions 3] [--bin DIR] [--mpirun "mpirun --oversubscribe"]

On a DeepSpeed tag folder (by default the 322M-parameter bf16 ZeRO-2 DP 2
checkpoint bench/deepspeed-bench.py generates), each round runs, in turns:
`cp -r` of the folder and `sync` (the copy floor: every byte read once
and written once, on disk when it returns, as the jobs' outputs are),
ds-retarget to DP 3 in one process, and the same with --mpi under
mpirun at each process count; then the same for ds-to-universal,
universal-to-ds to DP 3 (from a Universal folder ds-to-universal makes
first) and check, and every job in the node-local storage model
(--node-local: the input's files, its subfolders' too, dealt to a folder
of each process's own, as hard links, file i of the sorted paths to
process i % N; each process given its own folder). The page cache is
warm (each command reads what the one before read). Prints per command
the median wall time, its ratio to cp and to the single process (the
ratio of the medians and the median of each round's ratio).
"""
import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                   "bin")

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--checkpoint",
                    default="/tmp/ucp-deepspeed-bench/checkpoint/step3")
parser.add_argument("--work", default="/tmp/ucp-mpi-jobs-bench")
parser.add_argument("--processes", default="1,2,4")
parser.add_argument("--repetitions", type=int, default=3)
parser.add_argument("--bin", default=BIN, help="the folder of the tools")
parser.add_argument("--mpirun", default="mpirun --oversubscribe")
args = parser.parse_args()


def measure(command, output):
    """Runs `command` writing `output` (removed before and after); returns
    its wall seconds."""
    shutil.rmtree(output, ignore_errors=True)
    os.makedirs(output)
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({result.returncode})")
    shutil.rmtree(output, ignore_errors=True)
    return seconds


def tree(folder):
    """Every file under `folder`, relative, sorted."""
    return sorted(os.path.relpath(os.path.join(root, name), folder)
                  for root, _, files in os.walk(folder) for name in files)


def node_local(mpirun, run, source, arguments, processes):
    """mpirun running `arguments` with --node-local on `processes`
    processes, each given a folder of its own holding some of the files
    under `source` (hard links), one application context each."""
    names = tree(source)
    contexts = []
    for p in range(processes):
        folder = os.path.join(args.work, f"local{processes}", f"p{p}")
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for name in names[p::processes]:
            os.makedirs(os.path.dirname(os.path.join(folder, name)),
                        exist_ok=True)
            os.link(os.path.join(source, name), os.path.join(folder, name))
        given = [folder if a == source else a for a in arguments]
        contexts += ["-np", "1", run] + given + ["--mpi", "--node-local", ":"]
    return mpirun + contexts[:-1]


def main():
    run = os.path.join(args.bin, "affine-run")
    mpirun = shlex.split(args.mpirun)
    size = sum(os.path.getsize(os.path.join(args.checkpoint, f))
               for f in os.listdir(args.checkpoint))
    out = os.path.join(args.work, "out")
    tag = os.path.join(out, "step3")
    universal = os.path.join(args.work, "universal", "step3_universal")
    shutil.rmtree(os.path.dirname(universal), ignore_errors=True)
    subprocess.run([run, "ds-to-universal", "--input_folder", args.checkpoint,
                    "--output_folder", universal, "--inject_missing_state",
                    "--quiet"], check=True)
    # Each job: its input folder and its arguments.
    jobs = {
        "ds-retarget --dp 3": (args.checkpoint, [
            "ds-retarget", "--input_folder", args.checkpoint,
            "--output_folder", tag, "--dp", "3", "--quiet"]),
        "ds-to-universal": (args.checkpoint, [
            "ds-to-universal", "--input_folder", args.checkpoint,
            "--output_folder", tag, "--inject_missing_state", "--quiet"]),
        "universal-to-ds --dp 3": (universal, [
            "universal-to-ds", "--input_folder", universal,
            "--output_folder", tag, "--dp", "3", "--quiet"]),
        "check": (args.checkpoint, ["check", args.checkpoint, "--quiet"]),
    }
    counts = [int(n) for n in args.processes.split(",")]
    samples = {}
    for _ in range(args.repetitions):
        samples.setdefault("cp", []).append(measure(
            ["sh", "-c", 'cp -r "$0" "$1" && sync', args.checkpoint, tag],
            out))
        for job, (source, arguments) in jobs.items():
            samples.setdefault((job, 0), []).append(
                measure([run] + arguments, out))
            for n in counts:
                samples.setdefault((job, n), []).append(measure(
                    mpirun + ["-np", str(n), run] + arguments + ["--mpi"],
                    out))
        for job, (source, arguments) in jobs.items():
            for n in counts:
                samples.setdefault((job + " node-local", n), []).append(
                    measure(node_local(mpirun, run, source, arguments, n),
                            out))
    floor = samples.pop("cp")
    print(f"checkpoint: {size / 1e9:.2f} GB, {args.repetitions} rounds, "
          f"medians; cp -r and sync {statistics.median(floor):.2f} s")
    print(f"{'job':<29} {'processes':>9} {'wall s':>7} {'x cp':>6} "
          f"{'x alone':>8} {'paired':>7}")
    for (job, n), runs in samples.items():
        alone = samples[(job.replace(" node-local", ""), 0)]
        wall = statistics.median(runs)
        paired = statistics.median(r / a for r, a in zip(runs, alone))
        print(f"{job:<29} {n if n else 'alone':>9} {wall:7.2f} "
              f"{wall / statistics.median(floor):6.2f} "
              f"{wall / statistics.median(alone):8.2f} {paired:7.2f}")


if __name__ == "__main__":
    main()
