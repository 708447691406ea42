"""DeepSpeed checkpoints from Python: the reader, ds-to-universal,
ds-retarget / universal-to-ds, export, and the safetensors reader.

Each call is the command-line tool's code path, with the same checks and
the same guarantee that nothing is left at the output unless the whole run
succeeds. ``progress``, if given, is called about once a second with
``(done, total, bytes_written)``; whatever it raises is raised once the run
has stopped.
"""

import os
from typing import TYPE_CHECKING, Callable, Dict, Optional

from . import _core

if TYPE_CHECKING:  # For the annotations; imported where a tensor is made.
    import torch

Progress = Optional[Callable[[int, int, int], None]]


def open_checkpoint(folder: str) -> "_core.DeepSpeedCheckpoint":
    """Opens a DeepSpeed checkpoint folder (CKPT/TAG), or a Universal one
    (a folder with zero/), validated and memory-mapped; its ``params`` list
    every trainable parameter's map over the run's grid."""
    if os.path.isdir(os.path.join(folder, "zero")):
        return _core.DeepSpeedCheckpoint.open_universal(folder)
    return _core.DeepSpeedCheckpoint.open(folder)


def ds_to_universal(input_folder: str, output_folder: str, *,
                    inject_missing_state: bool = False, strict: bool = True,
                    threads: int = 0, progress: Progress = None) -> Dict:
    """affine-run ds-to-universal: writes the Universal form of the
    checkpoint in `input_folder` to the new folder `output_folder` (and
    latest_universal beside it). Returns the run's numbers and its notices
    (the states a parameter group lacks; a latest_universal that names the
    input, left as it is)."""
    checkpoint = _core.DeepSpeedCheckpoint.open(input_folder)
    return _core.ds_to_universal(checkpoint, output_folder, threads,
                                 inject_missing_state, strict, progress)


def retarget(input_folder: str, output_folder: str, dp: int, *,
             tp: Optional[int] = None, zero_stage: Optional[int] = None,
             autoep_size: Optional[int] = None, threads: int = 0,
             progress: Progress = None) -> Dict:
    """affine-run ds-retarget (or universal-to-ds, for a Universal input):
    the checkpoint at DP degree `dp` (and TP degree, ZeRO stage, AutoEP
    size) in the new folder `output_folder` (OUT/TAG). Returns the run's
    numbers and its notices (a `latest` that names the input, left as it
    is rather than pointed at the output)."""
    return _core.retarget(open_checkpoint(input_folder), output_folder, dp,
                          tp, zero_stage, autoep_size, threads, progress)


def export(input_folder: str, out: str, *, dtype: str = "f32",
           max_shard_bytes: int = 5_000_000_000, exclude_frozen: bool = False,
           progress: Progress = None) -> Dict:
    """affine-run export: the consolidated model as Hugging Face-style
    safetensors shards in the new folder `out` (without the frozen
    parameters, with `exclude_frozen`)."""
    return _core.export_model(open_checkpoint(input_folder), out, dtype,
                              max_shard_bytes, exclude_frozen, progress)


_SAFETENSORS_TYPES = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
    "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8",
    "U8": "uint8", "BOOL": "bool",
}


def read_safetensors(path: str) -> Dict[str, "torch.Tensor"]:
    """Every tensor of a safetensors file, validated, as torch tensors."""
    import torch
    tensors = {}
    for name, (dtype, shape, data) in _core.read_safetensors(path).items():
        if dtype not in _SAFETENSORS_TYPES:
            raise ValueError(f"{path}: tensor '{name}' of dtype {dtype}, "
                             "which torch 1.13 has no type for")
        kind = getattr(torch, _SAFETENSORS_TYPES[dtype])
        flat = torch.frombuffer(bytearray(data), dtype=kind) if data else \
            torch.empty(0, dtype=kind)
        tensors[name] = flat.reshape(shape)
    return tensors
