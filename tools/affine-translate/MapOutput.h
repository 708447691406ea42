//===- MapOutput.h - Writing maps as ucp IR or JSON -------------*- C++ -*-===//

#ifndef UCP_TOOLS_AFFINE_TRANSLATE_MAPOUTPUT_H
#define UCP_TOOLS_AFFINE_TRANSLATE_MAPOUTPUT_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"

/// Writes `maps` to `path` (`-`: standard output) as a module of ucp.param
/// ops (`emit` "mlir"), a map document (`emit` "json") or a picture (`emit`
/// "svg" or "png", ucp/Formats/Svg/Picture.h), only once all is written
/// (ucp/Support/OutputFile.h). The maps must be valid.
llvm::Error writeMaps(llvm::ArrayRef<ucp::ParamMap> maps, llvm::StringRef emit,
                      llvm::StringRef path);

#endif // UCP_TOOLS_AFFINE_TRANSLATE_MAPOUTPUT_H
