"""The copy programs that cut a full tensor into a map's shards and join
them back, made once per map and kept: an everyday caller extracts one
rank at a time, or rebuilds tensor after tensor of one layout, and would
otherwise verify, compose and lower the same map on every call.

A map is known by its document (``write_maps``, O(pieces)), so a map
object rebuilt from the same pieces hits, and one changed in place misses.
The programs of the last few maps are kept (they are O(pieces) too).
"""

from collections import OrderedDict
from typing import Dict, List, NamedTuple, Optional

from . import _core
from .errors import VerificationError

KEPT = 64


class Lowered(NamedTuple):
    """A parameter's program, its name and the shapes of the shards it
    writes, by rank."""
    program: "_core.CopyProgram"
    name: str
    target_shards: Dict[int, List[int]]


class MapPrograms:
    """The programs of one verified map, each made when first asked for."""

    def __init__(self, map) -> None:
        report = _core.verify(map)
        if not report["ok"]:
            raise VerificationError(map.name, report)
        self.map = map
        self._cut: Optional[Lowered] = None
        self._join: Optional[Lowered] = None
        self._into: Dict[int, Lowered] = {}

    def cut(self) -> Lowered:
        """From the full tensor (source 0) into every shard of the map."""
        if self._cut is None:
            self._cut = self._lower(cut=True)
        return self._cut

    def join(self) -> Lowered:
        """From the shards of the map into the full tensor (target 0)."""
        if self._join is None:
            self._join = self._lower(cut=False)
        return self._join

    def into(self, rank: int) -> Lowered:
        """From the full tensor into rank `rank`'s shard alone."""
        found = self._into.get(rank)
        if found is None:
            whole = self.cut()
            if rank not in whole.target_shards:
                raise KeyError(f"parameter '{self.map.name}': rank {rank} "
                               "holds no shard")
            found = Lowered(_core.program_into(whole.program, rank),
                            whole.name, {rank: whole.target_shards[rank]})
            self._into[rank] = found
        return found

    def _lower(self, cut: bool) -> Lowered:
        whole = _core.full_tensor_map(self.map)
        pair = ([whole], [self.map]) if cut else ([self.map], [whole])
        [plan] = _core.compose(*pair, "lowest")
        return Lowered(_core.lower(plan), plan.name, dict(plan.target_shards))


_kept: "OrderedDict[str, MapPrograms]" = OrderedDict()


def programs(map) -> MapPrograms:
    """The programs of `map` (a ``ParamMap``); VerificationError where it
    fails P1, P5 or tiling."""
    key = _core.write_maps([map])
    found = _kept.get(key)
    if found is not None:
        _kept.move_to_end(key)
        return found
    found = MapPrograms(map)
    _kept[key] = found
    if len(_kept) > KEPT:
        _kept.popitem(last=False)
    return found
