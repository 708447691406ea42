#!/usr/bin/env python3
"""Times the checks of `ucp.layout` annotations as their number grows:
N params and N values annotated with them (function arguments and op
results, half each), for N from 2,000 to 32,000, against the same module
with no annotation, measured in the same run.

    bench/layout-verify-bench.py [AFFINE_OPT] [--repetitions R] [--sizes N,...]

Each module is parsed, verified and given to `--ucp-verify` (which checks
each layout's symbol and shape) R times (default 5); the table shows the
median wall time of both modules, the difference (what the annotations
cost) and that cost per annotated value, which stays flat when the checks
are linear and grows with N when they are not.
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("affine_opt", nargs="?", default="build/bin/affine-opt")
parser.add_argument("--repetitions", type=int, default=5)
parser.add_argument("--sizes", default="2000,4000,8000,16000,32000")
args = parser.parse_args()


def write_module(path, count, annotate):
    """N one-element params; N/2 function arguments and N/2 constants
    annotated with them when `annotate`."""
    lines = []
    for i in range(count):
        lines.append(f"ucp.param @p{i} shape [2] world 1 {{\n"
                     f"  ucp.shard rank 0 shape [2] {{\n"
                     f"    ucp.piece [2] src 0 [1] dst 0 [1] on [0]\n"
                     f"  }}\n}}")
    arguments = count // 2
    for i in range(arguments):
        attr = f" {{ucp.layout = #ucp.layout<@p{i}>}}" if annotate else ""
        lines.append(f"func.func private @f{i}(tensor<2xf32>{attr})")
    lines.append("func.func @values() {")
    for i in range(arguments, count):
        attr = f" {{ucp.layout = #ucp.layout<@p{i}>}}" if annotate else ""
        lines.append(f"  %c{i} = arith.constant{attr} dense<0.0> : "
                     f"tensor<2xf32>")
    lines.append("  return\n}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def time_once(path):
    start = time.perf_counter()
    subprocess.run([args.affine_opt, path, "--ucp-verify", "-o", os.devnull],
                   check=True)
    return time.perf_counter() - start


print(f"{'values':>8} {'plain s':>9} {'annotated s':>12} {'layouts s':>10} "
      f"{'us/value':>9}")
with tempfile.TemporaryDirectory() as folder:
    for count in map(int, args.sizes.split(",")):
        plain = os.path.join(folder, f"plain{count}.mlir")
        annotated = os.path.join(folder, f"annotated{count}.mlir")
        write_module(plain, count, False)
        write_module(annotated, count, True)
        # Alternated, so that drift on a shared machine hits both alike.
        plain_times, annotated_times = [], []
        for _ in range(args.repetitions):
            plain_times.append(time_once(plain))
            annotated_times.append(time_once(annotated))
        a = statistics.median(annotated_times)
        p = statistics.median(plain_times)
        print(f"{count:>8} {p:>9.3f} {a:>12.3f} {a - p:>10.3f} "
              f"{(a - p) / count * 1e6:>9.2f}", flush=True)
