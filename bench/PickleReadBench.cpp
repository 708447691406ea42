//===- PickleReadBench.cpp - Reading pickles of large containers ----------===//
//
// Prints the time readPickle takes on one container of 10^4, 10^5 and 10^6
// items, written the four ways a pickler writes one (a list filled by
// APPENDS in batches of 1000 as Python's pickler does, the same list by one
// APPEND per item, a dict filled by SETITEMS, a tuple), and each size's
// time per item against the time per item of 10^4 items of the same kind
// in the same run: a ratio near 1 is reading in time proportional to the
// size.
//
//===----------------------------------------------------------------------===//

#include "BenchTiming.h"
#include "ucp/Formats/Torch/Pickle.h"

#include "llvm/ADT/StringRef.h"

#include <cstdio>
#include <string>

using namespace ucp;
using ucp::bench::timeBest;

namespace {

enum class Shape { ListAppends, ListAppend, Dict, Tuple };

void appendInt(std::string &out, uint32_t value) {
  out += 'J'; // BININT
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
}

void appendKey(std::string &out, int64_t index) {
  std::string key = "k" + std::to_string(index);
  out += 'X'; // BINUNICODE
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>((key.size() >> (8 * i)) & 0xff);
  out += key;
}

/// A protocol 2 pickle of one container of `count` items.
std::string makePickle(Shape shape, int64_t count) {
  std::string out = "\x80\x02";
  switch (shape) {
  case Shape::ListAppends:
    out += llvm::StringRef("]q\0", 3); // EMPTY_LIST, BINPUT 0
    for (int64_t i = 0; i < count; i += 1000) {
      out += '(';
      for (int64_t j = i; j < std::min(count, i + 1000); ++j)
        appendInt(out, j);
      out += 'e';
    }
    break;
  case Shape::ListAppend:
    out += llvm::StringRef("]q\0", 3);
    for (int64_t i = 0; i < count; ++i) {
      appendInt(out, i);
      out += 'a';
    }
    break;
  case Shape::Dict:
    out += llvm::StringRef("}q\0", 3); // EMPTY_DICT, BINPUT 0
    for (int64_t i = 0; i < count; i += 1000) {
      out += '(';
      for (int64_t j = i; j < std::min(count, i + 1000); ++j) {
        appendKey(out, j);
        appendInt(out, j);
      }
      out += 'u';
    }
    break;
  case Shape::Tuple:
    out += '(';
    for (int64_t i = 0; i < count; ++i)
      appendInt(out, i);
    out += 't';
    break;
  }
  out += '.';
  return out;
}

const char *getName(Shape shape) {
  switch (shape) {
  case Shape::ListAppends:
    return "list (APPENDS)";
  case Shape::ListAppend:
    return "list (APPEND)";
  case Shape::Dict:
    return "dict (SETITEMS)";
  case Shape::Tuple:
    return "tuple";
  }
  return "";
}

} // namespace

int main() {
  std::printf("%-16s %9s %10s %10s %12s %14s\n", "container", "items",
              "bytes", "seconds", "ns per item", "vs 10^4 items");
  for (Shape shape :
       {Shape::ListAppends, Shape::ListAppend, Shape::Dict, Shape::Tuple}) {
    double baseline = 0;
    for (int64_t count : {10000, 100000, 1000000}) {
      std::string bytes = makePickle(shape, count);
      size_t read = 0;
      double seconds = timeBest(3, [&] {
        llvm::Expected<PickleDocument> document = readPickle(bytes);
        if (!document) {
          std::fprintf(stderr, "%s\n",
                       llvm::toString(document.takeError()).c_str());
          std::exit(1);
        }
        read = document->get(document->getRoot()).items.size();
      });
      int64_t expected = shape == Shape::Dict ? 2 * count : count;
      if (static_cast<int64_t>(read) != expected) {
        std::fprintf(stderr, "read %zu items of %lld\n", read,
                     static_cast<long long>(expected));
        return 1;
      }
      double perItem = seconds / count * 1e9;
      if (count == 10000)
        baseline = perItem;
      std::printf("%-16s %9lld %10zu %10.4f %12.1f %14.2f\n", getName(shape),
                  static_cast<long long>(count), bytes.size(), seconds,
                  perItem, perItem / baseline);
    }
  }
  return 0;
}
