#!/usr/bin/env python3
"""Writes map documents of two ROWS x COLS parameters, `up.weight` split by
rows and `down.weight` split by columns (DeepSpeed's default split), one
document per tensor-parallel size: OUT/tp<N>.json.

    split_maps.py EXAMPLES_DIR OUT ROWS COLS TP [TP ...]
"""

import json
import os
import sys


def main(argv):
    if len(argv) < 6:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    examples, out = argv[1], argv[2]
    rows, cols = int(argv[3]), int(argv[4])
    sys.path.insert(0, examples)
    import layouts

    for tp in map(int, argv[5:]):
        by_rows = layouts.contiguous(layouts.split_sizes(rows, tp))
        by_cols = layouts.contiguous(layouts.split_sizes(cols, tp))
        doc = layouts.document({
            "up.weight": layouts.row_map([rows, cols], by_rows),
            "down.weight": layouts.column_map([rows, cols], by_cols),
        })
        with open(os.path.join(out, f"tp{tp}.json"), "w") as f:
            json.dump(doc, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
