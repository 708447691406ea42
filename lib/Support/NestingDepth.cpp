//===- NestingDepth.cpp - Bounding the nesting of text inputs -------------===//

#include "ucp/Support/NestingDepth.h"
#include "ucp/Support/Error.h"

using namespace ucp;

llvm::Error ucp::checkNestingDepth(llvm::StringRef text, TextSyntax syntax) {
  bool mlir = syntax == TextSyntax::Mlir;
  unsigned depth = 0;
  size_t line = 1, lineStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      break;
    case '"':
      // Skip the string; an unterminated one is the parser's to report.
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n') {
          ++line;
          lineStart = i + 1;
        }
      break;
    case '/':
      if (mlir && i + 1 < text.size() && text[i + 1] == '/')
        while (i + 1 < text.size() && text[i + 1] != '\n')
          ++i;
      break;
    case '(':
    case '<':
      if (!mlir)
        break;
      [[fallthrough]];
    case '[':
    case '{':
      if (++depth > kMaxNestingDepth)
        return makeError("line " + std::to_string(line) + ", column " +
                         std::to_string(i - lineStart + 1) +
                         ": nesting deeper than " +
                         std::to_string(kMaxNestingDepth) +
                         " levels, which no map, plan or file header needs");
      break;
    case '>':
      // `->` and `>=` are not brackets.
      if (!mlir || (i > 0 && text[i - 1] == '-') ||
          (i + 1 < text.size() && text[i + 1] == '='))
        break;
      [[fallthrough]];
    case ')':
      if (!mlir)
        break;
      [[fallthrough]];
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return llvm::Error::success();
}
