//===- Error.h - The project's errors ---------------------------*- C++ -*-===//
//
// Every error of affine-ucp is a message for a person (what, where, why),
// carried by llvm::Error; nothing branches on an error code. These are the
// one way to make one.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_ERROR_H
#define UCP_SUPPORT_ERROR_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace ucp {

/// An error whose message is `message`.
llvm::Error makeError(const llvm::Twine &message);

/// An error about `where` (a file, a parameter): "where: message".
llvm::Error makeError(llvm::StringRef where, const llvm::Twine &message);

/// `text` with every `from` in it replaced by `to`: a message naming a
/// folder read under another name (a node-local input's local folder) as
/// the user gave it.
std::string replaceAll(llvm::StringRef text, llvm::StringRef from,
                       llvm::StringRef to);

} // namespace ucp

#endif // UCP_SUPPORT_ERROR_H
