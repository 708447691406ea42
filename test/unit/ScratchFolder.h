//===- ScratchFolder.h - A temporary folder for file tests ------*- C++ -*-===//

#ifndef UCP_TEST_UNIT_SCRATCHFOLDER_H
#define UCP_TEST_UNIT_SCRATCHFOLDER_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ucp::testing {

/// A fresh folder, removed with its contents at the end of the test.
class ScratchFolder {
public:
  ScratchFolder() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("ucp-test", path));
  }
  ~ScratchFolder() { llvm::sys::fs::remove_directories(path); }

  /// The path of `name` in the folder.
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<128> full(path);
    llvm::sys::path::append(full, name);
    return full.str().str();
  }

  /// The names in the folder, sorted.
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec;
         it.increment(ec))
      names.push_back(llvm::sys::path::filename(it->path()).str());
    llvm::sort(names);
    return names;
  }

private:
  llvm::SmallString<128> path;
};

} // namespace ucp::testing

#endif // UCP_TEST_UNIT_SCRATCHFOLDER_H
