//===- Progress.cpp - How jobs report progress, and are stopped -----------===//

#include "ucp/Support/Progress.h"
#include "ucp/Support/Error.h"

llvm::Error ucp::makeStoppedError() {
  return makeError("stopped by its progress function; nothing was written");
}

llvm::Error ucp::reportProgress(const ProgressFunction &progress, size_t done,
                                size_t total, int64_t bytes) {
  if (!progress || progress(done, total, bytes))
    return llvm::Error::success();
  return makeStoppedError();
}
