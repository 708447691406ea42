//===- PickleCursor.h - Typed access to an unpickled document ---*- C++ -*-===//
//
// Readers of checkpoint files walk a PickleDocument by keys and indices and
// expect a kind at each step. A cursor is a value together with the path it
// was reached by, so that every failed expectation names where it failed:
//
//   $["optimizer_state_dict"]["group_paddings"][1]: expected an int, got
//   a str
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_TORCH_PICKLECURSOR_H
#define UCP_FORMATS_TORCH_PICKLECURSOR_H

#include "ucp/Formats/Torch/Pickle.h"
#include "llvm/Support/JSON.h"

namespace ucp {

/// A value of a document and its path from the root.
class PickleCursor {
public:
  /// The root of `document`.
  explicit PickleCursor(const PickleDocument &document)
      : document(&document), ref(document.getRoot()), path("$") {}

  const PickleValue &get() const { return document->get(ref); }
  const PickleDocument &getDocument() const { return *document; }
  PickleRef getRef() const { return ref; }
  const std::string &getPath() const { return path; }
  bool is(PickleValue::Kind kind) const { return get().kind == kind; }

  /// The value under the string `key` of this dict.
  llvm::Expected<PickleCursor> at(llvm::StringRef key) const;
  /// The value under `key`, if this is a dict holding it.
  std::optional<PickleCursor> find(llvm::StringRef key) const;
  /// Item `index` of this list or tuple.
  llvm::Expected<PickleCursor> at(size_t index) const;
  /// The items of this list or tuple.
  llvm::Expected<std::vector<PickleCursor>> getItems() const;
  /// The (key, value) pairs of this dict, in order; keys must be strings.
  llvm::Expected<std::vector<std::pair<std::string, PickleCursor>>>
  getStringItems() const;
  /// The (key, value) pairs of this dict, in order; keys must be ints.
  llvm::Expected<std::vector<std::pair<int64_t, PickleCursor>>>
  getIntItems() const;
  /// A field of this object (set by BUILD).
  llvm::Expected<PickleCursor> getField(llvm::StringRef name) const;

  llvm::Expected<int64_t> getInt() const;
  llvm::Expected<double> getNumber() const;
  llvm::Expected<std::string> getString() const;
  /// A list or tuple of ints (a torch.Size reads as a tuple).
  llvm::Expected<Extents> getInts() const;
  /// This tensor; fails for anything else.
  llvm::Expected<PickleRef> getTensor() const;

  /// This value as JSON: None, bools, numbers and strings as themselves,
  /// lists, tuples and sets as arrays, dicts with string or int keys as
  /// objects. Tensors, objects and globals (and non-finite floats) have no
  /// JSON form and are refused.
  llvm::Expected<llvm::json::Value> toJson() const;

  /// An error "PATH: why".
  llvm::Error fail(const llvm::Twine &why) const;
  /// An error "PATH: expected WHAT, got KIND".
  llvm::Error expected(llvm::StringRef what) const;

private:
  PickleCursor(const PickleDocument *document, PickleRef ref, std::string path)
      : document(document), ref(ref), path(std::move(path)) {}
  PickleCursor child(PickleRef value, const std::string &step) const {
    return PickleCursor(document, value, path + step);
  }

  const PickleDocument *document;
  PickleRef ref;
  std::string path;
};

} // namespace ucp

#endif // UCP_FORMATS_TORCH_PICKLECURSOR_H
