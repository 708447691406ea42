"""Runs the shell blocks (```sh) of a document in order, in a fresh folder,
as a reader would from the repository root after the set-up commands:
`build` (and `build-sanitize`) is the build tree under test, the source
folders are the repository's. Set-up blocks (a block whose first command is
scripts/build, scripts/test or scripts/run-example) are what CI runs and
are skipped; every other block must exit 0.

    run_doc_blocks.py DOC.md SOURCE_ROOT BUILD_ROOT WORKDIR [--replace OLD=>NEW]...

--replace changes a block's text before it runs, for the one thing a test
cannot afford as written (a fuzzing run of minutes, say); each replacement
must apply somewhere, so a document that drops it fails the test.

    run_doc_blocks.py --coverage SOURCE_ROOT TEST_DIR

checks instead that every document with shell blocks (README.md,
docs/*.md) has its test, TEST_DIR/<document name>.test.
"""

import glob
import os
import re
import subprocess
import sys

SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)
SET_UP = re.compile(r"\s*scripts/(build|test|run-example)\b")


def shell_blocks(doc):
    with open(doc, encoding="utf-8") as f:
        return SHELL_BLOCK.findall(f.read())


def lay_out(source, build, work):
    """The work folder: the repository's entries, linked, and the build."""
    source, build = os.path.abspath(source), os.path.abspath(build)
    os.makedirs(work, exist_ok=True)
    for entry in os.listdir(source):
        if entry.startswith("build") or entry == ".git":
            continue
        if not os.path.exists(os.path.join(work, entry)):
            os.symlink(os.path.join(source, entry), os.path.join(work, entry))
    for name in ("build", "build-sanitize"):
        if not os.path.exists(os.path.join(work, name)):
            os.symlink(build, os.path.join(work, name))


def run(doc, source, build, work, replacements):
    lay_out(source, build, work)
    blocks = shell_blocks(doc)
    for old, _ in replacements:
        if not any(old in block for block in blocks):
            print(f"--replace: '{old}' is in no shell block of {doc}")
            return 1
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    ran = 0
    for number, block in enumerate(blocks, 1):
        if SET_UP.match(block):
            continue
        for old, new in replacements:
            block = block.replace(old, new)
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


def coverage(source, test_dir):
    docs = [os.path.join(source, "README.md")]
    docs += sorted(glob.glob(os.path.join(source, "docs", "*.md")))
    missing = []
    for doc in docs:
        name = os.path.splitext(os.path.basename(doc))[0]
        if shell_blocks(doc) and not os.path.exists(
                os.path.join(test_dir, name + ".test")):
            missing.append(os.path.relpath(doc, source))
    for doc in missing:
        print(f"{doc} has shell blocks and no test running them")
    print(f"{len(docs)} documents: "
          + ("every shell block is run by a test" if not missing
             else f"{len(missing)} untested"))
    return 1 if missing else 0


def main(argv):
    if argv[:1] == ["--coverage"]:
        return coverage(*argv[1:])
    positional, replacements = [], []
    while argv:
        arg = argv.pop(0)
        if arg == "--replace":
            old, _, new = argv.pop(0).partition("=>")
            replacements.append((old, new))
        else:
            positional.append(arg)
    return run(*positional, replacements)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
