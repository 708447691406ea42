//===- ImportMesh.cpp - The --ucp-import-mesh pass ------------------------===//
//
// mesh.shard states a sharding of a tensor over a mesh of devices; the
// pass writes it as a ucp map. Each device's shard is one block of F: along
// every tensor dimension split over mesh axes, the device's coordinates on
// those axes (row-major, the first axis outer) pick the block; devices
// that differ only on other axes hold the same block. The map is built
// piece by piece and then put in canonical form by the library.
//
//===----------------------------------------------------------------------===//

#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/IR/UCPAttrs.h"
#include "ucp/Dialect/UCP/IR/UCPOps.h"
#include "ucp/Dialect/UCP/Transforms/Passes.h"
#include "ucp/Map/Indexing.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/SymbolTable.h"

#include <map>

namespace ucp {
#define GEN_PASS_DEF_UCPIMPORTMESHPASS
#include "ucp/Dialect/UCP/Transforms/Passes.h.inc"
} // namespace ucp

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

struct UCPImportMeshPass
    : public ucp::impl::UCPImportMeshPassBase<UCPImportMeshPass> {
  void runOnOperation() override;
};

} // namespace

/// Checks `shard`'s sharding of its tensor over `mesh`, or reports why it
/// is not a map.
static FailureOr<MeshSplit> resolveSplit(mesh::ShardOp shard,
                                         mesh::MeshOp meshOp) {
  mesh::MeshShardingAttr sharding = shard.getShard();
  if (!sharding.getPartialAxes().empty())
    return shard.emitError()
           << "a partial tensor (partial axes [" << sharding.getPartialAxes()
           << "]): each device holds a summand of F, not a view of it, which "
              "no ucp map describes";
  auto type = dyn_cast<RankedTensorType>(shard.getResult().getType());
  if (!type || !type.hasStaticShape())
    return shard.emitError() << "a tensor of dynamic shape " << type
                             << ": a ucp map needs the shape of F";
  MeshSplit split;
  split.meshShape.assign(meshOp.getShape().begin(), meshOp.getShape().end());
  if (llvm::any_of(split.meshShape, ShapedType::isDynamic))
    return shard.emitError() << "mesh @" << meshOp.getSymName()
                             << " has a dynamic shape: its devices are "
                                "not known";
  llvm::ArrayRef<mesh::MeshAxesAttr> axes = sharding.getSplitAxes();
  if (axes.size() > static_cast<size_t>(type.getRank()))
    return shard.emitError()
           << "split axes for " << axes.size()
           << " dimensions of a tensor of rank " << type.getRank();
  std::vector<bool> used(split.meshShape.size(), false);
  for (int64_t d = 0; d < type.getRank(); ++d) {
    auto &mine = split.axes.emplace_back();
    int64_t blocks = 1;
    if (static_cast<size_t>(d) < axes.size())
      for (mesh::MeshAxis axis : axes[d].asArrayRef()) {
        if (axis < 0 || static_cast<size_t>(axis) >= used.size() || used[axis])
          return shard.emitError()
                 << "mesh axis " << axis << " of dimension " << d
                 << " is out of range or used twice on a mesh of rank "
                 << used.size();
        used[axis] = true;
        mine.push_back(axis);
        blocks *= split.meshShape[axis];
      }
    if (type.getDimSize(d) % blocks != 0)
      return shard.emitError()
             << "dimension " << d << " of " << type.getDimSize(d)
             << " does not split evenly into " << blocks
             << " blocks over mesh axes [" << llvm::ArrayRef(mine) << "]";
    split.blockShape.push_back(type.getDimSize(d) / blocks);
  }
  return split;
}

/// The map of `split` over the devices of its mesh, canonical.
static FailureOr<ParamMap> buildMap(mesh::ShardOp shard, StringRef name,
                                    const MeshSplit &split) {
  auto type = cast<RankedTensorType>(shard.getResult().getType());
  Extents shape(type.getShape().begin(), type.getShape().end());
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
  llvm::Expected<ParamMap> canonical = canonicalizeParamMap(map);
  if (!canonical)
    return shard.emitError(llvm::toString(canonical.takeError()));
  return std::move(*canonical);
}

void UCPImportMeshPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTableCollection tables;
  std::map<std::string, int> counts;
  // Each param goes into the symbol table nearest its shard (where its
  // layout is looked up), at the top, in the order of the shards.
  llvm::DenseMap<Operation *, Operation *> lastParamOfTable;
  WalkResult walked = module.walk([&](mesh::ShardOp shard) {
    mesh::MeshOp meshOp =
        mesh::getMesh(shard, shard.getShard().getMesh(), tables);
    if (!meshOp) {
      shard.emitError() << "names no mesh.mesh " << shard.getShard().getMesh();
      return WalkResult::interrupt();
    }
    FailureOr<MeshSplit> split = resolveSplit(shard, meshOp);
    if (failed(split))
      return WalkResult::interrupt();
    auto function = shard->getParentOfType<func::FuncOp>();
    std::string prefix = function ? function.getSymName().str() : "module";
    std::string name = prefix + "_shard" + std::to_string(counts[prefix]++);
    FailureOr<ParamMap> map = buildMap(shard, name, *split);
    if (failed(map))
      return WalkResult::interrupt();
    Operation *tableOp = SymbolTable::getNearestSymbolTable(shard);
    Operation *&last = lastParamOfTable[tableOp];
    OpBuilder builder(&getContext());
    if (last)
      builder.setInsertionPointAfter(last);
    else
      builder.setInsertionPointToStart(&tableOp->getRegion(0).front());
    ParamOp param = buildParamOp(builder, shard.getLoc(), *map);
    tables.getSymbolTable(tableOp).insert(param); // Renamed if taken.
    last = param;
    shard->setAttr(
        kLayoutAttrName,
        LayoutAttr::get(&getContext(), FlatSymbolRefAttr::get(param)));
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    signalPassFailure();
}
