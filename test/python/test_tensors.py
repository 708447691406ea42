"""Tensors through maps and plans: bit-exact against torch.as_strided on
random layouts and every dtype, views and non-contiguous tensors, numpy,
scale powers, replica checks and refusals."""

import copy
import io
import pickle
import subprocess
import sys

import numpy
import pytest
import torch

import affine_ucp as u
from conftest import DTYPES, random_layout, random_tensor, reference_extract


def unscaled(map):
    return all(p.scale == 1.0 for s in map.shards for p in s.pieces)


def bits(t):
    """A tensor's bytes, so that NaN and -0.0 compare bit for bit."""
    return t.contiguous().view(torch.uint8) if t.dtype != torch.bool else t


def test_extract_and_rebuild_are_bit_exact_on_random_layouts(rng, generator):
    for trial in range(80):
        m = random_layout(rng)
        dtype = DTYPES[trial % len(DTYPES)]
        if not unscaled(m) and not dtype.is_floating_point:
            continue
        full = random_tensor(m.logical_shape, dtype, generator)
        shards = u.extract(m, full, threads=1 + trial % 3)
        for shard in m.shards:
            assert torch.equal(bits(shards[shard.rank]),
                               bits(reference_extract(m, full, shard.rank)))
        if unscaled(m) or dtype in (torch.float32, torch.float64):
            assert torch.equal(bits(u.rebuild(m, shards)), bits(full))


def test_reshard_equals_rebuild_then_extract(rng, generator):
    done = 0
    while done < 30:
        a, b = random_layout(rng), random_layout(rng)
        if a.logical_shape != b.logical_shape or not (unscaled(a) and
                                                      unscaled(b)):
            continue
        b = u.ParamMap(a.name, b.logical_shape, b.world_size, list(b.shards))
        full = random_tensor(a.logical_shape, torch.bfloat16, generator)
        moved = u.reshard(a, b, u.extract(a, full), policy="balance")
        expected = u.extract(b, full)
        assert moved.keys() == expected.keys()
        for rank in expected:
            assert torch.equal(bits(moved[rank]), bits(expected[rank]))
        done += 1


def test_views_with_storage_offsets_and_non_contiguous_tensors(generator):
    m = u.split_layout("w", [6, 4], 1, [2, 2])
    full = torch.randn(6, 4, generator=generator)
    # Shards as views into one buffer, starting partway into its storage.
    buffer = torch.randn(100, generator=generator)
    views = {0: buffer[10:22].view(6, 2), 1: buffer[40:52].view(6, 2)}
    for rank, view in views.items():
        view.copy_(reference_extract(m, full, rank))
    assert torch.equal(u.rebuild(m, views), full)
    # A transposed (non-contiguous) full tensor, and targets that are
    # non-contiguous views: written through and copied back.
    transposed = full.t().contiguous().t()
    assert not transposed.is_contiguous()
    targets = {r: torch.zeros(2, 6).t() for r in (0, 1)}
    [plan] = u.compose([u.full_tensor_map(m)], [m], "lowest")
    u.run_plan(plan, {0: transposed}, targets)
    for rank in (0, 1):
        assert torch.equal(targets[rank].reshape(6, 2),
                           reference_extract(m, full, rank))


def test_numpy_arrays(generator):
    m = u.split_layout("w", [5, 3], 0, [3, 2])
    full = numpy.arange(15, dtype=numpy.int32).reshape(5, 3)
    shards = u.extract(m, full)
    assert isinstance(shards[0], numpy.ndarray)
    assert (shards[1] == full[3:]).all()
    assert (u.rebuild(m, shards) == full).all()


