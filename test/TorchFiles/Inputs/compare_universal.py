"""Checks affine-run ds-to-universal against DeepSpeed's own conversions.

    compare_universal.py AFFINE_RUN FIXTURES OUT

For every run FIXTURES/<name>/ (a checkpoint/<tag>/ folder and DeepSpeed's
universal/<tag>_universal/ conversion of it), converts the checkpoint into
OUT/<name>/<tag>_universal and compares the two trees: the same files
(ours adds affine_map.json), latest_universal and the model-state files
DeepSpeed copied byte for byte (those it saved again, AutoEP's, equal
once unpickled), every other .pt file equal once unpickled: the same types, dict
keys in the same order, DeepSpeed's objects with the same fields, tensors
of the same dtype, shape, strides and requires_grad with the same bits.
Prints one line per run and exits 1 at the first difference.
"""
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_with_torch import Record, load  # noqa: E402


def bits(tensor):
    flat = tensor.detach().reshape(-1).contiguous()
    return flat.view(torch.uint8) if flat.numel() else flat


def compare(ours, theirs, where, values=True):
    """Returns a difference between two unpickled values, or None; without
    `values`, tensors' elements are not compared."""
    if type(ours).__name__ != type(theirs).__name__:
        return f"{where}: {type(ours).__name__} vs {type(theirs).__name__}"
    if isinstance(ours, torch.Tensor):
        for what in ("dtype", "shape", "requires_grad"):
            if getattr(ours, what) != getattr(theirs, what):
                return (f"{where}: {what} {getattr(ours, what)} vs "
                        f"{getattr(theirs, what)}")
        if ours.stride() != theirs.stride():
            return f"{where}: strides {ours.stride()} vs {theirs.stride()}"
        if ours.storage_offset() != theirs.storage_offset():
            return (f"{where}: storage offset {ours.storage_offset()} vs "
                    f"{theirs.storage_offset()}")
        if values and not torch.equal(bits(ours), bits(theirs)):
            return f"{where}: the elements differ"
        return None
    if isinstance(ours, Record):
        return compare(ours.__dict__, theirs.__dict__, where + ".__dict__",
                       values)
    if isinstance(ours, dict):
        if list(ours) != list(theirs):
            return f"{where}: keys {list(ours)} vs {list(theirs)}"
        items = [(ours[k], theirs[k], f"{where}[{k!r}]") for k in ours]
    elif isinstance(ours, (list, tuple, set)):
        if len(ours) != len(theirs):
            return f"{where}: {len(ours)} items vs {len(theirs)}"
        if isinstance(ours, set):
            return None if ours == theirs else f"{where}: sets differ"
        items = [(a, b, f"{where}[{i}]")
                 for i, (a, b) in enumerate(zip(ours, theirs))]
    else:
        return None if ours == theirs else f"{where}: {ours!r} vs {theirs!r}"
    for a, b, at in items:
        difference = compare(a, b, at, values)
        if difference:
            return difference
    return None


def same_bytes(a, b):
    with open(a, "rb") as x, open(b, "rb") as y:
        return x.read() == y.read()


def files(root):
    found = set()
    for folder, _, names in os.walk(root):
        for name in names:
            found.add(os.path.relpath(os.path.join(folder, name), root))
    return found


def compare_trees(ours, theirs, source):
    extra = files(ours) - files(theirs) - {"affine_map.json"}
    missing = files(theirs) - files(ours)
    if extra or missing:
        return f"files only in ours {sorted(extra)}, only in theirs " \
               f"{sorted(missing)}"
    for name in sorted(files(theirs)):
        a, b = os.path.join(ours, name), os.path.join(theirs, name)
        if name.endswith("model_states.pt") and same_bytes(
                b, os.path.join(source, name)):
            if not same_bytes(a, b):
                return f"{name}: not a byte copy"
            continue
        difference = compare(load(a), load(b), "$")
        if difference:
            return f"{name}: {difference}"
    return None


def universal_runs(fixtures):
    """Each run of FIXTURES with DeepSpeed's Universal form: (run, its
    universal folder, the Universal checkpoint's name, the tag)."""
    for run in sorted(os.listdir(fixtures)):
        universal = os.path.join(fixtures, run, "universal")
        if not os.path.isdir(universal):
            continue
        with open(os.path.join(universal, "latest_universal")) as f:
            name = f.read()
        yield run, universal, name, name[:-len("_universal")]


def main(affine_run, fixtures, out):
    for run, universal, name, tag in universal_runs(fixtures):
        target = os.path.join(out, run)
        os.makedirs(target)
        subprocess.run([affine_run, "ds-to-universal", "--quiet",
                        "--inject_missing_state", "--input_folder",
                        os.path.join(fixtures, run, "checkpoint", tag),
                        "--output_folder", os.path.join(target, name)],
                       check=True)
        with open(os.path.join(target, "latest_universal")) as f:
            if f.read() != name:
                print(f"{run}: latest_universal does not name {name}")
                return 1
        difference = compare_trees(os.path.join(target, name),
                                   os.path.join(universal, name),
                                   os.path.join(fixtures, run, "checkpoint",
                                                tag))
        if difference:
            print(f"{run}: {difference}")
            return 1
        print(f"{run}: {len(files(os.path.join(universal, name)))} files "
              "equal DeepSpeed's")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
