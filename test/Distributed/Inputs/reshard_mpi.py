"""Run under mpirun: affine_ucp.reshard_mpi on an mpi4py communicator moves
random layouts of every torch dtype between random process ownerships, and
every target shard equals the single-process affine_ucp.reshard's."""

import random
import sys

import torch
from mpi4py import MPI

import affine_ucp as u

comm = MPI.COMM_WORLD
size, process = comm.Get_size(), comm.Get_rank()
rng = random.Random(int(sys.argv[1]))
dtypes = [torch.float64, torch.float32, torch.float16, torch.bfloat16,
          torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
          torch.bool]


def layout(name, shape, world):
    dim = rng.randrange(len(shape))
    return u.split_layout(name, shape, dim, u.shard_sizes(shape[dim], world))


checked = 0
for trial in range(12):
    shape = [rng.randint(1, 40), rng.randint(1, 300)]
    source_world, target_world = rng.randint(1, 5), rng.randint(1, 5)
    names = [f"w{i}" for i in range(3)]
    sources = [layout(n, shape, source_world) for n in names]
    targets = [layout(n, shape, target_world) for n in names]
    source_processes = [rng.randrange(size) for _ in range(source_world)]
    target_processes = [rng.randrange(size) for _ in range(target_world)]
    dtype = dtypes[trial % len(dtypes)]
    torch.manual_seed(trial)
    full = (torch.randn(shape) * 50).to(dtype)
    all_shards = {m.name: u.extract(m, full) for m in sources}
    mine = {name: {r: t for r, t in shards.items()
                   if source_processes[r] == process}
            for name, shards in all_shards.items()}
    moved = u.reshard_mpi(comm, sources, targets, mine,
                          source_processes=source_processes,
                          target_processes=target_processes, timeout=60)
    for source, target in zip(sources, targets):
        expected = u.reshard(source, target, all_shards[source.name])
        held = {r for r in expected if target_processes[r] == process}
        assert set(moved[source.name]) == held, (trial, source.name)
        for rank in held:
            assert torch.equal(moved[source.name][rank], expected[rank]), \
                (trial, source.name, rank)
            checked += 1

total = comm.allreduce(checked)
if process == 0:
    print(f"{size} processes: {total} target shards equal to "
          "affine_ucp.reshard's")
