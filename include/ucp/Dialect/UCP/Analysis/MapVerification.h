//===- MapVerification.h - Whole-map verification, an analysis -*- C++ -*-===//
//
// The properties no single op can check (P1 coverage, P5 homogeneity, shard
// tiling; ucp/Analysis/MapVerifier.h) as an MLIR analysis of one ucp.param.
// --ucp-verify computes it and preserves it; --ucp-compose and
// --ucp-lower-copies require it, so that no plan is ever built from a map
// with a hole (which would become a fill of zeros) or with pieces that
// disagree, and they reuse what --ucp-verify computed.
//
// The ucp passes reach every ucp.param nested anywhere below the op they run
// on (a module, a nested module; --ucp-verify also a param itself);
// forEachParam is how, and getMapVerifications verifies them in parallel.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_ANALYSIS_MAPVERIFICATION_H
#define UCP_DIALECT_UCP_ANALYSIS_MAPVERIFICATION_H

#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"

#include "mlir/Pass/AnalysisManager.h"

namespace ucp {

/// The verification of one ucp.param: its plain map and the report.
class MapVerification {
public:
  /// Verifies `op`, a ucp.param.
  explicit MapVerification(mlir::Operation *op);

  bool isValid() const { return report.ok(); }
  /// The map as verified (ucp/Map form of the param).
  const ParamMap &getMap() const { return map; }
  const VerifyReport &getReport() const { return report; }

  /// Emits an error per violation, located at the offending piece, shard or
  /// param of `param` (the op this analysis was computed on), with a note
  /// giving the JSON path of ops imported from a map document. `role`
  /// ("target map") prefixes each message whose op has no location (maps
  /// built in memory): a located one names its file. Returns failure when
  /// there was anything to emit.
  mlir::LogicalResult emitViolations(ParamOp param,
                                     llvm::StringRef role = "") const;

private:
  ParamMap map;
  VerifyReport report;
};

/// Calls `fn` on every ucp.param nested anywhere in `root`, `root` included,
/// in order; the bodies of params are not entered.
void forEachParam(mlir::Operation *root, llvm::function_ref<void(ParamOp)> fn);

/// Returns the verification of every ucp.param nested in or equal to
/// `root` (the op whose analyses `analyses` manage), in forEachParam's
/// order. Each is computed unless a preserved one is cached; those
/// computed are computed in parallel (each param in its own nested
/// analysis manager, as MLIR's pass manager runs nested pipelines), so a
/// pass on a module verifies at the speed of a pipeline nested on params
/// and keeps the analyses for the passes after it.
std::vector<std::pair<ParamOp, const MapVerification *>>
getMapVerifications(mlir::AnalysisManager analyses, mlir::Operation *root);

} // namespace ucp

#endif // UCP_DIALECT_UCP_ANALYSIS_MAPVERIFICATION_H
