#!/usr/bin/env python3
"""Exits 0 when two JSON files hold the same value (key order and number
spelling aside: 8 == 8.0); otherwise prints the first difference."""

import json
import sys


def diff(a, b, path="$"):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}[{key!r}] only in one file"
            d = diff(a[key], b[key], f"{path}[{key!r}]")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: lengths {len(a)} and {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if a == b and isinstance(a, bool) == isinstance(b, bool):
        return None
    return f"{path}: {a!r} != {b!r}"


with open(sys.argv[1]) as f1, open(sys.argv[2]) as f2:
    difference = diff(json.load(f1), json.load(f2))
if difference:
    print(difference)
    sys.exit(1)
