"""Checks that a ZeRO-3 folder keeps the frozen parameters of a ZeRO-1/2
model-states file as DeepSpeed's ZeRO-3 does (with torch, as
zero_to_fp32's merge reads them): in each DP rank's model states, an empty
placeholder in the module, the same frozen_param_shapes, and in
frozen_param_fragments that rank's ceil(numel / dp) elements of the
flattened parameter, zeros past its end.

Usage: check_zero3_frozen.py ZERO3_FOLDER ORIGINAL_MODEL_STATES
"""
import glob
import os
import re
import sys

import torch


def main(folder, original):
    whole = torch.load(original)
    files = sorted(glob.glob(os.path.join(folder, "zero_pp_rank_*_mp_rank_00_model_states.pt")),
                   key=lambda f: int(re.search(r"zero_pp_rank_(\d+)_", f).group(1)))
    ranks = [torch.load(f) for f in files]
    dp = len(ranks)
    for name, shape in whole["frozen_param_shapes"].items():
        numel = shape.numel()
        slots = -(-numel // dp)
        for d, states in enumerate(ranks):
            if states["frozen_param_shapes"] != whole["frozen_param_shapes"]:
                return f"{files[d]}: frozen_param_shapes differ"
            if states["module"][name].shape != (0,):
                return f"{files[d]}: module['{name}'] is no placeholder"
            fragment = states["frozen_param_fragments"][name]
            if fragment.shape != (slots,):
                return f"{files[d]}: '{name}' holds {tuple(fragment.shape)}, not ({slots},)"
        flat = torch.cat([s["frozen_param_fragments"][name] for s in ranks])
        if not torch.equal(flat[:numel].view(shape), whole["module"][name]):
            return f"'{name}': the fragments are not the parameter"
        if torch.count_nonzero(flat[numel:]):
            return f"'{name}': padding not zero"
    print(f"{len(whole['frozen_param_shapes'])} frozen parameters as ZeRO-3 "
          f"keeps them over DP {dp}")
    return 0


if __name__ == "__main__":
    result = main(*sys.argv[1:])
    if result:
        print(result)
    sys.exit(1 if result else 0)
