"""Checks affine-run ds-retarget against what DeepSpeed saved at the target.

    compare_retarget.py [--from-universal] AFFINE_RUN FIXTURES OUT PAIR...

Each PAIR is a folder FIXTURES/deepspeed-retarget/<source>__to__<target>/
or FIXTURES/deepspeed-autoep/<source>__to__<target>/ (target.json: the
target's dp, zero_stage and autoep_size; checkpoint/<tag>: what DeepSpeed
saved after resuming the source there). Retargets the source's
checkpoint/<tag> (FIXTURES/deepspeed/<source>/, or the AutoEP collection's)
into OUT/PAIR/<tag> and
compares the two folders file by file once torch.load has read them
(with --from-universal, affine-run universal-to-ds writes OUT/PAIR/<tag>
from DeepSpeed's Universal form of the source instead, the offline
equivalent of the load_universal DeepSpeed ran):
everything equal (tensors bit for bit), but for what the fixtures' README
says carries no meaning: ds_config's `checkpoint.load_universal` (an
artefact of DeepSpeed's route) and the order of the keys of Adam's state
per group (a Python set's). Into ZeRO-3, DeepSpeed gives every param group
group 0's hyper-parameters (a bug): there its param_groups must be exactly
that, and ours the source's. An AutoEP expert group is named after the
target's EP size in ours (`ep_size_<N>`); DeepSpeed's keeps the source's
name under ZeRO-1/2 and group 0's under ZeRO-3. Prints one line per pair;
exits 1 at the first difference.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_universal import compare  # noqa: E402
from compare_with_torch import load  # noqa: E402


def normalise(value):
    """Drops ds_config's checkpoint key and orders Adam's state keys."""
    if isinstance(value, dict):
        config = value.get("ds_config")
        if isinstance(config, dict):
            config.pop("checkpoint", None)
        base = get_base(value)
        for group, state in list(base.get("state", {}).items()):
            base["state"][group] = dict(sorted(state.items()))
    return value


def get_base(value):
    """The torch optimizer's state_dict in an optimizer file (ZeRO-1/2 or
    ZeRO-3 form), or {}."""
    states = value.get("optimizer_state_dict", {})
    if not isinstance(states, dict):
        return {}
    return states.get("base_optimizer_state",
                      states.get("optimizer_state_dict", {}))


def renamed(groups, autoep_size):
    """The param groups with the AutoEP expert group named for the target."""
    if autoep_size is None:
        return groups
    return [dict(g, name=f"ep_size_{autoep_size}") if g.get("moe") else g
            for g in groups]


def check_zero12_groups(ours, theirs, source, autoep_size):
    """Ours names the expert group for the target's EP size; DeepSpeed's
    keeps the source's name. Then both are set aside."""
    mine, its, original = (get_base(v).get("param_groups") for v in
                           (ours, theirs, source))
    if mine != renamed(original, autoep_size):
        return f"param_groups {mine} are not the source's renamed"
    if its != original:
        return f"DeepSpeed's param_groups {its} are not the source's"
    get_base(ours)["param_groups"] = get_base(theirs)["param_groups"] = None
    return None


def check_zero3_groups(ours, theirs, source, autoep_size):
    """Ours keeps the source's param_groups (the expert group named for the
    target); DeepSpeed's copies group 0's values onto every group's keys.
    Then both are set aside."""
    mine, its, original = (get_base(v).get("param_groups") for v in
                           (ours, theirs, source))
    if mine != renamed(original, autoep_size):
        return f"param_groups {mine} are not the source's {original}"
    bugged = [{k: v if k == "params" else original[0].get(k, v)
               for k, v in g.items()} for g in original]
    if its != bugged:
        return f"DeepSpeed's param_groups {its} are not group 0's copied"
    get_base(ours)["param_groups"] = get_base(theirs)["param_groups"] = None
    return None


def main(*argv):
    universal = argv[0] == "--from-universal"
    affine_run, fixtures, out, *pairs = argv[1:] if universal else argv
    for pair in pairs:
        collection = "deepspeed-retarget"
        if not os.path.isdir(os.path.join(fixtures, collection, pair)):
            collection = "deepspeed-autoep"
        folder = os.path.join(fixtures, collection, pair)
        with open(os.path.join(folder, "target.json")) as f:
            target = json.load(f)
        with open(os.path.join(folder, "checkpoint", "latest")) as f:
            tag = f.read()
        sources = os.path.join(fixtures, "deepspeed" if collection ==
                               "deepspeed-retarget" else collection)
        source = os.path.join(sources, target["source"], "checkpoint", tag)
        autoep_size = target.get("autoep_size")
        extra = [] if autoep_size is None else ["--autoep-size",
                                                str(autoep_size)]
        ours = os.path.join(out, pair, tag)
        command = "ds-retarget"
        if universal:
            command = "universal-to-ds"
            forms = os.path.join(sources, target["source"], "universal")
            with open(os.path.join(forms, "latest_universal")) as f:
                source_input = os.path.join(forms, f.read())
        else:
            source_input = source
        subprocess.run([affine_run, command, "--quiet",
                        "--input_folder", source_input, "--output_folder", ours,
                        "--dp", str(target["dp"]), "--zero-stage",
                        str(target["zero_stage"])] + extra, check=True)
        theirs = os.path.join(folder, "checkpoint", tag)
        names = sorted(os.listdir(theirs))
        if sorted(os.listdir(ours)) != names:
            print(f"{pair}: files {sorted(os.listdir(ours))} vs {names}")
            return 1
        with open(os.path.join(out, pair, "latest")) as f:
            if f.read() != tag:
                print(f"{pair}: latest does not name {tag}")
                return 1
        for name in names:
            a = normalise(load(os.path.join(ours, name)))
            b = normalise(load(os.path.join(theirs, name)))
            difference = None
            template = re.sub(r"zero_pp_rank_[0-9]+_", "zero_pp_rank_0_", name)
            if target["zero_stage"] == 3 and "optim_states" in name:
                difference = check_zero3_groups(
                    a, b, load(os.path.join(source, template)), autoep_size)
            elif autoep_size is not None and "optim_states" in name:
                difference = check_zero12_groups(
                    a, b, load(os.path.join(source, template)), autoep_size)
            difference = difference or compare(a, b, "$")
            if difference:
                print(f"{pair}/{name}: {difference}")
                return 1
        print(f"{pair}: {len(names)} files equal DeepSpeed's")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
