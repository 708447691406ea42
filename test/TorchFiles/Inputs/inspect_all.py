"""Runs `affine-run inspect` on every checkpoint and Universal folder of the
shared fixtures (given their parent, so that `latest` is followed), as text
and as JSON; checks that the JSON parses and says what the text says, and
prints one line per folder for FileCheck.

    inspect_all.py AFFINE-RUN FIXTURES
"""

import json
import os
import subprocess
import sys


def run(tool, *args):
    return subprocess.run([tool, "inspect", *args], capture_output=True,
                          text=True)


def main(tool, fixtures):
    for family in ("deepspeed", "deepspeed-autoep", "deepspeed-pp",
                   "deepspeed-retarget"):
        root = os.path.join(fixtures, family)
        for name in sorted(os.listdir(root)):
            for kind in ("checkpoint", "universal"):
                folder = os.path.join(root, name, kind)
                if not os.path.isdir(folder):
                    continue
                label = f"{family}/{name}/{kind}"
                text = run(tool, folder)
                if text.returncode != 0:
                    print(f"{label}: refused: "
                          + text.stderr.strip().split(": ")[-1])
                    continue
                summary = json.loads(run(tool, folder, "--json").stdout)
                lines = text.stdout.splitlines()
                assert lines[1] == "format: " + summary["format"] + \
                    ", DeepSpeed " + summary["deepspeed_version"] + \
                    ", step " + str(summary["step"]), (lines[1], summary)
                grid = summary["grid"]
                assert f"PP {grid['pp']} x TP {grid['tp']} x DP {grid['dp']}" \
                    in lines[2], (lines[2], grid)
                tensors = summary["tensors"]
                for tensor in tensors:
                    assert any(l.split()[:1] == [tensor["name"]] and
                               tensor["layout"] in l for l in lines), tensor
                assert summary["pointer"].endswith(
                    "latest" if kind == "checkpoint" else "latest_universal")
                print(f"{label}: {summary['format']} | "
                      f"PP {grid['pp']} x TP {grid['tp']} x DP {grid['dp']}"
                      f"{', EP ' + str(grid['ep']) if grid['ep'] else ''} | "
                      f"{len(tensors)} tensors | "
                      f"{len(summary['applies'])} apply, "
                      f"{len(summary['refused'])} refused")


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
