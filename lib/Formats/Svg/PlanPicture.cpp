//===- PlanPicture.cpp - A transfer plan's panel --------------------------===//
//
// Source shards on the left, target shards on the right, each copy a band
// from the region it reads to the region it writes, in the colour of the
// source rank it reads; fills hatched grey (ucp/Formats/Svg/Picture.h says
// what is drawn).
//
//===----------------------------------------------------------------------===//

#include "SvgDrawing.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Plan/TransferPlan.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace ucp;
using namespace ucp::svg;

namespace {

/// The width in pixels between the source and the target column.
constexpr double kBandWidth = 160;

/// The rectangles of one copy or fill, on one side.
struct Drawn {
  /// The copy or fill drawn (an index into the plan's segments or fills).
  size_t index = 0;
  bool isFill = false;
  bool onSource = false;
  int64_t rank = 0;
  std::vector<Cell> cells;
};

class Panel final : public PicturePanel {
public:
  explicit Panel(const TransferPlan &plan);

  llvm::Error collect(int64_t &rectangles) override;
  double getHeight() const override;
  double getWidth() const override;
  void write(llvm::raw_ostream &os, double top) const override;

private:
  /// Where each shard of one side is drawn, by rank.
  struct Column {
    double left = kMargin;
    std::map<int64_t, double> tops;
    double bottom = 0;
    int64_t widest = 1;
  };
  Column layOut(const std::map<int64_t, Extents> &shards, double left) const;
  const Extents &getShape(bool onSource, int64_t rank) const {
    return (onSource ? plan.sourceShards : plan.targetShards).at(rank);
  }
  double getLeft(bool onSource) const {
    return onSource ? sources.left : targets.left;
  }
  double getTop(bool onSource, int64_t rank) const {
    return (onSource ? sources : targets).tops.at(rank);
  }
  /// The vertical extent in pixels of `drawn`'s cells.
  std::pair<double, double> getSpan(const Drawn &drawn) const;
  void writeBand(llvm::raw_ostream &os, const Drawn &from,
                 const Drawn &to) const;
  void writeDrawn(llvm::raw_ostream &os, const Drawn &drawn) const;
  void writeLegend(llvm::raw_ostream &os) const;

  const TransferPlan &plan;
  int64_t wrap = 1;
  double scale = 1;
  Column sources, targets;
  std::vector<Drawn> drawn;
};

Panel::Panel(const TransferPlan &plan) : plan(plan) {
  // 1-D shards (ZeRO partitions) are drawn as wide as the widest matrix of
  // the plan, or square when every shard is 1-D.
  int64_t widest = 0, largest = 1;
  for (const auto *side : {&plan.sourceShards, &plan.targetShards})
    for (const auto &[rank, shape] : *side) {
      if (shape.size() >= 2)
        widest = std::max(widest, shape.back());
      largest = std::max(largest, getNumElements(shape).value_or(1));
    }
  wrap = widest > 0 ? widest : getSquareSide(largest);
  int64_t cols = 1, sourceRows = 0, targetRows = 0;
  for (const auto &[rank, shape] : plan.sourceShards) {
    Matrix matrix = getMatrix(shape, wrap);
    cols = std::max(cols, matrix.cols);
    sourceRows += matrix.rows;
  }
  for (const auto &[rank, shape] : plan.targetShards) {
    Matrix matrix = getMatrix(shape, wrap);
    cols = std::max(cols, matrix.cols);
    targetRows += matrix.rows;
  }
  // The widest shard is as wide as a map's F; a tall column may take twice
  // that height.
  scale = kFramePixels /
          std::max<double>(cols, std::max(sourceRows, targetRows) / 2.0);
  sources = layOut(plan.sourceShards, kMargin);
  targets = layOut(plan.targetShards,
                   kMargin + sources.widest * scale + kBandWidth);
}

Panel::Column Panel::layOut(const std::map<int64_t, Extents> &shards,
                            double left) const {
  Column column;
  column.left = left;
  double y = kTitle * 2;
  for (const auto &[rank, shape] : shards) {
    Matrix matrix = getMatrix(shape, wrap);
    column.tops[rank] = y;
    column.widest = std::max(column.widest, matrix.cols);
    y += matrix.rows * scale + kGap;
  }
  column.bottom = y;
  return column;
}

llvm::Error Panel::collect(int64_t &rectangles) {
  auto add = [&](size_t index, bool isFill, bool onSource, int64_t rank,
                 llvm::ArrayRef<int64_t> shape,
                 const StridedView &view) -> llvm::Error {
    Drawn entry{index, isFill, onSource, rank, {}};
    llvm::ArrayRef<int64_t> buffer = getShape(onSource, rank);
    std::string what = "plan '" + plan.name + "': " +
                       (isFill ? "fill " : "copy ") + std::to_string(index);
    if (llvm::Error error =
            appendViewCells(shape, view, buffer, getMatrix(buffer, wrap), what,
                            rectangles, entry.cells))
      return error;
    drawn.push_back(std::move(entry));
    return llvm::Error::success();
  };
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    const Segment &segment = plan.segments[i];
    if (llvm::Error error = add(i, false, true, segment.sourceRank,
                                segment.shape, segment.source))
      return error;
    if (llvm::Error error = add(i, false, false, segment.targetRank,
                                segment.shape, segment.target))
      return error;
    ++rectangles; // The band.
  }
  for (size_t i = 0; i < plan.fills.size(); ++i) {
    const Fill &fill = plan.fills[i];
    if (llvm::Error error =
            add(i, true, false, fill.rank, fill.shape, fill.target))
      return error;
  }
  return llvm::Error::success();
}

