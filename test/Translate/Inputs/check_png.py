"""Checks a PNG picture against the SVG it was rasterised from.

    check_png.py PICTURE.svg PICTURE.png

The PNG must be as large as the SVG says, and every piece or copy
rectangle that is not hatched must show its fill colour just inside its
top-left corner. Prints how many rectangles were sampled; exits 1 at the
first difference. Decodes the PNG itself (zlib and the five filters of
8-bit RGB or RGBA), so that it needs no imaging library.
"""
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

SVG = "{http://www.w3.org/2000/svg}"


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            if depth != 8 or colour not in (2, 6):
                sys.exit(f"{path}: depth {depth} colour type {colour}")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        kind, row = line[0], bytearray(line[1:])
        for i in range(stride):
            a = row[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                row[i] = (row[i] + a) & 255
            elif kind == 2:
                row[i] = (row[i] + b) & 255
            elif kind == 3:
                row[i] = (row[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                row[i] = (row[i] + pred) & 255
        rows.append(row)
        previous = row
    return width, height, channels, rows


def main():
    root = ET.parse(sys.argv[1]).getroot()
    width, height, channels, rows = read_png(sys.argv[2])
    if (width, height) != (round(float(root.get("width"))),
                           round(float(root.get("height")))):
        sys.exit(f"PNG {width}x{height}, SVG {root.get('width')}x"
                 f"{root.get('height')}")
    sampled = 0
    for panel in root.findall(SVG + "g"):
        dy = float(panel.get("transform").split(",")[1].rstrip(")"))
        rects = panel.findall(SVG + "rect")
        hatched = {(r.get("x"), r.get("y")) for r in rects
                   if r.get("class") == "replicated"}
        for r in rects:
            if r.get("class") not in ("piece", "copy") or \
                    (r.get("x"), r.get("y")) in hatched or \
                    float(r.get("width")) < 8 or float(r.get("height")) < 8:
                continue
            x, y = float(r.get("x")) + 3, float(r.get("y")) + 3 + dy
            pixel = rows[int(y)][int(x) * channels:int(x) * channels + 3]
            fill = bytes.fromhex(r.get("fill")[1:])
            if any(abs(p - f) > 2 for p, f in zip(pixel, fill)):
                sys.exit(f"pixel ({int(x)}, {int(y)}) is {bytes(pixel).hex()}"
                         f", the rectangle's fill {r.get('fill')}")
            sampled += 1
    print(f"{width}x{height}: {sampled} rectangles show their colour")


if __name__ == "__main__":
    main()
