"""Checks ucp-make-deepspeed-checkpoint's files against real ones.

    compare_generated.py GENERATOR FIXTURES OUT RUN...

For every RUN (a fixture FIXTURES/RUN/checkpoint/<tag> of ZeRO-1/2 without
TP), generates a checkpoint of the same parameters, stage, DP degree and
dtype into OUT/RUN and compares every file with the real one once
torch.load has read it: the same file names, types, keys in the same
order, DeepSpeed's objects with the same fields, the same scalars, tensors
of the same dtype, shape, strides, storage offset and requires_grad, and
the same storages shared by the same tensors. Only the tensors' elements
differ. Prints one line per run; exits 1 at the first difference.
"""
import os
import re
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_universal import compare  # noqa: E402
from compare_with_torch import load  # noqa: E402


def storages(value, found):
    """The storage of every tensor of `value`, in order, as indices of
    first appearance."""
    if isinstance(value, torch.Tensor):
        key = value.storage().data_ptr()
        found.setdefault(key, len(found))
        return [found[key]]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [i for item in value for i in storages(item, found)]
    if hasattr(value, "__dict__"):
        return storages(value.__dict__, found)
    return []


def pipeline_args(real, model):
    """The generator's options for a PipelineModule run like `real`'s: its
    stages, blocks, widths and tie, read off its layer files."""
    stages = model["checkpoint_parallel_dimensions"]["pp_degree"]
    layers = {int(n[6:8]): load(os.path.join(real, n))
              for n in os.listdir(real) if n.startswith("layer_")}
    blocks = [l for l in layers.values() if "fc1.weight" in l]
    vocab, hidden = layers[0]["weight"].shape
    tied = len(blocks) + 2 not in layers
    return (["--pp", str(stages), "--layers", str(len(blocks)),
             "--hidden", str(hidden), "--vocab", str(vocab),
             "--ffn", str(blocks[0]["fc1.weight"].shape[0])] +
            (["--tie-embeddings"] if tied else []))


def main(generator, fixtures, out, *runs):
    for run in runs:
        folder = os.path.join(fixtures, run, "checkpoint")
        with open(os.path.join(folder, "latest")) as f:
            tag = f.read()
        real = os.path.join(folder, tag)
        names = sorted(os.listdir(real))
        ours = os.path.join(out, run)
        model = torch.load(os.path.join(real, "mp_rank_00_model_states.pt"))
        stage = model["ds_config"]["zero_optimization"]["stage"]
        dtype = "bf16" if "bf16" in model["ds_config"] else "fp32"
        pipeline = model["module"] is None
        like = pipeline_args(real, model) if pipeline else ["--like", real]
        subprocess.run([generator, "--out", ours, "--tag", tag, *like,
                        "--dp", str(model["dp_world_size"]), "--stage",
                        str(stage), "--dtype", dtype,
                        "--steps", str(model["global_steps"])],
                       check=True, stdout=subprocess.DEVNULL)
        if sorted(os.listdir(os.path.join(ours, tag))) != names:
            print(f"{run}: files {sorted(os.listdir(ours))} vs {names}")
            return 1
        for name in names:
            a = load(os.path.join(ours, tag, name))
            b = load(os.path.join(real, name))
            difference = compare(a, b, "$", values=False)
            if not difference and storages(a, {}) != storages(b, {}):
                difference = "tensors share storages differently"
            if difference:
                print(f"{run}/{name}: {difference}")
                return 1
        print(f"{run}: {len(names)} files match but for their values")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