double Panel::getHeight() const {
  double legend = kLegendRow * (plan.sourceShards.size() + 2);
  return std::max(sources.bottom, targets.bottom) + legend + kGap;
}

double Panel::getWidth() const {
  // At least the legend's width.
  return std::max(660.0, targets.left + targets.widest * scale + kMargin);
}

std::pair<double, double> Panel::getSpan(const Drawn &d) const {
  double top = getTop(d.onSource, d.rank);
  int64_t first = d.cells.front().row, last = first;
  for (const Cell &cell : d.cells) {
    first = std::min(first, cell.row);
    last = std::max(last, cell.row + cell.rows);
  }
  return {top + first * scale, top + last * scale};
}

void Panel::writeBand(llvm::raw_ostream &os, const Drawn &from,
                      const Drawn &to) const {
  if (from.cells.empty() || to.cells.empty())
    return;
  const Segment &segment = plan.segments[from.index];
  double x0 = sources.left +
              getMatrix(getShape(true, from.rank), wrap).cols * scale;
  double x1 = targets.left;
  auto [y0, y0End] = getSpan(from);
  auto [y1, y1End] = getSpan(to);
  double middle = (x0 + x1) / 2;
  os << "<path class=\"band\" data-segment=\"" << from.index
     << "\" data-source-rank=\"" << segment.sourceRank
     << "\" data-target-rank=\"" << segment.targetRank << "\" d=\""
     << llvm::format("M%.2f,%.2f C%.2f,%.2f %.2f,%.2f %.2f,%.2f "
                     "L%.2f,%.2f C%.2f,%.2f %.2f,%.2f %.2f,%.2f Z",
                     x0, y0, middle, y0, middle, y1, x1, y1, x1, y1End,
                     middle, y1End, middle, y0End, x0, y0End)
     << "\" fill=\"" << getRankColour(segment.sourceRank)
     << "\" fill-opacity=\"0.3\" stroke=\"none\"/>\n";
}

