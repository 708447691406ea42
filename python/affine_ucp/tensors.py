"""Moving torch tensors and numpy arrays through maps and plans.

The copies run in the C++ CPU executor (multi-threaded, the GIL released),
straight on the tensors' memory: a contiguous CPU tensor is used as it is,
its first element where its storage offset puts it, so a shard that is a
view into a larger buffer is read and written in the right place. A
non-contiguous source is made contiguous first (a copy), and a
non-contiguous target is written through a contiguous copy that is then
copied back.
"""

import math
import operator
import sys
from typing import TYPE_CHECKING, Dict, Mapping, Optional, Union

from . import _core, _programs

if TYPE_CHECKING:  # Names for the annotations; never imported to run.
    import numpy
    import torch

# The state of a tensor -> the power of the scale it carries (fp32 and
# param 1, exp_avg -1, exp_avg_sq -2): the C++ core's one table.
_STATE_POWERS = _core.state_scale_powers

# The element types the executor moves, by their names in torch and numpy.
_DTYPE_NAMES = {
    "float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8",
    "uint8": "u8", "bool": "bool",
}


def _loaded(module: str):
    """`module` if the program has imported it, else None. A torch tensor
    or a numpy array exists only once its module is imported, so this
    package never imports torch (seconds) or numpy just to recognise one."""
    return sys.modules.get(module)


def _dtype_name(dtype) -> str:
    """The executor's name of a torch or numpy dtype, or a ValueError that
    lists the ones it moves."""
    name = str(dtype).replace("torch.", "")
    if name not in _DTYPE_NAMES:
        raise ValueError(f"dtype {name} is not one affine_ucp moves; "
                         f"expected one of {', '.join(_DTYPE_NAMES)}")
    return _DTYPE_NAMES[name]


Array = Union["torch.Tensor", "numpy.ndarray"]


def get_scale_power(state: Optional[str] = None,
                    scale_power: Optional[int] = None) -> int:
    """The scale power of a tensor: given, or its optimizer state's (fp32 /
    param 1, exp_avg -1, exp_avg_sq -2); both must agree."""
    if scale_power is not None:
        try:
            scale_power = operator.index(scale_power)
        except TypeError:
            raise TypeError(f"scale_power: expected an int (-2, -1, 0 or 1), "
                            f"got {type(scale_power).__name__} "
                            f"{scale_power!r}") from None
    if state is None:
        return 1 if scale_power is None else scale_power
    if state not in _STATE_POWERS:
        raise ValueError(f"state '{state}': expected one of "
                         f"{', '.join(_STATE_POWERS)}")
    power = _STATE_POWERS[state]
    if scale_power is not None and scale_power != power:
        raise ValueError(f"state '{state}' carries scale power {power}, but "
                         f"scale_power={scale_power} was given; give one of "
                         "them")
    return power


class _Buffer:
    """A tensor's elements as the executor takes them."""

    def __init__(self, array: Array, writable: bool):
        self.original = array
        self.write_back = False
        torch, numpy = _loaded("torch"), _loaded("numpy")
        if torch is not None and isinstance(array, torch.Tensor):
            if array.device.type != "cpu":
                raise ValueError(
                    f"a tensor on {array.device}: affine_ucp copies CPU "
                    "tensors (the CUDA executor runs from affine-run "
                    "--device cuda)")
            self.dtype = _dtype_name(array.dtype)
            flat = array.detach()
            if not flat.is_contiguous():
                flat = flat.contiguous()
                self.write_back = writable
            self.array = flat
            self.address = flat.data_ptr()
            self.elements = flat.numel()
        elif numpy is not None and isinstance(array, numpy.ndarray):
            self.dtype = _dtype_name(array.dtype)
            if writable and not array.flags.writeable:
                raise ValueError("a read-only array cannot be a target")
            flat = numpy.ascontiguousarray(array)
            self.write_back = writable and flat is not array and \
                not numpy.shares_memory(flat, array)
            self.array = flat
            self.address = flat.ctypes.data
            self.elements = flat.size
        else:
            raise TypeError(f"expected a torch.Tensor or a numpy.ndarray, got "
                            f"{type(array).__name__}")

    def finish(self):
        """Copies a non-contiguous target's result back into it."""
        if not self.write_back:
            return
        torch = _loaded("torch")
        if torch is not None and isinstance(self.original, torch.Tensor):
            with torch.no_grad():
                self.original.copy_(self.array)
        else:
            self.original[...] = self.array


# Outputs of at least this many bytes come from the caching allocator
# (set_cache_limit); smaller ones from torch or numpy, whose allocator keeps
# and hands back small blocks itself.
_CACHED_OUTPUT_BYTES = 4 << 20


