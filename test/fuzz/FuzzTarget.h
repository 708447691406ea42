//===- FuzzTarget.h - What every fuzz target shares --------------*- C++
//-*-===//
//
// Each fuzz target feeds its input to one reader of the toolkit and, where
// the reader accepts it, checks a property the reader promises (a document
// read back after writing is the same maps; a derived map verifies). A
// broken property stops the run with `fuzzCheck`, so that libFuzzer keeps
// the input; a refusal is not a finding.
//
// Targets build in two ways: with clang, against libFuzzer; otherwise with
// FuzzReplay.cpp's main, which runs the inputs named on its command line
// (files, or folders of them) once each: the suite's regression run.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_TEST_FUZZ_FUZZTARGET_H
#define UCP_TEST_FUZZ_FUZZTARGET_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

/// The entry point libFuzzer (or the replay main) calls.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace ucp::fuzz {

/// Stops the run, naming the broken property, unless `holds`.
inline void fuzzCheck(bool holds, const char *property) {
  if (holds)
    return;
  std::fprintf(stderr, "fuzz target: property broken: %s\n", property);
  std::abort();
}

/// Returns the input as text.
inline llvm::StringRef asText(const uint8_t *data, size_t size) {
  return llvm::StringRef(reinterpret_cast<const char *>(data), size);
}

/// Consumes an error that a malformed input is expected to produce.
inline void ignore(llvm::Error error) { llvm::consumeError(std::move(error)); }

} // namespace ucp::fuzz

#endif // UCP_TEST_FUZZ_FUZZTARGET_H
