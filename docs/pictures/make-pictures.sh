#!/bin/sh
# Draws the pictures of docs/Layouts.md with the tool itself:
#   docs/pictures/make-pictures.sh BIN OUT
# BIN holds affine-translate (build/bin); OUT receives the .svg files.
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
