"""affine_ucp.affine against the behaviours of DeepSpeed's
deepspeed.checkpoint.affine: names, arguments, attributes, methods,
exceptions and the phrases tests match on."""

import pytest
import torch

import affine_ucp as u
from affine_ucp import affine as A


def reference_shard(m, full, rank):
    """A shard by as_strided per piece, as DeepSpeed's module builds it."""
    shard = torch.zeros(A._product(m.shard_shapes[rank]), dtype=full.dtype)
    for piece in m.pieces_by_rank[rank]:
        piece.dest_view(shard).copy_(piece.source_view(full.reshape(-1)))
        if piece.scale != 1.0:
            piece.dest_view(shard).mul_(piece.scale)
    return shard.view(m.shard_shapes[rank])


def all_builders():
    return [
        A.replicated_map((4, 3), 2),
        A.replicated_map((6,), 4, scale=0.25),
        A.contiguous_split_map((10, 4), [3, 3, 2, 2], 0),
        A.contiguous_split_map((4, 10), [5, 5], 1),
        A.sub_param_map((12, 3), [4, 4, 4], [[2, 2], [2, 2], [3, 1]], 0),
        A.sub_param_map((3, 12), [8, 4], [[4, 4], [2, 2]], 1),
        A.segmented_map((10, 2), [(6, False), (4, True)], 0, 3, [[2, 2, 2]]),
        A.block_gather_map((8, 2), {0: [0, 1, 5], 1: [2, 3, 4, 6, 7]}, 1, 0),
    ]


def test_public_names():
    assert A.AFFINE_MAP_FORMAT_VERSION == 1
    for name in ('AffinePiece', 'ParamAffineMap', 'replicated_map',
                 'contiguous_split_map', 'sub_param_map', 'segmented_map',
                 'block_gather_map'):
        assert name in A.__all__ and hasattr(A, name)


def test_piece_fields_and_views():
    piece = A.AffinePiece([2, 3], 4, [6, 1], 0, [3, 1], [1, 0], 0.5)
    assert piece.shape == (2, 3) and piece.source_strides == (6, 1)
    assert piece.locations == frozenset({0, 1}) and piece.scale == 0.5
    assert piece.numel == 6
    assert list(piece.source_offsets()) == [4, 5, 6, 10, 11, 12]
    full = torch.arange(24.0)
    assert torch.equal(piece.source_view(full),
                       torch.tensor([[4., 5, 6], [10, 11, 12]]))
    assert piece == A.AffinePiece((2, 3), 4, (6, 1), 0, (3, 1), {0, 1}, 0.5)
    assert len({piece, A.AffinePiece((2, 3), 4, (6, 1), 0, (3, 1), [0, 1],
                                     0.5)}) == 1
    assert "AffinePiece(shape=(2, 3)" in repr(piece)
    assert list(A.AffinePiece((0, 3), 0, (3, 1), 0, (3, 1), [0])
                .source_offsets()) == []
    with pytest.raises(ValueError, match="not invertible"):
        A.AffinePiece((1,), 0, (1,), 0, (1,), [0], scale=0.0)


def test_every_builder_covers_and_round_trips():
    g = torch.Generator().manual_seed(3)
    for m in all_builders():
        m.validate()
        m.validate_coverage()
        assert m.uncovered_offsets() == []
        full = torch.randn(m.logical_shape, generator=g)
        shards = {}
        for rank in m.pieces_by_rank:
            shards[rank] = m.extract(full, rank)
            assert shards[rank].shape == torch.Size(m.shard_shapes[rank])
            assert torch.equal(shards[rank], reference_shard(m, full, rank))
        assert torch.equal(m.rebuild(shards), full)
        again = A.ParamAffineMap.from_dict(m.to_dict())
        assert again.to_dict() == m.to_dict()
        assert again.pieces_by_rank == m.pieces_by_rank


def test_holders_and_uncovered_offsets():
    m = A.replicated_map((3,), 2)
    assert m.holders() == {0: {0, 1}, 1: {0, 1}, 2: {0, 1}}
    gap = A.ParamAffineMap((5,), {0: (2,)},
                           {0: [A.AffinePiece((2,), 1, (1,), 0, (1,), [0])]})
    assert gap.uncovered_offsets() == [0, 3, 4]
    with pytest.raises(AssertionError, match="leaves 3 element\\(s\\) "
                       "uncovered, starting at offset 0"):
        gap.validate_coverage()


def test_pieces_must_account_for_their_shard():
    m = A.contiguous_split_map((4,), [2, 2], 0)
    m.shard_shapes[1] = (3,)
    # ValueError, as DeepSpeed's validate raises (an assert would vanish
    # under python -O).
    with pytest.raises(ValueError, match="Rank 1 holds a shard of 3 "
                       "elements but its pieces account for 2"):
        m.validate()


def test_two_pieces_writing_one_shard_address_are_refused():
    # The counts agree (2 + 2 = 4), but both pieces write the shard's head
    # and nothing writes its tail.
    def piece(source, dest):
        return A.AffinePiece((2,), source, (1,), dest, (1,), [0])
    twice = A.ParamAffineMap((4,), {0: (4,)}, {0: [piece(0, 0), piece(2, 0)]})
    with pytest.raises(ValueError, match="Rank 0 writes shard address 0 "
                       "twice, so one piece would silently overwrite"):
        twice.validate()
    # Strided pieces too (DeepSpeed's interval scan cannot see these): two
    # column pieces of a [2, 2] shard both on column 0.
    column = A.ParamAffineMap((2, 2), {0: (2, 2)}, {0: [
        A.AffinePiece((2, 1), 0, (2, 1), 0, (2, 1), [0]),
        A.AffinePiece((2, 1), 1, (2, 1), 0, (2, 1), [0])]})
    with pytest.raises(ValueError, match="Rank 0 writes shard address 0 "
                       "twice"):
        column.validate()
    outside = A.ParamAffineMap((4,), {0: (4,)}, {0: [piece(0, 0),
                                                      piece(2, 3)]})
    with pytest.raises(ValueError, match="rank 0 piece #1: .*shard"):
        outside.validate()


