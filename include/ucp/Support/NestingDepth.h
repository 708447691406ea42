//===- NestingDepth.h - Bounding the nesting of text inputs -----*- C++ -*-===//
//
// The JSON and MLIR parsers descend one call per level of nesting, so a
// document nested tens of thousands of levels deep exhausts the stack and
// crashes the tool. Every JSON and MLIR reader first checks the nesting of
// its text with checkNestingDepth, a linear scan that knows strings (and,
// for MLIR, comments) but nothing else of either syntax.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_NESTINGDEPTH_H
#define UCP_SUPPORT_NESTINGDEPTH_H

#include "llvm/Support/Error.h"

namespace ucp {

/// The deepest nesting of brackets a reader accepts: far beyond any map,
/// plan or file header (they nest a few levels), far below what the
/// parsers survive on a thread's stack (a few thousand levels).
constexpr unsigned kMaxNestingDepth = 256;

/// The syntaxes checkNestingDepth knows.
enum class TextSyntax {
  /// `[` and `{` nest; strings are double-quoted with backslash escapes.
  Json,
  /// `(`, `[`, `{` and `<` nest (but for the `>` of `->` and `>=`);
  /// strings as in JSON; `//` comments run to the end of the line.
  Mlir,
};

/// Refuses `text` if its brackets nest deeper than kMaxNestingDepth, naming
/// the line and column of the first bracket too deep.
llvm::Error checkNestingDepth(llvm::StringRef text, TextSyntax syntax);

} // namespace ucp

#endif // UCP_SUPPORT_NESTINGDEPTH_H
