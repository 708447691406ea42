//===- MapFileReader.h - Where passes get maps from files -------*- C++ -*-===//
//
// A pass that takes maps from a file (--ucp-compose target=FILE) asks the
// reader registered here, so that the pass libraries link no parser of map
// documents: a tool registers the readers it links
// (ucp::registerMapFileReader() of UCPMapTranslation reads `.json` map
// documents and `.mlir` files), and a tool that registers none can still
// hand the passes maps in memory.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_IR_MAPFILEREADER_H
#define UCP_DIALECT_UCP_IR_MAPFILEREADER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace ucp {

/// Reads the maps of a file into a module, or emits a diagnostic and
/// returns null.
using MapFileReader = mlir::OwningOpRef<mlir::ModuleOp> (*)(
    llvm::StringRef path, mlir::MLIRContext *context);

/// Makes `reader` the one passes use (null: none).
void setMapFileReader(MapFileReader reader);

/// The reader passes use, or null when no tool registered one.
MapFileReader getMapFileReader();

} // namespace ucp

#endif // UCP_DIALECT_UCP_IR_MAPFILEREADER_H
