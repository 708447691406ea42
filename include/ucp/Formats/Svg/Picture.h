//===- Picture.h - Maps and plans drawn as SVG or PNG -------------*- C++ -*-===//
//
// Maps and transfer plans as pictures, one panel each, stacked down one
// document.
//
// A map's panel: F as a grid coloured by the rank holding each block, with
// each rank's shard beside it in the same colours, so that a column split,
// a fused QKV or a partly replicated tensor shows at a glance. Every piece
// is drawn as the boxes of its view, outlined, and labelled `rank.piece`
// (its place in its shard, as the IR numbers them) where it is large enough
// to hold the label. A block several ranks hold is hatched and its tooltip
// names them; a scaled piece is outlined dashed and its tooltip gives the
// scale. The legend gives every rank's colour and its exact element count.
//
// A plan's panel: the source shards on the left, the target shards on the
// right; each copy is drawn where it reads and where it writes, in the
// colour of the source rank it reads and numbered as the plan lists it,
// with a band joining the two; a scaled copy is dashed, a fill hatched
// grey. The legend gives each source rank's colour and the elements copied
// from it.
//
// Buffers are drawn as matrices: the last dimension across, every other
// dimension flattened down (row-major, so a [2, 3, 4] tensor is 6 rows of
// 4, with a thin line between its two [3, 4] blocks). A 1-D buffer (a ZeRO
// partition, a bias) is drawn in rows as wide as F's (for a plan, as its
// widest shard's), or square where nothing else is wider than one row.
//
// Every rectangle carries its place in elements (data-row, data-col,
// data-rows, data-cols, and data-width, the columns of the matrix drawn)
// and what it draws: on a map data-side "F" or "shard", data-rank and
// data-piece; on a plan data-side "source" or "target", data-rank and
// data-segment (a copy, class "copy") or data-fill (class "fill"). A reader
// (or a test) can check the picture against the map or plan without
// measuring pixels.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_SVG_PICTURE_H
#define UCP_FORMATS_SVG_PICTURE_H

#include "ucp/Map/ParamMap.h"
#include "ucp/Plan/TransferPlan.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace ucp {

/// The most rectangles one picture draws: a view that splits into more
/// boxes (a tensor strided every other element, say) is refused rather
/// than written as a file no viewer opens.
constexpr int64_t kMaxPictureRectangles = 200000;

/// What a picture is written as.
enum class PictureFormat { Svg, Png };

/// The format a picture file's name asks for: `.svg` or `.png` (any case).
std::optional<PictureFormat> getPictureFormat(llvm::StringRef path);

/// Writes a picture of `maps` and then `plans`, one panel each, to `os` in
/// `format`. The maps must be valid (checkParamMap) and the plans checked
/// (checkPlanTiling and the views' bounds). Fails, writing nothing, past
/// kMaxPictureRectangles, or for PNG in a build without librsvg.
llvm::Error writePicture(llvm::ArrayRef<ParamMap> maps,
                         llvm::ArrayRef<TransferPlan> plans,
                         PictureFormat format, llvm::raw_ostream &os);

} // namespace ucp

#endif // UCP_FORMATS_SVG_PICTURE_H