def test_a_piece_spanning_other_holders_is_refused():
    # Rank 0 holds all four elements, rank 1 the last two, but rank 0's
    # piece claims to be held by rank 0 alone.
    m = A.ParamAffineMap((4,), {0: (4,), 1: (2,)}, {
        0: [A.AffinePiece((4,), 0, (1,), 0, (1,), [0])],
        1: [A.AffinePiece((2,), 2, (1,), 0, (1,), [1])]})
    with pytest.raises(AssertionError, match="different holders"):
        m.validate_coverage()


def test_rebuild_refusals():
    m = A.contiguous_split_map((4,), [2, 2], 0)
    with pytest.raises(ValueError, match="describes 2"):
        m.rebuild({0: torch.zeros(2), 1: torch.zeros(3)})
    r = A.replicated_map((2,), 2)
    with pytest.raises(ValueError, match="different data"):
        r.rebuild({0: torch.zeros(2), 1: torch.ones(2)})
    scaled = A.replicated_map((2,), 2, scale=0.5)
    with pytest.raises(NotImplementedError, match="source coordinate"):
        scaled.rebuild({0: torch.zeros(2), 1: torch.zeros(2)}, scale_power=-1)
    with pytest.raises(NotImplementedError, match="source coordinate"):
        scaled.extract(torch.zeros(2), 0, scale_power=-2)
    with pytest.raises(ValueError, match="do not account for"):
        A.segmented_map((6, 2), [(4, False), (2, True)], 0, 2, [[1, 2]])


def test_shards_that_are_views_into_a_larger_buffer():
    m = A.contiguous_split_map((4, 6), [3, 3], 1)
    full = torch.arange(24.0).reshape(4, 6)
    buffer = torch.arange(100.0)
    shards = {0: buffer[7:19].view(4, 3), 1: buffer[50:62].view(4, 3)}
    shards[0].copy_(m.extract(full, 0))
    shards[1].copy_(m.extract(full, 1))
    assert torch.equal(m.rebuild(shards), full)
    assert torch.equal(m.extract(buffer[30:54].view(4, 6), 1),
                       buffer[30:54].view(4, 6)[:, 3:])


def test_scaled_helper_and_scaled_rebuild():
    t = torch.tensor([1.0, 2.0])
    assert A._scaled(t, 0.5, 1) is not t
    assert torch.equal(A._scaled(t, 0.5, 1), torch.tensor([2.0, 4.0]))
    assert A._scaled(t, 2.0, 0) is t
    bias = A.replicated_map((4,), 4, scale=0.25)
    full = torch.randn(4)
    shards = {r: bias.extract(full, r) for r in range(4)}
    assert torch.equal(shards[0], full * 0.25)
    assert torch.equal(bias.rebuild(shards), full)


def test_repr_of_a_map():
    assert repr(A.contiguous_split_map((4,), [2, 2], 0)) == (
        "ParamAffineMap(logical_shape=(4,), pieces_per_rank={0: 1, 1: 1})")


def test_a_rank_holding_no_expert_needs_no_shard():
    # AutoEP may leave a rank without experts: DeepSpeed rebuilds without a
    # shard for it, and so does affine_ucp, still checking the replicas of
    # the ranks that hold elements, and still asking for those.
    experts = A.block_gather_map((4, 2), {0: [0, 1], 1: [2, 3], 2: []}, 1, 0)
    full = torch.arange(8.0).view(4, 2)
    shards = {r: experts.extract(full, r) for r in (0, 1)}
    assert torch.equal(experts.rebuild(shards), full)
    with pytest.raises(KeyError, match="no source shard of rank 1"):
        experts.rebuild({0: shards[0]})

    def piece():
        return A.AffinePiece((2, 2), 0, (2, 1), 0, (2, 1), {0, 1})
    replicated = A.ParamAffineMap((2, 2), {0: (2, 2), 1: (2, 2), 2: (0, 2)},
                                  {0: [piece()], 1: [piece()], 2: []})
    shards = {0: torch.ones(2, 2), 1: torch.ones(2, 2)}
    assert torch.equal(replicated.rebuild(shards), torch.ones(2, 2))
    assert torch.equal(u.rebuild(replicated._to_core("e"), shards),
                       torch.ones(2, 2))
    shards[1][1, 1] = 5
    with pytest.raises(ValueError, match=r"replicated element \[1, 1\]"):
        replicated.rebuild(shards)
    with pytest.raises(ValueError, match=r"replicated element \[1, 1\]"):
        u.rebuild(replicated._to_core("e"), shards)


def test_numpy_input_is_refused_saying_what_was_expected():
    import numpy
    m = A.contiguous_split_map((4, 2), [2, 2], 0)
    with pytest.raises(TypeError, match="the shard of rank 0: expected a "
                       "torch.Tensor, got numpy.ndarray"):
        m.rebuild({0: numpy.zeros((2, 2)), 1: numpy.zeros((2, 2))})
    with pytest.raises(TypeError, match="the full parameter: expected a "
                       "torch.Tensor, got numpy.ndarray .affine_ucp.extract"):
        m.extract(numpy.zeros((4, 2)), 0)
