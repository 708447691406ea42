"""Checks affine-run ds-retarget --target-map on a real TP checkpoint.

    retarget_target_map.py AFFINE_RUN FIXTURES OUT RUN

RUN is a TP 2 checkpoint of FIXTURES/deepspeed. Two
cases, each printing one line; exits 1 at the first difference:

 * explicit TP 1 maps (the whole tensor on the one rank) give the files
   that --tp 1 gives by the split rules, but for universal_checkpoint_info,
   which records the maps given and no sub-parameter widths;
 * explicit TP 2 maps that the rules cannot give (every parameter
   replicated on both ranks) give a checkpoint whose Universal form holds
   the source's full tensors: its reader takes the maps it records.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_universal import compare  # noqa: E402
from compare_with_torch import load  # noqa: E402
from roundtrip_retarget import retarget, same_universal  # noqa: E402


def row_major(shape):
    strides, step = [], 1
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= extent
    return strides


def write_maps(path, shapes, tp):
    """Every parameter of `shapes` whole on each of `tp` ranks."""
    params = {}
    for name, shape in shapes.items():
        piece = {"shape": shape, "source": [0, row_major(shape)],
                 "dest": [0, row_major(shape)], "locations": list(range(tp))}
        params["^" + re.escape(name) + "$"] = {
            "logical_shape": shape,
            "ranks": {str(r): {"shard_shape": shape, "pieces": [piece]}
                      for r in range(tp)}}
    with open(path, "w") as f:
        json.dump({"version": 1, "params": params}, f)


def full_shapes(folder):
    """The full shapes of a TP 1 checkpoint's parameters."""
    model = load(os.path.join(folder, "mp_rank_00_model_states.pt"))
    return {name: list(shape) for group in model["param_shapes"]
            for name, shape in group.items()}


def run(affine_run, source, target, dp, maps):
    subprocess.run([affine_run, "ds-retarget", "--quiet", "--input_folder",
                    source, "--output_folder", target, "--dp", str(dp),
                    "--target-map", maps], check=True)


def main(affine_run, fixtures, out, name):
    folder = os.path.join(fixtures, "deepspeed", name, "checkpoint")
    with open(os.path.join(folder, "latest")) as f:
        tag = f.read()
    source = os.path.join(folder, tag)
    by_rules = os.path.join(out, "rules", tag)
    retarget(affine_run, source, by_rules, 2, 1, 1, None)
    shapes = full_shapes(by_rules)

    maps = os.path.join(out, "tp1.json")
    write_maps(maps, shapes, 1)
    by_maps = os.path.join(out, "maps", tag)
    run(affine_run, source, by_maps, 2, maps)
    names = sorted(os.listdir(by_rules))
    if sorted(os.listdir(by_maps)) != names:
        print(f"TP 1: files {sorted(os.listdir(by_maps))} vs {names}")
        return 1
    for file in names:
        a, b = load(os.path.join(by_maps, file)), load(
            os.path.join(by_rules, file))
        if "universal_checkpoint_info" in a:
            info = a["universal_checkpoint_info"]
            if len(info.pop("affine_map")["params"]) != len(shapes) or \
                    "sub_param_shard_widths" in info:
                print(f"TP 1/{file}: universal_checkpoint_info {info}")
                return 1
            b["universal_checkpoint_info"].pop("sub_param_shard_widths", None)
        difference = compare(a, b, "$")
        if difference:
            print(f"TP 1/{file}: {difference}")
            return 1
    print(f"TP 1 maps: {len(names)} files as the split rules give them")

    maps = os.path.join(out, "replicated.json")
    write_maps(maps, shapes, 2)
    replicated = os.path.join(out, "replicated", tag)
    run(affine_run, source, replicated, 1, maps)
    model = load(os.path.join(replicated, "mp_rank_01_model_states.pt"))
    if any(list(s) != shapes[n] for g in model["param_shapes"]
           for n, s in g.items()):
        print("TP 2 replicated: param_shapes are not the full shapes")
        return 1
    difference = same_universal(affine_run, source, replicated,
                                os.path.join(out, "forms"))
    if difference:
        print(f"TP 2 replicated: the Universal forms differ: {difference}")
        return 1
    print("TP 2 replicated maps: the same full tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
