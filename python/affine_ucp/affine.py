"""A stand-in for DeepSpeed's ``deepspeed.checkpoint.affine``.

The same public names, constructor arguments, attributes, methods,
exceptions and refusals, so that code written against DeepSpeed's module
runs unchanged::

    from affine_ucp import affine
    m = affine.contiguous_split_map((8, 4), [4, 4], 0)
    m.validate_coverage()                  # O(pieces), not O(elements)
    shard = m.extract(full, rank=1)
    full = m.rebuild({0: s0, 1: s1})

Where DeepSpeed walks every element (``validate_coverage``) or copies piece
by piece with ``torch.as_strided`` (``rebuild``, ``extract``), this module
converts the map to an affine_ucp map and runs the C++ verifier and the
multi-threaded executor, on as many threads as torch uses
(``torch.set_num_threads``), with the programs made once per map;
``extract`` runs only the copies into the rank's shard. ``uncovered_offsets`` and ``holders`` answer
per element by definition; the first is O(pieces) when nothing is
uncovered.
"""

import itertools
import weakref
from typing import (Dict, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Tuple)

import torch

from . import _core, _programs
from .tensors import _holding_ranks, _run, _with_empty_shards

__all__ = [
    'AffinePiece', 'ParamAffineMap', 'AFFINE_MAP_FORMAT_VERSION',
    'row_major_strides', 'replicated_map', 'contiguous_split_map',
    'sub_param_map', 'segmented_map', 'block_gather_map'
]

#: The version of the stored map's encoding.
AFFINE_MAP_FORMAT_VERSION = 1


def _product(shape: Iterable[int]) -> int:
    count = 1
    for extent in shape:
        count *= extent
    return count


def row_major_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    """The strides, in elements, of a densely packed tensor of `shape`."""
    strides = []
    step = 1
    for extent in reversed(tuple(shape)):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


_row_major_strides = row_major_strides


class AffinePiece:
    """A block of elements: where it lies in the full tensor (`source_*`)
    and in the shard (`dest_*`), as ``torch.as_strided`` arguments; the
    ranks holding it (`locations`); and the factor the shard holds it by
    (``shard == full * scale``). A zero scale is refused: it is not
    invertible."""

    __slots__ = ('shape', 'source_offset', 'source_strides', 'dest_offset',
                 'dest_strides', 'locations', 'scale')

    def __init__(self, shape, source_offset, source_strides, dest_offset,
                 dest_strides, locations, scale=1.0):
        self.shape = tuple(int(extent) for extent in shape)
        self.source_offset = int(source_offset)
        self.source_strides = tuple(int(s) for s in source_strides)
        self.dest_offset = int(dest_offset)
        self.dest_strides = tuple(int(s) for s in dest_strides)
        self.locations = frozenset(int(rank) for rank in locations)
        self.scale = float(scale)
        if self.scale == 0.0:
            raise ValueError('A zero scale is not invertible: the full tensor '
                             'could not be rebuilt from a shard holding '
                             'full * 0.')

    @property
    def numel(self) -> int:
        return _product(self.shape)

    def source_view(self, full_param: torch.Tensor) -> torch.Tensor:
        """The piece's elements as a view of the full tensor."""
        return torch.as_strided(full_param, self.shape, self.source_strides,
                                self.source_offset)

    def dest_view(self, shard: torch.Tensor) -> torch.Tensor:
        """The piece's elements as a view of its shard."""
        return torch.as_strided(shard, self.shape, self.dest_strides,
                                self.dest_offset)

    def source_offsets(self) -> Iterator[int]:
        """The offset in the full tensor of every element, in row-major
        order of the piece (none for an empty piece)."""
        if any(extent == 0 for extent in self.shape):
            return
        for index in itertools.product(*(range(e) for e in self.shape)):
            yield self.source_offset + sum(
                i * s for i, s in zip(index, self.source_strides))

    def _to_core(self) -> _core.Piece:
        return _core.Piece(self.shape, self.source_offset, self.source_strides,
                           self.dest_offset, self.dest_strides,
                           sorted(self.locations), self.scale)

    def __repr__(self):
        return (f'AffinePiece(shape={self.shape}, source=({self.source_offset}'
                f', {self.source_strides}), dest=({self.dest_offset}, '
                f'{self.dest_strides}), locations={sorted(self.locations)}, '
                f'scale={self.scale})')

    def _key(self):
        return (self.shape, self.source_offset, self.source_strides,
                self.dest_offset, self.dest_strides, self.locations,
                self.scale)

    def __eq__(self, other):
        if not isinstance(other, AffinePiece):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())


