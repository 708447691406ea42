#!/usr/bin/env python3
"""Corrupts every DeepSpeed layout in each single way and checks that
`affine-opt --ucp-verify` refuses it with a message naming the parameter,
the rank and the first offending element, computed here independently.

    check_corruptions.py AFFINE_OPT WORKDIR
    check_corruptions.py --affine-run AFFINE_RUN WORKDIR

With --affine-run, `affine-run extract` is given each corrupted map (and
full tensors of the clean one) instead, and must refuse it the same way
and write nothing.

Prints one line per case and a closing count; exits 1 on any miss.
"""

import copy
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "examples"))
import layouts  # noqa: E402


def numel(shape):
    n = 1
    for extent in shape:
        n *= extent
    return n


def unravel(offset, shape):
    index = []
    for extent in reversed(shape):
        index.append(offset % extent)
        offset //= extent
    return list(reversed(index))


def fmt(index):
    return "[" + ", ".join(str(i) for i in index) + "]"


def pieces(param_map):
    """(rank, piece index, piece) of every non-empty piece."""
    for rank, shard in sorted(param_map["ranks"].items(), key=lambda e: int(e[0])):
        for i, piece in enumerate(shard["pieces"]):
            if numel(piece["shape"]) > 0:
                yield int(rank), i, piece


def corrupt(kind, name, param_map):
    """Applies one corruption; returns the fragments the diagnostics must
    contain, or None when the layout cannot have it."""
    shape = param_map["logical_shape"]
    ranks = param_map["ranks"]
    rank, index, piece = next(pieces(param_map))
    key = layouts.pattern(name)
    path = f'$.params[{json.dumps(key)}].ranks["{rank}"].pieces[{index}]'
    if kind == "hole":
        shard = ranks[str(rank)]
        rows = shard["shard_shape"][0]
        shard["shard_shape"][0] += 1
        first = [rows] + [0] * (len(shard["shard_shape"]) - 1)
        return [f"parameter '{name}'", f"rank {rank}: ",
                f"written by no piece; the first is {fmt(first)}"]
    if kind == "uncovered":
        # Shrink the piece (and its replicas, so that nobody else holds the
        # dropped elements) by one along its first dimension.
        src, extents = copy.deepcopy(piece["source"]), list(piece["shape"])
        first = unravel(src[0] + (extents[0] - 1) * src[1][0], shape)
        for _, _, other in pieces(param_map):
            if other["source"] == src and other["shape"] == extents:
                other["shape"][0] -= 1
        return [f"parameter '{name}'",
                f"held by no piece (P1); the first is {fmt(first)}",
                f"rank {rank}: "]
    if kind == "overlap":
        # Point a piece's source at the first element of a piece with other
        # locations, where it fits.
        for rank, index, piece in pieces(param_map):
            for _, _, other in pieces(param_map):
                last = other["source"][0] + sum(
                    (e - 1) * s
                    for e, s in zip(piece["shape"], piece["source"][1]))
                if (other["locations"] != piece["locations"]
                        and last < numel(shape)):
                    piece["source"][0] = other["source"][0]
                    first = unravel(other["source"][0], shape)
                    return [f"parameter '{name}'",
                            f"rank {rank} piece #{index}",
                            "declare different locations (P5); the first is "
                            + fmt(first)]
        return None
    if kind == "zero-scale":
        piece["scale"] = 0
        return [path, "scale must be finite and non-zero, got 0"]
    if kind == "out-of-bounds":
        piece["source"][0] = numel(shape) - 1
        last = fmt([e - 1 for e in piece["shape"]])
        return [path, f"source view element {last} lands at offset",
                f"of F, which has {numel(shape)} elements"]
    raise KeyError(kind)


KINDS = ["uncovered", "overlap", "zero-scale", "out-of-bounds", "hole"]


def refuse_with_affine_opt(affine_opt, doc, workdir, clean_doc):
    run = subprocess.run([affine_opt, doc, "--ucp-verify", "-o", "-"],
                         capture_output=True, text=True)
    return run, True


def refuse_with_affine_run(affine_run, doc, workdir, clean_doc):
    """Extracts with the corrupted map from full tensors of the clean one;
    also returns whether nothing was written."""
    full = clean_doc + ".safetensors"
    if not os.path.exists(full):
        subprocess.run([affine_run, "init", "--map", clean_doc, "--out", full],
                       check=True)
    out = doc + ".shards"
    run = subprocess.run([affine_run, "extract", "--map", doc, "--full", full,
                          "--out", out], capture_output=True, text=True)
    return run, not os.path.exists(out)


def main(argv):
    refuse = refuse_with_affine_opt
    if argv[1] == "--affine-run":
        refuse = refuse_with_affine_run
        argv = argv[1:]
    tool, workdir = argv[1], argv[2]
    os.makedirs(workdir, exist_ok=True)
    caught = skipped = missed = 0
    for layout in layouts.LAYOUTS:
        name, clean = layouts.layout(layout)
        clean_doc = os.path.join(workdir, f"{layout}.json")
        with open(clean_doc, "w") as f:
            json.dump(layouts.document({name: clean}), f)
        for kind in KINDS:
            param_map = copy.deepcopy(clean)
            expected = corrupt(kind, name, param_map)
            if expected is None:
                print(f"{layout} {kind}: not applicable (one location set)")
                skipped += 1
                continue
            doc = os.path.join(workdir, f"{layout}-{kind}.json")
            with open(doc, "w") as f:
                json.dump(layouts.document({name: param_map}), f)
            run, wrote_nothing = refuse(tool, doc, workdir, clean_doc)
            absent = [e for e in expected if e not in run.stderr]
            if run.returncode == 1 and not absent and wrote_nothing:
                print(f"{layout} {kind}: caught")
                caught += 1
            else:
                print(f"{layout} {kind}: MISSED (exit {run.returncode}, "
                      f"wrote nothing: {wrote_nothing}); "
                      f"expected {absent} in:\n{run.stderr}")
                missed += 1
    print(f"{caught} caught, {missed} missed, {skipped} not applicable")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
