"""Checks affine-run convert --to deepspeed against the generator.

    check_convert.py AFFINE_RUN GENERATOR OUT

For two runs (DP 2 to DP 3; TP 2 x DP 2, split by the run's
universal_checkpoint_info), generates a bf16 ZeRO-2 checkpoint saved before
its optimizer's first step, exports its weights as a sharded Hugging Face
set (fp32, with its index), and converts that set back into a DeepSpeed
checkpoint at the target with the generated run's parameter groups (each
with its own weight decay) and ds_config. The generator, which shares no
layout or rounding code with affine-run, then writes the same run at the
target: every file of the two must be equal once torch.load has read it,
values included (the fp32 partitions, their padding, the bf16 module
weights rounded from the masters), but for the key order and number types
of ds_config and universal_checkpoint_info (JSON keeps neither: convert
writes the keys in name order, and 1.0 as 1) and the order of the module's
weights (the parameter groups'). Prints a line per run; exits 1 at the
first difference.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_universal import compare  # noqa: E402
from compare_with_torch import load  # noqa: E402

MODEL = ["--hidden", "64", "--layers", "2", "--ffn", "128", "--vocab", "101",
         "--stage", "2", "--steps", "0"]


def numbers_as_floats(value):
    if isinstance(value, dict):
        return {k: numbers_as_floats(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [numbers_as_floats(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def normalized(state):
    """ds_config and universal_checkpoint_info in key order, their numbers
    floats: JSON keeps neither key order nor whether 1.0 was written 1; the
    module's weights in name order: the parameter groups give each group's
    order, not the module's."""
    if isinstance(state, dict) and "ds_config" in state:
        state = dict(state)
        for key in ("ds_config", "universal_checkpoint_info"):
            if key in state:
                state[key] = numbers_as_floats(state[key])
        if "module" in state:
            state["module"] = dict(sorted(state["module"].items()))
    return state


def check(affine_run, generator, out, source, target, convert):
    """Converts the weights of the generated `source` run and compares the
    result with the generated `target` run."""
    run = lambda *args: subprocess.run(args, check=True,
                                       stdout=subprocess.DEVNULL)
    run(generator, "--out", f"{out}/source", *source, *MODEL)
    run(generator, "--out", f"{out}/target", *target, *MODEL)
    run(affine_run, "export", "--quiet", "--input_folder",
        f"{out}/source/step3", "--out", f"{out}/hf", "--max-shard-size",
        "100KB")
    model = load(f"{out}/source/step3/mp_rank_00_model_states.pt")
    optim = load(f"{out}/source/step3/"
                 "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt")
    groups = []
    for names, group in zip(model["param_shapes"],
                            optim["optimizer_state_dict"]
                            ["base_optimizer_state"]["param_groups"]):
        groups.append({"params": list(names),
                       "weight_decay": group["weight_decay"]})
    with open(f"{out}/groups.json", "w") as f:
        json.dump(groups, f)
    with open(f"{out}/config.json", "w") as f:
        json.dump(model["ds_config"], f)
    extra = []
    if "universal_checkpoint_info" in model:
        with open(f"{out}/info.json", "w") as f:
            json.dump(model["universal_checkpoint_info"], f)
        extra = ["--universal-info", f"{out}/info.json"]
    run(affine_run, "convert", "--quiet", "--from", f"{out}/hf", "--to",
        "deepspeed", "--output_folder", f"{out}/converted/step3",
        "--param-groups", f"{out}/groups.json", "--ds-config",
        f"{out}/config.json", "--dtype", "bf16", *extra, *convert)
    ours, theirs = f"{out}/converted/step3", f"{out}/target/step3"
    if sorted(os.listdir(ours)) != sorted(os.listdir(theirs)):
        return f"files {sorted(os.listdir(ours))} vs {sorted(os.listdir(theirs))}"
    for name in sorted(os.listdir(theirs)):
        difference = compare(normalized(load(os.path.join(ours, name))),
                             normalized(load(os.path.join(theirs, name))),
                             name)
        if difference:
            return difference
    return f"{len(os.listdir(theirs))} files equal the generator's"


def main(affine_run, generator, out):
    cases = [
        ("DP 2 -> DP 3", ["--dp", "2"], ["--dp", "3"], ["--dp", "3"]),
        ("TP 2 x DP 2", ["--dp", "2", "--tp", "2"], ["--dp", "2", "--tp", "2"],
         ["--dp", "2", "--tp", "2", "--num-kv-heads", "8"]),
    ]
    for i, (name, source, target, convert) in enumerate(cases):
        result = check(affine_run, generator, f"{out}/{i}", source, target,
                       convert)
        print(f"{name}: {result}")
        if not result.endswith("equal the generator's"):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