# Each map's programs and the value they were made for, beside the map
# rather than on it: a map copies and pickles as its attributes alone.
_KEPT_PROGRAMS: 'weakref.WeakKeyDictionary[ParamAffineMap, tuple]' = \
    weakref.WeakKeyDictionary()


class ParamAffineMap:
    """One parameter over a group of ranks: each rank's shard shape
    (`shard_shapes`) and the pieces of the full tensor it holds
    (`pieces_by_rank`)."""

    def __init__(self, logical_shape, shard_shapes, pieces_by_rank):
        self.logical_shape = tuple(int(e) for e in logical_shape)
        self.shard_shapes = {int(r): tuple(int(e) for e in shape)
                             for r, shape in shard_shapes.items()}
        self.pieces_by_rank = {int(r): list(pieces)
                               for r, pieces in pieces_by_rank.items()}

    @property
    def numel(self) -> int:
        return _product(self.logical_shape)

    # Verification -------------------------------------------------------

    def _to_core(self, name: str = 'param') -> _core.ParamMap:
        ranks = set(self.shard_shapes) | set(self.pieces_by_rank)
        for pieces in self.pieces_by_rank.values():
            for piece in pieces:
                ranks |= piece.locations
        world = max(ranks) + 1 if ranks else 1
        shards = [
            _core.Shard(rank, self.shard_shapes[rank],
                        [p._to_core() for p in self.pieces_by_rank.get(rank,
                                                                       [])])
            for rank in sorted(self.shard_shapes)]
        return _core.ParamMap(name, self.logical_shape, world, shards)

    def _programs(self, validate: bool) -> _programs.MapPrograms:
        """The map's copy programs, kept beside it (_KEPT_PROGRAMS) while
        it is unchanged. The attributes are public and may be changed in
        place, so the map is compared by value (O(pieces), a few microseconds, against tens
        for building and writing its document). Where the programs are not
        kept yet, `validate` first raises the errors ``validate`` raises."""
        fingerprint = (self.logical_shape, tuple(self.shard_shapes.items()),
                       tuple((rank, tuple(p._key() for p in pieces))
                             for rank, pieces in self.pieces_by_rank.items()))
        kept = _KEPT_PROGRAMS.get(self)
        if kept is not None and kept[0] == fingerprint:
            return kept[1]
        if validate:
            self.validate()
        programs = _programs.programs(self._to_core())
        _KEPT_PROGRAMS[self] = (fingerprint, programs)
        return programs

    def _report(self) -> dict:
        return _core.verify(self._to_core())

    def uncovered_offsets(self) -> List[int]:
        """The offsets of the full tensor no rank holds, ascending."""
        report = self._report()
        if not any(v['kind'] == 'uncovered' for v in report['violations']):
            return []
        covered = set()
        for pieces in self.pieces_by_rank.values():
            for piece in pieces:
                covered.update(piece.source_offsets())
        return sorted(set(range(self.numel)) - covered)

    def holders(self) -> Dict[int, set]:
        """Each element offset of the full tensor -> the ranks holding it."""
        holders: Dict[int, set] = {}
        for rank, pieces in self.pieces_by_rank.items():
            for piece in pieces:
                for offset in piece.source_offsets():
                    holders.setdefault(offset, set()).add(rank)
        return holders

    def validate(self) -> None:
        """Every rank's pieces account for exactly its shard's elements,
        inside the shard, and no two write one shard address (ValueError,
        as DeepSpeed raises; its check covers densely packed pieces, this
        one every piece the analytic verifier handles, at O(pieces))."""
        self._check_counts()
        self._check_overlaps(self._report())

    def _check_counts(self) -> None:
        for rank, pieces in self.pieces_by_rank.items():
            held = sum(piece.numel for piece in pieces)
            expected = _product(self.shard_shapes[rank])
            if held != expected:
                raise ValueError(
                    f'Rank {rank} holds a shard of {expected} elements but '
                    f'its pieces account for {held}.')

    def _check_overlaps(self, report: dict) -> None:
        for violation in report['violations']:
            if violation['kind'] == 'shard_overlap':
                rank = violation['rank']
                address = _ravel(violation['element'],
                                 self.shard_shapes[rank])
                raise ValueError(
                    f'Rank {rank} writes shard address {address} twice, so '
                    f'one piece would silently overwrite another '
                    f'({violation["message"]}).')

    def validate_coverage(self) -> None:
        """The shards cover the parameter and every piece is homogeneous
        (its locations are exactly the ranks holding its elements, one
        scale): checked by the affine_ucp verifier at O(pieces)."""
        self._check_counts()
        report = self._report()
        self._check_overlaps(report)
        if report['ok']:
            return
        if any(v['kind'] == 'too_irregular' for v in report['violations']):
            return self._validate_by_walking()
        uncovered = [v for v in report['violations']
                     if v['kind'] == 'uncovered']
        if uncovered:
            count = sum(v['count'] for v in uncovered)
            first = min(_ravel(v['element'], self.logical_shape)
                        for v in uncovered)
            assert False, (
                f'Affine map for a parameter of shape {self.logical_shape} '
                f'leaves {count} element(s) uncovered, starting at offset '
                f'{first}, so the parameter cannot be rebuilt from its shards.')
        violation = report['violations'][0]
        assert False, (
            f'{violation["message"]}. A piece must not span elements with '
            'different holders, or its locations cannot be trusted.')

    def _validate_by_walking(self) -> None:
        """The element walk, for views too irregular for the analytic
        verifier."""
        missing = self.uncovered_offsets()
        assert not missing, (
            f'Affine map for a parameter of shape {self.logical_shape} leaves '
            f'{len(missing)} element(s) uncovered, starting at offset '
            f'{missing[0]}, so the parameter cannot be rebuilt from its '
            'shards.')
        holders = self.holders()
        for rank, pieces in self.pieces_by_rank.items():
            for piece in pieces:
                for offset in piece.source_offsets():
                    assert holders[offset] == set(piece.locations), (
                        f'Piece {piece} on rank {rank} covers offset {offset}, '
                        f'which is held by {sorted(holders[offset])}. A piece '
                        'must not span elements with different holders, or '
                        'its locations cannot be trusted.')

    # Data ---------------------------------------------------------------

    def _reject_scaled_optimizer_state(self, scale_power: int) -> None:
        if scale_power == 1:
            return
        if any(piece.scale != 1.0 for pieces in self.pieces_by_rank.values()
               for piece in pieces):
            raise NotImplementedError(
                'Converting an optimizer state through a scaled piece is not '
                'supported: the moments convert, but the optimizer group '
                'hyperparameters (lr, eps) would stay in the source '
                'coordinate, so a resumed run would diverge.')

    def rebuild(self, shards: Mapping[int, torch.Tensor],
                scale_power: int = 1) -> torch.Tensor:
        """The full parameter from its shards (rank -> tensor, which may be
        views into larger buffers), in the logical shape. Every holder of a
        replicated block must hold the same data."""
        programs = self._programs(validate=True)
        self._reject_scaled_optimizer_state(scale_power)
        for rank, shard in shards.items():
            _expect_tensor(shard, f'the shard of rank {rank}')
            expected = _product(self.shard_shapes[rank])
            if shard.numel() != expected:
                raise ValueError(
                    f'Rank {rank} supplied a shard of {shard.numel()} '
                    f'elements, but the map describes {expected}. Applying '
                    'the pieces would read a prefix of it and drop the rest.')
        flat = {r: t.reshape(-1) for r, t in shards.items()}
        _check_replicas(programs.map, flat)
        full = _run(programs.join(), flat, scale_power=scale_power,
                    threads=torch.get_num_threads())[0]
        return full.view(self.logical_shape)

    def extract(self, full_param: torch.Tensor, rank: int,
                scale_power: int = 1) -> torch.Tensor:
        """Rank `rank`'s shard of the full parameter, in its shard shape:
        the inverse of ``rebuild``."""
        self._reject_scaled_optimizer_state(scale_power)
        _expect_tensor(full_param, 'the full parameter')
        shard_shape = self.shard_shapes[rank]
        # Only this rank's copies run, into only its shard; the program is
        # made once per map.
        lowered = self._programs(validate=False).into(rank)
        shard = _run(lowered, {0: full_param.reshape(-1)},
                     scale_power=scale_power,
                     threads=torch.get_num_threads())[rank]
        return shard.view(shard_shape)

    # Documents ----------------------------------------------------------

    def to_dict(self) -> dict:
        """Plain scalars (the stored map), readable without torch."""
        return {
            'logical_shape': list(self.logical_shape),
            'ranks': {
                rank: {'shard_shape': list(self.shard_shapes[rank]),
                       'pieces': [_piece_to_dict(p) for p in pieces]}
                for rank, pieces in sorted(self.pieces_by_rank.items())
            },
        }

    @classmethod
    def from_dict(cls, entry: dict) -> 'ParamAffineMap':
        ranks = entry['ranks']
        return cls(logical_shape=entry['logical_shape'],
                   shard_shapes={int(r): v['shard_shape']
                                 for r, v in ranks.items()},
                   pieces_by_rank={int(r): [_piece_from_dict(p)
                                            for p in v['pieces']]
                                   for r, v in ranks.items()})

    def __repr__(self):
        counts = {r: len(p) for r, p in sorted(self.pieces_by_rank.items())}
        return (f'ParamAffineMap(logical_shape={self.logical_shape}, '
                f'pieces_per_rank={counts})')


