"""Shared fixtures of the affine_ucp tests: random layouts and data, the
tools' folder and the shared DeepSpeed fixtures (tests that need those skip
without them)."""

import os
import random

import pytest
import torch

import affine_ucp as u

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.environ.get(
    "UCP_DEEPSPEED_FIXTURES",
    os.path.join(HERE, "..", "..", "..", "shared", "fixtures"))
TOOLS = os.environ.get("UCP_TOOLS_DIR",
                       os.path.join(HERE, "..", "..", "build", "bin"))

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64,
          torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
          torch.bool]


def random_tensor(shape, dtype, generator):
    """Random values of `dtype` (every bit pattern of the integers)."""
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=generator,
                         dtype=torch.int64).to(dtype)


def random_layout(rng):
    """A random map of one of the layout library's kinds, with the
    shape it covers."""
    kind = rng.choice(["split", "sub", "replicated", "block", "nested",
                       "expert"])
    rows, cols = rng.randint(1, 12), rng.randint(1, 9)
    tp = rng.randint(1, 4)
    if kind == "split":
        dim = rng.randint(0, 1)
        total = (rows, cols)[dim]
        sizes = u.shard_sizes(total, tp)
        return u.split_layout("w", [rows, cols], dim, sizes)
    if kind == "sub":
        subs = [rng.randint(1, 6) for _ in range(rng.randint(1, 3))]
        return u.split_sub_param_layout("qkv", [sum(subs), cols], 0, subs, tp)
    if kind == "replicated":
        return u.replicated_layout("norm", [rows], tp,
                                   rng.choice([1.0, 0.5, 0.25]))
    if kind == "block":
        runs = [[(rng.randint(0, rows - 1), 1)] for _ in range(tp)]
        runs[0] = [(0, rows)]
        return u.block_layout("b", [rows, cols], 0, runs)
    if kind == "nested":
        outer = u.split_layout("z", [rows, cols], 0, u.shard_sizes(rows, tp))
        inner = []
        dp = rng.randint(1, 3)
        for shard in outer.shards:
            n = shard.shape[0] * shard.shape[1]
            cut = sorted(rng.randint(0, n) for _ in range(dp - 1))
            sizes = [b - a for a, b in zip([0] + cut, cut + [n])]
            inner.append(u.flat_range_layout("z", shard.shape, sizes))
        return u.nest(outer, inner)
    experts = rng.randint(1, 6)
    placement = [sorted(rng.sample(range(experts), rng.randint(0, experts)))
                 for _ in range(tp)]
    placement[0] = list(range(experts))
    return u.expert_layout("e", experts, placement, [rows, cols])


def same_shape_pair(rng):
    """Two random layouts of one shape (and padded vocabulary), the second
    renamed after the first, so that they compose."""
    while True:
        a, b = random_layout(rng), random_layout(rng)
        if a.logical_shape == b.logical_shape and \
                a.original_vocab_size == b.original_vocab_size:
            return a, u.ParamMap(a.name, b.logical_shape, b.world_size,
                                 list(b.shards))


@pytest.fixture
def rng(request):
    return random.Random(request.node.name)


@pytest.fixture
def generator(request):
    g = torch.Generator()
    g.manual_seed(sum(map(ord, request.node.name)))
    return g


def reference_extract(map, full, rank):
    """A rank's shard by torch.as_strided per piece (the spec's loop)."""
    shard = next(s for s in map.shards if s.rank == rank)
    flat = full.reshape(-1)
    out = torch.zeros(int(torch.tensor(shard.shape).prod()), dtype=full.dtype)
    for piece in shard.pieces:
        view = torch.as_strided(out, piece.shape, piece.dest_strides,
                                piece.dest_offset)
        view.copy_(torch.as_strided(flat, piece.shape, piece.source_strides,
                                    piece.source_offset))
        if piece.scale != 1.0:
            view.mul_(piece.scale)
    return out.reshape(shard.shape)
