//===- ImportMesh.cpp - The --ucp-import-mesh pass ------------------------===//
//
// A driver over the mesh-to-ucp conversion pattern: report every sharding
// that has no map, then convert every mesh.shard in one partial conversion.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Conversion/MeshToUCP.h"
#include "ucp/Dialect/UCP/IR/UCPDialect.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"

namespace ucp {
#define GEN_PASS_DEF_UCPIMPORTMESHPASS
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"
} // namespace ucp

using namespace mlir;
using namespace ucp;

namespace {
struct UCPImportMeshPass
    : public ucp::impl::UCPImportMeshPassBase<UCPImportMeshPass> {
  void runOnOperation() override {
    SymbolTableCollection tables;
    if (failed(checkMeshShardsImportable(getOperation(), tables)))
      return signalPassFailure();
    ConversionTarget target(getContext());
    configureMeshToUCPConversionTarget(target);
    RewritePatternSet patterns(&getContext());
    populateMeshToUCPConversionPatterns(patterns, tables);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
