//===- Unpickler.h - The stack machine of the restricted unpickler -*- C++
//-*-===//
//
// Internal to the IO library: the unpickler's state, shared by the opcode
// loop (Unpickler.cpp) and the reading of the calls it allows
// (PickleCalls.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_FORMATS_TORCH_UNPICKLER_H
#define UCP_LIB_FORMATS_TORCH_UNPICKLER_H

#include "ucp/Formats/Torch/Pickle.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

namespace ucp {

/// Runs one pickle (see Pickle.h).
class Unpickler {
public:
  explicit Unpickler(llvm::StringRef bytes) : bytes(bytes) {}
  llvm::Expected<PickleDocument> run();

private:
  llvm::Error fail(const llvm::Twine &why) const;
  llvm::Error step();
  // One family of opcodes each; nothing when the opcode is not theirs.
  std::optional<llvm::Error> stepFraming();
  std::optional<llvm::Error> stepScalar();
  std::optional<llvm::Error> stepContainer();
  std::optional<llvm::Error> stepStack();
  std::optional<llvm::Error> stepCall();
  PickleRef add(PickleValue value);
  PickleRef addGlobal(llvm::StringRef module, llvm::StringRef name);
  PickleValue &at(PickleRef ref) { return document.values[ref]; }
  /// Adds a value of `kind` holding `items` and returns it.
  PickleRef make(PickleValue::Kind kind, std::vector<PickleRef> items = {});
  llvm::Error pushMemo(uint64_t index);
  /// Pushes a tuple of the `count` values on top of the stack.
  llvm::Error pushTuple(size_t count);
  llvm::Error pushGet(uint64_t index);

  llvm::Expected<uint64_t> readUInt(unsigned width);
  llvm::Expected<llvm::StringRef> readBytes(uint64_t count);
  llvm::Expected<llvm::StringRef> readLine();
  llvm::Expected<int64_t> readLong(uint64_t length);
  llvm::Expected<PickleRef> pop();
  llvm::Expected<std::vector<PickleRef>> popMark();
  llvm::Error pushText(PickleValue::Kind kind, uint64_t length);

  llvm::Error reduce();
  llvm::Error newObject(bool withKeywords);
  llvm::Error build();
  llvm::Error persistentLoad();
  llvm::Error addToContainer(PickleValue::Kind kind,
                             std::vector<PickleRef> items);
  llvm::Error rebuildTensor(llvm::ArrayRef<PickleRef> args);
  llvm::Error checkTree() const;

  llvm::StringRef bytes;
  size_t offset = 0;
  size_t opcodeOffset = 0;
  uint8_t opcode = 0;
  PickleDocument document;
  std::vector<PickleRef> stack;
  std::vector<size_t> marks;
  llvm::DenseMap<uint64_t, PickleRef> memo;
  /// The storage value of each key seen in a persistent id.
  llvm::StringMap<PickleRef> storageKeys;
  bool stopped = false;
};

} // namespace ucp

#endif // UCP_LIB_FORMATS_TORCH_UNPICKLER_H
