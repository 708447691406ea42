//===- MapPicture.cpp - Maps drawn as SVG ---------------------------------===//

#include "ucp/Formats/Svg/MapPicture.h"
#include "ucp/Analysis/BoxDecomposition.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace ucp;

namespace {

/// The largest side, in pixels, of F's matrix; shards are drawn at F's
/// scale.
constexpr double kFramePixels = 360;
constexpr double kMargin = 16, kGap = 28, kTitle = 22, kLegendRow = 16;

/// Colours of ranks 0, 1, ... (repeated past the twelfth rank; the legend
/// still says which is which).
constexpr const char *kPalette[] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#8cd17d", "#86bcb6"};

const char *getRankColour(int64_t rank) {
  return kPalette[rank % std::size(kPalette)];
}

/// A buffer drawn as a matrix: its last dimension across, the others
/// flattened down; a 1-D buffer longer than `wrap` in rows of `wrap`.
struct Matrix {
  int64_t rows = 1, cols = 1;
  /// Rows of one block of the leading dimensions (the second-to-last
  /// dimension's extent): a line separates blocks.
  int64_t blockRows = 1;
};

Matrix getMatrix(llvm::ArrayRef<int64_t> shape, int64_t wrap) {
  Matrix matrix;
  if (shape.empty())
    return matrix;
  matrix.cols = shape.back();
  matrix.rows = getNumElements(shape.drop_back()).value_or(1);
  matrix.blockRows = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
  if (shape.size() == 1 && matrix.cols > wrap) {
    matrix.rows = (matrix.cols + wrap - 1) / wrap;
    matrix.cols = wrap;
    matrix.blockRows = matrix.rows;
  }
  return matrix;
}

/// How wide a map's 1-D buffers are drawn (a ZeRO partition, a bias): as
/// wide as F's rows, or a square for a 1-D F.
int64_t getWrap(const ParamMap &map) {
  if (map.logicalShape.size() >= 2)
    return std::max<int64_t>(1, map.logicalShape.back());
  int64_t n = getNumElements(map.logicalShape).value_or(1), side = 1;
  while (side * side < n)
    ++side;
  return side;
}

/// A rectangle of a matrix, in elements.
struct Cell {
  int64_t row = 0, col = 0, rows = 1, cols = 1;
};

/// Appends the rectangles of [begin, end) of a 1-D buffer drawn in rows of
/// `cols`: a partial first row, whole rows, a partial last row.
void appendRunCells(int64_t begin, int64_t end, int64_t cols,
                    std::vector<Cell> &out) {
  while (begin < end) {
    Cell cell{begin / cols, begin % cols, 1, 0};
    if (cell.col == 0 && end - begin >= cols) {
      cell.rows = (end - begin) / cols;
      cell.cols = cols;
    } else {
      cell.cols = std::min(end, (cell.row + 1) * cols) - begin;
    }
    begin += cell.rows * cell.cols;
    out.push_back(cell);
  }
}

/// Appends the rectangles of `box`, a box of a buffer of `shape` drawn as
/// `matrix`: one per index of the dimensions before the last two.
void appendCells(const Box &box, llvm::ArrayRef<int64_t> shape,
                 const Matrix &matrix, std::vector<Cell> &out) {
  size_t rank = shape.size();
  if (rank == 0) {
    out.push_back({});
    return;
  }
  if (rank == 1)
    return appendRunCells(box.lo[0], box.hi[0], matrix.cols, out);
  Cell cell;
  cell.col = box.lo[rank - 1];
  cell.cols = box.hi[rank - 1] - box.lo[rank - 1];
  cell.rows = box.hi[rank - 2] - box.lo[rank - 2];
  size_t leading = rank - 2;
  Extents index(box.lo.begin(), box.lo.begin() + leading);
  while (true) {
    int64_t row = 0;
    for (size_t d = 0; d < leading; ++d)
      row = row * shape[d] + index[d];
    cell.row = row * shape[rank - 2] + box.lo[rank - 2];
    out.push_back(cell);
    size_t d = leading;
    while (d > 0 && ++index[d - 1] == box.hi[d - 1]) {
      index[d - 1] = box.lo[d - 1];
      --d;
    }
    if (d == 0)
      return;
  }
}

/// `text` with XML's special characters escaped.
std::string escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

std::string formatList(llvm::ArrayRef<int64_t> values) {
  std::string list;
  for (int64_t value : values)
    list += (list.empty() ? "" : ",") + std::to_string(value);
  return list;
}

/// One map's panel: where it is drawn and at what scale.
class Panel {
public:
  Panel(const ParamMap &map, double top)
      : map(map), top(top), wrap(getWrap(map)) {
    Matrix f = getMatrix(map.logicalShape, wrap);
    scale = kFramePixels / std::max(f.rows, f.cols);
  }

