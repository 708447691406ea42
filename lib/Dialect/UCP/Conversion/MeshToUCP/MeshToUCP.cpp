//===- MeshToUCP.cpp - ucp maps of MLIR mesh shardings --------------------===//
//
// Each device's shard is one block of F: along every tensor dimension split
// over mesh axes, the device's coordinates on those axes (row-major, the
// first axis outer) pick the block; devices that differ only on other axes
// hold the same block. The map is built piece by piece and then put in
// canonical form by the library.
//
//===----------------------------------------------------------------------===//

#include "ucp/Dialect/UCP/Conversion/MeshToUCP.h"
#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/IR/UCPAttrs.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

using namespace mlir;
using namespace ucp;

namespace {

/// A sharding checked and resolved: per tensor dimension, its mesh axes and
/// the extent of one block.
struct MeshSplit {
  llvm::SmallVector<int64_t> meshShape;
  std::vector<llvm::SmallVector<int64_t>> axes;
  Extents blockShape;
};

} // namespace

/// An error whose message `write` prints (MLIR's types and attributes print
/// to a stream, not to a string).
static llvm::Error makeMeshError(
    llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::string message;
  llvm::raw_string_ostream os(message);
  write(os);
  return makeError(message);
}

/// Checks `shard`'s sharding of its tensor over `meshOp`, or says why it is
/// not a map.
static llvm::Expected<MeshSplit> resolveSplit(mesh::ShardOp shard,
                                              mesh::MeshOp meshOp) {
  mesh::MeshShardingAttr sharding = shard.getShard();
  if (!sharding.getPartialAxes().empty())
    return makeMeshError([&](llvm::raw_ostream &os) {
      os << "a partial tensor (partial axes [";
      llvm::interleaveComma(sharding.getPartialAxes(), os);
      os << "]): each device holds a summand of F, not a view of it, which "
            "no ucp map describes";
    });
  Type resultType = shard.getResult().getType();
  auto type = dyn_cast<RankedTensorType>(resultType);
  if (!type || !type.hasStaticShape())
    return makeMeshError([&](llvm::raw_ostream &os) {
      os << "a tensor of dynamic shape '" << resultType
         << "': a ucp map needs the shape of F";
    });
  MeshSplit split;
  split.meshShape.assign(meshOp.getShape().begin(), meshOp.getShape().end());
  if (llvm::any_of(split.meshShape, ShapedType::isDynamic))
    return makeError("mesh @" + meshOp.getSymName().str() +
                     " has a dynamic shape: its devices are not known");
  llvm::ArrayRef<mesh::MeshAxesAttr> axes = sharding.getSplitAxes();
  if (axes.size() > static_cast<size_t>(type.getRank()))
    return makeError("split axes for " + std::to_string(axes.size()) +
                     " dimensions of a tensor of rank " +
                     std::to_string(type.getRank()));
  std::vector<bool> used(split.meshShape.size(), false);
  for (int64_t d = 0; d < type.getRank(); ++d) {
    auto &mine = split.axes.emplace_back();
    int64_t blocks = 1;
    if (static_cast<size_t>(d) < axes.size())
      for (mesh::MeshAxis axis : axes[d].asArrayRef()) {
        if (axis < 0 || static_cast<size_t>(axis) >= used.size() || used[axis])
          return makeError("mesh axis " + std::to_string(axis) +
                           " of dimension " + std::to_string(d) +
                           " is out of range or used twice on a mesh of rank " +
                           std::to_string(used.size()));
        used[axis] = true;
        mine.push_back(axis);
        blocks *= split.meshShape[axis];
      }
    if (type.getDimSize(d) % blocks != 0)
      return makeError("dimension " + std::to_string(d) + " of " +
                       std::to_string(type.getDimSize(d)) +
                       " does not split evenly into " + std::to_string(blocks) +
                       " blocks over mesh axes " + formatList(mine));
    split.blockShape.push_back(type.getDimSize(d) / blocks);
  }
  return split;
}

/// The map of `split` over the devices of its mesh, canonical.
static llvm::Expected<ParamMap> buildMap(llvm::ArrayRef<int64_t> tensorShape,
                                         llvm::StringRef name,
                                         const MeshSplit &split) {
  Extents shape(tensorShape.begin(), tensorShape.end());
  int64_t world = 1;
  for (int64_t extent : split.meshShape)
    world *= extent;
  // Each device's block index per dimension; devices of one block share it.
  std::vector<Extents> blocks;
  std::map<Extents, llvm::SmallVector<int64_t, 4>> holders;
  for (int64_t device = 0; device < world; ++device) {
    Extents coords = unravelIndex(device, split.meshShape);
    Extents block;
    for (const auto &axes : split.axes) {
      int64_t index = 0;
      for (int64_t axis : axes)
        index = index * split.meshShape[axis] + coords[axis];
      block.push_back(index);
    }
    holders[block].push_back(device);
    blocks.push_back(std::move(block));
  }
  ParamMap map{name.str(), shape, world, {}, std::nullopt};
  Extents strides = getRowMajorStrides(shape);
  for (int64_t device = 0; device < world; ++device) {
    Piece piece;
    piece.shape = split.blockShape;
    piece.source.strides = strides;
    for (size_t d = 0; d < shape.size(); ++d)
      piece.source.offset +=
          blocks[device][d] * split.blockShape[d] * strides[d];
    piece.dest.strides = getRowMajorStrides(split.blockShape);
    piece.locations = holders[blocks[device]];
    map.shards.push_back({device, split.blockShape, {std::move(piece)}});
  }
  return canonicalizeParamMap(map);
}

