//===- Pickle.h - A restricted unpickler that never executes code -*- C++
//-*-===//
//
// Reads the pickles of torch.save files (protocols 2 to 5) into a tree of
// plain values without running anything. A pickle is a program for a stack
// machine whose REDUCE and NEWOBJ opcodes call what GLOBAL names; here no
// call happens: a call is understood only when its callee is one of the
// few globals real checkpoints use, and is then read as data:
//
//   collections.OrderedDict()                     an empty dictionary
//   torch._utils._rebuild_tensor_v2(storage, ...) a tensor view of a storage
//   torch.<T>Storage (in a persistent id)         the storage's element type
//   torch.Size(tuple)                             the tuple
//   builtins.set(list)                            a set
//   builtins.getattr(Enum, 'member')              a member of an allowed enum
//   NEWOBJ + BUILD of an allowed data class       an object with its fields
//
// The data classes are DeepSpeed's LossScaler, fragment_address and
// SubparamShape; the enum is ZeroStageEnum. Any other global is kept as an
// opaque value naming it, and NEWOBJ of another class as an opaque object
// (reported, never constructed); REDUCE of any other callable
// (`os.system`, `eval`, getattr on anything but an allowed enum) is refused
// with the callee's name. So are protocol 0 and 1 text opcodes,
// out-of-band buffers, extension codes, undefined memo entries, reads past
// the end, more than one root, cycles, and values nested deeper than
// kMaxNestingDepth.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_TORCH_PICKLE_H
#define UCP_FORMATS_TORCH_PICKLE_H

#include "ucp/Element/DType.h"
#include "ucp/Map/ParamMap.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>
#include <string>
#include <vector>

namespace ucp {

/// An index into a PickleDocument's values.
using PickleRef = uint32_t;

/// One value of an unpickled document.
struct PickleValue {
  enum Kind {
    None,
    Bool,
    Int,
    Float,
    String,
    Bytes,
    List,
    Tuple,
    Dict,
    Set,
    /// A global by name (`module` and `name`), referenced but not called.
    Global,
    /// An instance of a data class (`module`, `name`), with its `fields`
    /// from BUILD; `opaque` when the class is not an allowed one.
    Object,
    /// A member (`text`) of an allowed enum class (`module`, `name`).
    EnumMember,
    /// A storage: its record `text` (the key), element type and elements.
    Storage,
    /// A view of a storage (`storage`): offset, shape and strides in
    /// elements.
    Tensor,
  } kind = None;

  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  /// String and Bytes contents, an enum member's name, a storage's key.
  std::string text;
  /// Global, Object and EnumMember: where the class or function lives.
  std::string module, name;
  /// List, Tuple and Set items; Dict keys and values, alternating; an
  /// opaque Object's NEWOBJ arguments (a Tuple, then keywords if any).
  std::vector<PickleRef> items;
  /// Object: its fields (a Dict, or None before BUILD). Dict: the
  /// attributes BUILD gave it (an OrderedDict's `_metadata`), or None.
  /// (A Dict made by `collections.OrderedDict()` has that `module` and
  /// `name`, and a Tuple made by `torch.Size(tuple)` module `torch` and
  /// name `Size`, so that they are written back as such.)
  PickleRef fields = 0;
  bool opaque = false;

  /// Storage.
  DType dtype = DType::F32;
  int64_t elements = 0;
  /// Tensor.
  PickleRef storage = 0;
  int64_t offset = 0;
  Extents shape, strides;
  bool requiresGrad = false;
};

/// An unpickled document: the values and the root. Values are shared as
/// the pickle's memo shares them; the document has no cycles and nests at
/// most kMaxNestingDepth levels, so consumers may recurse.
class PickleDocument {
public:
  const PickleValue &get(PickleRef ref) const { return values[ref]; }
  /// The number of values; refs run from 0 (a None) to size() - 1.
  PickleRef size() const { return values.size(); }
  PickleRef getRoot() const { return root; }

