"""Maps from Python: documents, verification, canonical form, builders."""

import json
import os
import subprocess

import pytest

import affine_ucp as u
from conftest import TOOLS, random_layout


def test_documents_round_trip_every_layout_kind(rng):
    for _ in range(60):
        m = random_layout(rng)
        assert u.parse_maps(u.write_maps([m])) == [m]


def test_wrapped_and_universal_info_forms_read_the_same():
    m = u.split_layout("lm_head.weight", [6, 4], 0, [3, 3])
    bare = json.loads(u.write_maps([m]))
    for form in ({"affine_map": bare},
                 {"universal_checkpoint_version": 0.2, "affine_map": bare}):
        assert u.parse_maps(json.dumps(form)) == [m]


def test_parse_errors_name_the_json_path():
    text = u.write_maps([u.split_layout("w", [4, 2], 0, [2, 2])])
    broken = text.replace('"shard_shape": [2,2]', '"shard_shape": [2,-2]', 1)
    with pytest.raises(ValueError, match=r'^\$\.params\["\^w\$"\]\.ranks\["0"\]: '
                       'shard extent -2 in dimension 1'):
        u.parse_maps(broken)


def uncovered_map():
    piece = u.Piece([2], 0, [1], 0, [1], [0])
    return u.ParamMap("w", [4], 1, [u.Shard(0, [2], [piece])])


def test_verification_errors_carry_param_kind_rank_piece_and_element():
    with pytest.raises(u.VerificationError) as caught:
        u.verify(uncovered_map())
    error = caught.value
    assert (error.param, error.kind, error.element) == ("w", "uncovered", [2])
    assert error.violations[0]["count"] == 2
    overlap = u.ParamMap("w", [2], 1, [u.Shard(0, [2], [
        u.Piece([2], 0, [1], 0, [1], [0]),
        u.Piece([1], 0, [1], 1, [1], [0])])])
    with pytest.raises(u.VerificationError) as caught:
        u.verify(overlap)
    kinds = {v["kind"] for v in caught.value.violations}
    assert "shard_overlap" in kinds or "mixed_locations" in kinds
    assert caught.value.rank == 0 and caught.value.piece is not None


def test_verification_message_is_the_tools(tmp_path):
    report = u.verify(uncovered_map(), raise_on_error=False)
    assert not report["ok"]
    path = tmp_path / "bad.json"
    path.write_text(u.write_maps([uncovered_map()]))
    mlir = subprocess.run([os.path.join(TOOLS, "affine-translate"),
                           "--import-json", str(path)], check=True,
                          capture_output=True, text=True).stdout
    tool = subprocess.run([os.path.join(TOOLS, "affine-opt"), "--ucp-verify"],
                          input=mlir, capture_output=True, text=True)
    assert tool.returncode != 0
    assert report["message"] in tool.stderr


def test_verification_is_o_pieces_not_o_elements():
    small = u.verify(u.split_layout("w", [64, 64], 0, [32, 32]))
    large = u.verify(u.split_layout("w", [65536, 4096], 0, [32768, 32768]))
    assert small["ok"] and large["ok"]
    assert large["cells"] == small["cells"]
    assert large["elements"] == 65536 * 4096


def test_canonical_form_is_a_fixed_point(rng):
    for _ in range(40):
        m = random_layout(rng)
        once = u.canonicalize(m)
        assert u.canonicalize(once) == once
        assert u.verify(once)["ok"]


def test_summary_lists_every_parameter():
    maps = [u.split_layout("a", [4, 4], 0, [2, 2]),
            u.replicated_layout("b", [4], 2)]
    table = u.summarize(maps)
    assert "a " in table and "b " in table
    assert "total: 2 parameters" in table


def test_builders_give_deepspeeds_splits():
    assert u.shard_sizes(10, 4) == [3, 3, 2, 2]
    qkv = u.split_sub_param_layout("q", [24, 8], 0, [8, 8, 8], 3)
    assert [s.shape for s in qkv.shards] == [[9, 8], [9, 8], [6, 8]]
    vocab = u.padded_vocab_layout("embed", 10, 4, 4)
    assert vocab.original_vocab_size == 10 and vocab.logical_shape == [12, 4]
    bias = u.scaled_bias_layout("b", [8], 4)
    assert {p.scale for s in bias.shards for p in s.pieces} == {0.25}
    experts = u.expert_layout("w1", 4, [[0, 1], [2, 3], [3]], [8, 2])
    assert [s.shape for s in experts.shards] == [[2, 8, 2], [2, 8, 2],
                                                 [1, 8, 2]]
    assert u.verify(experts)["replicated_elements"] == 16
    with pytest.raises(ValueError, match="expert placement"):
        u.expert_layout("w1", 4, [[0, 9]], [2])
    for m in (u.bigcode_layout("c_attn", 8, 4, 2, 2),
              u.codegen_layout("qkv", 16, 2, 2),
              u.yuan_layout("v", [8, 2], 0, 2, 8)):
        assert u.verify(m)["ok"]
