"""The copy programs that cut a full tensor into a map's shards and join
them back, made once per map and kept: an everyday caller extracts one
rank at a time, or rebuilds tensor after tensor of one layout, and would
otherwise verify, compose and lower the same map on every call.

A map is known by its document (``write_maps``, O(pieces)), so a map
object rebuilt from the same pieces hits, and one changed in place misses.
The last few maps are kept (their programs are O(pieces) too).
"""

from collections import OrderedDict
from typing import Dict, List, NamedTuple, Tuple

from . import _core
from .errors import VerificationError

KEPT = 64


class Lowered(NamedTuple):
    """A parameter's program, its name and the shapes of the shards it
    writes, by rank."""
    program: "_core.CopyProgram"
    name: str
    target_shards: Dict[int, List[int]]


_kept: "OrderedDict[Tuple[str, str], Lowered]" = OrderedDict()


def _verify(map) -> None:
    """Raises VerificationError where `map` fails P1, P5 or tiling."""
    report = _core.verify(map)
    if not report["ok"]:
        raise VerificationError(map.name, report)


def _lowered(direction: str, map) -> Lowered:
    key = (direction, _core.write_maps([map]))
    found = _kept.get(key)
    if found is not None:
        _kept.move_to_end(key)
        return found
    _verify(map)
    whole = _core.full_tensor_map(map)
    pair = ([whole], [map]) if direction == "cut" else ([map], [whole])
    [plan] = _core.compose(*pair, "lowest")
    found = Lowered(_core.lower(plan), plan.name, dict(plan.target_shards))
    _kept[key] = found
    if len(_kept) > KEPT:
        _kept.popitem(last=False)
    return found


def cut(map) -> Lowered:
    """From the full tensor (source 0) into every shard of `map`."""
    return _lowered("cut", map)


def join(map) -> Lowered:
    """From the shards of `map` into the full tensor (target 0)."""
    return _lowered("join", map)


def cut_into(map, rank: int) -> Lowered:
    """From the full tensor into rank `rank`'s shard alone."""
    whole = cut(map)
    if rank not in whole.target_shards:
        raise KeyError(f"parameter '{map.name}': rank {rank} holds no shard")
    return Lowered(_core.program_into(whole.program, rank), whole.name,
                   {rank: whole.target_shards[rank]})
