//===- Error.cpp - The project's errors -----------------------------------===//

#include "ucp/Support/Error.h"

llvm::Error ucp::makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error ucp::makeError(llvm::StringRef where, const llvm::Twine &message) {
  return makeError(where + ": " + message);
}
