"""docs/Python.md runs: its python code blocks, in order, in one
namespace."""

import contextlib
import io
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("UCP_SOURCE_DIR", os.path.join(HERE, "..", ".."))


def test_the_tutorial_runs():
    with open(os.path.join(SOURCE, "docs", "Python.md"), encoding="utf-8") as f:
        text = f.read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 6
    namespace = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for block in blocks:
            exec(compile(block, "docs/Python.md", "exec"), namespace)
    # The values the comments promise.
    out = printed.getvalue()
    assert "[[8, 8], [8, 8]]" in out
    assert "held by no piece (P1); the first is [2]" in out
    assert "2 2 12" in out and "torch.bfloat16" in out
    # The checkpoint example cleans up after itself.
    assert not os.path.exists(namespace["work"])
