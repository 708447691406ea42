"""Gives a parameter another shape of its own in `param_shapes` of model
states files (with torch), as a hand edit would.

Usage: edit_param_shape.py NAME DIM,DIM,... FILE...
"""
import sys

import torch


def main(name, shape, *paths):
    for path in paths:
        states = torch.load(path)
        for group in states["param_shapes"]:
            if name in group:
                group[name] = torch.Size(int(d) for d in shape.split(","))
        torch.save(states, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
