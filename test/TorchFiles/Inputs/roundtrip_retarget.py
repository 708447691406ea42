"""Retargets real checkpoints A -> B -> A and checks that A comes back.

    roundtrip_retarget.py AFFINE_RUN FIXTURES OUT \
        RUN:DP:STAGE[:TP[:KV[:EP[:PP:PARTS[:TIED]]]]]...

For each RUN of FIXTURES/deepspeed, FIXTURES/deepspeed-autoep or
FIXTURES/deepspeed-pp (a ZeRO checkpoint; an absolute RUN is a checkpoint
folder with its `latest`), retargets it to DP degree DP,
ZeRO stage STAGE, TP degree TP (the model's kv-head count KV given where the
split rules need it), AutoEP size EP and pipeline stages PP (as N or
N@B0,...,BN with the stages' boundaries; empty fields: the source's), then back to its own degrees, stage, AutoEP size and stages
(PARTS its stage boundaries, TIED a tied module's layers as KEY=L1,L2, for
--pp-partition and --pp-tied), and compares every file of the result with the original once
torch.load has read it: the same content, tensors bit for bit, but for
the padding of ZeRO-3 partitions, which DeepSpeed leaves uninitialised and
a retarget writes as zeros (the original's is zeroed first). B is also
converted to Universal form, whose every parameter file must equal the
source's: the same full tensors. Prints one line per case; exits 1 at the
first difference.
"""
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_universal import compare  # noqa: E402
from compare_with_torch import load  # noqa: E402


def retarget(affine_run, source, target, dp, stage, tp=None, kv=None,
             ep=None, pipeline=()):
    subprocess.run([affine_run, "ds-retarget", "--quiet", "--input_folder",
                    source, "--output_folder", target, "--dp", str(dp),
                    "--zero-stage", str(stage)] +
                   (["--tp", str(tp)] if tp else []) +
                   (["--num-kv-heads", str(kv)] if kv else []) +
                   (["--autoep-size", str(ep)] if ep else []) +
                   list(pipeline), check=True)


def flat(value):
    """A Universal parameter file's tensor, flattened."""
    return (value["param"] if isinstance(value, dict) else value).reshape(-1)


def same_universal(affine_run, a, b, out):
    """Whether the Universal forms of checkpoints a and b hold the same
    parameter files."""
    forms = []
    for name, source in (("a", a), ("b", b)):
        target = os.path.join(out, "universal-" + name, "u")
        subprocess.run([affine_run, "ds-to-universal", "--quiet",
                        "--inject_missing_state", "--input_folder", source,
                        "--output_folder", target], check=True)
        forms.append(os.path.join(target, "zero"))
    params = sorted(p for p in os.listdir(forms[0])
                    if os.path.isdir(os.path.join(forms[0], p)))
    if params != sorted(p for p in os.listdir(forms[1])
                        if os.path.isdir(os.path.join(forms[1], p))):
        return "not the same parameters"
    for param in params:
        # The same values, whatever the form: ZeRO-3 without TP writes a
        # bare flat tensor, the others {"param": tensor, ...}; step.pt is
        # ZeRO-1/2's only.
        for state in ("fp32.pt", "exp_avg.pt", "exp_avg_sq.pt"):
            a_, b_ = (flat(load(os.path.join(form, param, state)))
                      for form in forms)
            difference = compare(b_, a_, param + "/" + state)
            if difference:
                return difference
    return None


