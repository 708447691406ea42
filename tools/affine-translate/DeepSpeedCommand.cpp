//===- DeepSpeedCommand.cpp - affine-translate --import-deepspeed ---------===//
//
// The maps of a DeepSpeed checkpoint, one per trainable parameter over the
// (DP x TP) grid of the run that saved it:
//
//   affine-translate --import-deepspeed ckpt/step3 | affine-opt --ucp-verify
//
// The input is a folder, not a file, so the command parses its own options
// (as --layout does) instead of going through the translation registry.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedCommand.h"
#include "MapOutput.h"

#include "ucp/Analysis/MapVerifier.h"
#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"
#include "ucp/Support/CommandLine.h"

#include "llvm/Support/CommandLine.h"

using namespace ucp;
namespace cl = llvm::cl;

bool isDeepSpeedCommand(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--import-deepspeed" || arg == "-import-deepspeed")
      return true;
  }
  return false;
}

int runDeepSpeedCommand(int argc, char **argv) {
  static cl::OptionCategory category("DeepSpeed import options");
  static cl::opt<bool> importFlag(
      "import-deepspeed", cl::Required, cl::cat(category),
      cl::desc("print the maps of the DeepSpeed checkpoint in the folder"));
  static cl::opt<std::string> folder(cl::Positional, cl::Required,
                                     cl::cat(category),
                                     cl::desc("<CKPT/TAG folder>"));
  static cl::opt<std::string> emit(
      "emit", cl::init("mlir"), cl::cat(category),
      cl::desc("output: mlir (ucp IR), json (a map document), svg or png (a "
               "picture; png where the build found librsvg)"));
  static cl::opt<std::string> output("o", cl::init("-"), cl::cat(category),
                                     cl::desc("output file"),
                                     cl::value_desc("filename"));
  cl::HideUnrelatedOptions(category);
  ucp::setVersionPrinter("affine-translate");
  cl::ParseCommandLineOptions(
      argc, argv,
      "affine-translate --import-deepspeed: the maps of a DeepSpeed ZeRO "
      "checkpoint\n\n"
      "Reads CKPT/TAG (the folder save_checkpoint writes: model-state and\n"
      "optimizer-state .pt files, ZeRO stage 1, 2 or 3, with or without\n"
      "tensor parallelism) without running any of it, and prints, for every\n"
      "trainable parameter, its map over the run's DP x TP grid (rank\n"
      "dp * tp_degree + tp): each rank's shard is its fragment of the\n"
      "parameter's fp32 weights and Adam moments. Every map is verified.\n");
  auto fail = [](const llvm::Twine &message) {
    llvm::errs() << "affine-translate: " << message << "\n";
    return 1;
  };
  if (llvm::Error error = ucp::checkOptionsGivenOnce(argc, argv))
    return fail(llvm::toString(std::move(error)));
  llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>> checkpoint =
      DeepSpeedCheckpoint::open(folder);
  if (!checkpoint)
    return fail(llvm::toString(checkpoint.takeError()));
  std::vector<ParamMap> maps;
  for (const DeepSpeedParam &param : (*checkpoint)->getParams()) {
    if (llvm::Error error = checkParamMap(param.map))
      return fail(folder + ": " + llvm::toString(std::move(error)));
    maps.push_back(param.map);
  }
  if (llvm::Error error = writeMaps(maps, emit, output))
    return fail(llvm::toString(std::move(error)));
  return 0;
}
