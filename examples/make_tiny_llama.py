#!/usr/bin/env python3
"""Writes the map set of a small but complete Llama-style model.

    make_tiny_llama.py [TP] > tiny-llama-tpTP.json      (TP defaults to 4)
    make_tiny_llama.py TP --hidden 4096 --mlp 11008 --layers 4 > big.json

By default two decoder layers, hidden 64, 8 query heads and 4 kv heads of
8, MLP 176, vocabulary 1003 split unevenly as AutoTP does; the options
scale it (heads stay 8 and 4, of hidden / 8 each). Every layout is the one
DeepSpeed's AutoTP gives the parameter:

  embed_tokens, lm_head   vocabulary rows split [251, 251, 251, 250]
  qkv_proj                fused q/k/v sub-parameters, kv-head split rule
  o_proj                  row-parallel: columns split
  o_proj.bias             replicated and pre-divided by the world size
                          (scale 1/TP), as a layer that sums its outputs with
                          an all-reduce stores it
  gate_up_proj            two sub-parameters concatenated on dim 0
  down_proj               row-parallel: columns split
  *norm                   replicated
"""

import argparse
import json
import sys

import layouts

HEADS, KV_HEADS = 8, 4


def kv_split(total, tp):
    """DeepSpeed's kv-head branch: whole kv heads per rank."""
    heads = [KV_HEADS // tp + (1 if r < KV_HEADS % tp else 0) for r in range(tp)]
    return [total * n // KV_HEADS for n in heads]


def model(tp, hidden, mlp, vocab, layers):
    head_dim = hidden // HEADS
    params = {}
    vocab_rows = layouts.contiguous(layouts.split_sizes(vocab, tp))
    params["model.embed_tokens.weight"] = layouts.row_map([vocab, hidden], vocab_rows)
    q, kv = HEADS * head_dim, KV_HEADS * head_dim
    for i in range(layers):
        p = f"model.layers.{i}."
        params[p + "input_layernorm.weight"] = layouts.row_map(
            [hidden], layouts.replicated(hidden, tp))
        params[p + "self_attn.qkv_proj.weight"] = layouts.row_map(
            [q + 2 * kv, hidden],
            layouts.sub_params([kv_split(q, tp), kv_split(kv, tp), kv_split(kv, tp)]))
        params[p + "self_attn.o_proj.weight"] = layouts.column_map(
            [hidden, q], layouts.contiguous(kv_split(q, tp)))
        params[p + "self_attn.o_proj.bias"] = layouts.row_map(
            [hidden], layouts.replicated(hidden, tp), scale=1.0 / tp)
        params[p + "post_attention_layernorm.weight"] = layouts.row_map(
            [hidden], layouts.replicated(hidden, tp))
        half = layouts.split_sizes(mlp, tp)
        params[p + "mlp.gate_up_proj.weight"] = layouts.row_map(
            [2 * mlp, hidden], layouts.sub_params([half, half]))
        params[p + "mlp.down_proj.weight"] = layouts.column_map(
            [hidden, mlp], layouts.contiguous(half))
    params["model.norm.weight"] = layouts.row_map(
        [hidden], layouts.replicated(hidden, tp))
    params["lm_head.weight"] = layouts.row_map([vocab, hidden], vocab_rows)
    return layouts.document(params)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Every layout is the one DeepSpeed's AutoTP gives the parameter.")
    parser.add_argument("tp", nargs="?", type=int, default=4,
                        help="tensor-parallel size (default 4)")
    parser.add_argument("--hidden", type=int, default=64,
                        help="hidden size, a multiple of 8 (default 64)")
    parser.add_argument("--mlp", type=int, default=176,
                        help="MLP size (default 176)")
    parser.add_argument("--vocab", type=int, default=1003,
                        help="vocabulary rows (default 1003)")
    parser.add_argument("--layers", type=int, default=2,
                        help="decoder layers (default 2)")
    args = parser.parse_args()
    if args.tp < 1 or args.hidden < HEADS or args.hidden % HEADS:
        parser.error("TP must be at least 1 and --hidden a multiple of 8")
    json.dump(model(args.tp, args.hidden, args.mlp, args.vocab, args.layers),
              sys.stdout, indent=1)
    print()
