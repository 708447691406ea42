//===- SvgDrawing.cpp - What map and plan pictures share ------------------===//

#include "SvgDrawing.h"
#include "ucp/Formats/Svg/Picture.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/Format.h"

#include <algorithm>

using namespace ucp;
using namespace ucp::svg;

namespace {

constexpr const char *kPalette[] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#8cd17d", "#86bcb6"};

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
void appendBoxCells(const Box &box, llvm::ArrayRef<int64_t> shape,
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

} // namespace

const char *svg::getRankColour(int64_t rank) {
  return kPalette[rank % std::size(kPalette)];
}

Matrix svg::getMatrix(llvm::ArrayRef<int64_t> shape, int64_t wrap) {
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

int64_t svg::getSquareSide(int64_t elements) {
  int64_t side = 1;
  while (side * side < elements)
    ++side;
  return side;
}

llvm::Error svg::appendViewCells(llvm::ArrayRef<int64_t> shape,
                                 const StridedView &view,
                                 llvm::ArrayRef<int64_t> buffer,
                                 const Matrix &matrix, llvm::StringRef what,
                                 int64_t &rectangles, std::vector<Cell> &out) {
  llvm::SmallVector<Box> boxes;
  if (!decomposeView(shape, view, buffer, Repeats::Collapse, boxes))
    return makeError(what + " has too many blocks to draw");
  size_t before = out.size();
  for (const Box &box : boxes)
    appendBoxCells(box, buffer, matrix, out);
  rectangles += out.size() - before;
  if (rectangles > kMaxPictureRectangles)
    return makeError(what + ": more than " +
                     std::to_string(kMaxPictureRectangles) +
                     " rectangles to draw");
  return llvm::Error::success();
}

std::string svg::escape(llvm::StringRef text) {
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

std::string svg::joinCommas(llvm::ArrayRef<int64_t> values) {
  std::string list;
  for (int64_t value : values)
    list += (list.empty() ? "" : ",") + std::to_string(value);
  return list;
}

void svg::writeFrame(llvm::raw_ostream &os, llvm::ArrayRef<int64_t> shape,
                     const Matrix &matrix, double scale, double left,
                     double top, llvm::StringRef label) {
  os << llvm::format("<text x=\"%.2f\" y=\"%.2f\">", left, top - 5)
     << escape(label) << " [" << joinCommas(shape) << "]</text>\n";
  os << llvm::format("<rect class=\"frame\" x=\"%.2f\" y=\"%.2f\" "
                     "width=\"%.2f\" height=\"%.2f\" fill=\"white\" "
                     "stroke=\"#333\"/>\n",
                     left, top, matrix.cols * scale, matrix.rows * scale);
  for (int64_t row = matrix.blockRows; row < matrix.rows;
       row += matrix.blockRows)
    os << llvm::format("<line class=\"block\" x1=\"%.2f\" y1=\"%.2f\" "
                       "x2=\"%.2f\" y2=\"%.2f\" stroke=\"#333\"/>\n",
                       left, top + row * scale, left + matrix.cols * scale,
                       top + row * scale);
}

void svg::writeCells(llvm::raw_ostream &os, llvm::ArrayRef<Cell> cells,
                     const CellStyle &style, double left, double top,
                     double scale) {
  std::string tooltip = escape(style.tooltip);
  for (const Cell &cell : cells) {
    double x = left + cell.col * scale, y = top + cell.row * scale;
    double w = cell.cols * scale, h = cell.rows * scale;
    os << "<rect class=\"" << style.cssClass << "\""
       << llvm::format(" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"",
                       x, y, w, h)
       << " fill=\"" << style.fill << "\" stroke=\"#222\""
       << (style.dashed ? " stroke-dasharray=\"3,2\"" : "") << style.attributes
       << " data-row=\"" << cell.row << "\" data-col=\"" << cell.col
       << "\" data-rows=\"" << cell.rows << "\" data-cols=\"" << cell.cols
       << "\" data-width=\"" << style.width << "\"><title>" << tooltip
       << "</title></rect>\n";
    if (style.hatched)
      os << llvm::format("<rect class=\"replicated\" x=\"%.2f\" y=\"%.2f\" "
                         "width=\"%.2f\" height=\"%.2f\" "
                         "fill=\"url(#hatch)\"/>\n",
                         x, y, w, h);
    if (!style.label.empty() && w >= 6.5 * style.label.size() && h >= 13)
      os << llvm::format("<text x=\"%.2f\" y=\"%.2f\" "
                         "text-anchor=\"middle\">",
                         x + w / 2, y + h / 2 + 4)
         << escape(style.label) << "</text>\n";
  }
}

llvm::Error
svg::writeDocument(llvm::ArrayRef<std::unique_ptr<PicturePanel>> panels,
                   llvm::raw_ostream &os) {
  int64_t rectangles = 0;
  double height = 0, width = 0;
  for (const std::unique_ptr<PicturePanel> &panel : panels) {
    if (llvm::Error error = panel->collect(rectangles))
      return error;
    height += panel->getHeight();
    width = std::max(width, panel->getWidth());
  }
  os << llvm::format("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                     "width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                     "font-size=\"11\">\n",
                     width, height);
  // A white background, so that the picture reads the same on a dark page
  // and rasterised.
  os << "<rect class=\"background\" width=\"100%\" height=\"100%\" "
        "fill=\"white\"/>\n";
  os << "<defs><pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" "
        "width=\"6\" height=\"6\" patternTransform=\"rotate(45)\"><line "
        "x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"black\" "
        "stroke-opacity=\"0.45\" stroke-width=\"1.5\"/></pattern></defs>\n";
  double top = 0;
  for (const std::unique_ptr<PicturePanel> &panel : panels) {
    panel->write(os, top);
    top += panel->getHeight();
  }
  os << "</svg>\n";
  return llvm::Error::success();
}
