//===- Error.cpp - The project's errors -----------------------------------===//

#include "ucp/Support/Error.h"

llvm::Error ucp::makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error ucp::makeError(llvm::StringRef where, const llvm::Twine &message) {
  return makeError(where + ": " + message);
}

std::string ucp::replaceAll(llvm::StringRef text, llvm::StringRef from,
                            llvm::StringRef to) {
  std::string out;
  for (size_t at; !from.empty() && (at = text.find(from)) != text.npos;
       text = text.drop_front(at + from.size()))
    out += (text.take_front(at) + to).str();
  return out + text.str();
}
