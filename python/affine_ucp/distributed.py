"""Resharding across the processes of an mpi4py communicator.

Every process passes the same maps and the shards of the ranks it holds;
:func:`reshard_mpi` plans the whole transfer on every process and moves
each byte once, peer to peer: copies between ranks of one process stay
local, the others travel as MPI messages (the C++ ``MpiGroup``). By default
rank ``r`` of either side is held by process ``r % size``.
"""

from typing import Dict, Mapping, Optional, Sequence

from . import _core
from .tensors import Array, _Buffer, _empty_like, _shape, get_scale_power


def _processes(given: Optional[Sequence[int]], world: int, size: int,
               side: str):
    if given is None:
        return [rank % size for rank in range(world)]
    given = list(given)
    if len(given) != world:
        raise ValueError(f"{side}_processes names {len(given)} ranks, but "
                         f"the {side} maps have {world}")
    for rank, process in enumerate(given):
        if not 0 <= process < size:
            raise ValueError(f"{side}_processes gives rank {rank} process "
                             f"{process}, not one of 0..{size - 1}")
    return given


def reshard_mpi(comm, source_maps, target_maps,
                shards: Mapping[str, Mapping[int, Array]], *,
                source_processes: Optional[Sequence[int]] = None,
                target_processes: Optional[Sequence[int]] = None,
                policy: str = "local", state: Optional[str] = None,
                scale_power: Optional[int] = None, threads: int = 0,
                timeout: float = 300.0) -> Dict[str, Dict[int, Array]]:
    """Collective over `comm` (an mpi4py communicator): moves every
    parameter of `source_maps` into the layout of the same-named one of
    `target_maps`. `shards` maps each parameter name to this process's
    source shards by rank; returns this process's target shards by name and
    rank, allocated like the sources. Every wait lasts at most `timeout`
    seconds."""
    if not _core.has_mpi:
        raise RuntimeError("affine_ucp was built without MPI and mpi4py")
    size = comm.Get_size()
    source_world = max(m.world_size for m in source_maps)
    target_world = max(m.world_size for m in target_maps)
    sources = _processes(source_processes, source_world, size, "source")
    targets = _processes(target_processes, target_world, size, "target")
    power = get_scale_power(state, scale_power)
    plans = _core.compose(list(source_maps), list(target_maps), policy, 8,
                          sources, targets)
    process = comm.Get_rank()
    inputs_of = {plan.name: {rank: _Buffer(array, False) for rank, array in
                             shards.get(plan.name, {}).items()}
                 for plan in plans}
    # Every process learns every parameter's dtype, in one collective: a
    # process holding no source shard still allocates its targets.
    mine_types = {name: sorted({b.dtype for b in inputs.values()})
                  for name, inputs in inputs_of.items()}
    gathered = comm.allgather(mine_types)
    items, outputs, keep = [], {}, []
    for plan in plans:
        program = _core.lower(plan)
        held = shards.get(plan.name, {})
        inputs = inputs_of[plan.name]
        known = sorted({d for types in gathered for d in types[plan.name]})
        if len(known) != 1:
            raise ValueError(f"parameter '{plan.name}': source shards of "
                             f"dtypes {known or 'none'} across the processes")
        example = next(iter(held.values()), None)
        mine = {}
        for rank, shape in plan.target_shards.items():
            if targets[rank] == process:
                mine[rank] = _allocate(example, known[0], shape)
        written = {rank: _Buffer(array, True) for rank, array in mine.items()}
        keep.append((inputs, written))
        items.append(_core.MpiItem(
            program, {r: (b.address, b.elements) for r, b in inputs.items()},
            {r: (b.address, b.elements) for r, b in written.items()},
            known[0], plan.name, power))
        outputs[plan.name] = (plan, mine)
    _core.execute_mpi(comm, items, sources, targets, threads, timeout)
    for inputs, written in keep:
        for buffer in written.values():
            buffer.finish()
    return {name: {r: _shape(t, plan.target_shards[r])
                   for r, t in mine.items()}
            for name, (plan, mine) in outputs.items()}


_TORCH_DTYPES = {"f64": "float64", "f32": "float32", "f16": "float16",
                 "bf16": "bfloat16", "i64": "int64", "i32": "int32",
                 "i16": "int16", "i8": "int8", "u8": "uint8", "bool": "bool"}


def _allocate(example: Optional[Array], dtype: str, shape) -> Array:
    """A target shard like `example`, or a torch tensor of `dtype` where
    this process holds no source shard of the parameter."""
    if example is not None:
        return _empty_like(example, shape)
    import torch
    kind = getattr(torch, _TORCH_DTYPES[dtype])
    return _empty_like(torch.empty(0, dtype=kind), shape)
