"""DeepSpeed checkpoints from Python: the reader's maps against the files'
fragments, ds-to-universal with progress, retarget, export and the
safetensors reader; on a generated checkpoint, and on the real fixtures
where they are."""

import os
import subprocess

import pytest
import torch

import affine_ucp as u
from conftest import FIXTURES, TOOLS


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    out = tmp_path_factory.mktemp("generated")
    subprocess.run([os.path.join(TOOLS, "ucp-make-deepspeed-checkpoint"),
                    "--out", str(out), "--dp", "3", "--hidden", "32",
                    "--layers", "1", "--ffn", "48", "--vocab", "29"],
                   check=True, capture_output=True)
    return str(out / "step3")


def test_the_reader_gives_every_parameters_map(checkpoint):
    ckpt = u.open_checkpoint(checkpoint)
    assert (ckpt.dp_degree, ckpt.tp_degree, ckpt.zero_stage) == (3, 1, 2)
    assert not ckpt.is_universal and ckpt.autoep_size == 0
    names = [p["name"] for p in ckpt.params]
    assert "model.embed_tokens.weight" in names
    for param in ckpt.params:
        assert param["map"].world_size == 3
        assert u.verify(param["map"])["ok"]


def test_ds_to_universal_reports_progress_and_export_reads_back(
        checkpoint, tmp_path):
    calls = []
    stats = u.ds_to_universal(checkpoint, str(tmp_path / "u"),
                              inject_missing_state=True,
                              progress=lambda *a: calls.append(a))
    assert stats["parameters"] == len(u.open_checkpoint(checkpoint).params)
    assert calls and calls[-1][0] == calls[-1][1] == stats["files"]
    exported = u.export(str(tmp_path / "u"), str(tmp_path / "model"))
    tensors = u.read_safetensors(str(tmp_path / "model" /
                                     "model.safetensors"))
    assert len(tensors) == exported["tensors"]
    fp32 = torch.load(tmp_path / "u" / "zero" / "lm_head.weight" / "fp32.pt")
    assert torch.equal(tensors["lm_head.weight"], fp32["param"])


@pytest.mark.parametrize("job", ["ds_to_universal", "retarget", "export"])
def test_a_raising_callback_stops_the_run_and_leaves_nothing(
        checkpoint, tmp_path, job):
    # Raised at its first call, which every run makes (the last one, forced,
    # comes before anything takes its final name): the exception reaches
    # the caller and nothing is left at the output, the folders made for
    # it included (before, the output was committed first).
    calls = []

    def fail(*args):
        calls.append(args)
        raise RuntimeError("stop")
    out = str(tmp_path / "made" / "out")
    run = {"ds_to_universal": lambda: u.ds_to_universal(
               checkpoint, out, inject_missing_state=True, progress=fail),
           "retarget": lambda: u.retarget(checkpoint, out, 2, progress=fail),
           "export": lambda: u.export(checkpoint, out, progress=fail)}[job]
    with pytest.raises(RuntimeError, match="stop"):
        run()
    assert len(calls) == 1
    assert not os.path.exists(tmp_path / "made")


def test_retarget_writes_the_same_full_tensors(checkpoint, tmp_path):
    stats = u.retarget(checkpoint, str(tmp_path / "r" / "step3"), 2,
                       zero_stage=1)
    assert stats["files"] == 3  # model states, 2 optimizer files (not latest)
    a = u.export(checkpoint, str(tmp_path / "a"))
    b = u.export(str(tmp_path / "r" / "step3"), str(tmp_path / "b"))
    assert a["tensors"] == b["tensors"]
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == \
        (tmp_path / "b" / "model.safetensors").read_bytes()


def test_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        u.open_checkpoint(str(tmp_path / "none"))
    (tmp_path / "x.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00"
                                             b"\x00{}")
    with pytest.raises(ValueError, match="x.safetensors"):
        u.read_safetensors(str(tmp_path / "x.safetensors"))


@pytest.mark.skipif(not os.path.isdir(os.path.join(FIXTURES, "deepspeed")),
                    reason="the shared DeepSpeed fixtures are not here")
def test_real_checkpoints_export_deepspeeds_universal_masters(tmp_path):
    for collection, run in (("deepspeed", "bf16_tp2_z1_ws2"),
                            ("deepspeed", "fp32_z3_ws2"),
                            ("deepspeed-autoep", "bf16_z2_ws2_ep2")):
        root = os.path.join(FIXTURES, collection, run)
        ckpt = u.open_checkpoint(os.path.join(root, "checkpoint", "step3"))
        assert all(u.verify(p["map"])["ok"] for p in ckpt.params)
        u.export(os.path.join(root, "checkpoint", "step3"),
                 str(tmp_path / run))
        tensors = u.read_safetensors(str(tmp_path / run / "model.safetensors"))
        for param in ckpt.params:
            saved = torch.load(os.path.join(root, "universal",
                                            "step3_universal", "zero",
                                            param["name"], "fp32.pt"))
            saved = saved["param"] if isinstance(saved, dict) else saved
            got = tensors[param["name"]]
            assert torch.equal(got.reshape(-1), saved.reshape(-1)), \
                f"{run}: {param['name']}"
