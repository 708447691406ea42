"""Checks affine-run universal-to-ds against ds-retarget on real checkpoints.

    universal_to_ds.py AFFINE_RUN FIXTURES OUT RUN:DP:STAGE[:TP[:KV[:EP]]]...

For each RUN of FIXTURES/deepspeed or FIXTURES/deepspeed-autoep, writes
the checkpoint at DP degree DP, ZeRO stage STAGE, TP degree TP (the
model's kv-head count KV given where the split rules need it) and AutoEP
size EP (empty fields: the source's) three ways: ds-retarget from the
checkpoint itself, and universal-to-ds from its Universal form as
DeepSpeed's converter wrote it (RUN/universal) and as
ds-to-universal writes it. The three must hold the same files, equal once
torch.load has read them (tensors bit for bit). Prints one line per case;
exits 1 at the first difference.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_universal import compare  # noqa: E402
from compare_with_torch import load  # noqa: E402


def write(affine_run, command, source, target, dp, stage, tp, kv, ep):
    subprocess.run([affine_run, command, "--quiet", "--input_folder", source,
                    "--output_folder", target, "--dp", dp, "--zero-stage",
                    stage] + (["--tp", tp] if tp else []) +
                   (["--num-kv-heads", kv] if kv else []) +
                   (["--autoep-size", ep] if ep else []), check=True)


def same_files(a, b):
    names = sorted(os.listdir(a))
    if sorted(os.listdir(b)) != names:
        return f"files {sorted(os.listdir(b))} vs {names}"
    for name in names:
        difference = compare(load(os.path.join(b, name)),
                             load(os.path.join(a, name)), name + ": $")
        if difference:
            return difference
    return None


def main(affine_run, fixtures, out, *cases):
    for case in cases:
        run, dp, stage, tp, kv, ep = (case.split(":") + [None] * 3)[:6]
        root = os.path.join(fixtures, "deepspeed", run)
        if not os.path.isdir(root):
            root = os.path.join(fixtures, "deepspeed-autoep", run)
        with open(os.path.join(root, "checkpoint", "latest")) as f:
            tag = f.read()
        with open(os.path.join(root, "universal", "latest_universal")) as f:
            deepspeeds = os.path.join(root, "universal", f.read())
        work = os.path.join(out, case.replace(":", "_"))
        ours = os.path.join(work, "universal", "u")
        subprocess.run([affine_run, "ds-to-universal", "--quiet",
                        "--inject_missing_state", "--input_folder",
                        os.path.join(root, "checkpoint", tag),
                        "--output_folder", ours], check=True)
        direct = os.path.join(work, "direct", tag)
        write(affine_run, "ds-retarget", os.path.join(root, "checkpoint", tag),
              direct, dp, stage, tp, kv, ep)
        for name, form in (("DeepSpeed's", deepspeeds), ("ours", ours)):
            target = os.path.join(work, name.strip("'s"), tag)
            write(affine_run, "universal-to-ds", form, target, dp, stage, tp,
                  kv, ep)
            difference = same_files(direct, target)
            if difference:
                print(f"{case}: from {name} Universal form: {difference}")
                return 1
        print(f"{case}: from either Universal form, "
              f"{len(os.listdir(direct))} files as ds-retarget writes them")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
