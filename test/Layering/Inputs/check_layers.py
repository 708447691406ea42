"""Checks that the libraries' folders form layers.

    check_layers.py SOURCE_ROOT

The layers are the folders of lib/ in the order lib/CMakeLists.txt adds
them, lowest first. A file of a folder (lib/<F>/... or include/ucp/<F>/...)
may include headers of its own folder and of the folders below it, never
of one above: then the include graph between folders has no cycle, and a
folder's concern depends only on the concerns under it. Prints every
include that breaks this, or one line; exits 1 if any does.
"""
import os
import re
import sys


def main(root):
    with open(os.path.join(root, "lib", "CMakeLists.txt")) as f:
        layers = re.findall(r"^\s*add_subdirectory\((\w+)\)", f.read(), re.M)
    rank = {folder: i for i, folder in enumerate(layers)}
    include = re.compile(r'^#include "ucp/(\w+)/', re.M)
    broken, files = [], 0
    for base in (os.path.join(root, "lib"), os.path.join(root, "include", "ucp")):
        for folder in os.listdir(base):
            if folder not in rank:
                continue
            for directory, _, names in os.walk(os.path.join(base, folder)):
                for name in names:
                    if not name.endswith((".h", ".cpp")):
                        continue
                    path = os.path.join(directory, name)
                    files += 1
                    with open(path, encoding="utf-8") as f:
                        for used in include.findall(f.read()):
                            if rank.get(used, -1) > rank[folder]:
                                broken.append(f"{os.path.relpath(path, root)}: "
                                              f"{folder} includes {used}, a "
                                              "layer above it")
    for line in broken:
        print(line)
    if broken:
        return 1
    print(f"{len(layers)} layers, {files} files: every include is of its own "
          "layer or one below")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
