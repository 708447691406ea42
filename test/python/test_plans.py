"""Plans from Python: composition, segments and fills, documents."""

import math

import numpy
import pytest

import affine_ucp as u
from conftest import same_shape_pair


def _writes(shape, offset, strides):
    """The flat offsets a strided view of `shape` touches, in order."""
    index = numpy.indices(shape).reshape(len(shape), -1) if shape else \
        numpy.zeros((0, 1), dtype=int)
    return offset + (numpy.array(strides, dtype=int)[:, None] * index).sum(0)


def test_segments_write_every_target_element_once(rng):
    for _ in range(40):
        a, b = same_shape_pair(rng)
        for policy in ("lowest", "local", "node", "balance"):
            [plan] = u.compose([a], [b], policy, ranks_per_node=2)
            counts = {rank: numpy.zeros(math.prod(shape), dtype=int)
                      for rank, shape in plan.target_shards.items()}
            for s in plan.segments:
                numpy.add.at(counts[s.target_rank],
                             _writes(s.shape, s.target_offset,
                                     s.target_strides), 1)
            for f in plan.fills:
                numpy.add.at(counts[f.rank],
                             _writes(f.shape, f.target_offset,
                                     f.target_strides), 1)
            for rank, count in counts.items():
                assert (count == 1).all(), (policy, rank, count)
            assert (plan.source_world, plan.target_world) == \
                (a.world_size, b.world_size)


def test_plan_documents_round_trip(rng):
    a, b = same_shape_pair(rng)
    plans = u.compose([a], [b])
    again = u.parse_plans(u.write_plans(plans))
    assert u.write_plans(again) == u.write_plans(plans)
    assert "total: 1 plans" in u.summarize_plans(plans)


def test_composition_refuses_what_it_cannot_plan():
    a = u.split_layout("a", [4], 0, [2, 2])
    with pytest.raises(ValueError, match="in the source maps but not in the "
                       "target maps"):
        u.compose([a], [u.split_layout("b", [4], 0, [4])])
    with pytest.raises(ValueError, match="replica policy 'nearest'"):
        u.compose([a], [a], "nearest")
    broken = u.ParamMap("a", [4], 1, [u.Shard(0, [2], [
        u.Piece([2], 0, [1], 0, [1], [0])])])
    with pytest.raises(ValueError, match="^target map: parameter 'a'"):
        u.compose([a], [broken])
