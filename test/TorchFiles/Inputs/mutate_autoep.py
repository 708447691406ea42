"""Makes broken copies of a ZeRO-2 and a ZeRO-3 AutoEP checkpoint.

    mutate_autoep.py Z2_CHECKPOINT Z3_CHECKPOINT OUT

Each folder OUT/<case> is a copy of one of them with one thing changed,
its name saying what: the AutoEP metadata removed (from the model states,
or from universal_checkpoint_info too), expert files in DeepSpeed-MoE's
names, an expert file missing or doubled, the legacy key `autoep_layers`,
a ZeRO-3 rank file claiming another EP rank or the per-expert format, and
an autoep_size that does not divide the DP ranks.
"""
import os
import shutil
import sys

import torch

MODEL = "mp_rank_00_model_states.pt"


def copy(source, out, case):
    folder = os.path.join(out, case)
    shutil.copytree(source, folder)
    return folder


def edit(path, change):
    states = torch.load(path)
    change(states)
    torch.save(states, path)


def drop_layers(states):
    del states["ds_autoep_layers"]


def drop_info_layers(states):
    drop_layers(states)
    del states["universal_checkpoint_info"]


def legacy(states):
    states["autoep_layers"] = states.pop("ds_autoep_layers")


def native_moe(folder):
    for name in os.listdir(folder):
        if name.startswith("layer_"):
            path = os.path.join(folder, name)
            tensors = torch.load(path)
            torch.save({k.replace("mlp.experts", "mlp.deepspeed_moe.experts"):
                        v for k, v in tensors.items()}, path)


def main(z2, z3, out):
    edit(os.path.join(copy(z2, out, "no-metadata"), MODEL), drop_info_layers)
    edit(os.path.join(copy(z2, out, "info-without-layers"), MODEL),
         drop_layers)
    folder = copy(z2, out, "native-moe")
    edit(os.path.join(folder, MODEL), drop_info_layers)
    native_moe(folder)
    folder = copy(z2, out, "missing-expert")
    os.remove(os.path.join(folder, "layer_1_expert_3_mp_rank_00_model_states.pt"))
    folder = copy(z2, out, "doubled-expert")
    shutil.copy(os.path.join(folder, "layer_0_expert_1_mp_rank_00_model_states.pt"),
                os.path.join(folder, "layer_0_expert_1_mp_rank_01_model_states.pt"))
    edit(os.path.join(copy(z2, out, "legacy-key"), MODEL), legacy)

    def layers(change):
        return lambda states: [change(layer)
                               for layer in states["ds_autoep_layers"]]

    rank1 = "zero_pp_rank_1_mp_rank_00_model_states.pt"
    edit(os.path.join(copy(z3, out, "wrong-ep-rank"), rank1),
         layers(lambda layer: layer.update(ep_rank=0)))
    edit(os.path.join(copy(z3, out, "wrong-format"), rank1),
         layers(lambda layer: layer.update(checkpoint_format="per_expert_files")))

    def ep3(states):
        for layer in states["ds_autoep_layers"] + \
                states["universal_checkpoint_info"]["ds_autoep_layers"]:
            layer.update(ep_size=3, num_experts=6, num_local_experts=2)
        states["num_experts"] = [6, 6]

    edit(os.path.join(copy(z2, out, "ep-not-dividing"), MODEL), ep3)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
