"""The type stubs describe the extension: the same names, each a class or
a function there as here, with the same parameters."""

import ast
import inspect
import os
import re
import subprocess
import sys

from affine_ucp import _core


def test_stubs_match_the_extension():
    path = os.path.join(os.path.dirname(_core.__file__), "_core.pyi")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    stubbed = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            stubbed[node.name] = "class"
        elif isinstance(node, ast.FunctionDef):
            stubbed[node.name] = [a.arg for a in node.args.args]
        elif isinstance(node, ast.AnnAssign):
            stubbed[node.target.id] = "value"
    if not _core.has_mpi:  # Built without MPI or mpi4py.
        del stubbed["MpiItem"], stubbed["execute_mpi"]
    public = {n for n in dir(_core) if not n.startswith("_")}
    assert set(stubbed) == public
    for name, kind in stubbed.items():
        value = getattr(_core, name)
        if kind == "class":
            assert inspect.isclass(value), name
            continue
        if kind == "value":
            continue
        # pybind11 writes the signature first in the docstring.
        signature = value.__doc__.splitlines()[0]
        params = re.findall(r"(\w+): ", signature.split("->")[0])
        assert params == kind, name


def test_mypy_finds_no_fault_in_the_package(tmp_path):
    # The package and its stubs type-check (mypy from scripts/install-deps),
    # so the annotations a user's checker reads are true.
    package = os.path.dirname(os.path.dirname(_core.__file__))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path),
         "affine_ucp"], cwd=package, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout
