"""Writes a map document that splits every tensor of a TP 1 checkpoint's
module of two or more dimensions by rows over TP ranks (the first ranks a
row more where they do not divide) and replicates the rest: target maps
for a model that universal_checkpoint_info has no rules for.

Usage: tp_row_maps.py OUT.json MODEL_STATES TP [LEFT_OUT]

LEFT_OUT names a tensor to leave without a map.
"""
import json
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from retarget_target_map import row_major  # noqa: E402


def main(out, model_states, tp, left_out=None):
    tp = int(tp)
    params = {}
    for name, tensor in torch.load(model_states)["module"].items():
        if name == left_out:
            continue
        shape = list(tensor.shape)
        ranks = {}
        if len(shape) < 2:
            piece = {"shape": shape, "source": [0, row_major(shape)],
                     "dest": [0, row_major(shape)], "locations": list(range(tp))}
            ranks = {str(r): {"shard_shape": shape, "pieces": [piece]}
                     for r in range(tp)}
        else:
            first = 0
            for r in range(tp):
                rows = shape[0] // tp + (r < shape[0] % tp)
                shard = [rows] + shape[1:]
                piece = {"shape": shard,
                         "source": [first * row_major(shape)[0], row_major(shape)],
                         "dest": [0, row_major(shard)], "locations": [r]}
                ranks[str(r)] = {"shard_shape": shard, "pieces": [piece]}
                first += rows
        params["^" + re.escape(name) + "$"] = {"logical_shape": shape,
                                               "ranks": ranks}
    with open(out, "w") as f:
        json.dump({"version": 1, "params": params}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
