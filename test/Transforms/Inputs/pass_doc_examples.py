"""Runs the examples of the pass reference (docs/Passes/UCPPasses.md) that
are whole modules and checks that the tools do what they say:
--ucp-compose turns the source map into the plan shown, --ucp-extract the
map into the plan shown, and --ucp-verify fails with the diagnostics shown.

    pass_doc_examples.py PASSES.md AFFINE-OPT WORKDIR
"""

import os
import re
import subprocess
import sys

doc, affine_opt, work = sys.argv[1:4]
with open(doc, encoding="utf-8") as f:
    text = f.read()


def example_of(heading):
    """The mlir block of the pass whose reference section is `heading`."""
    section = text.split(f"### `{heading}`", 1)[1].split("\n### ", 1)[0]
    return re.search(r"```mlir\n(.*?)```", section, re.S).group(1)


def parts(block, markers):
    """Splits `block` at the comment lines `markers`, in order."""
    pieces = []
    for marker in markers:
        head, block = block.split(f"// {marker}\n", 1)
        pieces.append(head)
    pieces.append(block)
    return pieces


def normalized(ir):
    lines = [l.strip() for l in ir.splitlines()]
    return [l for l in lines if l and l not in ("module {", "}")
            and not l.startswith("//")]


def run(args):
    return subprocess.run([affine_opt] + args, capture_output=True, text=True)


os.makedirs(work, exist_ok=True)
# --ucp-compose: source and target maps in, the plan out.
_, source, target, plan = parts(example_of("-ucp-compose"), [
    "the source map, in the module the pass runs on",
    "the target map, in the file `target` names",
    "the source map becomes"])
for name, ir in (("source.mlir", source), ("target.mlir", target)):
    with open(os.path.join(work, name), "w", encoding="utf-8") as f:
        f.write(ir)
result = run([os.path.join(work, "source.mlir"),
              "--ucp-compose=target=" + os.path.join(work, "target.mlir")])
assert result.returncode == 0, result.stderr
assert normalized(result.stdout) == normalized(plan), result.stdout
print("ucp-compose: the documented plan")

# --ucp-extract: the map in, the plan of its extraction out.
source, plan = parts(example_of("-ucp-extract"), ["becomes"])
with open(os.path.join(work, "map.mlir"), "w", encoding="utf-8") as f:
    f.write(source)
result = run([os.path.join(work, "map.mlir"), "--ucp-extract"])
assert result.returncode == 0, result.stderr
assert normalized(result.stdout) == normalized(plan), result.stdout
print("ucp-extract: the documented plan")

# --ucp-verify: the map in, the documented diagnostics out.
bad, expected = parts(example_of("-ucp-verify"), ["fails with"])
with open(os.path.join(work, "hole.mlir"), "w", encoding="utf-8") as f:
    f.write(bad)
result = run([os.path.join(work, "hole.mlir"), "--ucp-verify"])
assert result.returncode != 0
said = " ".join(l.strip("/ ").strip() for l in expected.splitlines())
for message in re.findall(r"error: (.*?)(?= error: |$)", said):
    flat = " ".join(result.stderr.split())
    assert message in flat, (message, result.stderr)
print("ucp-verify: the documented diagnostics")
