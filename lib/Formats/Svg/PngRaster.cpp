//===- PngRaster.cpp - SVG pictures rasterised to PNG ---------------------===//
//
// librsvg draws the SVG document onto a cairo image surface at its own size
// (one pixel per SVG unit), written as PNG. A build without librsvg refuses
// PNG by name instead.
//
//===----------------------------------------------------------------------===//

#include "SvgDrawing.h"
#include "ucp/Formats/Svg/Picture.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/FormatVariadic.h"

#ifdef UCP_HAVE_LIBRSVG
#include <librsvg/rsvg.h>
#endif

using namespace ucp;

#ifdef UCP_HAVE_LIBRSVG

namespace {

/// Cairo's PNG writer's sink: the stream the picture goes to.
cairo_status_t writeToStream(void *closure, const unsigned char *data,
                             unsigned int length) {
  static_cast<llvm::raw_ostream *>(closure)->write(
      reinterpret_cast<const char *>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

} // namespace

llvm::Error svg::rasterise(llvm::StringRef document, llvm::raw_ostream &os) {
  GError *gerror = nullptr;
  RsvgHandle *handle = rsvg_handle_new_from_data(
      reinterpret_cast<const guint8 *>(document.data()), document.size(),
      &gerror);
  auto takeGError = [&](llvm::StringRef what) {
    std::string message = what.str() + ": " +
                          (gerror ? gerror->message : "unknown error");
    if (gerror)
      g_error_free(gerror);
    return makeError(message);
  };
  if (!handle)
    return takeGError("librsvg cannot read the picture");
  gdouble width = 0, height = 0;
  if (!rsvg_handle_get_intrinsic_size_in_pixels(handle, &width, &height)) {
    g_object_unref(handle);
    return makeError("librsvg cannot size the picture");
  }
  // Cairo's image surfaces are at most 32767 pixels a side.
  constexpr int kMaxSide = 32767;
  if (width > kMaxSide || height > kMaxSide) {
    g_object_unref(handle);
    return makeError(
        llvm::formatv("the picture is {0:F0} x {1:F0} pixels, past the {2} a "
                      "side a PNG is written at; write .svg",
                      width, height, kMaxSide)
            .str());
  }
  cairo_surface_t *surface = cairo_image_surface_create(
      CAIRO_FORMAT_ARGB32, static_cast<int>(width + 0.5),
      static_cast<int>(height + 0.5));
  cairo_t *cr = cairo_create(surface);
  RsvgRectangle viewport{0, 0, width, height};
  bool drawn = rsvg_handle_render_document(handle, cr, &viewport, &gerror);
  cairo_destroy(cr);
  g_object_unref(handle);
  llvm::Error result = llvm::Error::success();
  if (!drawn) {
    result = takeGError("librsvg cannot draw the picture");
  } else if (cairo_status_t status = cairo_surface_write_to_png_stream(
                 surface, writeToStream, &os);
             status != CAIRO_STATUS_SUCCESS) {
    result = makeError(std::string("cannot write the PNG: ") +
                       cairo_status_to_string(status));
  }
  cairo_surface_destroy(surface);
  return result;
}

#else

llvm::Error svg::rasterise(llvm::StringRef, llvm::raw_ostream &) {
  return makeError("this build writes no PNG: librsvg (librsvg2-dev) was not "
                   "found when it was configured; write .svg instead");
}

#endif
