#!/usr/bin/env python3
"""DeepSpeed's tensor-parallel layouts as spec §6.2 map documents.

Each layout is computed the way the spec's §5 harness does it: run the
partition arithmetic on row (or column) indices to learn which rows of F each
rank's shard holds, in shard order, then merge consecutive rows into maximal
pieces, splitting wherever the set of holders changes (P5).

    layouts.py NAME               print the map document of one layout
    layouts.py --index-map NAME   print its index-map document instead
    layouts.py --list             list the layouts

Stdlib only; used by the test suite and by make_tiny_llama.py.
"""

import json
import sys


def split_sizes(total, tp):
    """DeepSpeed's default split: the remainder goes to the low ranks."""
    return [total // tp + (1 if r < total % tp else 0) for r in range(tp)]


def _holders(rows_by_rank):
    holders = {}
    for rank, rows in enumerate(rows_by_rank):
        for row in rows:
            holders.setdefault(row, set()).add(rank)
    return holders


def _row_major(shape):
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def _runs(indices, holders):
    """(start, end) of the maximal runs of consecutive indices with one
    holder set, in shard order."""
    start = 0
    while start < len(indices):
        end = start + 1
        while (end < len(indices) and indices[end] == indices[end - 1] + 1
               and holders[indices[end]] == holders[indices[start]]):
            end += 1
        yield start, end
        start = end


def row_map(shape, rows_by_rank, scale=1.0):
    """The map of F = shape whose rank r holds F rows rows_by_rank[r], in
    shard order (a row is F[i, ...])."""
    rest = list(shape[1:])
    row_size = 1
    for extent in rest:
        row_size *= extent
    holders = _holders(rows_by_rank)
    ranks = {}
    for rank, rows in enumerate(rows_by_rank):
        shard_shape = [len(rows)] + rest
        pieces = []
        for start, end in _runs(rows, holders):
            piece = {
                "shape": [end - start] + rest,
                "source": [rows[start] * row_size, _row_major(shape)],
                "dest": [start * row_size, _row_major(shard_shape)],
                "locations": sorted(holders[rows[start]]),
            }
            if scale != 1.0:
                piece["scale"] = scale
            pieces.append(piece)
        ranks[str(rank)] = {"shard_shape": shard_shape, "pieces": pieces}
    return {"logical_shape": list(shape), "ranks": ranks}


def column_map(shape, cols_by_rank):
    """The map of a 2-D F whose rank r holds F columns cols_by_rank[r]."""
    rows, _ = shape
    holders = _holders(cols_by_rank)
    ranks = {}
    for rank, cols in enumerate(cols_by_rank):
        shard_shape = [rows, len(cols)]
        pieces = []
        for start, end in _runs(cols, holders):
            pieces.append({
                "shape": [rows, end - start],
                "source": [cols[start], _row_major(shape)],
                "dest": [start, _row_major(shard_shape)],
                "locations": sorted(holders[cols[start]]),
            })
        ranks[str(rank)] = {"shard_shape": shard_shape, "pieces": pieces}
    return {"logical_shape": list(shape), "ranks": ranks}


def contiguous(sizes):
    """Index lists of a contiguous split with the given per-rank sizes."""
    out, start = [], 0
    for size in sizes:
        out.append(list(range(start, start + size)))
        start += size
    return out


def sub_params(widths):
    """Sub-parameters i of total sum(widths[i]); rank r holds widths[i][r]
    rows of each, sub-parameter after sub-parameter."""
    out = [[] for _ in widths[0]]
    start = 0
    for sub in widths:
        offset = start
        for rank, width in enumerate(sub):
            out[rank] += list(range(offset, offset + width))
            offset += width
        start += sum(sub)
    return out


def bigcode(n_embd, kv_rows, tp):
    """q rows split by the default rule; every rank also holds the kv rows."""
    qs = contiguous(split_sizes(n_embd, tp))
    kv = list(range(n_embd, n_embd + kv_rows))
    return [q + kv for q in qs]


def codegen(hidden, tp, mp_num=4):
    """CodeGen's fused QKV: mp_num blocks of [q|k|v], units interleaved."""
    b, part = 3 * hidden // mp_num, hidden // mp_num
    u = hidden // (mp_num * tp)
    permuted = []
    for n in range(mp_num * tp):
        k, j = divmod(n, tp)
        for offset in (0, part, 2 * part):
            start = k * b + offset + j * u
            permuted += list(range(start, start + u))
    per_rank = 3 * hidden // tp
    return [permuted[r * per_rank:(r + 1) * per_rank] for r in range(tp)]


def yuan_heads(num_heads, tp, head_dim):
    """Yuan's shared-QK head selection: rows (or columns) of each rank."""
    per_rank = num_heads // tp
    out = []
    for rank in range(tp):
        heads = [(rank * per_rank + i) // 2 for i in range(0, per_rank, 2)]
        heads += [h + num_heads // 2 for h in heads]
        out.append([h * head_dim + e for h in heads for e in range(head_dim)])
    return out


def replicated(rows, tp):
    return [list(range(rows)) for _ in range(tp)]


def layout_indices(name):
    """(parameter name, F shape, "rows" or "cols", index lists by rank,
    scale) of each layout: which rows (or columns) of F each rank holds."""
    if name == "row":  # column-parallel linear: rows split [3, 3, 2, 2]
        return ("mlp.up_proj.weight", [10, 8], "rows",
                contiguous(split_sizes(10, 4)), 1.0)
    if name == "column":  # row-parallel linear: columns split [3, 3, 2, 2]
        return ("mlp.down_proj.weight", [8, 10], "cols",
                contiguous(split_sizes(10, 4)), 1.0)
    if name == "uneven":  # explicit partition_sizes with an empty rank
        return ("mlp.gate_proj.weight", [7, 4], "rows",
                contiguous([4, 0, 3]), 1.0)
    if name == "subparams":  # sub_param_shard_widths
        return ("attn.qkv.weight", [15, 8], "rows",
                sub_params([[3, 2, 2], [2, 2, 1], [1, 1, 1]]), 1.0)
    if name == "gqa":  # q/k/v 24/6/6 at tp2, kv3
        return ("attn.qkv_gqa.weight", [36, 8], "rows",
                sub_params([[16, 8], [4, 2], [4, 2]]), 1.0)
    if name == "gate-up":  # two sub-parameters concatenated on dim 0
        return ("mlp.gate_up_proj.weight", [24, 8], "rows",
                sub_params([[3, 3, 3, 3], [3, 3, 3, 3]]), 1.0)
    if name == "bigcode":
        return ("transformer.h.0.attn.c_attn.weight", [48, 8], "rows",
                bigcode(32, 16, 4), 1.0)
    if name == "codegen":
        return ("transformer.h.0.attn.qkv_proj.weight", [24, 8], "rows",
                codegen(8, 2), 1.0)
    if name == "yuan-value":
        return ("model.layers.0.self_attn.v_proj.weight", [32, 8], "rows",
                yuan_heads(8, 2, 4), 1.0)
    if name == "yuan-oproj":
        return ("model.layers.0.self_attn.o_proj.weight", [8, 32], "cols",
                yuan_heads(8, 2, 4), 1.0)
    if name == "replicated":
        return "model.norm.weight", [8], "rows", replicated(8, 4), 1.0
    if name == "scaled-bias":  # pre-divided by the world size
        return "conv.bias", [8], "rows", replicated(8, 4), 0.25
    if name == "vocab":  # legacy TP: V = 13 padded to 16 rows at tp4
        return ("model.embed_tokens.weight", [16, 8], "rows",
                contiguous(split_sizes(16, 4)), 1.0)
    raise KeyError(name)


def layout(name):
    """(parameter name, param map) of each layout."""
    param, shape, axis, lists, scale = layout_indices(name)
    if axis == "rows":
        return param, row_map(shape, lists, scale)
    return param, column_map(shape, lists)


def index_map(name):
    """(parameter name, index map) of each layout: for every shard element,
    in row-major order, the flat offset of F it holds."""
    param, shape, axis, lists, _ = layout_indices(name)
    ranks = {}
    for rank, indices in enumerate(lists):
        if axis == "rows":
            row_size = numel(shape[1:])
            index = [i * row_size + e for i in indices for e in range(row_size)]
            shard_shape = [len(indices)] + list(shape[1:])
        else:
            index = [r * shape[1] + c for r in range(shape[0]) for c in indices]
            shard_shape = [shape[0], len(indices)]
        ranks[str(rank)] = {"shard_shape": shard_shape, "index": index}
    return param, {"logical_shape": list(shape), "ranks": ranks}


def numel(shape):
    n = 1
    for extent in shape:
        n *= extent
    return n


LAYOUTS = ["row", "column", "uneven", "subparams", "gqa", "gate-up", "bigcode",
           "codegen", "yuan-value", "yuan-oproj", "replicated", "scaled-bias",
           "vocab"]


def pattern(name):
    """The exact-match key DeepSpeed writes: re.escape with ^ and $."""
    import re
    return "^" + re.escape(name) + "$"


def document(params):
    """A map document of {name: param map}."""
    return {"version": 1,
            "params": {pattern(name): m for name, m in params.items()}}


def main(argv):
    args = argv[1:]
    if args in ([], ["-h"], ["--help"]):
        print(__doc__.strip())
        return 0 if args else 1
    if args == ["--list"]:
        print("\n".join(LAYOUTS))
        return 0
    as_index_map = args[0] == "--index-map"
    if as_index_map:
        args = args[1:]
    if len(args) != 1 or args[0] not in LAYOUTS:
        print(f"layouts.py: expected one layout, one of: " + ", ".join(LAYOUTS),
              file=sys.stderr)
        return 1
    if as_index_map:
        name, indices = index_map(args[0])
        doc = {"params": {name: indices}}
    else:
        name, param_map = layout(args[0])
        doc = document({name: param_map})
    json.dump(doc, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
