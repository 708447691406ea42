"""Edits the frozen parameters of model states files (with torch), as
another writer or a hand edit would.

Usage: edit_frozen.py EDIT NAME FILE...

EDIT is one of
  truncate  NAME's fragment one element short;
  double    NAME's fragment in float64;
  drop      NAME's fragment left out;
  huge      NAME's shape beyond 2^63 elements.
"""
import sys

import torch


def main(edit, name, *paths):
    for path in paths:
        states = torch.load(path)
        fragments = states["frozen_param_fragments"]
        if edit == "truncate":
            fragments[name] = fragments[name][:-1].clone()
        elif edit == "double":
            fragments[name] = fragments[name].double()
        elif edit == "drop":
            del fragments[name]
        elif edit == "huge":
            states["frozen_param_shapes"][name] = torch.Size([2**40, 2**40])
        else:
            raise SystemExit(f"unknown edit {edit}")
        torch.save(states, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
