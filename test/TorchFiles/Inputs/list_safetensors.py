"""Prints every tensor of safetensors files, read without any library.

    list_safetensors.py FILE...

One line per tensor, in name order: its name, dtype, shape and the SHA-1
of its bytes, so that a test can check that two names hold the same data.
"""
import hashlib
import json
import struct
import sys


def main(*paths):
    tensors = {}
    for path in paths:
        with open(path, "rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
            data = f.read()
        for name, info in header.items():
            if name == "__metadata__":
                continue
            begin, end = info["data_offsets"]
            tensors[name] = (info["dtype"], info["shape"],
                             hashlib.sha1(data[begin:end]).hexdigest())
    for name, (dtype, shape, digest) in sorted(tensors.items()):
        print(name, dtype, shape, digest)


if __name__ == "__main__":
    main(*sys.argv[1:])
