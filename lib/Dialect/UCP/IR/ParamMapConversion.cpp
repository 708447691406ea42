//===- ParamMapConversion.cpp - ucp ops <-> plain parameter maps ----------===//

#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"

using namespace mlir;
using namespace ucp;

Piece ucp::toPiece(PieceOp piece) {
  Piece result;
  result.shape.assign(piece.getShape().begin(), piece.getShape().end());
  result.source.offset = piece.getSrcOffset();
  result.source.strides.assign(piece.getSrcStrides().begin(),
                               piece.getSrcStrides().end());
  result.dest.offset = piece.getDstOffset();
  result.dest.strides.assign(piece.getDstStrides().begin(),
                             piece.getDstStrides().end());
  result.locations.assign(piece.getLocations().begin(),
                          piece.getLocations().end());
  result.scale = piece.getScale().convertToDouble();
  return result;
}

ParamMap ucp::toParamMap(ParamOp param) {
  ParamMap map;
  map.name = param.getSymName().str();
  map.logicalShape.assign(param.getLogicalShape().begin(),
                          param.getLogicalShape().end());
  map.worldSize = param.getWorldSize();
  map.originalVocabSize = param.getOriginalVocabSize();
  for (ShardOp shardOp : param.getShards()) {
    Shard &shard = map.shards.emplace_back();
    shard.rank = shardOp.getRank();
    shard.shape.assign(shardOp.getShardShape().begin(),
                       shardOp.getShardShape().end());
    for (PieceOp piece : shardOp.getPieces())
      shard.pieces.push_back(toPiece(piece));
  }
  return map;
}

PieceOp ucp::buildPieceOp(OpBuilder &builder, Location loc,
                          const Piece &piece) {
  return builder.create<PieceOp>(loc, piece.shape, piece.source.offset,
                                 piece.source.strides, piece.dest.offset,
                                 piece.dest.strides, piece.locations,
                                 llvm::APFloat(piece.scale));
}

ParamOp ucp::buildParamOp(OpBuilder &builder, Location loc, const ParamMap &map,
                          MapLocationFn locate) {
  auto at = [&](int shard, int piece) {
    return locate ? locate(shard, piece) : loc;
  };
  auto param = builder.create<ParamOp>(
      at(-1, -1), map.name, map.logicalShape, map.worldSize,
      map.originalVocabSize ? builder.getI64IntegerAttr(*map.originalVocabSize)
                            : IntegerAttr());
  OpBuilder::InsertionGuard guard(builder);
  builder.createBlock(&param.getBody());
  for (auto [shardIndex, shard] : llvm::enumerate(map.shards)) {
    builder.setInsertionPointToEnd(&param.getBody().front());
    auto shardOp =
        builder.create<ShardOp>(at(shardIndex, -1), shard.rank, shard.shape);
    builder.createBlock(&shardOp.getBody());
    for (auto [pieceIndex, piece] : llvm::enumerate(shard.pieces))
      buildPieceOp(builder, at(shardIndex, pieceIndex), piece);
  }
  return param;
}
