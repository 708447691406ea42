//===- FuzzReplay.cpp - Runs fuzz inputs without libFuzzer ----------------===//
//
// The main of a fuzz target built without libFuzzer (by a compiler that has
// none): runs LLVMFuzzerTestOneInput once on each file named, or on each
// file of each folder named, and prints how many ran. A crash or a broken
// property ends the process as it would under libFuzzer. Arguments that
// start with '-' are libFuzzer's options (-runs=0, which replays as this
// does) and are ignored, so that one command line serves both builds.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <vector>

/// Runs the target on the file `path`; false if it cannot be read.
static bool runFile(const std::string &path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file) {
    std::fprintf(stderr, "fuzz replay: cannot read %s: %s\n", path.c_str(),
                 file.getError().message().c_str());
    return false;
  }
  // A copy of its own, so that reading past the end is caught as under
  // libFuzzer (a mapping may be followed by readable bytes).
  std::vector<uint8_t> bytes((*file)->getBufferStart(),
                             (*file)->getBufferEnd());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return true;
}

int main(int argc, char **argv) {
  size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    std::string path = argv[i];
    if (!path.empty() && path[0] == '-')
      continue;
    if (!llvm::sys::fs::is_directory(path)) {
      if (!runFile(path))
        return 1;
      ++runs;
      continue;
    }
    std::error_code ec;
    std::vector<std::string> files;
    for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec;
         it.increment(ec))
      if (!llvm::sys::fs::is_directory(it->path()))
        files.push_back(it->path());
    llvm::sort(files);
    for (const std::string &file : files) {
      if (!runFile(file))
        return 1;
      ++runs;
    }
  }
  std::printf("fuzz replay: %zu inputs ran\n", runs);
  return 0;
}
