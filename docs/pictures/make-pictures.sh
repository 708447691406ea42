#!/bin/sh
# Draws the pictures of docs/Layouts.md with the tool itself:
#   docs/pictures/make-pictures.sh BIN OUT
# BIN holds affine-translate and affine-opt (build/bin); OUT receives the
# .svg files.
set -eu
bin=$1
out=$2
mkdir -p "$out"
draw() {
  name=$1
  shift
  "$bin/affine-translate" --layout "$@" --emit svg -o "$out/$name.svg"
}
draw rows split --name mlp.up_proj.weight --shape 12,8 --dim 0 --tp 3
draw columns split --name mlp.down_proj.weight --shape 8,12 --dim 1 --tp 3
draw fused-qkv-gqa split-sub-params --name self_attn.qkv.weight \
  --shape 32,8 --dim 0 --sub-sizes 16,8,8 --kv-heads 2 --tp 2
draw bigcode bigcode --name attn.c_attn.weight --q-rows 16 --kv-rows 8 \
  --cols 8 --tp 2
draw yuan yuan --name self_attn.v_proj.weight --shape 16,4 --dim 0 \
  --heads 4 --tp 2
draw scaled-bias scaled-bias --name mlp.down_proj.bias --shape 8 --tp 4
# ZeRO-2 partitions nested in TP shards: a generated TP 2 x DP 2
# checkpoint's MLP gate, whose flat fp32 partitions cut it between the DP
# ranks (rank dp * 2 + tp).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/ucp-make-deepspeed-checkpoint" --out "$work/ckpt" --dp 2 --tp 2 \
  --hidden 8 --layers 1 --ffn 12 --vocab 16 --stage 2 > /dev/null
"$bin/affine-translate" --import-deepspeed "$work/ckpt/step3" --emit json \
  -o "$work/maps.json"
python3 - "$work/maps.json" > "$work/gate.json" <<'PY'
import json, sys
document = json.load(open(sys.argv[1]))
document["params"] = {key: value for key, value in document["params"].items()
                      if "gate_proj" in key}
print(json.dumps(document))
PY
"$bin/affine-translate" --import-json "$work/gate.json" |
  "$bin/affine-translate" --render-svg -o "$out/zero-in-tp.svg"
# Plans (affine-opt --ucp-compose, then --render-svg): the fused QKV with
# GQA from TP 2 to TP 4, and a padded vocabulary from TP 2 to TP 4, whose
# last rank's padding rows are a fill.
plan() {
  name=$1
  shift
  "$bin/affine-translate" --layout "$@" --tp 2 -o "$work/$name-2.mlir"
  "$bin/affine-translate" --layout "$@" --tp 4 -o "$work/$name-4.mlir"
  "$bin/affine-opt" "$work/$name-2.mlir" \
    --ucp-compose=target="$work/$name-4.mlir" |
    "$bin/affine-translate" --render-svg -o "$out/$name.svg"
}
plan plan-fused-qkv split-sub-params --name self_attn.qkv.weight \
  --shape 32,8 --dim 0 --sub-sizes 16,8,8 --kv-heads 4
plan plan-padded-vocab padded-vocab --name embed_tokens.weight --vocab 10 \
  --hidden 4
