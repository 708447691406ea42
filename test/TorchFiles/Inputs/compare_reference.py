"""Checks affine-run ds-to-universal against the live engine's state.

    compare_reference.py AFFINE_RUN FIXTURES OUT

For every run FIXTURES/<name>/ with reference/full_fp32_and_adam_state.pt
({parameter: {fp32, exp_avg, exp_avg_sq}}, read from the engine that saved
checkpoint/<tag>/), converts the checkpoint into OUT/<name>/<tag>_universal
and checks that zero/<parameter>/<state>.pt holds exactly those tensors,
bit for bit, for every parameter and no other. Prints one line per run and
exits 1 at the first difference.
"""
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_with_torch import load  # noqa: E402


def main(affine_run, fixtures, out):
    for run in sorted(os.listdir(fixtures)):
        reference = os.path.join(fixtures, run, "reference",
                                 "full_fp32_and_adam_state.pt")
        if not os.path.isfile(reference):
            continue
        with open(os.path.join(fixtures, run, "checkpoint", "latest")) as f:
            tag = f.read().strip()
        universal = os.path.join(out, run, tag + "_universal")
        subprocess.run([affine_run, "ds-to-universal", "--quiet",
                        "--inject_missing_state", "--input_folder",
                        os.path.join(fixtures, run, "checkpoint", tag),
                        "--output_folder", universal], check=True)
        expected = torch.load(reference)
        zero = os.path.join(universal, "zero")
        names = {n for n in os.listdir(zero)
                 if os.path.isdir(os.path.join(zero, n))}
        if names != set(expected):
            print(f"{run}: parameters {sorted(names ^ set(expected))} differ")
            return 1
        for name, states in expected.items():
            for state, want in states.items():
                got = load(os.path.join(zero, name, state + ".pt"))
                got = got["param"] if isinstance(got, dict) else got
                if got.dtype != want.dtype or got.shape != want.shape or \
                        not torch.equal(got.view(torch.uint8),
                                        want.view(torch.uint8)):
                    print(f"{run}: {name} {state} differs")
                    return 1
        print(f"{run}: {len(expected)} parameters equal the live engine's "
              "fp32 weights and Adam moments")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
