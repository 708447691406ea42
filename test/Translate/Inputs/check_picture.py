"""Checks a map picture against its map document, element by element.

    check_picture.py MAPS.json PICTURE.svg

For every map of the document and every piece of every shard, the
rectangles the picture draws for it (data-side F and shard, in elements)
must cover exactly the elements its source and dest views touch; on F only
the lowest holder of a replicated block draws it, hatched. Prints one line
per map; exits 1 at the first difference.
"""
import itertools
import json
import re
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def view_offsets(shape, offset, strides):
    return {offset + sum(i * s for i, s in zip(index, strides))
            for index in itertools.product(*(range(e) for e in shape))}


def cell_offsets(rect):
    cols = int(rect.get("data-width"))
    r, c = int(rect.get("data-row")), int(rect.get("data-col"))
    rows, width = int(rect.get("data-rows")), int(rect.get("data-cols"))
    return {(r + i) * cols + c + j for i in range(rows) for j in range(width)}


def main():
    # The document keys each map by its name as an anchored pattern.
    maps = {re.sub(r"\\(.)", r"\1", key[1:-1]) if key.startswith("^")
            else key: entry
            for key, entry in json.load(open(sys.argv[1]))["params"].items()}
    panels = ET.parse(sys.argv[2]).getroot().findall(SVG + "g")
    by_name = {g.get("data-name"): g for g in panels}
    if sorted(by_name) != sorted(maps) or len(panels) != len(maps):
        sys.exit(f"panels {[g.get('data-name') for g in panels]}")
    for name, entry in maps.items():
        panel = by_name[name]
        rects = [r for r in panel.findall(SVG + "rect")
                 if r.get("class") == "piece"]
        hatched = len([r for r in panel.findall(SVG + "rect")
                       if r.get("class") == "replicated"])
        expected_hatched = 0
        for rank, shard in entry["ranks"].items():
            for k, piece in enumerate(shard["pieces"]):
                mine = [r for r in rects if r.get("data-rank") == rank and
                        r.get("data-piece") == str(k)]
                for side, (offset, strides) in (
                        ("F", piece["source"]), ("shard", piece["dest"])):
                    drawn = [r for r in mine if r.get("data-side") == side]
                    owner = min(piece["locations"]) == int(rank)
                    want = view_offsets(piece["shape"], offset, strides) \
                        if side == "shard" or owner else set()
                    got = set().union(*(cell_offsets(r) for r in drawn))
                    if got != want:
                        sys.exit(f"{name}: rank {rank} piece {k} {side}: "
                                 f"drew {sorted(got)}, map {sorted(want)}")
                    if len(piece["locations"]) > 1:
                        expected_hatched += len(drawn)
        if hatched != expected_hatched:
            sys.exit(f"{name}: {hatched} hatched rectangles, expected "
                     f"{expected_hatched}")
        legend = [r for r in panel.findall(SVG + "rect")
                  if r.get("class") == "legend"]
        if len(legend) != int(panel.get("data-world")):
            sys.exit(f"{name}: {len(legend)} ranks in the legend")
        print(f"{name}: {len(rects)} rectangles match the map")


if __name__ == "__main__":
    main()
