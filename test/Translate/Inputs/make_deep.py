"""Writes inputs nested 50,000 levels deep, one per reader.

    make_deep.py DIR

deep.json (a JSON document), deep.mlir (nested modules), deep-attr.mlir
(nested array attributes) and deep.safetensors (a header of nested arrays).
"""
import os
import struct
import sys

LEVELS = 50000


def main(folder):
    deep = "[" * LEVELS + "]" * LEVELS
    with open(os.path.join(folder, "deep.json"), "w") as f:
        f.write('{"params": ' + deep + "}")
    with open(os.path.join(folder, "deep.mlir"), "w") as f:
        f.write("module {\n" * LEVELS + "}\n" * LEVELS)
    with open(os.path.join(folder, "deep-attr.mlir"), "w") as f:
        f.write('"x.y"() {a = ' + deep + "} : () -> ()\n")
    header = ('{"w": ' + deep + "}").encode()
    with open(os.path.join(folder, "deep.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
