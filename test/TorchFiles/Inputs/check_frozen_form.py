"""Checks that a DeepSpeed folder keeps the frozen parameters of a ZeRO-2
model-states file as DeepSpeed keeps them at the folder's stage (with
torch; ZeRO-3 as zero_to_fp32's merge reads them):

- ZeRO-1: whole in the module, frozen_param_shapes and
  frozen_param_fragments None;
- ZeRO-2: whole in the module and in frozen_param_fragments, one storage,
  and the same frozen_param_shapes;
- ZeRO-3: in each DP rank's model states an empty placeholder in the
  module, the same frozen_param_shapes, and in frozen_param_fragments that
  rank's ceil(numel / dp) elements of the flattened parameter, zeros past
  its end.

Usage: check_frozen_form.py FOLDER ORIGINAL_MODEL_STATES
"""
import glob
import os
import re
import sys

import torch


class Mismatch(Exception):
    pass


def check_whole(folder, whole):
    states = torch.load(os.path.join(folder, "mp_rank_00_model_states.pt"))
    stage = states["ds_config"]["zero_optimization"]["stage"]
    for name in whole["frozen_param_shapes"]:
        if not torch.equal(states["module"][name], whole["module"][name]):
            raise Mismatch(f"module['{name}'] is not the parameter")
    if stage == 1:
        if states["frozen_param_shapes"] is not None or \
                states["frozen_param_fragments"] is not None:
            raise Mismatch("ZeRO-1 records frozen parameters")
        return f"{len(whole['frozen_param_shapes'])} frozen parameters as ZeRO-1 keeps them"
    if states["frozen_param_shapes"] != whole["frozen_param_shapes"]:
        raise Mismatch("frozen_param_shapes differ")
    for name in whole["frozen_param_shapes"]:
        fragment = states["frozen_param_fragments"][name]
        if fragment.storage().data_ptr() != states["module"][name].storage().data_ptr():
            raise Mismatch(f"'{name}': the fragment is not the module's storage")
    return f"{len(whole['frozen_param_shapes'])} frozen parameters as ZeRO-{stage} keeps them"


def check_zero3(folder, whole):
    files = sorted(glob.glob(os.path.join(folder, "zero_pp_rank_*_mp_rank_00_model_states.pt")),
                   key=lambda f: int(re.search(r"zero_pp_rank_(\d+)_", f).group(1)))
    ranks = [torch.load(f) for f in files]
    dp = len(ranks)
    for name, shape in whole["frozen_param_shapes"].items():
        numel = shape.numel()
        slots = -(-numel // dp)
        for d, states in enumerate(ranks):
            if states["frozen_param_shapes"] != whole["frozen_param_shapes"]:
                raise Mismatch(f"{files[d]}: frozen_param_shapes differ")
            if states["module"][name].shape != (0,):
                raise Mismatch(f"{files[d]}: module['{name}'] is no placeholder")
            fragment = states["frozen_param_fragments"][name]
            if fragment.shape != (slots,):
                raise Mismatch(f"{files[d]}: '{name}' holds {tuple(fragment.shape)}, not ({slots},)")
        flat = torch.cat([s["frozen_param_fragments"][name] for s in ranks])
        if not torch.equal(flat[:numel].view(shape), whole["module"][name]):
            raise Mismatch(f"'{name}': the fragments are not the parameter")
        if torch.count_nonzero(flat[numel:]):
            raise Mismatch(f"'{name}': padding not zero")
    return (f"{len(whole['frozen_param_shapes'])} frozen parameters as ZeRO-3 "
            f"keeps them over DP {dp}")


def main(folder, original):
    whole = torch.load(original)
    whole_form = os.path.exists(os.path.join(folder, "mp_rank_00_model_states.pt"))
    try:
        result = (check_whole if whole_form else check_zero3)(folder, whole)
    except Mismatch as mismatch:
        print(mismatch)
        return 1
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
