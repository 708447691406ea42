#!/usr/bin/env python3
"""Writes the map set of a small but complete Llama-style model.

    make_tiny_llama.py [TP] > tiny-llama-tpTP.json      (TP defaults to 4)

Two decoder layers, hidden 64, 8 query heads and 4 kv heads of 8, MLP 176,
vocabulary 1003 split unevenly as AutoTP does. Every layout is the one
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

import json
import sys

import layouts

TP = int(sys.argv[1]) if len(sys.argv) > 1 else 4
HIDDEN, HEADS, KV_HEADS, HEAD_DIM = 64, 8, 4, 8
MLP, VOCAB, LAYERS = 176, 1003, 2


def kv_split(total):
    """DeepSpeed's kv-head branch: whole kv heads per rank."""
    heads = [KV_HEADS // TP + (1 if r < KV_HEADS % TP else 0) for r in range(TP)]
    return [total * n // KV_HEADS for n in heads]


def model():
    params = {}
    vocab_rows = layouts.contiguous(layouts.split_sizes(VOCAB, TP))
    params["model.embed_tokens.weight"] = layouts.row_map([VOCAB, HIDDEN], vocab_rows)
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        params[p + "input_layernorm.weight"] = layouts.row_map(
            [HIDDEN], layouts.replicated(HIDDEN, TP))
        params[p + "self_attn.qkv_proj.weight"] = layouts.row_map(
            [q + 2 * kv, HIDDEN],
            layouts.sub_params([kv_split(q), kv_split(kv), kv_split(kv)]))
        params[p + "self_attn.o_proj.weight"] = layouts.column_map(
            [HIDDEN, q], layouts.contiguous(kv_split(q)))
        params[p + "self_attn.o_proj.bias"] = layouts.row_map(
            [HIDDEN], layouts.replicated(HIDDEN, TP), scale=1.0 / TP)
        params[p + "post_attention_layernorm.weight"] = layouts.row_map(
            [HIDDEN], layouts.replicated(HIDDEN, TP))
        half = layouts.split_sizes(MLP, TP)
        params[p + "mlp.gate_up_proj.weight"] = layouts.row_map(
            [2 * MLP, HIDDEN], layouts.sub_params([half, half]))
        params[p + "mlp.down_proj.weight"] = layouts.column_map(
            [HIDDEN, MLP], layouts.contiguous(half))
    params["model.norm.weight"] = layouts.row_map(
        [HIDDEN], layouts.replicated(HIDDEN, TP))
    params["lm_head.weight"] = layouts.row_map([VOCAB, HIDDEN], vocab_rows)
    return layouts.document(params)


if __name__ == "__main__":
    json.dump(model(), sys.stdout, indent=1)
    print()
