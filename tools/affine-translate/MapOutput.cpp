//===- MapOutput.cpp - Writing maps as ucp IR or JSON ---------------------===//

#include "MapOutput.h"

#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Formats/Svg/Picture.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/OutputFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

using namespace ucp;

llvm::Error writeMaps(llvm::ArrayRef<ParamMap> maps, llvm::StringRef emit,
                      llvm::StringRef path) {
  if (emit != "mlir" && emit != "json" && emit != "svg" && emit != "png")
    return makeError("--emit must be mlir, json, svg or png, got '" + emit +
                     "'");
  return writeOutputFile(path, [&](llvm::raw_ostream &os) -> llvm::Error {
    if (emit == "json") {
      writeMapDocument(maps, os);
      return llvm::Error::success();
    }
    if (emit == "svg" || emit == "png")
      return writePicture(maps, {},
                          emit == "svg" ? PictureFormat::Svg
                                        : PictureFormat::Png,
                          os);
    mlir::MLIRContext context;
    context.loadDialect<UCPDialect>();
    mlir::OpBuilder builder(&context);
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
    for (const ParamMap &map : maps)
      buildParamOp(builder, builder.getUnknownLoc(), map);
    module->print(os);
    return llvm::Error::success();
  });
}