def _empty_like(example: Array, shape) -> Array:
    """An output of `shape` and `example`'s dtype, not yet written: a large
    one from the caching allocator (fresh memory on huge pages, or an
    output freed earlier, already mapped)."""
    shape = tuple(shape)
    count = math.prod(shape)
    torch = _loaded("torch")
    if torch is not None and isinstance(example, torch.Tensor):
        buffer = _output_buffer(count * example.element_size())
        if buffer is None:
            return torch.empty(shape, dtype=example.dtype)
        return torch.frombuffer(buffer, dtype=example.dtype,
                                count=count).view(shape)
    numpy = _loaded("numpy")
    buffer = _output_buffer(count * numpy.dtype(example.dtype).itemsize)
    if buffer is None:
        return numpy.empty(shape, dtype=example.dtype)
    return numpy.frombuffer(buffer, dtype=example.dtype,
                            count=count).reshape(shape)


def _output_buffer(size: int) -> "Optional[_core.OutputBuffer]":
    """A buffer of the caching allocator for an output of `size` bytes;
    None for a small one (torch's and numpy's allocators keep those), or
    where no memory can be mapped (the process is at its limit of
    mappings)."""
    if size < _CACHED_OUTPUT_BYTES:
        return None
    return _core.allocate_output(size)


def set_cache_limit(limit: int) -> None:
    """Sets the most bytes of freed outputs kept for reuse (by default
    2 GiB, or an eighth of the machine's memory if less). Large outputs
    (4 MiB and more) are mapped on huge pages; when the last view of one
    is dropped its memory is kept for the next output of about its size,
    which then costs no page faults. 0 keeps none: every kept output is
    given back to the system."""
    limit = operator.index(limit)
    if limit < 0:
        raise ValueError(f"cache limit {limit}: expected bytes >= 0")
    _core.set_cache_limit(limit)


def cache_limit() -> int:
    """The most bytes of freed outputs kept for reuse (set_cache_limit)."""
    return _core.cache_limit()


def cached_bytes() -> int:
    """The bytes of freed outputs kept for reuse now."""
    return _core.cached_bytes()


def empty_cache() -> None:
    """Gives every kept output back to the system; the limit stays."""
    _core.empty_cache()


def run_plan(plan, sources: Mapping[int, Array],
             targets: Optional[Dict[int, Array]] = None, *,
             scale_power: int = 1, threads: int = 0) -> Dict[int, Array]:
    """Executes one parameter's plan from source shards into target shards
    (allocated where not given, in the plan's shard shapes). Every source
    shard the plan reads and every target shard it writes must be there,
    of the plan's size and of one dtype; a source shard of no elements (an
    AutoEP rank holding no expert) may be left out."""
    return _run(_programs.Lowered(_core.lower(plan), plan.name,
                                  plan.target_shards),
                sources, targets, scale_power=scale_power, threads=threads)


def _run(lowered: "_programs.Lowered", sources: Mapping[int, Array],
         targets: Optional[Dict[int, Array]] = None, *,
         scale_power: int = 1, threads: int = 0) -> Dict[int, Array]:
    """run_plan on a lowered plan."""
    scale_power = get_scale_power(None, scale_power)
    program, name = lowered.program, lowered.name
    missing = [r for r, count in program.source_elements.items()
               if r not in sources and count > 0]
    if missing:
        raise KeyError(f"parameter '{name}': no source shard of rank "
                       f"{missing[0]}")
    inputs = {rank: _Buffer(sources[rank], False)
              for rank in program.source_elements if rank in sources}
    if not inputs:
        raise ValueError(f"parameter '{name}': no source shard is read")
    example = inputs[next(iter(inputs))].original
    targets = dict(targets or {})
    for rank, shape in lowered.target_shards.items():
        if rank not in targets:
            targets[rank] = _empty_like(example, shape)
    outputs = {rank: _Buffer(targets[rank], True)
               for rank in program.target_elements}
    types = {b.dtype for b in list(inputs.values()) + list(outputs.values())}
    if len(types) > 1:
        raise ValueError(f"parameter '{name}': shards of several dtypes "
                         f"({', '.join(sorted(types))})")
    addresses = {r: (b.address, b.elements) for r, b in inputs.items()}
    addresses.update({r: (0, 0) for r in program.source_elements
                      if r not in inputs})  # Empty shards, never read.
    _core.execute(program, addresses,
                  {r: (b.address, b.elements) for r, b in outputs.items()},
                  types.pop(), threads, name, scale_power)
    for buffer in outputs.values():
        buffer.finish()
    return targets


