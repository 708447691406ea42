//===- DialectPlugin.cpp - The ucp dialect as an mlir-opt plugin ----------===//
//
// `mlir-opt --load-dialect-plugin=UCPDialectPlugin.so` registers the ucp
// dialect with the tool's registry. The library carries the dialect's code
// and none of MLIR's: it binds to the MLIR of the tool that loads it (stock
// mlir-opt exports its symbols for plugins).
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/IR/UCPDialect.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "UCP", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            registry->insert<ucp::UCPDialect>();
          }};
}
