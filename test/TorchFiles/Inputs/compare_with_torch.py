"""Checks affine-run inspect against torch.load, tensor by tensor.

    compare_with_torch.py AFFINE_RUN FILE.pt...

For every file, runs `AFFINE_RUN inspect FILE --values <all>` and, for each
tensor line it prints, finds the same path in what torch.load returns and
compares dtype, shape, strides, storage offset and every element, exactly.
DeepSpeed's classes are stood in by plain records, so DeepSpeed need not be
installed. Prints one line per file and exits 1 at the first difference.
"""
import json
import pickle
import re
import subprocess
import sys

import torch

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
          "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32,
          "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}
LINE = re.compile(r'^(\$.*): tensor (\w+) \[([^]]*)\] strides \[([^]]*)\] '
                  r'of storage "[^"]*" at (\d+) = \[(.*)\]$')
STEP = re.compile(r'\[("(?:[^"\\]|\\.)*"|-?\d+|True|False|None)\]|\.(\w+)')


class StandInMeta(type):
    def __getattr__(cls, member):  # getattr(ZeroStageEnum, "gradients")
        return cls.__name__ + "." + member


class Record(metaclass=StandInMeta):
    def __setstate__(self, state):
        self.__dict__.update(state)


class Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module.startswith("deepspeed"):
            return StandInMeta(name, (Record,), {})
        return super().find_class(module, name)


def load(path):
    # torch.load subclasses pickle.Unpickler when it is called (and some
    # builds ignore its pickle_module argument), so the stand-ins go there.
    saved, pickle.Unpickler = pickle.Unpickler, Unpickler
    try:
        return torch.load(path, map_location="cpu")
    finally:
        pickle.Unpickler = saved


def walk(value, path):
    for key, field in STEP.findall(path[1:]):
        value = getattr(value, field) if field else value[json.loads(
            {"True": "true", "False": "false", "None": "null"}.get(key, key))]
    return value


def numbers(text):
    return [] if not text else [int(x) for x in text.split(", ")]


def same(printed, tensor):
    """Whether the printed elements are those of `tensor`, bit for bit (but
    for NaN payloads): each prints with enough digits to round-trip."""
    got = torch.tensor([float(x) for x in printed.split(", ")] if printed
                       else [], dtype=torch.float64).to(tensor.dtype)
    want = tensor.flatten()
    if got.shape != want.shape:
        return False
    if not tensor.is_floating_point():
        return torch.equal(got, want)
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[want.element_size()]
    equal = got.view(bits) == want.view(bits)
    return bool((equal | (got.isnan() & want.isnan())).all())


def compare(affine_run, path):
    printed = subprocess.run([affine_run, "inspect", path, "--values",
                              str(2**31 - 1)], check=True, capture_output=True,
                             text=True).stdout
    loaded = load(path)
    count = 0
    for line in printed.splitlines():
        match = LINE.match(line)
        if not match:
            continue
        where, dtype, shape, strides, offset, values = match.groups()
        tensor = walk(loaded, where)
        facts = (DTYPES[dtype], numbers(shape), numbers(strides), int(offset))
        truth = (tensor.dtype, list(tensor.shape), list(tensor.stride()),
                 tensor.storage_offset())
        if facts != truth or not same(values, tensor):
            sys.exit("%s: %s differs: affine-run %s, torch %s%s" % (
                path, where, facts, truth,
                "" if facts != truth else " (the elements)"))
        count += 1
    print("%s: %d tensors equal" % (path, count))


def main(affine_run, *paths):
    for path in paths:
        compare(affine_run, path)


if __name__ == "__main__":
    main(*sys.argv[1:])
