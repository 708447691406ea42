//===- DeepSpeedOptions.h - The options of the DeepSpeed commands -*- C++ -*-===//

#ifndef UCP_TOOLS_AFFINE_RUN_DEEPSPEEDOPTIONS_H
#define UCP_TOOLS_AFFINE_RUN_DEEPSPEEDOPTIONS_H

#include "ucp/Element/DType.h"

#include "llvm/Support/CommandLine.h"

#include <string>

/// The options of the DeepSpeed commands.
llvm::cl::OptionCategory &getDeepSpeedCategory();

/// The DeepSpeed commands and their options, apart from affine-run's
/// other options of the same names.
namespace ds {

/// What `convert --to` writes.
enum class ConvertTarget { DeepSpeed, Safetensors };

extern llvm::cl::SubCommand universalCommand;
extern llvm::cl::SubCommand retargetCommand;
extern llvm::cl::SubCommand fromUniversalCommand;
extern llvm::cl::SubCommand exportCommand;
extern llvm::cl::SubCommand convertCommand;
extern llvm::cl::opt<std::string> deepSpeedInputFolder;
extern llvm::cl::opt<std::string> universalInputFolder;
extern llvm::cl::opt<std::string> exportInputFolder;
extern llvm::cl::opt<std::string> convertSource;
extern llvm::cl::opt<ConvertTarget> convertTarget;
extern llvm::cl::opt<std::string> paramGroupsFile;
extern llvm::cl::opt<std::string> dsConfigFile;
extern llvm::cl::opt<std::string> universalInfoFile;
extern llvm::cl::opt<std::string> exportFolder;
extern llvm::cl::opt<ucp::DType> exportType;
extern llvm::cl::opt<std::string> maxShardSize;
extern llvm::cl::opt<std::string> universalOutputFolder;
extern llvm::cl::opt<std::string> deepSpeedOutputFolder;
extern llvm::cl::opt<std::string> convertOutputFolder;
extern llvm::cl::opt<bool> injectMissingState;
extern llvm::cl::opt<bool> noStrict;
extern llvm::cl::opt<bool> excludeFrozenParameters;
extern llvm::cl::opt<unsigned> universalThreads;
extern llvm::cl::opt<bool> universalNoSync;
extern llvm::cl::opt<bool> noValueCheck;
extern llvm::cl::opt<bool> universalQuiet;
extern llvm::cl::opt<int64_t> targetDp;
extern llvm::cl::opt<int64_t> targetTp;
extern llvm::cl::opt<int64_t> targetPp;
extern llvm::cl::opt<std::string> ppPartition;
extern llvm::cl::list<std::string> ppTied;
extern llvm::cl::opt<int64_t> numKvHeads;
extern llvm::cl::opt<std::string> targetMapFile;
extern llvm::cl::opt<int> targetStage;
extern llvm::cl::opt<int64_t> targetAutoEpSize;

/// The --input_folder the command line gave, whichever command's it is.
const std::string &getInputFolder();
/// The --output_folder the command line gave, whichever command's it is.
const std::string &getOutputFolder();

} // namespace ds

#endif // UCP_TOOLS_AFFINE_RUN_DEEPSPEEDOPTIONS_H
