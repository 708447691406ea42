//===- Picture.cpp - Maps and plans drawn as SVG or PNG -------------------===//

#include "ucp/Formats/Svg/Picture.h"
#include "SvgDrawing.h"

using namespace ucp;

std::optional<PictureFormat> ucp::getPictureFormat(llvm::StringRef path) {
  if (path.ends_with_insensitive(".svg"))
    return PictureFormat::Svg;
  if (path.ends_with_insensitive(".png"))
    return PictureFormat::Png;
  return std::nullopt;
}

llvm::Error ucp::writePicture(llvm::ArrayRef<ParamMap> maps,
                              llvm::ArrayRef<TransferPlan> plans,
                              PictureFormat format, llvm::raw_ostream &os) {
  std::vector<std::unique_ptr<svg::PicturePanel>> panels;
  for (const ParamMap &map : maps)
    panels.push_back(svg::makeMapPanel(map));
  for (const TransferPlan &plan : plans)
    panels.push_back(svg::makePlanPanel(plan));
  if (format == PictureFormat::Svg)
    return svg::writeDocument(panels, os);
  std::string document;
  llvm::raw_string_ostream svgStream(document);
  if (llvm::Error error = svg::writeDocument(panels, svgStream))
    return error;
  return svg::rasterise(document, os);
}
