"""Runs random plans lowered by --ucp-plans-to-memref through MLIR's own
pipeline to LLVM and mlir-cpu-runner, and compares every target element
with what the CPU executor writes for the same plan and data.

    memref_lowering.py AFFINE_TRANSLATE AFFINE_OPT MLIR_OPT RUNNER LIBDIR CASES

The source shards hold integers below 1000 (as f32), so every value the
copies and power-of-two factors produce prints exactly. Prints one line
per case; exits 1 at the first difference.
"""
import math
import os
import random
import re
import subprocess
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
import affine_ucp as u  # noqa: E402
from conftest import same_shape_pair  # noqa: E402

LOWER = ("builtin.module(convert-scf-to-cf,expand-strided-metadata,"
         "finalize-memref-to-llvm,convert-arith-to-llvm,convert-func-to-llvm,"
         "convert-cf-to-llvm,reconcile-unrealized-casts)")


def main_function(plan, sources):
    """A main that calls the plan's function on constant sources and prints
    each target."""
    lines = ["func.func private @printMemrefF32(memref<*xf32>)"]
    args, types, prints = [], [], []
    body = []
    for rank in sorted(plan.source_shards):
        n = math.prod(plan.source_shards[rank])
        values = ", ".join(f"{v:.1f}" for v in sources[rank].reshape(-1).tolist())
        lines.append(f'memref.global "private" constant @src{rank} : '
                     f'memref<{n}xf32> = dense<[{values}]>')
        body.append(f"  %s{rank} = memref.get_global @src{rank} : "
                    f"memref<{n}xf32>")
        args.append(f"%s{rank}")
        types.append(f"memref<{n}xf32>")
    for rank in sorted(plan.target_shards):
        n = math.prod(plan.target_shards[rank])
        body.append(f"  %t{rank} = memref.alloc() : memref<{n}xf32>")
        args.append(f"%t{rank}")
        types.append(f"memref<{n}xf32>")
        if n == 0:  # Nothing to print (and the printer misprints it).
            continue
        prints.append(f"  %u{rank} = memref.cast %t{rank} : memref<{n}xf32> "
                      "to memref<*xf32>\n"
                      f"  call @printMemrefF32(%u{rank}) : (memref<*xf32>) "
                      "-> ()")
    body.append(f"  call @{plan.name}({', '.join(args)}) : "
                f"({', '.join(types)}) -> ()")
    lines.append("func.func @main() {\n" + "\n".join(body + prints) +
                 "\n  return\n}")
    return "\n".join(lines)


def run(command, text):
    return subprocess.run(command, input=text, capture_output=True, text=True,
                          check=True).stdout


def main(affine_translate, affine_opt, mlir_opt, runner, libdir, cases):
    rng = random.Random(7)
    generator = torch.Generator().manual_seed(7)
    libs = ",".join(os.path.join(libdir, name) for name in
                    ("libmlir_c_runner_utils.so", "libmlir_runner_utils.so"))
    # A padded vocabulary (fills), a scaled bias (factors), then random
    # pairs of layouts.
    fixed = [(u.padded_vocab_layout("vocab", 10, 3, 4),
              u.padded_vocab_layout("vocab", 10, 3, 3)),
             (u.scaled_bias_layout("bias", [6, 2], 4),
              u.split_layout("bias", [6, 2], 1, [1, 1]))]
    for case in range(int(cases)):
        a, b = fixed[case] if case < len(fixed) else same_shape_pair(rng)
        [plan] = u.compose([a], [b], rng.choice(["lowest", "balance"]))
        sources = {r: torch.randint(0, 1000, shape, generator=generator)
                   .float() for r, shape in plan.source_shards.items()}
        expected = u.run_plan(plan, sources)
        functions = run([affine_opt, "--ucp-plans-to-memref", "-"],
                        run([affine_translate, "--import-plan-json", "-"],
                            u.write_plans([plan])))
        module = functions.strip()
        assert module.startswith("module {") and module.endswith("}")
        module = module[:-1] + main_function(plan, sources) + "\n}\n"
        llvm = run([mlir_opt, f"--pass-pipeline={LOWER}", "-"], module)
        printed = run([runner, "-e", "main", "-entry-point-result=void",
                       f"-shared-libs={libs}"], llvm)
        rows = re.findall(r"data = \n\[([^\]]*)\]", printed)
        expected = {r: t for r, t in expected.items() if t.numel()}
        for (rank, tensor), row in zip(sorted(expected.items()), rows):
            got = torch.tensor([float(x) for x in row.split(",")])
            if not torch.equal(got, tensor.reshape(-1)):
                print(f"case {case} ({plan.name}): target rank {rank} differs: "
                      f"{got.tolist()} vs {tensor.reshape(-1).tolist()}")
                return 1
        if len(rows) != len(expected):
            print(f"case {case}: {len(rows)} targets printed, "
                  f"{len(expected)} expected")
            return 1
        print(f"case {case} ({plan.name}, {len(plan.segments)} copies, "
              f"{len(plan.fills)} fills): {len(rows)} targets equal the "
              "executor's")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
