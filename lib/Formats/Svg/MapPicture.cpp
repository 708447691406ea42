//===- MapPicture.cpp - A map's panel -------------------------------------===//
//
// F as a grid coloured by the rank holding each block, each rank's shard
// beside it in the same colours (ucp/Formats/Svg/Picture.h says what is
// drawn).
//
//===----------------------------------------------------------------------===//

#include "SvgDrawing.h"
#include "ucp/Map/Indexing.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace ucp;
using namespace ucp::svg;

namespace {

/// How a map's 1-D buffers are drawn (a ZeRO partition, a bias): as wide as
/// F's rows, or a square for a 1-D F.
int64_t getWrap(const ParamMap &map) {
  if (map.logicalShape.size() >= 2)
    return std::max<int64_t>(1, map.logicalShape.back());
  return getSquareSide(getNumElements(map.logicalShape).value_or(1));
}

/// One map's panel: where it is drawn and at what scale.
class Panel final : public PicturePanel {
public:
  explicit Panel(const ParamMap &map) : map(map), wrap(getWrap(map)) {
    Matrix f = getMatrix(map.logicalShape, wrap);
    scale = kFramePixels / std::max(f.rows, f.cols);
  }

  llvm::Error collect(int64_t &rectangles) override;
  double getHeight() const override;
  double getWidth() const override;
  void write(llvm::raw_ostream &os, double top) const override;

private:
  struct Drawn {
    int64_t rank, piece, owner;
    const Piece *source;
    bool onF;
    double left, top;
    /// The columns of the matrix the cells are of.
    int64_t width = 1;
    std::vector<Cell> cells;
  };
  void writeDrawn(llvm::raw_ostream &os, const Drawn &drawn) const;
  double getShardTop(size_t index) const;

