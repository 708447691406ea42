"""Writes a map document with ranks 0 and 1 swapped in every parameter.

Usage: swap_ranks.py IN.json OUT.json

The result is a valid map (each rank still holds a whole shard), so a
process given it plans a consistent transfer of its own, which writes
wrong bytes if the other processes were given IN.json.
"""
import json
import sys


def main(source, target):
    with open(source) as f:
        document = json.load(f)
    swap = {0: 1, 1: 0}
    for param in document["params"].values():
        ranks = param["ranks"]
        ranks["0"], ranks["1"] = ranks["1"], ranks["0"]
        for shard in ranks.values():
            for piece in shard["pieces"]:
                piece["locations"] = sorted(
                    swap.get(r, r) for r in piece["locations"])
    with open(target, "w") as f:
        json.dump(document, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
