"""Checks affine-run export against DeepSpeed's own conversions.

    compare_export.py AFFINE_RUN FIXTURES OUT

For every run FIXTURES/<name>/ with a checkpoint and DeepSpeed's Universal
conversion of it, exports the checkpoint (fp32, one file; and bf16 cut
into small shards), and, where our reader takes it, the Universal folder,
then reads the files back with the plain reader below (the safetensors
format: an 8-byte header length, a JSON header, the data) and checks them:
every trainable parameter equal bit for bit to DeepSpeed's
zero/<name>/fp32.pt (in bf16: that rounded by torch), the module buffers
and frozen parameters to the model states' tensors, nothing else there;
the index naming every tensor's file and the total size; the export of
the Universal folder byte for byte the checkpoint's. Prints one line per
run and exits 1 at the first difference.
"""
import json
import os
import struct
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_universal import universal_runs  # noqa: E402
from compare_with_torch import load  # noqa: E402

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
          "I64": torch.int64, "I32": torch.int32}


def read_safetensors(path):
    """The tensors of one file, read without the safetensors package."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header.pop("__metadata__", None)
    start, tensors, end = 8 + length, {}, 0
    for name, info in sorted(header.items(),
                             key=lambda item: item[1]["data_offsets"]):
        begin, stop = info["data_offsets"]
        if begin != end:
            raise ValueError(f"{path}: {name} leaves a gap or overlaps")
        end = stop
        raw = bytearray(data[start + begin:start + stop])
        tensor = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]) \
            if raw else torch.empty(0, dtype=DTYPES[info["dtype"]])
        tensors[name] = tensor.reshape(info["shape"])
    if start + end != len(data):
        raise ValueError(f"{path}: {len(data) - start - end} bytes after data")
    return tensors


def read_export(folder):
    names = sorted(os.listdir(folder))
    if names == ["model.safetensors"]:
        return read_safetensors(os.path.join(folder, names[0]))
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        index = json.load(f)
    tensors = {}
    for name in sorted(set(index["weight_map"].values())):
        for key, value in read_safetensors(os.path.join(folder, name)).items():
            if index["weight_map"].get(key) != name:
                raise ValueError(f"{key}: in {name}, not where the index says")
            tensors[key] = value
    if set(tensors) != set(index["weight_map"]):
        raise ValueError("the index names other tensors than the files hold")
    size = sum(t.numel() * t.element_size() for t in tensors.values())
    if index["metadata"]["total_size"] != size:
        raise ValueError(f"total_size {index['metadata']['total_size']}, "
                         f"the tensors hold {size} bytes")
    return tensors


def expected_tensors(checkpoint, universal):
    """What zero_to_fp32 gives: buffers, frozen parameters, the masters."""
    model = [n for n in sorted(os.listdir(checkpoint))
             if n.endswith("model_states.pt") and not n.startswith("layer_")]
    states = load(os.path.join(checkpoint, model[0]))
    expected = {}
    for name in states["buffer_names"]:
        expected[name] = states["module"][name].float()
    for name in (states["frozen_param_fragments"] or {}):
        expected[name] = states["frozen_param_fragments"][name].float()
    shapes = {}  # Every stage's, in a pipeline run.
    for file in model:
        for group in load(os.path.join(checkpoint, file))["param_shapes"]:
            shapes.update(group)
    zero = os.path.join(universal, "zero")
    for name in sorted(os.listdir(zero)):
        if os.path.isdir(os.path.join(zero, name)):
            fp32 = load(os.path.join(zero, name, "fp32.pt"))
            tensor = fp32["param"] if isinstance(fp32, dict) else fp32
            if tensor.dim() == 1 and len(shapes[name]) != 1:
                tensor = tensor.reshape(shapes[name])  # ZeRO-3's bare form
            expected[name] = tensor.detach()
    return expected


def check(tensors, expected, dtype):
    if set(tensors) != set(expected):
        return f"tensors {sorted(set(tensors) ^ set(expected))} differ"
    for name, want in expected.items():
        want = want.to(dtype)
        got = tensors[name]
        if got.dtype != want.dtype or got.shape != want.shape:
            return f"{name}: {got.dtype} {tuple(got.shape)} vs " \
                   f"{want.dtype} {tuple(want.shape)}"
        if not torch.equal(got.view(torch.uint8), want.view(torch.uint8)):
            return f"{name}: the elements differ"
    return None


def export(affine_run, source, out, *extra):
    result = subprocess.run([affine_run, "export", "--quiet",
                             "--input_folder", source, "--out", out, *extra],
                            capture_output=True, text=True)
    return result.returncode == 0, result.stderr


def same_folders(a, b):
    if sorted(os.listdir(a)) != sorted(os.listdir(b)):
        return False
    for name in os.listdir(a):
        with open(os.path.join(a, name), "rb") as x, \
                open(os.path.join(b, name), "rb") as y:
            if x.read() != y.read():
                return False
    return True


def main(affine_run, fixtures, out):
    for run, universal, name, tag in universal_runs(fixtures):
        checkpoint = os.path.join(fixtures, run, "checkpoint", tag)
        expected = expected_tensors(checkpoint, os.path.join(universal, name))
        target = os.path.join(out, run)
        for dtype, extra in ((torch.float32, ()),
                             (torch.bfloat16, ("--dtype", "bf16",
                                               "--max-shard-size", "16KB"))):
            folder = f"{target}-{str(dtype)[6:]}"
            ok, error = export(affine_run, checkpoint, folder, *extra)
            if not ok:
                print(f"{run}: {error.strip()}")
                return 1
            difference = check(read_export(folder), expected, dtype)
            if difference:
                print(f"{run}, {dtype}: {difference}")
                return 1
        files = len(os.listdir(f"{target}-bfloat16"))
        ok, error = export(affine_run, os.path.join(universal, name),
                           f"{target}-universal")
        via = "checkpoint only"
        if ok:
            if not same_folders(f"{target}-universal", f"{target}-float32"):
                print(f"{run}: the Universal folder exports otherwise")
                return 1
            via = "and Universal folder"
        print(f"{run}: {len(expected)} tensors equal DeepSpeed's "
              f"(bf16 in {files} files; {via})")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
