#!/usr/bin/env python3
"""Small safetensors helpers for the tests (stdlib only).

    safetensors_tool.py names FILE              list the tensors
    safetensors_tool.py flip FILE TENSOR BYTE   flip one byte of a tensor
    safetensors_tool.py drop FILE TENSOR        rewrite FILE without TENSOR
    safetensors_tool.py fill FILE TENSOR BYTE   set every byte of a tensor
                                                (BYTE in hex)
    safetensors_tool.py first-byte FILE TENSOR  print a tensor's first byte
    safetensors_tool.py retype FILE TENSOR DTYPE
                                                relabel a tensor's dtype
"""

import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    size = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + size])
    return header, blob[8 + size:]


def write(path, header, data):
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main(argv):
    command, path = argv[1], argv[2]
    header, data = read(path)
    if command == "names":
        print("\n".join(sorted(k for k in header if k != "__metadata__")))
    elif command == "flip":
        begin = header[argv[3]]["data_offsets"][0] + int(argv[4])
        data = data[:begin] + bytes([data[begin] ^ 0xFF]) + data[begin + 1:]
        write(path, header, data)
    elif command == "drop":
        kept, out = {}, b""
        for name, info in sorted(header.items()):
            if name in ("__metadata__", argv[3]):
                continue
            begin, end = info["data_offsets"]
            kept[name] = dict(info, data_offsets=[len(out), len(out) + end - begin])
            out += data[begin:end]
        write(path, kept, out)
    elif command == "retype":
        header[argv[3]]["dtype"] = argv[4]
        write(path, header, data)
    elif command == "fill":
        begin, end = header[argv[3]]["data_offsets"]
        filled = bytes([int(argv[4], 16)]) * (end - begin)
        data = data[:begin] + filled + data[end:]
        write(path, header, data)
    elif command == "first-byte":
        print(f"{data[header[argv[3]]['data_offsets'][0]]:#04x}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
