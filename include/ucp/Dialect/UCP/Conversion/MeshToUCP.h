//===- MeshToUCP.h - ucp maps of MLIR mesh shardings -------------*- C++ -*-===//
//
// `mesh.shard` states how a tensor is spread over a mesh of devices; this
// conversion writes each such sharding as a `ucp.param` and annotates the
// shard op with a `ucp.layout` naming it. The pattern runs inside any
// dialect conversion, partial or full, beside a project's own patterns;
// `--ucp-import-mesh` is a thin driver over it.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_CONVERSION_MESHTOUCP_H
#define UCP_DIALECT_UCP_CONVERSION_MESHTOUCP_H

#include "ucp/Map/ParamMap.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

namespace ucp {

/// The canonical map, named `name`, of the sharding `shard` states over
/// `mesh`: one rank per device, numbered row-major over the mesh axes (the
/// last fastest); devices that differ only on axes no dimension is split
/// along hold the same block. An error says why a sharding has no map:
/// partial tensors, dynamic shapes, bad axes, uneven splits.
llvm::Expected<ParamMap> getMeshShardMap(mlir::mesh::ShardOp shard,
                                         mlir::mesh::MeshOp mesh,
                                         llvm::StringRef name);

/// Reports, at each op, every `mesh.shard` under `root` whose sharding has
/// no ucp map or names no mesh, and fails if there was any. The pattern
/// leaves such an op alone (a match failure, which dialect conversion does
/// not report), so a driver that wants the reason calls this first.
mlir::LogicalResult checkMeshShardsImportable(mlir::Operation *root,
                                              mlir::SymbolTableCollection &tables);

/// Adds the pattern that gives each `mesh.shard` without a `ucp.layout`
/// the `ucp.param` of its sharding, in the symbol table nearest it, before
/// the op of that table holding the shard, named after the enclosing
/// function (`@step_shard0`, the first index free). Meshes and free names
/// are looked up through `tables`, which the pattern keeps up to date and
/// which must outlive the conversion. A pass running it declares the ucp
/// dialect as dependent (`ucp::registerUCPDialects` registers it).
void populateMeshToUCPConversionPatterns(mlir::RewritePatternSet &patterns,
                                         mlir::SymbolTableCollection &tables);

/// Makes a `mesh.shard` legal once it has a `ucp.layout`, and the ucp
/// dialect legal.
void configureMeshToUCPConversionTarget(mlir::ConversionTarget &target);

} // namespace ucp

#endif // UCP_DIALECT_UCP_CONVERSION_MESHTOUCP_H
