"""Rewrites the `param` of a Universal state file (fp32.pt, exp_avg.pt) as
a view torch reads but that is not row-major, holding the same values: a
2-D tensor held transposed, a 1-D one with stride 2 in a storage twice its
size.

Usage: transpose_state.py FILE
"""
import sys

import torch


def main(path):
    state = torch.load(path)
    param = state["param"] if isinstance(state, dict) else state
    if param.dim() == 2:
        view = param.t().contiguous().t()
    else:
        view = torch.stack([param, torch.zeros_like(param)], 1)[:, 0]
    assert torch.equal(view, param) and not view.is_contiguous()
    if isinstance(state, dict):
        state["param"] = view
    else:
        state = view
    torch.save(state, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
