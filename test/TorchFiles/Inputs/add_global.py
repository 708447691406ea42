"""Adds a value under a new key of the root dict of a torch.save file: a
plain global (`torch.bfloat16`, as a model-states file of a run that saved
a dtype in its client state holds one), or with `object` an instance of a
class no reader knows (`mymod.Thing`), or with `keywords` one made with
keyword arguments (NEWOBJ_EX).

Usage: add_global.py FILE KEY [object|keywords]
"""
import os
import struct
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_pt  # noqa: E402


def main(path, key, kind="global"):
    value = {"object": b"cmymod\nThing\n)\x81}b",
             "keywords": b"cmymod\nThing\n)}\x92}b",
             "global": b"ctorch\nbfloat16\n"}[kind]
    with zipfile.ZipFile(path) as archive:
        records = [(info.filename, archive.read(info))
                   for info in archive.infolist()]
    for i, (name, data) in enumerate(records):
        if name.endswith("/data.pkl"):
            # The root dict is on the stack before STOP: set one more item.
            assert data.endswith(b".")
            encoded = key.encode()
            item = (b"X" + struct.pack("<I", len(encoded)) + encoded +
                    value + b"s")
            records[i] = (name, data[:-1] + item + b".")
    with open(path, "wb") as f:
        f.write(make_pt.zip_records(records))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
