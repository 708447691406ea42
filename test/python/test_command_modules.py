"""python3 -m affine_ucp.ds_to_universal and python3 -m affine_ucp.zero_to_fp32:
DeepSpeed's command lines run by affine-ucp's jobs in the interpreter's
process: the same files as affine-run's, DeepSpeed's exit statuses,
progress on standard error, nothing at the output of a run that fails."""

import glob
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, TOOLS


def run_module(name, *args):
    return subprocess.run([sys.executable, "-m", f"affine_ucp.{name}",
                           *map(str, args)], capture_output=True, text=True)


def affine_run(*args):
    return subprocess.run([os.path.join(TOOLS, "affine-run"),
                           *map(str, args)], capture_output=True, text=True)


def files_of(folder):
    """Every file under `folder` by its relative path, with its bytes."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, folder)] = f.read()
    return found


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A generated ZeRO-2 TP 2 x DP 2 checkpoint: CKPT, with latest and
    step3."""
    folder = tmp_path_factory.mktemp("generated") / "ckpt"
    subprocess.run([os.path.join(TOOLS, "ucp-make-deepspeed-checkpoint"),
                    "--out", str(folder), "--tp", "2", "--dp", "2",
                    "--hidden", "32", "--layers", "1", "--ffn", "64",
                    "--vocab", "29"], check=True, capture_output=True)
    return folder


def test_ds_to_universal_writes_what_affine_run_writes(checkpoint, tmp_path):
    ours = run_module("ds_to_universal", "--input_folder", checkpoint / "step3",
                      "--output_folder", tmp_path / "a" / "step3_universal",
                      "--num_extract_workers", "3", "--keep_temp_folder")
    assert ours.returncode == 0, ours.stderr
    assert "12 parameters" in ours.stdout
    # Standard error is no terminal here: a line per progress report.
    assert "python3 -m affine_ucp.ds_to_universal: " in ours.stderr
    assert " files, " in ours.stderr
    theirs = affine_run("ds-to-universal", "--quiet", "--input_folder",
                        checkpoint / "step3", "--output_folder",
                        tmp_path / "b" / "step3_universal")
    assert theirs.returncode == 0, theirs.stderr
    assert files_of(tmp_path / "a") == files_of(tmp_path / "b")


def test_ds_to_universal_exit_statuses(checkpoint, tmp_path):
    out = tmp_path / "u" / "step3_universal"
    usage = run_module("ds_to_universal", "--input_folder", checkpoint)
    assert usage.returncode == 2
    assert "--output_folder" in usage.stderr
    workers = run_module("ds_to_universal", "--input_folder", checkpoint,
                         "--output_folder", out, "--num_merge_workers", "0")
    assert workers.returncode == 2
    assert "expected a positive count" in workers.stderr
    missing = run_module("ds_to_universal", "--input_folder",
                         tmp_path / "nothing", "--output_folder", out)
    assert missing.returncode == 1
    assert missing.stderr.startswith(
        "python3 -m affine_ucp.ds_to_universal: error: ")
    assert "nothing" in missing.stderr
    assert not (tmp_path / "u").exists()


def test_zero_to_fp32_writes_what_export_writes(checkpoint, tmp_path):
    # The parent folder, through latest, and a tag given with -t.
    ours = run_module("zero_to_fp32", checkpoint, tmp_path / "a",
                      "--safe_serialization", "--max_shard_size", "20KB")
    assert ours.returncode == 0, ours.stderr
    assert "tensors of" in ours.stdout and "files" in ours.stdout
    tagged = run_module("zero_to_fp32", checkpoint, tmp_path / "t",
                        "--safe_serialization", "-t", "step3",
                        "--max_shard_size", "20KB", "-d")
    assert tagged.returncode == 0, tagged.stderr
    theirs = affine_run("export", "--quiet", "--input_folder",
                        checkpoint / "step3", "--out", tmp_path / "b",
                        "--max-shard-size", "20KB")
    assert theirs.returncode == 0, theirs.stderr
    exported = files_of(tmp_path / "b")
    assert "model.safetensors.index.json" in exported
    assert files_of(tmp_path / "a") == exported == files_of(tmp_path / "t")
    half = run_module("zero_to_fp32", checkpoint, tmp_path / "h",
                      "--safe_serialization", "--dtype", "bf16")
    assert half.returncode == 0, half.stderr
    theirs = affine_run("export", "--quiet", "--input_folder",
                        checkpoint / "step3", "--out", tmp_path / "hb",
                        "--dtype", "bf16")
    assert files_of(tmp_path / "h") == files_of(tmp_path / "hb")


def test_zero_to_fp32_refusals(checkpoint, tmp_path):
    pickled = run_module("zero_to_fp32", checkpoint, tmp_path / "a")
    assert pickled.returncode == 2
    assert "pass --safe_serialization" in pickled.stderr
    size = run_module("zero_to_fp32", checkpoint, tmp_path / "a",
                      "--safe_serialization", "--max_shard_size", "5XB")
    assert size.returncode == 2
    assert "shard size '5XB'" in size.stderr
    missing = run_module("zero_to_fp32", checkpoint, tmp_path / "a",
                         "--safe_serialization", "-t", "step9")
    assert missing.returncode == 1
    assert "step9" in missing.stderr
    assert not (tmp_path / "a").exists()


def tag_folders():
    """Every shared fixture's checkpoint tag folder."""
    return sorted(glob.glob(os.path.join(FIXTURES, "deepspeed*", "*",
                                         "checkpoint", "step3")))


@pytest.mark.skipif(not tag_folders(),
                    reason="the shared DeepSpeed fixtures are not here")
def test_every_fixture_converts_as_affine_run_converts_it(tmp_path):
    for number, folder in enumerate(tag_folders()):
        out = tmp_path / str(number)
        ours = run_module("ds_to_universal", "--input_folder", folder,
                          "--output_folder", out / "a" / "u",
                          "--inject_missing_state")
        theirs = affine_run("ds-to-universal", "--quiet", "--input_folder",
                            folder, "--output_folder", out / "b" / "u",
                            "--inject_missing_state")
        assert ours.returncode == theirs.returncode, (folder, ours.stderr)
        if theirs.returncode == 0:
            assert files_of(out / "a") == files_of(out / "b"), folder
        else:
            message = theirs.stderr.strip().splitlines()[-1]
            assert message.replace("affine-run: ", "") in ours.stderr


@pytest.mark.skipif(not tag_folders(),
                    reason="the shared DeepSpeed fixtures are not here")
def test_frozen_parameters_excluded_as_zero_to_fp32_does(tmp_path):
    import affine_ucp as u
    run = os.path.join(FIXTURES, "deepspeed", "bf16_z2_frozen_ws2",
                       "checkpoint")
    whole = run_module("zero_to_fp32", run, tmp_path / "a",
                       "--safe_serialization")
    assert whole.returncode == 0, whole.stderr
    without = run_module("zero_to_fp32", run, tmp_path / "b",
                         "--safe_serialization", "--exclude_frozen_parameters")
    assert without.returncode == 0, without.stderr
    a = u.read_safetensors(str(tmp_path / "a" / "model.safetensors"))
    b = u.read_safetensors(str(tmp_path / "b" / "model.safetensors"))
    assert "frozen_proj" in a and set(a) - set(b) == {"frozen_proj"}
    assert all(a[name].equal(b[name]) for name in b)
    theirs = affine_run("export", "--quiet", "--input_folder",
                        os.path.join(run, "step3"), "--out", tmp_path / "c",
                        "--exclude_frozen_parameters")
    assert files_of(tmp_path / "b") == files_of(tmp_path / "c")
