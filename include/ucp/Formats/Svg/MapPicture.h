//===- MapPicture.h - Maps drawn as SVG ---------------------------*- C++ -*-===//
//
// A map as a picture: F as a grid coloured by the rank holding each block,
// with each rank's shard beside it in the same colours, so that a column
// split, a fused QKV or a partly replicated tensor shows at a glance.
//
// Each map is one panel. F and every shard are drawn as matrices: the last
// dimension across, every other dimension flattened down (row-major, so a
// [2, 3, 4] tensor is 6 rows of 4, with a thin line between its two
// [3, 4] blocks). A 1-D buffer (a ZeRO partition, a bias) is drawn in rows
// as wide as F's, or square where F is 1-D too. Every piece is drawn as the boxes of its view, one
// rectangle per box row range, outlined, and labelled `rank.piece` (the
// piece's place in its shard, as the IR numbers them) where it is large
// enough to hold the label. A block several ranks hold is hatched and its
// tooltip names them; a scaled piece is outlined dashed and its tooltip
// gives the scale. The legend gives every rank's colour and its exact
// element count.
//
// Every rectangle of a piece carries its place in elements (data-rank,
// data-piece, data-side = "F" or "shard", data-row, data-col, data-rows,
// data-cols, and data-width, the columns of the matrix drawn), so that a reader (or a test) can check the picture against
// the map without measuring pixels.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_SVG_MAPPICTURE_H
#define UCP_FORMATS_SVG_MAPPICTURE_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace ucp {

/// The most rectangles one picture draws: a view that splits into more
/// boxes (a tensor strided every other element, say) is refused rather
/// than written as a file no viewer opens.
constexpr int64_t kMaxPictureRectangles = 200000;

/// Writes an SVG document drawing `maps`, one panel each, to `os`. The maps
/// must be valid (checkParamMap).
llvm::Error writeMapPicture(llvm::ArrayRef<ParamMap> maps,
                            llvm::raw_ostream &os);

} // namespace ucp

#endif // UCP_FORMATS_SVG_MAPPICTURE_H
