"""Writes torch.save-format files, well-formed and not, without torch.

    make_pt.py DIR

Makes, in DIR, good.pt (a dict of tensors sharing a storage, nested
containers, a DeepSpeed-style data class and enum member), zip64.pt (the
same with zip64 records) and one file per malformation the reader must
refuse; each bad file's name says what is wrong with it. The pickles are
written by Python's own pickler, with stand-ins for torch's functions and
classes registered under torch's module names, so that they hold the
opcodes torch.save writes.
"""
import collections
import io
import os
import pickle
import struct
import sys
import types
import zlib


def module(name, **members):
    m = types.ModuleType(name)
    for key, value in members.items():
        value.__module__ = name
        value.__qualname__ = key
        setattr(m, key, value)
    sys.modules[name] = m
    return m


def _rebuild_tensor_v2(*args):
    raise AssertionError("never called")


class FloatStorage:
    pass


class BFloat16Storage:
    pass


class fragment_address:
    def __init__(self, numel, start):
        self.numel, self.start = numel, start


class ZeroStageEnum:
    pass


module("torch", FloatStorage=FloatStorage, BFloat16Storage=BFloat16Storage)
module("torch._utils", _rebuild_tensor_v2=_rebuild_tensor_v2)
module("deepspeed")
module("deepspeed.utils")
module("deepspeed.utils.tensor_fragment", fragment_address=fragment_address)


class Storage:
    def __init__(self, cls, key, elements):
        self.cls, self.key, self.elements = cls, key, elements


class Tensor:
    def __init__(self, storage, offset, size, stride, hooks=()):
        self.args = (storage, offset, tuple(size), tuple(stride), False,
                     collections.OrderedDict(hooks))

    def __reduce__(self):
        return (_rebuild_tensor_v2, self.args)


class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", obj.cls, obj.key, "cpu", obj.elements)
        return None


def dumps(obj):
    out = io.BytesIO()
    Pickler(out, protocol=2).dump(obj)
    return out.getvalue()


def zip_records(records, compress=False, zip64=False, align=64):
    """A zip archive of (name, bytes) records as torch.save lays it out:
    stored records whose data starts on an `align`-byte boundary (padded
    with an extra field), sizes in data descriptors and the central
    directory, and with `zip64` every size and offset in zip64 fields behind
    a zip64 end record."""
    out, central = bytearray(), bytearray()
    for name, data in records:
        name = name.encode()
        crc = zlib.crc32(data)
        stored = data
        if compress:
            packer = zlib.compressobj(9, zlib.DEFLATED, -15)
            stored = packer.compress(data) + packer.flush()
        offset = len(out)
        pad = -(offset + 30 + len(name) + 4) % align
        extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
        # As torch does: flag 0x808 (UTF-8 names, sizes in a descriptor
        # after the data), so the local header's CRC and sizes are zero.
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0x808,
                           8 if compress else 0, 0, 0, 0, 0, 0, len(name),
                           len(extra)) + name + extra + stored
        out += struct.pack("<IIQQ" if zip64 else "<IIII", 0x08074B50, crc,
                           len(stored), len(data))
        sizes = (len(stored), len(data), offset)
        wide = b""
        if zip64:
            wide = struct.pack("<HHQQQ", 0x0001, 24, len(data), len(stored),
                               offset)
            sizes = (0xFFFFFFFF,) * 3
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0x808,
                               8 if compress else 0, 0, 0, crc, sizes[0],
                               sizes[1], len(name), len(wide), 0, 0, 0, 0,
                               sizes[2]) + name + wide
    where = len(out)
    out += central
    count = len(records)
    if zip64:
        end64 = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count,
                           count, len(central), where)
        out += struct.pack("<IIQI", 0x07064B50, 0, end64, 1)
        count, where = 0xFFFF, 0xFFFFFFFF
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count,
                       len(central), where, 0)
    return bytes(out)