def _shape(array: Array, shape) -> Array:
    return array.reshape(tuple(shape))


def extract(map, full: Array, rank: Optional[int] = None, *,
            state: Optional[str] = None, scale_power: Optional[int] = None,
            threads: int = 0):
    """Rank `rank`'s shard of the full tensor `full` under `map` (every
    rank's, as a dict, if `rank` is None), in the shard's shape, holding
    ``full * scale ** scale_power`` for each piece."""
    power = get_scale_power(state, scale_power)
    # One rank's shard: only its copies run, into only its shard.
    programs = _programs.programs(map)
    lowered = programs.cut() if rank is None else programs.into(rank)
    shards = _run(lowered, {0: full}, scale_power=power, threads=threads)
    shaped = {r: _shape(t, lowered.target_shards[r])
              for r, t in shards.items()}
    return shaped if rank is None else shaped[rank]


def rebuild(map, shards: Mapping[int, Array], *, state: Optional[str] = None,
            scale_power: Optional[int] = None, check_replicas: bool = True,
            threads: int = 0, out: Optional[Array] = None):
    """The full tensor of `map` from its shards (rank -> tensor; one holder
    of each replicated block is enough, else a VerificationError names the
    first element none of them holds). With `check_replicas` and every
    shard given, every holder of a replicated block must hold the same
    data."""
    power = get_scale_power(state, scale_power)
    lowered = _programs.programs(_restrict(map, set(shards))).join()
    if check_replicas and shards:
        given = {r: _Buffer(t, False) for r, t in shards.items()}
        if _holding_ranks(map) <= set(given):
            _check_sizes(lowered, given)
            _core.check_replicas(
                map, _with_empty_shards(
                    map, {r: b.address for r, b in given.items()}),
                _element_size(next(iter(given.values())).dtype))
    targets = _run(lowered, shards, {0: out} if out is not None else None,
                   scale_power=power, threads=threads)
    return _shape(targets[0], map.logical_shape)


def _check_sizes(lowered: "_programs.Lowered",
                 given: Dict[int, "_Buffer"]) -> None:
    """Every shard given holds the elements the map gives its rank (before
    anything reads it)."""
    for rank, buffer in given.items():
        count = lowered.program.source_elements.get(rank)
        if count is not None and buffer.elements != count:
            raise ValueError(f"rank {rank} supplied a source shard of "
                             f"{buffer.elements} elements, but the map "
                             f"describes {count}")


def _holding_ranks(map) -> set:
    """The ranks whose shard holds at least one element."""
    return {s.rank for s in map.shards if all(s.shape)}


def _with_empty_shards(map, addresses: Dict[int, int]) -> Dict[int, int]:
    """`addresses` (rank -> shard data) with the shards of no elements that
    were left out added, at address 0: nothing is read from them."""
    return {**{s.rank: 0 for s in map.shards}, **addresses}


def _restrict(map, ranks):
    """`map` with only the shards of `ranks`, each piece's locations cut to
    them: what those shards alone hold of F (verification then says whether
    they cover it)."""
    if {s.rank for s in map.shards} <= ranks:
        return map
    shards = []
    for shard in map.shards:
        if shard.rank not in ranks:
            continue
        pieces = [_core.Piece(p.shape, p.source_offset, p.source_strides,
                              p.dest_offset, p.dest_strides,
                              [r for r in p.locations if r in ranks], p.scale)
                  for p in shard.pieces]
        shards.append(_core.Shard(shard.rank, shard.shape, pieces))
    # _programs.programs verifies it, as every map it lowers.
    return _core.ParamMap(map.name, map.logical_shape, map.world_size,
                          shards, map.original_vocab_size)


def reshard(source_map, target_map, shards: Mapping[int, Array], *,
            policy: str = "local", state: Optional[str] = None,
            scale_power: Optional[int] = None, threads: int = 0,
            targets: Optional[Dict[int, Array]] = None) -> Dict[int, Array]:
    """The target shards of one parameter from its source shards, moved
    directly (M_t ∘ M_s⁻¹, never through F)."""
    power = get_scale_power(state, scale_power)
    [plan] = _core.compose([source_map], [target_map], policy)
    moved = run_plan(plan, shards, targets, scale_power=power,
                     threads=threads)
    return {r: _shape(t, plan.target_shards[r]) for r, t in moved.items()}


_SIZES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4,
          "i16": 2, "i8": 1, "u8": 1, "bool": 1}


def _element_size(dtype: str) -> int:
    return _SIZES[dtype]