  /// Collects the rectangles of every piece; fails past the limit.
  llvm::Error collect(int64_t &rectangles);
  /// The panel's height in pixels, once collected.
  double getHeight() const;
  double getWidth() const;
  void write(llvm::raw_ostream &os) const;

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
  void writeFrame(llvm::raw_ostream &os, llvm::ArrayRef<int64_t> shape,
                  double left, double frameTop, llvm::StringRef label) const;
  void writeDrawn(llvm::raw_ostream &os, const Drawn &drawn) const;
  double getShardTop(size_t index) const;

  const ParamMap &map;
  double top;
  int64_t wrap;
  double scale;
  std::vector<Drawn> drawn;
};

double Panel::getShardTop(size_t index) const {
  double y = top + kTitle;
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
        llvm::SmallVector<Box> boxes;
        if (!decomposeView(piece.shape, onF ? piece.source : piece.dest,
                           buffer, Repeats::Collapse, boxes))
          return makeError("parameter '" + map.name + "': piece " +
                           std::to_string(k) + " of rank " +
                           std::to_string(shard.rank) +
                           " has too many blocks to draw");
        Drawn entry{shard.rank, static_cast<int64_t>(k), owner, &piece, onF,
                    onF ? kMargin : shardLeft,
                    onF ? top + kTitle * 2 : getShardTop(s), 1, {}};
        Matrix matrix = getMatrix(buffer, wrap);
        entry.width = matrix.cols;
        for (const Box &box : boxes)
          appendCells(box, buffer, matrix, entry.cells);
        rectangles += entry.cells.size();
        if (rectangles > kMaxPictureRectangles)
          return makeError("parameter '" + map.name + "': more than " +
                           std::to_string(kMaxPictureRectangles) +
                           " rectangles to draw");
        drawn.push_back(std::move(entry));
      }
    }
  }
  return llvm::Error::success();
}

