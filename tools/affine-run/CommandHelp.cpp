//===- CommandHelp.cpp - affine-run's help, command by command ------------===//
//
// Each command's synopsis names every option the command takes (a test
// checks it against the options registered), so that `affine-run COMMAND
// --help` is complete at a glance; the options' descriptions follow it.
//
//===----------------------------------------------------------------------===//

#include "CommandHelp.h"

#include "llvm/ADT/StringRef.h"

namespace {

/// One command's help.
struct CommandHelp {
  const char *name;
  /// The synopsis, one line per form, options in brackets where optional.
  const char *synopsis;
  /// A command that runs, with what it does.
  const char *example;
};

} // namespace

static const CommandHelp kCommands[] = {
    {"extract",
     "affine-run extract --map M --full FILE --out DIR [--state NAME | "
     "--scale-power P] [--device cpu|cuda] [--threads N] "
     "[--ignore-extra-tensors] [--no-sync] [--quiet]",
     "affine-run extract --map maps.json --full full.safetensors --out "
     "shards\n    (writes shards/rank_<r>.safetensors, each rank's pieces of "
     "every tensor)"},
    {"rebuild",
     "affine-run rebuild --map M --shards DIR --out FILE [--state NAME | "
     "--scale-power P] [--policy lowest|local|node|balance] "
     "[--check-replicas] [--device cpu|cuda] [--threads N] "
     "[--ignore-extra-tensors] [--no-sync] [--quiet]",
     "affine-run rebuild --map maps.json --shards shards --out "
     "full.safetensors"},
    {"reshard",
     "affine-run reshard --source-map Ms --target-map Mt --shards DIR --out "
     "DIR2 [--state NAME | --scale-power P] [--policy "
     "lowest|local|node|balance] [--ranks-per-node R] [--check-replicas] "
     "[--device cpu|cuda] [--threads N] [--ignore-extra-tensors] [--no-sync] "
     "[--quiet]\n  mpirun -np P affine-run reshard --mpi ... "
     "[--source-processes p0,p1,... --target-processes p0,p1,...] "
     "[--mpi-timeout SECONDS] [--mpi-batch-mb MB]",
     "affine-run reshard --source-map tp4.json --target-map tp2.json "
     "--shards shards --out shards-tp2\n    (moves every tensor from the TP 4 "
     "shards to TP 2 without building a full tensor)"},
    {"init",
     "affine-run init --map M --out FILE [--dtype f32] [--seed 1]",
     "affine-run init --map maps.json --out full.safetensors --dtype bf16\n"
     "    (random full tensors for every parameter of the map, to try the "
     "other commands on)"},
    {"inspect",
     "affine-run inspect FILE.pt [--values N]\n  affine-run inspect "
     "CKPT[/TAG]|UNIV|SAFETENSORS [--json] [--render FILE.svg|FILE.png]",
     "affine-run inspect ckpt\n    (follows ckpt/latest; the format, "
     "DeepSpeed version, step, grid, dtypes, every tensor and how it is "
     "split, the size on disk, and which commands apply)"},
    {"check",
     "affine-run check CKPT[/TAG]|UNIV|SAFETENSORS [--json] "
     "[--nonfinite-weights-fatal] [--threads N] [--quiet]"
     "\n  mpirun -np P affine-run check --mpi ... "
     "[--mpi-timeout SECONDS] [--node-local]",
     "affine-run check ckpt\n    (follows ckpt/latest; exit 0 when every "
     "check holds, 1 with every finding, each naming the file, tensor, "
     "state, rank and first element)"},
    {"ds-to-universal",
     "affine-run ds-to-universal --input_folder CKPT/TAG --output_folder "
     "PARENT/NAME [--inject_missing_state] [--no_strict] [--threads N] "
     "[--no-value-check] [--no-sync] [--quiet]"
     "\n  mpirun -np P affine-run ds-to-universal --mpi ... "
     "[--mpi-timeout SECONDS] [--node-local]",
     "affine-run ds-to-universal --input_folder ckpt/global_step3 "
     "--output_folder ckpt/global_step3_universal\n    (what DeepSpeed's "
     "ds_to_universal.py writes, file for file)"},
    {"ds-retarget",
     "affine-run ds-retarget --input_folder CKPT/TAG --output_folder OUT/TAG "
     "[--dp M] [--tp N [--num-kv-heads K] | --target-map FILE] "
     "[--zero-stage S] [--autoep-size E] [--pp P [--pp-partition PARTS] "
     "[--pp-tied KEY=L1,L2]...] [--threads N] [--no-value-check] "
     "[--no-sync] [--quiet]"
     "\n  mpirun -np P affine-run ds-retarget --mpi ... "
     "[--mpi-timeout SECONDS] [--node-local]",
     "affine-run ds-retarget --input_folder ckpt/global_step3 --output_folder "
     "dp4/global_step3 --dp 4\n    (the checkpoint a run at DP 4 would have "
     "saved; TP, ZeRO stage and pipeline stay the source's)"},
    {"universal-to-ds",
     "affine-run universal-to-ds --input_folder UNIV --output_folder OUT/TAG "
     "[--dp M] [--tp N [--num-kv-heads K] | --target-map FILE] "
     "[--zero-stage S] [--autoep-size E] [--pp P [--pp-partition PARTS]] "
     "[--pp-tied KEY=L1,L2]... [--threads N] [--no-value-check] "
     "[--no-sync] [--quiet]"
     "\n  mpirun -np P affine-run universal-to-ds --mpi ... "
     "[--mpi-timeout SECONDS] [--node-local]",
     "affine-run universal-to-ds --input_folder ckpt/global_step3_universal "
     "--output_folder tp1/global_step3 --tp 1 --dp 2"},
    {"export",
     "affine-run export --input_folder CKPT/TAG|UNIV|SAFETENSORS --out DIR "
     "[--dtype f32|bf16|f16] [--max-shard-size 5GB] "
     "[--exclude_frozen_parameters] [--no-value-check] [--no-sync] "
     "[--quiet]"
     "\n  mpirun -np P affine-run export --mpi ... "
     "[--mpi-timeout SECONDS] [--node-local]",
     "affine-run export --input_folder ckpt/global_step3 --out model --dtype "
     "bf16\n    (the consolidated model as safetensors files, as "
     "zero_to_fp32.py gives it)"},
    {"convert",
     "affine-run convert --from PATH --to deepspeed --output_folder OUT/TAG "
     "[--dp M] [--tp N [--num-kv-heads K] [--universal-info FILE] | "
     "--target-map FILE] [--zero-stage S] [--param-groups FILE] "
     "[--ds-config FILE] [--dtype f32|bf16|f16] [--threads N] [--no-sync] "
     "[--quiet]\n  affine-run convert --from PATH --to safetensors "
     "--output_folder DIR [--dtype f32|bf16|f16] [--max-shard-size 5GB] "
     "[--no-sync] [--quiet]"
     "\n  mpirun -np P affine-run convert --mpi ... "
     "[--mpi-timeout SECONDS]",
     "affine-run convert --from model.safetensors --to deepspeed "
     "--output_folder ckpt/global_step0 --dp 2 --zero-stage 2\n    (the "
     "checkpoint a ZeRO-2 run at DP 2 saves before its first step)"},
};

static constexpr const char *kTail =
    "\nShards are DIR/rank_<r>.safetensors, keyed by parameter name; maps "
    "are .json map documents or .mlir files. Nothing is written unless the "
    "whole run succeeds, and no command returns before its outputs are on "
    "disk (unless --no-sync).\n";

std::string getCommandOverview(int argc, char **argv) {
  llvm::StringRef chosen = argc > 1 ? argv[1] : "";
  for (const CommandHelp &command : kCommands)
    if (chosen == command.name)
      return "affine-run " + std::string(command.name) + "\n\n  " +
             command.synopsis + "\n\nExample:\n  " + command.example + "\n" +
             kTail;
  std::string text = "affine-run: move tensors between sharded layouts "
                     "described by ucp maps, and convert, retarget and "
                     "export checkpoints\n\n";
  for (const CommandHelp &command : kCommands)
    text += "  " + std::string(command.synopsis) + "\n";
  return text +
         "\n`affine-run COMMAND --help` shows one command's options and an "
         "example.\n" + kTail;
}