def zero_padding(states, model, rank):
    """Zeroes the padding of each parameter's slots in a ZeRO-3 optimizer
    file of DP rank `rank`, with the shapes of `model`'s param_shapes (an
    AutoEP expert group is partitioned over the rank's EDP group, as
    ds_zero_partition_groups records)."""
    optimizer = states["optimizer_state_dict"]
    base = optimizer["optimizer_state_dict"]
    partitions = optimizer.get("ds_zero_partition_groups")
    for g, shapes in enumerate(model["param_shapes"]):
        dp = optimizer["partition_count"]
        if partitions:
            dp = partitions[g]["partition_count"]
            rank = partitions[g]["partition_rank"]
        flats = [optimizer["fp32_flat_groups"][g], base["state"][g]["exp_avg"],
                 base["state"][g]["exp_avg_sq"]]
        offset = 0
        for shape in shapes.values():
            numel = math.prod(shape)
            slots = -(-numel // dp)
            real = max(0, min(slots, numel - rank * slots))
            for flat in flats:
                flat.data[offset + real:offset + slots] = 0
            offset += slots


def main(affine_run, fixtures, out, *cases):
    for case in cases:
        run, dp, stage, tp, kv, ep, pp, parts, tied = (
            case.split(":") + [None] * 6)[:9]
        for collection in ("deepspeed", "deepspeed-autoep", "deepspeed-pp"):
            folder = os.path.join(fixtures, collection, run, "checkpoint")
            if os.path.isdir(folder) or os.path.isabs(run):
                break
        if os.path.isabs(run):  # A checkpoint made by an earlier step.
            folder = run
        with open(os.path.join(folder, "latest")) as f:
            tag = f.read()
        original = os.path.join(folder, tag)
        model = load(os.path.join(original, sorted(
            n for n in os.listdir(original) if n.endswith(
                "mp_rank_00_model_states.pt") and not n.startswith(
                    "layer_"))[0]))
        work = os.path.join(out, case.replace(":", "_").replace("/", "_"))
        there = os.path.join(work, "there", tag)
        back = os.path.join(work, "back", tag)
        stages_there, _, parts_there = (pp or "").partition("@")
        retarget(affine_run, original, there, dp, stage, tp, kv, ep,
                 (["--pp", stages_there] if pp else []) +
                 (["--pp-partition", parts_there] if parts_there else []) +
                 (["--pp-tied", tied] if parts_there and tied else []))
        difference = same_universal(affine_run, original, there,
                                    os.path.dirname(os.path.dirname(there)))
        if not difference and model.get("optimizer") is not None:
            difference = optimizer_copies_differ(there)
        if difference:
            print(f"{case}: the Universal forms differ: {difference}")
            return 1
        layers = model.get("ds_autoep_layers")
        dimensions = model.get("checkpoint_parallel_dimensions") or {}
        stages = dimensions.get("pp_degree", 1)
        pipeline = (["--pp", str(stages)] +
                    (["--pp-partition", parts] if parts else []) +
                    (["--pp-tied", tied] if tied else [])) if pp else []
        # A BF16_Optimizer run records ZeRO stage 0, its form ZeRO-1's.
        retarget(affine_run, there, back, model["dp_world_size"],
                 max(model["ds_config"]["zero_optimization"]["stage"], 1),
                 model["mp_world_size"] // stages, kv,
                 layers[0]["ep_size"] if layers else None, pipeline)
        def unpad(name, expected):
            if model["ds_config"]["zero_optimization"]["stage"] == 3 and \
                    "optim_states" in name:
                zero_padding(expected, model, int(
                    name.split("zero_pp_rank_")[1].split("_")[0]))
        difference = same_files(back, original, unpad)
        if difference:
            print(f"{case}/{difference}")
            return 1
        print(f"{case}: the same full tensors there, "
              f"{len(os.listdir(original))} files back as they were")
    return 0


def optimizer_copies_differ(folder):
    """Why the optimizer a ZeRO stage 0 run keeps in each model-states file
    of `folder` is not its DP rank 0's optimizer file's, or None."""
    for name in sorted(os.listdir(folder)):
        if not name.startswith("mp_rank_"):
            continue
        rank = name[len("mp_rank_"):len("mp_rank_") + 2]
        states = [os.path.join(folder, prefix + "zero_pp_rank_0_mp_rank_" +
                               rank + "_optim_states.pt")
                  for prefix in ("bf16_", "")]
        states = [s for s in states if os.path.exists(s)][0]
        difference = compare(
            load(os.path.join(folder, name))["optimizer"],
            load(states)["optimizer_state_dict"], name + "['optimizer']")
        if difference:
            return difference
    return None


def same_files(folder, expected, prepare=lambda name, value: None):
    """Why `folder` does not hold the files of folder `expected`, each the
    same once torch.load has read it (`prepare(name, value)` first edits
    each expected one), or None."""
    names = sorted(os.listdir(expected))
    if sorted(os.listdir(folder)) != names:
        return f"files {sorted(os.listdir(folder))} vs {names}"
    for name in names:
        value = load(os.path.join(expected, name))
        prepare(name, value)
        difference = compare(load(os.path.join(folder, name)), value, "$")
        if difference:
            return f"{name}: {difference}"
    return None


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
