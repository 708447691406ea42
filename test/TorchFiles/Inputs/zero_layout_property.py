"""A property test of the ZeRO-1/2 layout, read and written.

    zero_layout_property.py AFFINE_RUN GENERATOR VERIFY OUT [CASES]

For CASES seeded draws of a model (hidden, layers, ffn and vocabulary
sizes that make odd group totals), a DP degree and a stage, the generator
(which has its own flattening) writes a checkpoint; ds-to-universal must
read it into a Universal checkpoint that VERIFY (scripts/verify-universal.py,
a plain reference with its own layout rule) accepts; ds-retarget then
writes it at another drawn DP degree and stage, and VERIFY must find that
checkpoint laid out by the rule and holding the same tensors. Prints one
line per case; exits 1 at the first failure.
"""
import random
import subprocess
import sys


def main(affine_run, generator, verify, out, cases="8"):
    rng = random.Random(20261203)
    for case in range(int(cases)):
        hidden = rng.choice([16, 24, 40])
        model = ["--hidden", str(hidden), "--layers", str(rng.randint(1, 3)),
                 "--ffn", str(rng.randint(17, 90)),
                 "--vocab", str(rng.randint(5, 77))]
        dp, stage = rng.randint(1, 6), rng.choice([1, 2])
        to_dp, to_stage = rng.randint(1, 6), rng.choice([1, 2])
        folder = f"{out}/{case}"
        steps = [
            [generator, "--out", f"{folder}/source", "--dp", str(dp),
             "--stage", str(stage), "--seed", str(case), *model],
            [affine_run, "ds-to-universal", "--quiet", "--inject_missing_state",
             "--input_folder", f"{folder}/source/step3", "--output_folder",
             f"{folder}/universal"],
            [sys.executable, verify, f"{folder}/source/step3",
             f"{folder}/universal"],
            [affine_run, "ds-retarget", "--quiet", "--input_folder",
             f"{folder}/source/step3", "--output_folder",
             f"{folder}/target/step3", "--dp", str(to_dp), "--zero-stage",
             str(to_stage)],
            [sys.executable, verify, f"{folder}/target/step3",
             f"{folder}/universal"],
        ]
        for step in steps:
            done = subprocess.run(step, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            if done.returncode != 0:
                print(f"case {case} ({' '.join(model)}, DP {dp} ZeRO-{stage} "
                      f"-> DP {to_dp} ZeRO-{to_stage}): {' '.join(step[:2])} "
                      f"failed:\n{done.stdout}")
                return 1
        print(f"case {case}: DP {dp} ZeRO-{stage} -> DP {to_dp} "
              f"ZeRO-{to_stage}: layout and tensors verified")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
