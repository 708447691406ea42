//===- InputFile.h - Reading the tools' inputs safely -----------*- C++ -*-===//
//
// Every file a tool reads goes through readInputFile: a path must name a
// regular file (or a link to one), so that `/dev/zero` cannot feed a reader
// forever and a FIFO with no writer cannot block it; `-` reads standard
// input, up to a bound. Regular files are memory-mapped where large.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_INPUTFILE_H
#define UCP_SUPPORT_INPUTFILE_H

#include "ucp/Support/NestingDepth.h"

#include "llvm/Support/Alignment.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>

namespace ucp {

/// The most bytes read from standard input, which has no size to check
/// before reading: a larger input belongs in a file.
constexpr int64_t kMaxStandardInputBytes = int64_t(1) << 30;

/// How to read an input.
struct InputOptions {
  /// Whether the buffer must end with a NUL (parsers of text want one).
  bool nullTerminated = true;
  /// The alignment of the first byte (tensor data wants cache lines).
  std::optional<llvm::Align> alignment;
};

/// Reads `path`, or standard input for "-". Refuses a path that does not
/// name a regular file once links are followed (a directory, FIFO, socket
/// or device), naming the path and what it is, without blocking on it.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readInputFile(llvm::StringRef path, const InputOptions &options = {});

/// Reads `path` as readInputFile does, then refuses text that nests deeper
/// than kMaxNestingDepth in `syntax`, naming the file: what a tool's driver
/// does with its input before any parser sees it.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readTextInputFile(llvm::StringRef path, TextSyntax syntax);

/// Drops the pages of `buffer` that lie wholly inside [begin, begin +
/// bytes) from this process's memory, if `buffer` maps a file (it does
/// nothing to a buffer read into memory, whose bytes would be lost, nor
/// outside `buffer`): a
/// long run reading each byte once keeps its resident memory small. The
/// bytes stay readable; a later read faults them back in from the file.
void releaseMappedPages(const llvm::MemoryBuffer &buffer, const char *begin,
                        size_t bytes);

/// Names the kind of file `mode` (an st_mode) describes: "a directory",
/// "a FIFO", "a character device", ...
const char *describeFileKind(unsigned mode);

} // namespace ucp

#endif // UCP_SUPPORT_INPUTFILE_H