def write(path, pickled, storages, extra=(), raw=(), patch=None, **options):
    """Writes a torch.save file of `pickled` and `storages` under the root
    folder named after `path`, with the `extra` records beside them and the
    `raw` records named as given; `patch` then edits the bytes."""
    root = os.path.basename(path)[:-3]
    records = [("data.pkl", pickled)]
    records += [("data/" + key, data) for key, data in storages.items()]
    records += [("version", b"3\n")] + list(extra)
    records = [(root + "/" + name, data) for name, data in records]
    data = zip_records(records + list(raw), **options)
    with open(path, "wb") as f:
        f.write(patch(bytearray(data)) if patch else data)


def put(data, at, fmt, *values):
    struct.pack_into(fmt, data, at, *values)
    return data


def central(data):
    """Where the first central directory entry starts."""
    return data.index(b"PK\x01\x02")


def end(data):
    """Where the end of central directory record starts."""
    return data.rindex(b"PK\x05\x06")


def short_zip64_extra(data):
    """Leaves the first entry's zip64 field one value of the three."""
    at = central(data)
    name = struct.unpack_from("<H", data, at + 28)[0]
    put(data, at + 30, "<H", 12)
    return put(data, at + 46 + name + 2, "<H", 8)


def chain(length):
    """Lists each holding the one before, all in one list: each is pickled
    once and then shared, so no list nests deeply as the pickle builds it,
    but the last nests `length` deep."""
    lists = [[]]
    for _ in range(length):
        lists.append([lists[-1]])
    return lists


def good_object():
    flat = Storage(FloatStorage, "0", 8)
    state = collections.OrderedDict()
    state["w"] = Tensor(flat, 0, [2, 3], [3, 1])
    state["b"] = Tensor(flat, 6, [2], [1])
    state["w.T"] = Tensor(flat, 0, [3, 2], [1, 3])
    state["half"] = Tensor(Storage(BFloat16Storage, "1", 4), 1, [3], [1])
    return {"module": state, "shape": (2, 3), "groups": [[0, 1], {"lr": 0.5}],
            "flags": {True, None}, "slice": fragment_address(6, 0),
            "name": "tiny"}


def floats(n):
    return struct.pack("<%df" % n, *[float(i) for i in range(n)])


# bfloat16 1, 2, -0.5, 3: the high halves of their float32 bits.
BFLOATS = struct.pack("<4H", 0x3F80, 0x4000, 0xBF00, 0x4040)