  const ParamMap &map;
  int64_t wrap;
  double scale;
  std::vector<Drawn> drawn;
};

double Panel::getShardTop(size_t index) const {
  double y = kTitle;
  for (size_t s = 0; s < index; ++s)
    y += getMatrix(map.shards[s].shape, wrap).rows * scale + kGap;
  return y + kTitle;
}

llvm::Error Panel::collect(int64_t &rectangles) {
  double shardLeft = kMargin + getMatrix(map.logicalShape, wrap).cols * scale + kGap;
  for (size_t s = 0; s < map.shards.size(); ++s) {
    const Shard &shard = map.shards[s];
    for (size_t k = 0; k < shard.pieces.size(); ++k) {
      const Piece &piece = shard.pieces[k];
      // A replicated block is drawn on F once, in its lowest holder's
      // colour; every holder's shard shows it in that colour too.
      int64_t owner = piece.locations.empty() ? shard.rank
                                              : piece.locations.front();
      for (bool onF : {true, false}) {
        if (onF && owner != shard.rank)
          continue;
        llvm::ArrayRef<int64_t> buffer = onF ? map.logicalShape : shard.shape;
        Drawn entry{shard.rank, static_cast<int64_t>(k), owner, &piece, onF,
                    onF ? kMargin : shardLeft,
                    onF ? kTitle * 2 : getShardTop(s), 1, {}};
        Matrix matrix = getMatrix(buffer, wrap);
        entry.width = matrix.cols;
        if (llvm::Error error = appendViewCells(
                piece.shape, onF ? piece.source : piece.dest, buffer, matrix,
                "parameter '" + map.name + "': piece " + std::to_string(k) +
                    " of rank " + std::to_string(shard.rank),
                rectangles, entry.cells))
          return error;
        drawn.push_back(std::move(entry));
      }
    }
  }
  return llvm::Error::success();
}

double Panel::getHeight() const {
  double f = kTitle * 2 + getMatrix(map.logicalShape, wrap).rows * scale;
  double shards = getShardTop(map.shards.size()) - kTitle;
  double legend = kLegendRow * (map.worldSize + 2);
  return std::max(f, shards) + legend + kGap;
}

double Panel::getWidth() const {
  int64_t widest = 0;
  for (const Shard &shard : map.shards)
    widest = std::max(widest, getMatrix(shard.shape, wrap).cols);
  // At least the legend's width.
  return std::max(440.0, kMargin * 2 +
                             (getMatrix(map.logicalShape, wrap).cols + widest) *
                                 scale +
                             kGap + 120);
}

void Panel::writeDrawn(llvm::raw_ostream &os, const Drawn &d) const {
  const Piece &piece = *d.source;
  CellStyle style;
  style.cssClass = "piece";
  style.fill = getRankColour(d.owner);
  style.dashed = piece.scale != 1.0;
  style.hatched = piece.locations.size() > 1;
  llvm::raw_string_ostream attributes(style.attributes);
  attributes << " data-side=\"" << (d.onF ? "F" : "shard") << "\" data-rank=\""
             << d.rank << "\" data-piece=\"" << d.piece
             << "\" data-locations=\"" << joinCommas(piece.locations)
             << "\" data-scale=\"" << llvm::format("%g", piece.scale) << "\"";
  style.tooltip = "rank " + std::to_string(d.rank) + " piece " +
                  std::to_string(d.piece) + ", held by ranks " +
                  joinCommas(piece.locations);
  if (piece.scale != 1.0)
    style.tooltip += llvm::formatv(", scale {0}", piece.scale).str();
  style.label = std::to_string(d.rank) + "." + std::to_string(d.piece);
  style.width = d.width;
  writeCells(os, d.cells, style, d.left, d.top, scale);
}

void Panel::write(llvm::raw_ostream &os, double top) const {
  os << "<g class=\"map\" data-name=\"" << escape(map.name)
     << "\" data-world=\"" << map.worldSize
     << llvm::format("\" transform=\"translate(0,%.2f)\">\n", top);
  os << llvm::format("<text x=\"%.2f\" y=\"%.2f\" font-weight=\"bold\">",
                     kMargin, 15.0)
     << escape(map.name) << " [" << joinCommas(map.logicalShape) << "] over "
     << map.worldSize << " ranks</text>\n";
  writeFrame(os, map.logicalShape, getMatrix(map.logicalShape, wrap), scale,
             kMargin, kTitle * 2, "F");
  double shardLeft = kMargin + getMatrix(map.logicalShape, wrap).cols * scale + kGap;
  for (size_t s = 0; s < map.shards.size(); ++s)
    writeFrame(os, map.shards[s].shape, getMatrix(map.shards[s].shape, wrap),
               scale, shardLeft, getShardTop(s),
               "rank " + std::to_string(map.shards[s].rank));
  for (const Drawn &d : drawn)
    writeDrawn(os, d);
  double y = getHeight() - kLegendRow * map.worldSize - kGap / 2;
  os << llvm::format("<text x=\"%.2f\" y=\"%.2f\">", kMargin,
                     y - kLegendRow)
     << "hatched: held by several ranks; dashed: scaled (tooltips say "
        "which)</text>\n";
  for (int64_t rank = 0; rank < map.worldSize; ++rank) {
    int64_t held = 0;
    for (const Shard &shard : map.shards)
      if (shard.rank == rank)
        held += getNumElements(shard.shape).value_or(0);
    os << llvm::format("<rect class=\"legend\" x=\"%.2f\" y=\"%.2f\" "
                       "width=\"10\" height=\"10\" fill=\"%s\" "
                       "data-rank=\"%lld\"/>\n",
                       kMargin, y + rank * kLegendRow - 9,
                       getRankColour(rank), static_cast<long long>(rank))
       << llvm::format("<text x=\"%.2f\" y=\"%.2f\">", kMargin + 16,
                       y + rank * kLegendRow)
       << "rank " << rank << ": " << held << " elements</text>\n";
  }
  os << "</g>\n";
}

} // namespace

std::unique_ptr<PicturePanel> svg::makeMapPanel(const ParamMap &map) {
  return std::make_unique<Panel>(map);
}
