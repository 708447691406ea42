"""Runs the shell blocks of a document in order, in a fresh folder, as a
reader would from the repository root after the set-up commands: `build`
is the build tree, the source folders are the repository's. Set-up blocks
(scripts/...) are skipped; each other block must exit 0.

    run_doc_blocks.py DOC.md SOURCE_ROOT BUILD_ROOT WORKDIR
"""

import os
import re
import subprocess
import sys


def main(doc, source, build, work):
    os.makedirs(work, exist_ok=True)
    for entry in os.listdir(source):
        if entry not in ("build", ".git") and not os.path.exists(
                os.path.join(work, entry)):
            os.symlink(os.path.join(source, entry), os.path.join(work, entry))
    if not os.path.exists(os.path.join(work, "build")):
        os.symlink(build, os.path.join(work, "build"))
    with open(doc, encoding="utf-8") as f:
        blocks = re.findall(r"^```sh\n(.*?)^```", f.read(), re.M | re.S)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    ran = 0
    for number, block in enumerate(blocks, 1):
        if block.lstrip().startswith("scripts/"):
            continue
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", block],
                                cwd=work, env=env, capture_output=True,
                                text=True)
        if result.returncode != 0:
            print(f"block {number} failed ({result.returncode}):\n{block}\n"
                  f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
            return 1
        ran += 1
    print(f"{os.path.basename(doc)}: {ran} blocks ran as written")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