  /// Returns the value under the string `key` of the Dict `dict`, if any;
  /// constant time for large dicts.
  std::optional<PickleRef> lookup(PickleRef dict, llvm::StringRef key) const;
  /// The globals seen that are not allowed ("module.name"), sorted.
  const std::vector<std::string> &getOpaqueGlobals() const {
    return opaqueGlobals;
  }
  /// Names the kind of `ref` for diagnostics ("a dict", "a tensor").
  llvm::StringRef describe(PickleRef ref) const;

private:
  friend class Unpickler;
  friend class PickleBuilder;
  /// Indexes the string keys of large dicts, once the values are final.
  /// With `refuseRepeats`, refuses a dict that holds a string key twice
  /// (Python keeps the last value, a scan the first: neither is guessed);
  /// without, the first is indexed, as a scan finds it.
  llvm::Error indexDicts(bool refuseRepeats);
  // A deque: values are large, and growing never moves them.
  std::deque<PickleValue> values;
  PickleRef root = 0;
  std::vector<std::string> opaqueGlobals;
  /// The string keys of each dict of at least kIndexedDictSize items.
  llvm::DenseMap<PickleRef, llvm::StringMap<PickleRef>> dictIndex;
};

/// The name of torch's storage class of `type` (`FloatStorage`), if any.
std::optional<llvm::StringRef> getTorchStorageClass(DType type);

/// Whether `module.name` is one of the globals the reader understands
/// (the others become opaque values).
bool isAllowedPickleGlobal(llvm::StringRef module, llvm::StringRef name);

/// Prints more of a tensor at the end of its line (its elements, say).
using TensorPrinter =
    llvm::function_ref<void(PickleRef tensor, llvm::raw_ostream &os)>;

/// Prints `document` one line per leaf: its path from the root
/// (`$["module"]["embed.weight"]`, `$[0]`, an object's fields as `.name`),
/// a colon and its value, then, for a tensor, what `printTensor` adds.
/// Containers of scalars print on one line; a container the memo shares
/// prints once, later as "the value of PATH".
void printPickleTree(const PickleDocument &document, llvm::raw_ostream &os,
                     TensorPrinter printTensor = {});

/// Reads `bytes`, a pickle, into a document; errors say at which byte and
/// which opcode the pickle went wrong.
llvm::Expected<PickleDocument> readPickle(llvm::StringRef bytes);

/// The largest numeric storage key of `document`, plus one: where new
/// storages' keys start.
int64_t getNextStorageKey(const PickleDocument &document);

/// Builds a document value by value, to be written.
class PickleBuilder {
public:
  PickleBuilder();
  PickleRef none() const { return 0; }
  PickleRef boolean(bool value);
  PickleRef integer(int64_t value);
  PickleRef number(double value);
  PickleRef string(llvm::StringRef text);
  PickleRef list(llvm::ArrayRef<PickleRef> items);
  PickleRef set(llvm::ArrayRef<PickleRef> items);
  PickleRef tuple(llvm::ArrayRef<PickleRef> items);
  /// A torch.Size of `extents`.
  PickleRef size(llvm::ArrayRef<int64_t> extents);
  /// `value` as Python's json.loads gives it: objects as dicts (keys
  /// sorted), arrays as lists, integers as ints.
  PickleRef json(const llvm::json::Value &value);
  /// A dict of (key, value) pairs in order; `ordered`: an OrderedDict.
  PickleRef dict(llvm::ArrayRef<std::pair<PickleRef, PickleRef>> items,
                 bool ordered = false);
  /// An instance of the data class `module.name` with the fields `fields`
  /// (a dict of string keys).
  PickleRef object(llvm::StringRef module, llvm::StringRef name,
                   PickleRef fields);
  /// The member `member` of the enum class `module.name`.
  PickleRef enumMember(llvm::StringRef module, llvm::StringRef name,
                       llvm::StringRef member);
  /// A storage of `elements` of `type`, the record `data/<key>`.
  PickleRef storage(llvm::StringRef key, DType type, int64_t elements);
  PickleRef tensor(PickleRef storage, int64_t offset,
                   llvm::ArrayRef<int64_t> shape,
                   llvm::ArrayRef<int64_t> strides, bool requiresGrad);
  /// Copies the value `ref` of `from` and everything it holds; values
  /// shared in `from` stay shared in the copy across the calls given the
  /// same `copied` (from's refs to the builder's). Storages keep their keys.
  PickleRef copy(const PickleDocument &from, PickleRef ref,
                 llvm::DenseMap<PickleRef, PickleRef> &copied);
  /// The value `ref` built so far.
  const PickleValue &getValue(PickleRef ref) const { return document.get(ref); }
  /// Returns the document rooted at `root`; the builder is left empty.
  PickleDocument finish(PickleRef root);

private:
  PickleRef add(PickleValue value);
  /// A List, Set or Tuple of `items`.
  PickleRef sequence(PickleValue::Kind kind, llvm::ArrayRef<PickleRef> items);
  PickleDocument document;
};

/// Writes `document` as a protocol 2 pickle, as torch.save writes one:
/// tensors as `_rebuild_tensor_v2` of persistent storages, data classes by
/// NEWOBJ and BUILD, enum members by getattr, other globals as the same
/// global (GLOBAL names it and calls nothing), values shared in the
/// document shared through the memo. readPickle reads it back as the same
/// document. Opaque objects are written as read: NEWOBJ of their class
/// with their arguments, and BUILD. Refuses what protocol 2 cannot hold
/// here (bytes, an object made with keyword arguments, a storage class
/// torch lacks).
llvm::Expected<std::string> writePickle(const PickleDocument &document);

} // namespace ucp

#endif // UCP_FORMATS_TORCH_PICKLE_H