double Panel::getHeight() const {
  double f = kTitle * 2 + getMatrix(map.logicalShape, wrap).rows * scale;
  double shards = getShardTop(map.shards.size()) - kTitle - top;
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

void Panel::writeFrame(llvm::raw_ostream &os, llvm::ArrayRef<int64_t> shape,
                       double left, double frameTop,
                       llvm::StringRef label) const {
  Matrix matrix = getMatrix(shape, wrap);
  os << llvm::format("<text x=\"%.2f\" y=\"%.2f\">", left, frameTop - 5)
     << escape(label) << " [" << formatList(shape) << "]</text>\n";
  os << llvm::format("<rect class=\"frame\" x=\"%.2f\" y=\"%.2f\" "
                     "width=\"%.2f\" height=\"%.2f\" fill=\"white\" "
                     "stroke=\"#333\"/>\n",
                     left, frameTop, matrix.cols * scale,
                     matrix.rows * scale);
  for (int64_t row = matrix.blockRows; row < matrix.rows;
       row += matrix.blockRows)
    os << llvm::format("<line class=\"block\" x1=\"%.2f\" y1=\"%.2f\" "
                       "x2=\"%.2f\" y2=\"%.2f\" stroke=\"#333\"/>\n",
                       left, frameTop + row * scale,
                       left + matrix.cols * scale, frameTop + row * scale);
}

void Panel::writeDrawn(llvm::raw_ostream &os, const Drawn &d) const {
  const Piece &piece = *d.source;
  bool replicated = piece.locations.size() > 1;
  std::string tooltip = "rank " + std::to_string(d.rank) + " piece " +
                        std::to_string(d.piece) + ", held by ranks " +
                        formatList(piece.locations);
  if (piece.scale != 1.0)
    tooltip += llvm::formatv(", scale {0}", piece.scale).str();
  for (const Cell &cell : d.cells) {
    double x = d.left + cell.col * scale, y = d.top + cell.row * scale;
    double w = cell.cols * scale, h = cell.rows * scale;
    os << llvm::format("<rect class=\"piece\" x=\"%.2f\" y=\"%.2f\" "
                       "width=\"%.2f\" height=\"%.2f\" ",
                       x, y, w, h)
       << "fill=\"" << getRankColour(d.owner) << "\" stroke=\"#222\""
       << (piece.scale != 1.0 ? " stroke-dasharray=\"3,2\"" : "")
       << " data-side=\"" << (d.onF ? "F" : "shard") << "\" data-rank=\""
       << d.rank << "\" data-piece=\"" << d.piece << "\" data-locations=\""
       << formatList(piece.locations) << "\" data-scale=\""
       << llvm::format("%g", piece.scale)
       << "\" data-row=\"" << cell.row << "\" data-col=\"" << cell.col
       << "\" data-rows=\"" << cell.rows << "\" data-cols=\"" << cell.cols
       << "\" data-width=\"" << d.width << "\"><title>" << escape(tooltip) << "</title></rect>\n";
    if (replicated)
      os << llvm::format("<rect class=\"replicated\" x=\"%.2f\" y=\"%.2f\" "
                         "width=\"%.2f\" height=\"%.2f\" "
                         "fill=\"url(#hatch)\"/>\n",
                         x, y, w, h);
    if (w >= 26 && h >= 13)
      os << llvm::format("<text x=\"%.2f\" y=\"%.2f\" "
                         "text-anchor=\"middle\">",
                         x + w / 2, y + h / 2 + 4)
         << d.rank << "." << d.piece << "</text>\n";
  }
}

void Panel::write(llvm::raw_ostream &os) const {
  os << "<g class=\"map\" data-name=\"" << escape(map.name)
     << "\" data-world=\"" << map.worldSize << "\">\n";
  os << llvm::format("<text x=\"%.2f\" y=\"%.2f\" font-weight=\"bold\">",
                     kMargin, top + 15)
     << escape(map.name) << " [" << formatList(map.logicalShape) << "] over "
     << map.worldSize << " ranks</text>\n";
  writeFrame(os, map.logicalShape, kMargin, top + kTitle * 2, "F");
  double shardLeft = kMargin + getMatrix(map.logicalShape, wrap).cols * scale + kGap;
  for (size_t s = 0; s < map.shards.size(); ++s)
    writeFrame(os, map.shards[s].shape, shardLeft, getShardTop(s),
               "rank " + std::to_string(map.shards[s].rank));
  for (const Drawn &d : drawn)
    writeDrawn(os, d);
  double y = top + getHeight() - kLegendRow * map.worldSize - kGap / 2;
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

llvm::Error ucp::writeMapPicture(llvm::ArrayRef<ParamMap> maps,
                                 llvm::raw_ostream &os) {
  std::vector<Panel> panels;
  int64_t rectangles = 0;
  double height = 0, width = 0;
  for (const ParamMap &map : maps) {
    panels.emplace_back(map, height);
    if (llvm::Error error = panels.back().collect(rectangles))
      return error;
    height += panels.back().getHeight();
    width = std::max(width, panels.back().getWidth());
  }
  os << llvm::format("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                     "width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                     "font-size=\"11\">\n",
                     width, height);
  os << "<defs><pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" "
        "width=\"6\" height=\"6\" patternTransform=\"rotate(45)\"><line "
        "x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"black\" "
        "stroke-opacity=\"0.45\" stroke-width=\"1.5\"/></pattern></defs>\n";
  for (const Panel &panel : panels)
    panel.write(os);
  os << "</svg>\n";
  return llvm::Error::success();
}
