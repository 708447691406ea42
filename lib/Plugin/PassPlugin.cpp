//===- PassPlugin.cpp - The ucp passes as an mlir-opt plugin --------------===//
//
// `mlir-opt --load-pass-plugin=UCPPassPlugin.so` registers --ucp-verify,
// --ucp-canonicalize, --ucp-compose, --ucp-lower-copies and
// ucp-reshard-pipeline. Their ops come from the dialect plugin, which this
// library links (load both).
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Dialect/UCP/Transforms/ReshardPipeline.h"
#include "ucp/Dialect/UCP/Translate/MapTranslation.h"

#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "UCPPasses", LLVM_VERSION_STRING, [] {
            ucp::registerUCPPasses();
            ucp::registerUCPPipelines();
            ucp::registerMapFileReader();
          }};
}