def test_scale_powers_for_optimizer_states(generator):
    bias = u.scaled_bias_layout("b", [8], 4)
    full = torch.randn(8, generator=generator)
    shard = u.extract(bias, full, 1, state="fp32")
    assert torch.equal(shard, full * 0.25)
    assert torch.equal(u.rebuild(bias, {1: shard}), full)
    # Adam's lr and eps live in the scaled coordinate: moments through a
    # scaled piece are refused, as the tools refuse them.
    with pytest.raises(ValueError, match="scaled optimizer state is refused"):
        u.extract(bias, full, 1, state="exp_avg")
    split = u.split_layout("w", [8], 0, [4, 4])
    for state in ("exp_avg", "exp_avg_sq"):
        assert torch.equal(u.extract(split, full, 1, state=state), full[4:])
    with pytest.raises(ValueError, match="carries scale power -1"):
        u.extract(split, full, 0, state="exp_avg", scale_power=1)
    with pytest.raises(ValueError, match="state 'moment'"):
        u.extract(split, full, 0, state="moment")
    with pytest.raises(ValueError, match="scale"):
        u.extract(bias, torch.arange(8), 0)


def test_replicas_must_agree():
    m = u.replicated_layout("norm", [4], 3)
    shards = {r: torch.ones(4) for r in range(3)}
    assert torch.equal(u.rebuild(m, shards), torch.ones(4))
    shards[2] = torch.tensor([1.0, 1.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="different data for replicated "
                       r"element \[2\]"):
        u.rebuild(m, shards)
    assert torch.equal(u.rebuild(m, shards, check_replicas=False),
                       torch.ones(4))


def test_refusals_name_the_rank_and_sizes():
    m = u.split_layout("w", [4], 0, [2, 2])
    with pytest.raises(ValueError, match="rank 1 supplied a source shard of 3 "
                       "elements, but the map describes 2"):
        u.rebuild(m, {0: torch.zeros(2), 1: torch.zeros(3)})
    with pytest.raises(u.VerificationError, match="the first is \\[2\\]"):
        u.rebuild(m, {0: torch.zeros(2)})
    [plan] = u.compose([m], [u.full_tensor_map(m)], "lowest")
    with pytest.raises(KeyError, match="no source shard of rank 1"):
        u.run_plan(plan, {0: torch.zeros(2)})
    with pytest.raises(ValueError, match="several dtypes"):
        u.rebuild(m, {0: torch.zeros(2), 1: torch.zeros(2, dtype=torch.int32)})
    with pytest.raises(TypeError, match="torch.Tensor or a numpy.ndarray"):
        u.extract(m, [1, 2, 3, 4])
    with pytest.raises(u.VerificationError):
        u.extract(u.ParamMap("w", [4], 1, [u.Shard(0, [2], [
            u.Piece([2], 0, [1], 0, [1], [0])])]), torch.zeros(4))


def test_wrong_arguments_say_what_was_expected():
    m = u.split_layout("w", [4], 0, [2, 2])
    for wrong in (1.5, "1", 2.0):
        with pytest.raises(TypeError, match="scale_power: expected an int"):
            u.extract(m, torch.zeros(4), scale_power=wrong)
    [plan] = u.compose([m], [u.full_tensor_map(m)], "lowest")
    with pytest.raises(TypeError, match="scale_power: expected an int"):
        u.run_plan(plan, {0: torch.zeros(2), 1: torch.zeros(2)},
                   scale_power=0.5)
    assert u.get_scale_power(None, numpy.int64(-1)) == -1
    with pytest.raises(ValueError, match="dtype complex64 is not one "
                       "affine_ucp moves; expected one of f.*float32"):
        u.extract(m, numpy.zeros(4, dtype=numpy.complex64))
    with pytest.raises(ValueError, match="dtype complex64 is not one "
                       "affine_ucp moves"):
        u.extract(m, torch.zeros(4, dtype=torch.complex64))


def test_import_leaves_torch_and_numpy_unloaded():
    # Importing torch takes seconds: the package imports it only when a
    # function that makes torch tensors runs.
    code = ("import sys, affine_ucp, affine_ucp.checkpoints; "
            "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_one_rank_is_extracted_alone(rng, generator):
    # extract(full, rank) runs the program's part that writes that rank
    # (its copies only) into that rank's shard alone, equal to the same
    # shard cut with every other.
    for trial in range(40):
        m = random_layout(rng)
        full = random_tensor(m.logical_shape, torch.float32, generator)
        for shard in m.shards:
            got = u.extract(m, full, shard.rank)
            assert torch.equal(bits(got),
                               bits(reference_extract(m, full, shard.rank)))
    m = u.split_layout("w", [6, 2], 0, [2, 4])
    [plan] = u.compose([u.full_tensor_map(m)], [m], "lowest")
    whole = u._core.lower(plan)
    one = u._core.program_into(whole, 1)
    assert one.target_elements == {1: 8}
    assert one.source_elements == whole.source_elements
    assert (one.copies, whole.copies) == (1, 2)
    with pytest.raises(KeyError, match="rank 5 holds no shard"):
        u.extract(m, torch.zeros(6, 2), 5)


def test_programs_are_kept_per_map_and_follow_changes():
    from affine_ucp import affine
    m = affine.contiguous_split_map((4, 2), [2, 2], 0)
    full = torch.arange(8.0).view(4, 2)
    assert torch.equal(m.extract(full, 1), full[2:])
    # The same map changed in place is another map: its new program runs.
    m.pieces_by_rank[1][0] = affine.AffinePiece((2, 2), 0, (2, 1), 0, (2, 1),
                                                {1})
    m.pieces_by_rank[0][0] = affine.AffinePiece((2, 2), 4, (2, 1), 0, (2, 1),
                                                {0})
    assert torch.equal(m.extract(full, 1), full[:2])
    assert torch.equal(m.rebuild({0: full[2:], 1: full[:2]}), full)
    # A piece's attribute changed in place changes the map too.
    m.pieces_by_rank[1][0].source_offset = 4
    m.pieces_by_rank[0][0].source_offset = 0
    assert torch.equal(m.extract(full, 1), full[2:])
    # An unchanged map reuses its programs; they live beside the map, which
    # copies and pickles as its attributes alone.
    kept = affine._KEPT_PROGRAMS[m][1]
    m.extract(full, 0)
    assert affine._KEPT_PROGRAMS[m][1] is kept
    copied = pickle.loads(pickle.dumps(copy.deepcopy(m)))
    assert copied.to_dict() == m.to_dict()
    assert torch.equal(copied.rebuild({0: full[:2], 1: full[2:]}), full)


def test_large_outputs_are_kept_for_reuse():
    limit = u.cache_limit()
    u.empty_cache()
    try:
        # f32 shards of 8 MiB and an F of 16 MiB: the caching allocator's.
        m = u.split_layout("w", [4096, 1024], 0, [2048, 2048])
        full = torch.randn(4096, 1024)
        shard = u.extract(m, full, 1)
        assert torch.equal(shard, full[2048:])
        address = shard.data_ptr()
        assert address % (2 << 20) == 0  # A mapping of its own.
        assert u.cached_bytes() == 0
        del shard
        assert u.cached_bytes() == 8 << 20
        # The next output of that size takes it, and holds what it wrote.
        again = u.extract(m, full, 0)
        assert again.data_ptr() == address
        assert torch.equal(again, full[:2048])
        assert u.cached_bytes() == 0
        # A view keeps its buffer: the next output gets other memory.
        view = again[5:]
        del again
        assert u.cached_bytes() == 0
        other = u.extract(m, full, 1)
        assert other.data_ptr() != address
        assert torch.equal(view, full[5:2048])
        del view
        assert u.cached_bytes() == 8 << 20
        # Reused for rebuild's F only where it needs at least half of it.
        rebuilt = u.rebuild(m, {0: full[:2048], 1: other})
        assert torch.equal(rebuilt, full)
        assert rebuilt.data_ptr() != address and u.cached_bytes() == 8 << 20
        # An ordinary tensor over a buffer: it saves, pickles, moves to
        # shared memory and converts to numpy; growing it is refused.
        saved = io.BytesIO()
        torch.save(other, saved)
        saved.seek(0)
        assert torch.equal(torch.load(saved), full[2048:])
        assert torch.equal(pickle.loads(pickle.dumps(other)), full[2048:])
        assert (other.numpy() == full[2048:].numpy()).all()
        with pytest.raises(RuntimeError, match="not resizable"):
            other.resize_(4097, 1024)
        shared = u.extract(m, full, 1).share_memory_()
        assert shared.is_shared() and torch.equal(shared, full[2048:])
        del shared
        # numpy outputs too, as writable arrays.
        array = u.extract(m, full.numpy(), 0)
        assert array.ctypes.data == address and array.flags.writeable
        assert (array == full[:2048].numpy()).all()
        # Small outputs are torch's own, never kept.
        small = u.extract(u.split_layout("s", [64, 8], 0, [32, 32]),
                          full[:64, :8].contiguous(), 1)
        del small
        assert u.cached_bytes() == 0
        # Beyond the limit, the outputs kept longest go back to the system.
        u.set_cache_limit(24 << 20)
        del rebuilt, other
        assert u.cached_bytes() == 24 << 20
        del array
        assert u.cached_bytes() == 16 << 20  # F's 16 MiB went.
        u.empty_cache()
        assert u.cached_bytes() == 0 and u.cache_limit() == 24 << 20
        kept = u.extract(m, full, 0)
        del kept
        u.set_cache_limit(0)
        assert u.cached_bytes() == 0
        with pytest.raises(ValueError, match="expected bytes >= 0"):
            u.set_cache_limit(-1)
        with pytest.raises(TypeError):
            u.set_cache_limit(1.5)
    finally:
        u.set_cache_limit(limit)


@pytest.mark.parametrize("dtype", DTYPES)
def test_large_outputs_of_every_dtype(dtype):
    # Shards of 4 to 8 MiB come from the caching allocator, as tensors of
    # the source's dtype and the shard's shape, for torch and numpy.
    generator = torch.Generator().manual_seed(7)
    columns = (8 << 20) // torch.empty(0, dtype=dtype).element_size() // 1024
    full = random_tensor((1024, columns), dtype, generator)
    m = u.split_layout("w", [1024, columns], 1, [columns // 2] * 2)
    for rank, part in u.extract(m, full).items():
        assert part.dtype == dtype and part.shape == (1024, columns // 2)
        assert part.data_ptr() % (2 << 20) == 0
        assert torch.equal(part, reference_extract(m, full, rank))
    assert torch.equal(u.rebuild(m, u.extract(m, full)), full)
    if dtype != torch.bfloat16:
        array = u.extract(m, full.numpy(), 1)
        assert array.dtype == full.numpy().dtype
        assert array.ctypes.data % (2 << 20) == 0
        assert (array == reference_extract(m, full, 1).numpy()).all()


def test_outputs_fall_back_where_no_memory_can_be_mapped(monkeypatch):
    # The allocator answers None where mmap fails (here: an address space
    # too small for the buffer)...
    script = ("import resource, affine_ucp as u\n"
              "soft, hard = resource.getrlimit(resource.RLIMIT_AS)\n"
              "resource.setrlimit(resource.RLIMIT_AS, (16 << 30, hard))\n"
              "print(u._core.allocate_output(32 << 30),"
              " u._core.allocate_output(8 << 20) is not None)\n")
    result = subprocess.run([sys.executable, "-c", script], check=True,
                            capture_output=True, text=True)
    assert result.stdout.split() == ["None", "True"]
    # ... and the output is then torch's or numpy's own.
    monkeypatch.setattr(u._core, "allocate_output", lambda size: None)
    m = u.split_layout("w", [4096, 1024], 0, [2048, 2048])
    full = torch.randn(4096, 1024)
    assert torch.equal(u.extract(m, full, 1), full[2048:])
    assert (u.extract(m, full.numpy(), 0) == full[:2048].numpy()).all()
