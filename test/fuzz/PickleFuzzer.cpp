//===- PickleFuzzer.cpp - Fuzzes the restricted unpickler -----------------===//
//
// The pickle alone, without a zip around it, so that every input exercises
// the opcode loop. A document it accepts has no cycles and nests less than
// kMaxNestingDepth levels along every path, shared values included (a
// walk checks both), and prints in time linear
// in its values.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"
#include "ucp/Formats/Torch/Pickle.h"
#include "ucp/Support/NestingDepth.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace ucp;
using namespace ucp::fuzz;

/// The references `value` holds.
static std::vector<PickleRef> getChildren(const PickleValue &value) {
  std::vector<PickleRef> children = value.items;
  // Fields of 0 (the document's None) stand for none.
  if (value.fields != 0)
    children.push_back(value.fields);
  if (value.kind == PickleValue::Tensor)
    children.push_back(value.storage);
  return children;
}

/// Returns the height of the values under `ref` (a leaf is 0), checking
/// that no value reaches one on its own path; `heights` holds those known.
static unsigned walk(const PickleDocument &document, PickleRef ref,
                     llvm::DenseSet<PickleRef> &onPath,
                     llvm::DenseMap<PickleRef, unsigned> &heights) {
  fuzzCheck(ref < document.size(), "references stay in the document");
  fuzzCheck(!onPath.contains(ref), "the document has no cycles");
  if (auto it = heights.find(ref); it != heights.end())
    return it->second;
  onPath.insert(ref);
  unsigned height = 0;
  for (PickleRef child : getChildren(document.get(ref)))
    height = std::max(height, walk(document, child, onPath, heights) + 1);
  fuzzCheck(height < kMaxNestingDepth, "values nest less than the bound");
  onPath.erase(ref);
  heights[ref] = height;
  return height;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<PickleDocument> document = readPickle(asText(data, size));
  if (!document) {
    ignore(document.takeError());
    return 0;
  }
  llvm::DenseSet<PickleRef> onPath;
  llvm::DenseMap<PickleRef, unsigned> heights;
  walk(*document, document->getRoot(), onPath, heights);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  printPickleTree(*document, os);
  // What the writer writes of it reads back as the same tree.
  llvm::Expected<std::string> written = writePickle(*document);
  if (!written) {
    ignore(written.takeError()); // Opaque values and bytes are not written.
    return 0;
  }
  llvm::Expected<PickleDocument> reread = readPickle(*written);
  fuzzCheck(static_cast<bool>(reread), "a written pickle reads back");
  std::string again;
  llvm::raw_string_ostream againOs(again);
  printPickleTree(*reread, againOs);
  fuzzCheck(again == printed, "a written pickle reads back the same");
  return 0;
}