def main(folder):
    good = dumps(good_object())
    storages = {"0": floats(8), "1": BFLOATS}
    write(os.path.join(folder, "good.pt"), good, storages)
    write(os.path.join(folder, "zip64.pt"), good, storages, zip64=True)
    write(os.path.join(folder, "torch2.pt"), good, storages,
          extra=[("byteorder", b"little"), (".data/serialization_id", b"1")])
    # One storage key named twice with one type: one storage, as torch has.
    write(os.path.join(folder, "storage-shared.pt"),
          dumps({"a": Tensor(Storage(FloatStorage, "0", 8), 0, [2], [1]),
                 "b": Tensor(Storage(FloatStorage, "0", 8), 4, [4], [1])}),
          storages)
    # Python's pickle.load would create this file; a safe reader never does.
    touch = ("touch " + os.path.join(folder, "executed")).encode()
    bad = {
        "big-endian": (good, storages,
                       dict(extra=[("byteorder", b"big")])),
        "compressed": (good, storages, dict(compress=True)),
        "traversal": (good, storages,
                      dict(raw=[("../../etc/passwd", b"x")])),
        "absolute": (good, storages, dict(raw=[("/etc/x", b"x")])),
        "two-roots": (good, storages, dict(raw=[("other/x", b"x")])),
        "duplicate-record": (good, storages,
                             dict(extra=[("version", b"3\n")])),
        "record-past-end": (good, storages, dict(
            patch=lambda d: put(d, central(d) + 42, "<I", len(d) + 64))),
        "too-many-entries": (good, storages, dict(
            patch=lambda d: put(d, end(d) + 8, "<HH", 999, 999))),
        "renamed-local-header": (good, storages, dict(
            patch=lambda d: put(d, 30, "<B", ord("X")))),
        "lost-zip64-end": (good, storages, dict(
            zip64=True, patch=lambda d: put(d, end(d) - 12, "<Q", 1))),
        "short-zip64-extra": (good, storages, dict(
            zip64=True, patch=short_zip64_extra)),
        "short-storage": (good, {"0": floats(7), "1": BFLOATS}, {}),
        "missing-storage": (good, {"0": floats(8)}, {}),
        "view-past-storage":
            (dumps({"t": Tensor(Storage(FloatStorage, "0", 8), 4, [5], [1])}),
             storages, {}),
        "os-system": (b"\x80\x02cos\nsystem\nX" + struct.pack("<I", len(touch))
                      + touch + b"\x85R.", {}, {}),
        "eval-stack-global":
            (b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93\x8c\x011\x85R.", {}, {}),
        "getattr-os": (b"\x80\x02c__builtin__\ngetattr\ncos\nsystem\n"
                       b"X\x04\x00\x00\x00name\x86R.", {}, {}),
        "undefined-memo": (b"\x80\x02h\x07.", {}, {}),
        "cycle": (b"\x80\x02]q\x00h\x00a.", {}, {}),
        "deep": (b"\x80\x02" + b"]" * 300 + b"a" * 299 + b".", {}, {}),
        "deep-shared": (dumps(chain(300)), {}, {}),
        "length-bomb": (b"\x80\x02X\xff\xff\xff\x7f", {}, {}),
        "protocol-0": (b"I42\n.", {}, {}),
        "trailing-bytes": (b"\x80\x02N.junk", {}, {}),
        "no-stop": (b"\x80\x02N", {}, {}),
        "two-values": (b"\x80\x02NN.", {}, {}),
        # One storage key named with two types: torch reads both tensors as
        # the first type.
        "storage-two-types":
            (dumps({"a": Tensor(Storage(FloatStorage, "0", 8), 0, [8], [1]),
                    "b": Tensor(Storage(BFloat16Storage, "0", 16), 0, [16],
                                [1])}),
             storages, {}),
        "tensor-hooks":
            (dumps({"t": Tensor(Storage(FloatStorage, "0", 8), 0, [8], [1],
                                hooks=[(0, "hook")])}),
             storages, {}),
    }
    for name, (pickled, storages, options) in bad.items():
        write(os.path.join(folder, name + ".pt"), pickled, storages, **options)
    # A truncated file, and one that is no zip at all.
    with open(os.path.join(folder, "good.pt"), "rb") as f:
        data = f.read()
    with open(os.path.join(folder, "truncated.pt"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(folder, "not-a-zip.pt"), "wb") as f:
        f.write(b"\x80\x02N." * 10)
    # Containers of 400,000 items, as Python's pickler writes them (a list
    # by APPENDS, a dict by SETITEMS, a tuple) and a list by one APPEND per
    # item: read in time proportional to their size.
    items = range(400000)
    large = {
        "large-list": pickle.dumps(list(items), protocol=2),
        "large-dict": pickle.dumps({"k%d" % i: i for i in items},
                                   protocol=2),
        "large-tuple": pickle.dumps(tuple(items), protocol=2),
        "large-append": b"\x80\x02]" + b"".join(
            b"J" + struct.pack("<i", i) + b"a" for i in items) + b".",
    }
    for name, pickled in large.items():
        write(os.path.join(folder, name + ".pt"), pickled, {})
    # A dict that sets one key twice: Python keeps the last value.
    write(os.path.join(folder, "duplicate-key.pt"),
          b"\x80\x02}(X\x01\x00\x00\x00aK\x01X\x01\x00\x00\x00aK\x02u.",
          {})
    # An opaque global kept as a value and an opaque object: read, reported.
    write(os.path.join(folder, "opaque.pt"),
          b"\x80\x02}(X\x01\x00\x00\x00gcmymod\nHelper\nX\x01\x00\x00\x00o"
          b"cmymod\nThing\n)\x81}X\x01\x00\x00\x00xK\x01sbu.", {})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
