"""affine_ucp: sharded tensors described by geometry, not by names.

A parameter F sharded over a world of ranks is a :class:`ParamMap`: each
rank's :class:`Shard` is a list of :class:`Piece` s, affine views of F and
of the shard. On maps this package offers what the affine-ucp tools do:

* maps: :func:`parse_maps`, :func:`read_maps`, :func:`write_maps`,
  :func:`verify` (P1, P5 and tiling at O(pieces), raising
  :class:`VerificationError`), :func:`canonicalize`, :func:`summarize`, and
  every builder of the layout library (:func:`split_layout`,
  :func:`split_sub_param_layout`, :func:`expert_layout`, ...);
* plans: :func:`compose` (M_t ∘ M_s⁻¹ under a replica policy), their
  segments and fills, :func:`write_plans`;
* tensors (torch or numpy, CPU): :func:`extract`, :func:`rebuild`,
  :func:`reshard`, :func:`run_plan`, with scale powers for optimizer states;
  large outputs kept for reuse when freed (:func:`set_cache_limit`,
  :func:`cached_bytes`, :func:`empty_cache`);
* across processes: :func:`reshard_mpi` on an mpi4py communicator;
* checkpoints: :func:`open_checkpoint`, :func:`ds_to_universal`,
  :func:`retarget`, :func:`export`, :func:`read_safetensors`.

:mod:`affine_ucp.affine` stands in for DeepSpeed's
``deepspeed.checkpoint.affine``.
"""

from typing import List

from . import _core
from ._core import (CopyProgram, DeepSpeedCheckpoint, Fill, ParamMap, Piece,
                    Segment, Shard, TransferPlan, bigcode_layout,
                    block_layout, canonicalize, codegen_layout, compose,
                    expert_layout, flat_range_layout, full_tensor_map, nest,
                    padded_vocab_layout, parse_maps, parse_plans,
                    replicated_layout, scaled_bias_layout, shard_sizes,
                    split_layout, split_sub_param_layout, sub_param_layout,
                    summarize, summarize_plans, write_maps, write_plans,
                    yuan_layout)
from .checkpoints import (ds_to_universal, export, open_checkpoint,
                          read_safetensors, retarget)
from .distributed import reshard_mpi
from .errors import VerificationError
from .tensors import (cache_limit, cached_bytes, empty_cache, extract,
                      get_scale_power, rebuild, reshard, run_plan,
                      set_cache_limit)


def read_maps(path: str) -> List[ParamMap]:
    """The maps of the map document in file `path`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return parse_maps(text)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def verify(map: ParamMap, raise_on_error: bool = True) -> dict:
    """Verifies `map` (P1, P5, tiling) at O(pieces) and returns the report;
    raises :class:`VerificationError` if it fails, unless told not to."""
    report = _core.verify(map)
    if raise_on_error and not report["ok"]:
        raise VerificationError(map.name, report)
    return report


__all__ = [
    "CopyProgram", "DeepSpeedCheckpoint", "Fill", "ParamMap", "Piece",
    "Segment", "Shard", "TransferPlan", "VerificationError", "bigcode_layout",
    "block_layout", "cache_limit", "cached_bytes", "canonicalize",
    "codegen_layout", "compose", "ds_to_universal", "empty_cache",
    "expert_layout", "export", "extract", "flat_range_layout",
    "full_tensor_map", "get_scale_power", "nest", "open_checkpoint",
    "padded_vocab_layout", "parse_maps", "parse_plans", "read_maps",
    "read_safetensors", "rebuild", "replicated_layout", "reshard",
    "reshard_mpi", "retarget", "run_plan", "scaled_bias_layout",
    "set_cache_limit", "shard_sizes", "split_layout", "split_sub_param_layout",
    "sub_param_layout", "summarize", "summarize_plans", "verify", "write_maps",
    "write_plans", "yuan_layout",
]