void Panel::writeDrawn(llvm::raw_ostream &os, const Drawn &d) const {
  CellStyle style;
  llvm::ArrayRef<int64_t> shape = getShape(d.onSource, d.rank);
  style.width = getMatrix(shape, wrap).cols;
  llvm::raw_string_ostream attributes(style.attributes);
  attributes << " data-side=\"" << (d.onSource ? "source" : "target")
             << "\" data-rank=\"" << d.rank << "\"";
  if (d.isFill) {
    style.cssClass = "fill";
    style.fill = "#dddddd";
    style.hatched = true;
    attributes << " data-fill=\"" << d.index << "\"";
    style.tooltip = "fill " + std::to_string(d.index) + " of target rank " +
                    std::to_string(d.rank) + ": elements no source holds";
    style.label = "fill";
  } else {
    const Segment &segment = plan.segments[d.index];
    style.cssClass = "copy";
    style.fill = getRankColour(segment.sourceRank);
    style.dashed = segment.scale != 1.0;
    attributes << " data-segment=\"" << d.index << "\" data-scale=\""
               << llvm::format("%g", segment.scale) << "\"";
    style.tooltip = "copy " + std::to_string(d.index) + ": source rank " +
                    std::to_string(segment.sourceRank) + " to target rank " +
                    std::to_string(segment.targetRank) + ", [" +
                    joinCommas(segment.shape) + "]";
    if (segment.scale != 1.0)
      style.tooltip += llvm::formatv(", scale {0}", segment.scale).str();
    style.label = std::to_string(d.index);
  }
  writeCells(os, d.cells, style, getLeft(d.onSource),
             getTop(d.onSource, d.rank), scale);
}

void Panel::writeLegend(llvm::raw_ostream &os) const {
  double y = getHeight() - kLegendRow * plan.sourceShards.size() - kGap / 2;
  os << llvm::format("<text x=\"%.2f\" y=\"%.2f\">", kMargin, y - kLegendRow)
     << "each copy in the colour of the source rank it reads, numbered as "
        "the plan lists it; dashed: scaled; hatched grey: fills</text>\n";
  for (const auto &[rank, shape] : plan.sourceShards) {
    int64_t read = 0;
    for (const Segment &segment : plan.segments)
      if (segment.sourceRank == rank)
        read += getNumElements(segment.shape).value_or(0);
    os << llvm::format("<rect class=\"legend\" x=\"%.2f\" y=\"%.2f\" "
                       "width=\"10\" height=\"10\" fill=\"%s\" "
                       "data-rank=\"%lld\"/>\n",
                       kMargin, y - 9, getRankColour(rank),
                       static_cast<long long>(rank))
       << llvm::format("<text x=\"%.2f\" y=\"%.2f\">", kMargin + 16, y)
       << "source rank " << rank << ": " << read << " elements copied</text>\n";
    y += kLegendRow;
  }
}

void Panel::write(llvm::raw_ostream &os, double top) const {
  os << "<g class=\"plan\" data-name=\"" << escape(plan.name)
     << "\" data-source-world=\"" << plan.sourceWorld
     << "\" data-target-world=\"" << plan.targetWorld
     << llvm::format("\" transform=\"translate(0,%.2f)\">\n", top);
  os << llvm::format("<text x=\"%.2f\" y=\"%.2f\" font-weight=\"bold\">",
                     kMargin, 15.0)
     << "plan " << escape(plan.name) << ": " << plan.sourceWorld
     << " source ranks to " << plan.targetWorld << " target ranks, "
     << plan.segments.size()
     << (plan.segments.size() == 1 ? " copy, " : " copies, ")
     << plan.fills.size() << (plan.fills.size() == 1 ? " fill" : " fills")
     << "</text>\n";
  for (bool onSource : {true, false})
    for (const auto &[rank, shape] :
         onSource ? plan.sourceShards : plan.targetShards)
      writeFrame(os, shape, getMatrix(shape, wrap), scale, getLeft(onSource),
                 getTop(onSource, rank),
                 (onSource ? "source rank " : "target rank ") +
                     std::to_string(rank));
  // Bands behind the rectangles they join; a copy's two sides are
  // collected one after the other.
  for (size_t i = 0; i + 1 < drawn.size(); ++i)
    if (!drawn[i].isFill && drawn[i].onSource)
      writeBand(os, drawn[i], drawn[i + 1]);
  for (const Drawn &d : drawn)
    writeDrawn(os, d);
  writeLegend(os);
  os << "</g>\n";
}

} // namespace

std::unique_ptr<PicturePanel> svg::makePlanPanel(const TransferPlan &plan) {
  return std::make_unique<Panel>(plan);
}
