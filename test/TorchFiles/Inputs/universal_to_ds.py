"""Checks affine-run universal-to-ds against ds-retarget on real checkpoints.

    universal_to_ds.py AFFINE_RUN FIXTURES OUT \
        RUN:DP:STAGE[:TP[:KV[:EP[:PP[:PARTS[:TIED]]]]]]...

For each RUN of FIXTURES/deepspeed, FIXTURES/deepspeed-autoep or
FIXTURES/deepspeed-pp, writes the checkpoint at DP degree DP, ZeRO stage
STAGE, TP degree TP (the model's kv-head count KV given where the split
rules need it), AutoEP size EP and pipeline stages PP (PARTS their
boundaries, for --pp-partition; TIED a tied module's layers, KEY=L1,L2,
for --pp-tied; empty fields: the source's) three ways: ds-retarget from
the checkpoint itself, and universal-to-ds from its Universal form as
DeepSpeed's converter wrote it (RUN/universal, where there is one) and as
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


def write(affine_run, command, source, target, dp, stage, tp, kv, ep,
          pipeline=()):
    subprocess.run([affine_run, command, "--quiet", "--input_folder", source,
                    "--output_folder", target, "--dp", dp, "--zero-stage",
                    stage] + (["--tp", tp] if tp else []) +
                   (["--num-kv-heads", kv] if kv else []) +
                   (["--autoep-size", ep] if ep else []) + list(pipeline),
                   check=True)


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
        run, dp, stage, tp, kv, ep, pp, parts, tied = (
            case.split(":") + [None] * 6)[:9]
        for collection in ("deepspeed", "deepspeed-autoep", "deepspeed-pp"):
            root = os.path.join(fixtures, collection, run)
            if os.path.isdir(root):
                break
        with open(os.path.join(root, "checkpoint", "latest")) as f:
            tag = f.read()
        forms = []
        pointer = os.path.join(root, "universal", "latest_universal")
        if os.path.exists(pointer):
            with open(pointer) as f:
                forms.append(("DeepSpeed's",
                              os.path.join(root, "universal", f.read())))
        # ds-retarget takes --pp-tied only where the stages change;
        # universal-to-ds needs it to write a tied module's layer file.
        stages = (["--pp", pp] if pp else []) + \
            (["--pp-partition", parts] if parts else [])
        layers = ["--pp-tied", tied] if tied else []
        work = os.path.join(out, case.replace(":", "_"))
        ours = os.path.join(work, "universal", "u")
        subprocess.run([affine_run, "ds-to-universal", "--quiet",
                        "--inject_missing_state", "--input_folder",
                        os.path.join(root, "checkpoint", tag),
                        "--output_folder", ours], check=True)
        forms.append(("ours", ours))
        direct = os.path.join(work, "direct", tag)
        write(affine_run, "ds-retarget", os.path.join(root, "checkpoint", tag),
              direct, dp, stage, tp, kv, ep,
              stages + (layers if parts else []))
        for name, form in forms:
            target = os.path.join(work, name.strip("'s"), tag)
            write(affine_run, "universal-to-ds", form, target, dp, stage, tp,
                  kv, ep, stages + layers)
            difference = same_files(direct, target)
            if difference:
                print(f"{case}: from {name} Universal form: {difference}")
                return 1
        print(f"{case}: from {'either Universal form' if len(forms) > 1 else 'its Universal form'}, "
              f"{len(os.listdir(direct))} files as ds-retarget writes them")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
