"""Checks a picture against its map or plan document, element by element.

    check_picture.py MAPS.json|PLANS.json PICTURE.svg

For every map of a map document and every piece of every shard, the
rectangles the picture draws for it (data-side F and shard, in elements)
must cover exactly the elements its source and dest views touch; on F only
the lowest holder of a replicated block draws it, hatched.

For every plan of a plan document, each copy's rectangles (data-side source
and target) must cover exactly the elements its source and target views
touch in the shards named, with one band joining them; each fill's exactly
its view's elements, hatched.

Prints one line per map or plan; exits 1 at the first difference.
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


def check_plan(name, entry, panel):
    rects = [r for r in panel.findall(SVG + "rect")
             if r.get("class") in ("copy", "fill")]
    bands = panel.findall(SVG + "path")

    def check(what, drawn, side, rank, shape, offset, strides):
        drawn = [r for r in drawn if r.get("data-side") == side]
        if {r.get("data-rank") for r in drawn} != {str(rank)}:
            sys.exit(f"{name}: {what} {side}: ranks "
                     f"{sorted({r.get('data-rank') for r in drawn})}, "
                     f"plan {rank}")
        got = set().union(*(cell_offsets(r) for r in drawn))
        want = view_offsets(shape, offset, strides)
        if got != want:
            sys.exit(f"{name}: {what} {side}: drew {sorted(got)}, "
                     f"plan {sorted(want)}")

    for i, segment in enumerate(entry["segments"]):
        mine = [r for r in rects if r.get("data-segment") == str(i)]
        check(f"copy {i}", mine, "source", segment["source"][0],
              segment["shape"], *segment["source"][1:])
        check(f"copy {i}", mine, "target", segment["target"][0],
              segment["shape"], *segment["target"][1:])
        band = [b for b in bands if b.get("data-segment") == str(i)]
        if len(band) != 1 or band[0].get("data-source-rank") != str(
                segment["source"][0]) or band[0].get(
                "data-target-rank") != str(segment["target"][0]):
            sys.exit(f"{name}: copy {i}: bands {[b.attrib for b in band]}")
    for i, fill in enumerate(entry.get("fill", [])):
        mine = [r for r in rects if r.get("data-fill") == str(i)]
        check(f"fill {i}", mine, "target", fill["rank"], fill["shape"],
              *fill["target"])
    hatched = len([r for r in panel.findall(SVG + "rect")
                   if r.get("class") == "replicated"])
    fills = len([r for r in rects if r.get("class") == "fill"])
    if len(bands) != len(entry["segments"]) or hatched != fills:
        sys.exit(f"{name}: {len(bands)} bands, {hatched} hatched")
    print(f"{name}: {len(entry['segments'])} copies, "
          f"{len(entry.get('fill', []))} fills, {len(rects)} rectangles "
          f"match the plan")


def main():
    document = json.load(open(sys.argv[1]))
    panels = ET.parse(sys.argv[2]).getroot().findall(SVG + "g")
    if any("segments" in entry for entry in document["params"].values()):
        by_name = {g.get("data-name"): g for g in panels
                   if g.get("class") == "plan"}
        if sorted(by_name) != sorted(document["params"]):
            sys.exit(f"panels {sorted(by_name)}")
        for name, entry in sorted(document["params"].items()):
            check_plan(name, entry, by_name[name])
        return
    # The document keys each map by its name as an anchored pattern.
    maps = {re.sub(r"\\(.)", r"\1", key[1:-1]) if key.startswith("^")
            else key: entry
            for key, entry in document["params"].items()}
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
