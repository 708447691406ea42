#!/usr/bin/python3
"""Checks a Universal checkpoint against the ZeRO-1/2 checkpoint it came from.

    scripts/verify-universal.py CKPT/TAG UNIVERSAL

A plain reference for ds-to-universal, written from DeepSpeed's rules and
sharing no code with it: for every DP rank's optimizer file and parameter
group, each parameter's fragment is the `fragment_address(numel, start)`
slice of that rank's flat partitions (fp32 weights, exp_avg, exp_avg_sq);
the fragments joined in DP order and reshaped to the parameter's shape must
equal UNIVERSAL/zero/<name>/<state>.pt's `param`, bit for bit, and step.pt
the group's step. The files' layout must be ZeRO-1/2's: each group
concatenated in param_shapes order, padded to a multiple of 2 x dp and cut
in dp equal partitions, every rank's slices, paddings and partition lengths
where that puts them (so that a writer or reader sharing a wrong rule with
the checkpoint's writer is caught). Checkpoints without tensor parallelism
only; a pipeline's stages are read each as its own model-parallel rank,
and a parameter several stages hold must equal the Universal file on each.
Needs torch;
DeepSpeed's classes are read as plain records.
"""
import glob
import os
import pickle
import re
import sys

import torch


class Record:
    def __setstate__(self, state):
        self.__dict__.update(state)


class RecordMeta(type):
    def __getattr__(cls, member):  # getattr(ZeroStageEnum, "gradients")
        return member


class Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module.startswith("deepspeed"):
            return RecordMeta(name, (Record,), {})
        return super().find_class(module, name)


def load(path):
    # torch.load subclasses pickle.Unpickler when called, so the stand-ins
    # go there (some builds ignore its pickle_module argument).
    saved, pickle.Unpickler = pickle.Unpickler, Unpickler
    try:
        return torch.load(path, map_location="cpu")
    finally:
        pickle.Unpickler = saved


def same_bits(a, b):
    a, b = a.detach().reshape(-1), b.detach().reshape(-1)
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(
        a.view(torch.uint8), b.view(torch.uint8))


def check_layout(files, states, shapes_by_group):
    """The ZeRO-1/2 layout of every rank's records; a message, or None."""
    dp = len(files)
    for g, shapes in enumerate(shapes_by_group):
        sizes = [int(torch.Size(shape).numel()) for shape in shapes.values()]
        total = sum(sizes)
        partition = -(-total // (2 * dp)) * 2 * dp // dp
        for rank, (path, state) in enumerate(zip(files, states)):
            begin, end = rank * partition, (rank + 1) * partition
            padding = end - min(max(total, begin), end)
            if state["group_paddings"][g] != padding:
                return f"{path}: group {g} padding {state['group_paddings'][g]}, not {padding}"
            expected, offset = {}, 0
            for name, size in zip(shapes, sizes):
                lo, hi = max(begin, offset), min(end, offset + size)
                if lo < hi:
                    expected[name] = (hi - lo, lo - begin)
                offset += size
            mapping = {name: (a.numel, a.start)
                       for name, a in state["param_slice_mappings"][g].items()}
            if mapping != expected:
                return f"{path}: group {g} slices {mapping}, not {expected}"
            fp32 = state["single_partition_of_fp32_groups"][g].numel()
            bf16_optimizer = "zero_stage" not in state
            if fp32 != partition - (0 if bf16_optimizer else padding):
                return f"{path}: group {g} fp32 partition of {fp32} elements"
            for moment in ("exp_avg", "exp_avg_sq"):
                held = state["base_optimizer_state"]["state"].get(g, {})
                if moment in held and held[moment].numel() != partition:
                    return f"{path}: group {g} {moment} of {held[moment].numel()} elements, not {partition}"
    return None


def read_rank(checkpoint, mp):
    """Model-parallel rank `mp`'s records: (param_shapes, its DP ranks'
    optimizer files and states), or a message."""
    files = glob.glob(os.path.join(
        checkpoint, f"*zero_pp_rank_*_mp_rank_{mp:02d}_optim_states.pt"))
    rank = re.compile(r"zero_pp_rank_(\d+)_mp_rank_\d+_optim_states\.pt$")
    files.sort(key=lambda f: int(rank.search(f).group(1)))
    model = load(os.path.join(checkpoint, f"mp_rank_{mp:02d}_model_states.pt"))
    loaded = [load(path)["optimizer_state_dict"] for path in files]
    return model["param_shapes"], files, loaded


def main(checkpoint, universal):
    # One model-parallel rank without a pipeline; one per stage with one.
    stages = len(glob.glob(os.path.join(checkpoint, "mp_rank_*_model_states.pt")))
    shapes = {}
    fragments = {}  # (stage, name, state) -> fragments in DP order
    steps = {}
    for mp in range(stages):
        param_shapes, files, loaded = read_rank(checkpoint, mp)
        shapes.update({name: shape for group in param_shapes
                       for name, shape in group.items()})
        difference = check_layout(files, loaded, param_shapes)
        if difference:
            print(difference)
            return 1
        for states in loaded:
            base = states["base_optimizer_state"]["state"]
            for g, mapping in enumerate(states["param_slice_mappings"]):
                flat = {"fp32": states["single_partition_of_fp32_groups"][g],
                        "exp_avg": base[g]["exp_avg"],
                        "exp_avg_sq": base[g]["exp_avg_sq"]}
                for name, address in mapping.items():
                    steps[name] = base[g]["step"]
                    for state, tensor in flat.items():
                        fragments.setdefault((mp, name, state), []).append(
                            tensor.narrow(0, address.start, address.numel))
    # A parameter several stages hold (tied) has one Universal file, which
    # every stage's copy must equal.
    checked = set()
    for (mp, name, state), parts in sorted(fragments.items()):
        expected = torch.cat(parts).reshape(shapes[name])
        saved = load(os.path.join(universal, "zero", name, state + ".pt"))
        if saved.get("cat_dim") != 0 or not same_bits(saved["param"], expected):
            print(f"{name} {state}: differs from its fragments on model-parallel rank {mp}")
            return 1
        checked.add((name, state))
    for name, step in steps.items():
        saved = load(os.path.join(universal, "zero", name, "step.pt"))
        if not same_bits(saved, step):
            print(f"{name}: step.pt differs")
            return 1
    if len(checked) != 3 * len(shapes):
        print(f"{len(checked)} tensors checked, expected {3 * len(shapes)}")
        return 1
    print(f"verified: {len(shapes)} parameters x 3 states and their steps "
          "equal their fragments" +
          (f" on every one of {stages} stages holding them" if stages > 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
