//===- SvgDrawing.h - What map and plan pictures share ------------*- C++ -*-===//
//
// The parts of a picture that maps and plans draw alike: the rank palette,
// buffers drawn as matrices (the last dimension across, the others down, a
// 1-D buffer wrapped into rows), the rectangles of a strided view, frames,
// and the document that stacks panels. Internal to UCPPicture.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_FORMATS_SVG_SVGDRAWING_H
#define UCP_LIB_FORMATS_SVG_SVGDRAWING_H

#include "ucp/Analysis/BoxDecomposition.h"
#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace ucp {
struct TransferPlan;
}

namespace ucp::svg {

/// The largest side, in pixels, of the matrix a panel is scaled to.
constexpr double kFramePixels = 360;
constexpr double kMargin = 16, kGap = 28, kTitle = 22, kLegendRow = 16;

/// The colour of rank `rank` (repeated past the twelfth rank; legends still
/// say which is which).
const char *getRankColour(int64_t rank);

/// A buffer drawn as a matrix: its last dimension across, the others
/// flattened down; a 1-D buffer longer than `wrap` in rows of `wrap`.
struct Matrix {
  int64_t rows = 1, cols = 1;
  /// Rows of one block of the leading dimensions (the second-to-last
  /// dimension's extent): a line separates blocks.
  int64_t blockRows = 1;
};

Matrix getMatrix(llvm::ArrayRef<int64_t> shape, int64_t wrap);

/// The side of the smallest square holding `elements`: how wide a 1-D
/// buffer is drawn when nothing gives it a width.
int64_t getSquareSide(int64_t elements);

/// A rectangle of a matrix, in elements.
struct Cell {
  int64_t row = 0, col = 0, rows = 1, cols = 1;
};

/// The rectangles of the elements the view `shape` at `view` touches in a
/// buffer of `buffer` drawn as `matrix`, appended to `out`. Fails (naming
/// `what`) past kMaxPictureRectangles rectangles in all, counted in
/// `rectangles`.
llvm::Error appendViewCells(llvm::ArrayRef<int64_t> shape,
                            const StridedView &view,
                            llvm::ArrayRef<int64_t> buffer,
                            const Matrix &matrix, llvm::StringRef what,
                            int64_t &rectangles, std::vector<Cell> &out);

/// `text` with XML's special characters escaped.
std::string escape(llvm::StringRef text);

/// `values` as "a,b,c".
std::string joinCommas(llvm::ArrayRef<int64_t> values);

/// Writes a labelled frame for a buffer of `shape` drawn as `matrix` at
/// `scale` pixels per element, its top-left corner at (left, top), with a
/// line between blocks of the leading dimensions.
void writeFrame(llvm::raw_ostream &os, llvm::ArrayRef<int64_t> shape,
                const Matrix &matrix, double scale, double left, double top,
                llvm::StringRef label);

/// How writeCells draws the rectangles of one view.
struct CellStyle {
  /// The rectangles' class (what a reader of the picture selects on).
  std::string cssClass;
  const char *fill = "#ccc";
  /// A dashed outline (a scaled piece or copy).
  bool dashed = false;
  /// Hatched over the fill (a block several ranks hold).
  bool hatched = false;
  /// Further attributes of every rectangle, each with a leading space.
  std::string attributes;
  std::string tooltip;
  /// Written in the middle of every rectangle large enough for it.
  std::string label;
  /// The columns of the matrix the cells are of (written as data-width).
  int64_t width = 1;
};

/// Writes `cells` (of a matrix whose top-left corner is at (left, top),
/// `scale` pixels per element) as rectangles in `style`. Each carries its
/// place in elements: data-row, data-col, data-rows, data-cols, data-width.
void writeCells(llvm::raw_ostream &os, llvm::ArrayRef<Cell> cells,
                const CellStyle &style, double left, double top, double scale);

/// One panel of a picture, drawn from y = 0 down; the document moves it
/// into place.
class PicturePanel {
public:
  virtual ~PicturePanel() = default;
  /// Collects what the panel draws, adding its rectangles to `rectangles`;
  /// fails past kMaxPictureRectangles.
  virtual llvm::Error collect(int64_t &rectangles) = 0;
  /// The size in pixels, once collected.
  virtual double getHeight() const = 0;
  virtual double getWidth() const = 0;
  /// Writes the panel as one group translated down by `top`.
  virtual void write(llvm::raw_ostream &os, double top) const = 0;
};

/// The panel of a map: F beside every rank's shard (MapPicture.cpp).
std::unique_ptr<PicturePanel> makeMapPanel(const ParamMap &map);
/// The panel of a plan: source shards, copies as bands, target shards
/// (PlanPicture.cpp).
std::unique_ptr<PicturePanel> makePlanPanel(const TransferPlan &plan);

/// Writes the SVG document stacking `panels`, once each is collected.
llvm::Error writeDocument(llvm::ArrayRef<std::unique_ptr<PicturePanel>> panels,
                          llvm::raw_ostream &os);

/// Writes `document`, an SVG picture, as PNG at its own size (PngRaster.cpp;
/// fails in a build without librsvg).
llvm::Error rasterise(llvm::StringRef document, llvm::raw_ostream &os);

} // namespace ucp::svg

#endif // UCP_LIB_FORMATS_SVG_SVGDRAWING_H