def _ravel(index: Sequence[int], shape: Sequence[int]) -> int:
    return sum(i * s for i, s in zip(index, row_major_strides(shape)))


def _expect_tensor(value, what: str) -> None:
    """Refuses what is not a torch tensor, as this module moves only those
    (affine_ucp.extract and rebuild take numpy arrays too)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f'{what}: expected a torch.Tensor, got '
                        f'{type(value).__module__}.{type(value).__name__} '
                        '(affine_ucp.extract and affine_ucp.rebuild also '
                        'take numpy arrays)')


def _check_replicas(core: _core.ParamMap,
                    flat: Mapping[int, torch.Tensor]) -> None:
    """Every holder of a replicated block holds the same bytes, when every
    rank holding elements is given."""
    if not flat or not _holding_ranks(core) <= set(flat):
        return
    contiguous = {r: t.contiguous() for r, t in flat.items()}
    try:
        _core.check_replicas(
            core, _with_empty_shards(core, {r: t.data_ptr()
                                            for r, t in contiguous.items()}),
            next(iter(contiguous.values())).element_size())
    except ValueError as error:
        raise ValueError(f'{error}: ranks hold different data for the same '
                         'block of a replicated parameter.') from None


def _scaled(tensor: torch.Tensor, scale: float,
            scale_power: int) -> torch.Tensor:
    """The block as the full tensor holds it, from a shard holding
    ``full * scale ** scale_power``."""
    factor = scale**scale_power
    if factor == 1.0:
        return tensor
    return tensor / factor


def _piece_to_dict(piece: AffinePiece) -> dict:
    entry = {'shape': list(piece.shape),
             'source': [piece.source_offset, list(piece.source_strides)],
             'dest': [piece.dest_offset, list(piece.dest_strides)],
             'locations': sorted(piece.locations)}
    if piece.scale != 1.0:  # Left out at its default, as stored maps do.
        entry['scale'] = piece.scale
    return entry


def _piece_from_dict(entry: dict) -> AffinePiece:
    source_offset, source_strides = entry['source']
    dest_offset, dest_strides = entry['dest']
    return AffinePiece(entry['shape'], source_offset, source_strides,
                       dest_offset, dest_strides, entry['locations'],
                       entry.get('scale', 1.0))


# Builders ---------------------------------------------------------------

def _narrowed(shape: Sequence[int], dim: int, extent: int) -> Tuple[int, ...]:
    narrowed = list(shape)
    narrowed[dim] = extent
    return tuple(narrowed)


def replicated_map(shape, tp_degree, scale=1.0) -> ParamAffineMap:
    """Every one of `tp_degree` ranks holds the whole parameter, times
    `scale` (a row-parallel bias pre-divided by the world size)."""
    shape = tuple(shape)
    ranks = list(range(tp_degree))
    strides = row_major_strides(shape)
    piece = AffinePiece(shape, 0, strides, 0, strides, ranks, scale)
    return ParamAffineMap(shape, {r: shape for r in ranks},
                          {r: [piece] for r in ranks})


def contiguous_split_map(shape, per_rank_sizes,
                         partition_dim) -> ParamAffineMap:
    """Rank r holds the next `per_rank_sizes[r]` indices along
    `partition_dim` (row or column parallel; uneven sizes allowed)."""
    shape = tuple(shape)
    strides = row_major_strides(shape)
    shard_shapes, pieces = {}, {}
    start = 0
    for rank, size in enumerate(per_rank_sizes):
        shard = _narrowed(shape, partition_dim, size)
        shard_shapes[rank] = shard
        pieces[rank] = [AffinePiece(shard, start * strides[partition_dim],
                                    strides, 0, row_major_strides(shard),
                                    [rank])]
        start += size
    return ParamAffineMap(shape, shard_shapes, pieces)


def sub_param_map(shape, sub_dim_sizes, shard_widths,
                  partition_dim) -> ParamAffineMap:
    """Sub-parameters (fused QKV) concatenated along `partition_dim`, each
    split over the ranks by `shard_widths[i]`: a rank's shard is its part of
    each sub-parameter in turn."""
    shape = tuple(shape)
    strides = row_major_strides(shape)
    ranks = range(len(shard_widths[0]))
    shard_shapes = {r: _narrowed(shape, partition_dim,
                                 sum(w[r] for w in shard_widths))
                    for r in ranks}
    pieces: Dict[int, List[AffinePiece]] = {r: [] for r in ranks}
    placed = {r: 0 for r in ranks}
    start = 0
    for size, widths in zip(sub_dim_sizes, shard_widths):
        at = start
        for rank in ranks:
            dest = row_major_strides(shard_shapes[rank])
            pieces[rank].append(AffinePiece(
                _narrowed(shape, partition_dim, widths[rank]),
                at * strides[partition_dim], strides,
                placed[rank] * dest[partition_dim], dest, [rank]))
            at += widths[rank]
            placed[rank] += widths[rank]
        start += size
    return ParamAffineMap(shape, shard_shapes, pieces)


def segmented_map(shape, segments, partition_dim, tp_degree,
                  split_widths) -> ParamAffineMap:
    """Consecutive segments along `partition_dim`, each `(size,
    replicated)`: a replicated one whole on every rank, a split one cut by
    the next entry of `split_widths` (which must add up to its size)."""
    shape = tuple(shape)
    strides = row_major_strides(shape)
    ranks = list(range(tp_degree))
    widths_of: List[Optional[Sequence[int]]] = []
    splits = iter(split_widths)
    for size, replicated in segments:
        if replicated:
            widths_of.append(None)
            continue
        widths = list(next(splits))
        if len(widths) != tp_degree or sum(widths) != size:
            raise ValueError(f'Split widths {widths} do not account for a '
                             f'segment of {size} elements across {tp_degree} '
                             'ranks.')
        widths_of.append(widths)
    shard_shapes = {
        r: _narrowed(shape, partition_dim,
                     sum(size if w is None else w[r]
                         for (size, _), w in zip(segments, widths_of)))
        for r in ranks}
    pieces: Dict[int, List[AffinePiece]] = {r: [] for r in ranks}
    placed = {r: 0 for r in ranks}
    start = 0
    for (size, replicated), cut in zip(segments, widths_of):
        for rank in ranks:
            extent = size if cut is None else cut[rank]
            offset = start if cut is None else start + sum(cut[:rank])
            dest = row_major_strides(shard_shapes[rank])
            pieces[rank].append(AffinePiece(
                _narrowed(shape, partition_dim, extent),
                offset * strides[partition_dim], strides,
                placed[rank] * dest[partition_dim], dest,
                ranks if cut is None else [rank]))
            placed[rank] += extent
        start += size
    return ParamAffineMap(shape, shard_shapes, pieces)


def block_gather_map(shape, block_ids_by_rank, block_size,
                     partition_dim) -> ParamAffineMap:
    """Rank r holds the blocks `block_ids_by_rank[r]` of `block_size`
    indices along `partition_dim`, in that order; consecutive ids are one
    piece."""
    shape = tuple(shape)
    strides = row_major_strides(shape)
    shard_shapes, pieces = {}, {}
    for rank, ids in block_ids_by_rank.items():
        ids = list(ids)
        shard = _narrowed(shape, partition_dim, len(ids) * block_size)
        shard_shapes[rank] = shard
        dest = row_major_strides(shard)
        mine = []
        placed = 0
        run_start = 0
        while run_start < len(ids):
            run = 1
            while (run_start + run < len(ids)
                   and ids[run_start + run] == ids[run_start + run - 1] + 1):
                run += 1
            mine.append(AffinePiece(
                _narrowed(shape, partition_dim, run * block_size),
                ids[run_start] * block_size * strides[partition_dim], strides,
                placed * block_size * dest[partition_dim], dest, [rank]))
            placed += run
            run_start += run
        pieces[rank] = mine
    return ParamAffineMap(shape, shard_shapes, pieces)