llvm::Expected<ParamMap> ucp::getMeshShardMap(mesh::ShardOp shard,
                                              mesh::MeshOp mesh,
                                              llvm::StringRef name) {
  llvm::Expected<MeshSplit> split = resolveSplit(shard, mesh);
  if (!split)
    return split.takeError();
  auto type = cast<RankedTensorType>(shard.getResult().getType());
  return buildMap(type.getShape(), name, *split);
}

/// The mesh `shard` names, or an error saying it names none.
static llvm::Expected<mesh::MeshOp> getShardMesh(mesh::ShardOp shard,
                                                 SymbolTableCollection &tables) {
  FlatSymbolRefAttr name = shard.getShard().getMesh();
  if (mesh::MeshOp meshOp = mesh::getMesh(shard, name, tables))
    return meshOp;
  return makeError("names no mesh.mesh @" + name.getValue().str());
}

LogicalResult ucp::checkMeshShardsImportable(Operation *root,
                                             SymbolTableCollection &tables) {
  bool importable = true;
  root->walk([&](mesh::ShardOp shard) {
    if (shard->hasAttr(kLayoutAttrName))
      return;
    llvm::Expected<mesh::MeshOp> meshOp = getShardMesh(shard, tables);
    llvm::Expected<ParamMap> map =
        meshOp ? getMeshShardMap(shard, *meshOp, "check")
               : llvm::Expected<ParamMap>(meshOp.takeError());
    if (map)
      return;
    shard.emitError(llvm::toString(map.takeError()));
    importable = false;
  });
  return success(importable);
}

namespace {

/// Gives one `mesh.shard` the ucp.param of its sharding and a layout.
struct ImportMeshShard : public OpConversionPattern<mesh::ShardOp> {
  ImportMeshShard(MLIRContext *context, SymbolTableCollection &tables)
      : OpConversionPattern(context), tables(tables) {}

  LogicalResult
  matchAndRewrite(mesh::ShardOp shard, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (shard->hasAttr(kLayoutAttrName))
      return rewriter.notifyMatchFailure(shard, "already has a layout");
    llvm::Expected<mesh::MeshOp> meshOp = getShardMesh(shard, tables);
    if (!meshOp)
      return rewriter.notifyMatchFailure(shard,
                                         llvm::toString(meshOp.takeError()));
    Operation *tableOp = SymbolTable::getNearestSymbolTable(shard);
    SymbolTable &table = tables.getSymbolTable(tableOp);
    llvm::Expected<ParamMap> map =
        getMeshShardMap(shard, *meshOp, getFreeName(shard, table));
    if (!map)
      return rewriter.notifyMatchFailure(shard,
                                         llvm::toString(map.takeError()));
    // The param goes before the op of its table that holds the shard (the
    // function), where a reader looks for what the function uses.
    rewriter.setInsertionPoint(
        tableOp->getRegion(0).front().findAncestorOpInBlock(*shard));
    ParamOp param = buildParamOp(rewriter, shard.getLoc(), *map);
    table.insert(param);
    rewriter.modifyOpInPlace(shard, [&] {
      shard->setAttr(kLayoutAttrName,
                     LayoutAttr::get(getContext(),
                                     FlatSymbolRefAttr::get(param)));
    });
    return success();
  }

private:
  /// The first `<function>_shard<N>` no symbol of `table` has.
  static std::string getFreeName(mesh::ShardOp shard, SymbolTable &table) {
    auto function = shard->getParentOfType<func::FuncOp>();
    std::string prefix =
        (function ? function.getSymName().str() : std::string("module")) +
        "_shard";
    for (int index = 0;; ++index) {
      std::string name = prefix + std::to_string(index);
      if (!table.lookup(name))
        return name;
    }
  }

  SymbolTableCollection &tables;
};

} // namespace

void ucp::populateMeshToUCPConversionPatterns(RewritePatternSet &patterns,
                                              SymbolTableCollection &tables) {
  patterns.add<ImportMeshShard>(patterns.getContext(), tables);
}

void ucp::configureMeshToUCPConversionTarget(ConversionTarget &target) {
  target.addLegalDialect<UCPDialect>();
  target.addDynamicallyLegalOp<mesh::ShardOp>(
      [](mesh::ShardOp shard) { return shard->hasAttr(kLayoutAttrName); });
}
