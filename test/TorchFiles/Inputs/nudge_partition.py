"""Changes the first element of parameter group GROUP's flat fp32
partition (STATE: fp32, exp_avg or exp_avg_sq) in a ZeRO-1/2 optimizer file,
in place: adds 1 to it, as a copy of another run or step would differ, or
sets it to VALUE (nan, -1, ...; VALUE@last sets the last element, a
ZeRO-1/2 partition's padding where it has some), the zip's CRC-32s
rewritten to match; or, with VALUE `flip`, flips its lowest bit in the
file as a disk would, the CRC-32 left as it was.

Usage: nudge_partition.py FILE GROUP STATE [VALUE[@last]|flip]
"""
import struct
import os
import sys
import zipfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_with_torch import load  # noqa: E402


def flip_in_place(path, record):
    """Flips the lowest bit of the first byte of `record` in the file."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(record)
    with open(path, "r+b") as f:
        f.seek(info.header_offset + 26)
        name, extra = struct.unpack("<HH", f.read(4))
        f.seek(info.header_offset + 30 + name + extra)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 1]))


def main(path, group, state, value=None):
    states = load(path)["optimizer_state_dict"]
    if state == "fp32":
        partition = states["single_partition_of_fp32_groups"][int(group)]
    else:
        partition = states["base_optimizer_state"]["state"][int(group)][state]
    data = partition.contiguous().view(torch.uint8).numpy().tobytes()
    nudged = partition.clone()
    at = 0
    if value is not None and value.endswith("@last"):
        value, at = value[:-len("@last")], partition.numel() - 1
    if value is None:
        nudged[at] += 1
    elif value != "flip":
        nudged[at] = float(value)
    element = nudged[at:at + 1].view(torch.uint8).numpy().tobytes()
    start = at * nudged.element_size()
    with zipfile.ZipFile(path) as archive:
        records = [(info.filename, archive.read(info))
                   for info in archive.infolist()]
    found = [i for i, (name, body) in enumerate(records)
             if "/data/" in name and body == data]
    if len(found) != 1:
        raise SystemExit(f"{path}: {len(found)} storages hold the partition")
    name, body = records[found[0]]
    if value == "flip":
        flip_in_place(path, name)
        return 0
    records[found[0]] = (name, body[:start] + element +
                         body[start + len(element):])
    # make_pt stands in for torch's modules, so it comes after torch.load.
    import make_pt
    with open(path, "wb") as f:
        f.write(make_pt.zip_records(records))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
