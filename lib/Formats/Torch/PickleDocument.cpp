//===- PickleDocument.cpp - Queries of an unpickled document --------------===//

#include "ucp/Formats/Torch/Pickle.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace ucp;

llvm::StringRef PickleDocument::describe(PickleRef ref) const {
  switch (values[ref].kind) {
  case PickleValue::None:
    return "None";
  case PickleValue::Bool:
    return "a bool";
  case PickleValue::Int:
    return "an int";
  case PickleValue::Float:
    return "a float";
  case PickleValue::String:
    return "a str";
  case PickleValue::Bytes:
    return "bytes";
  case PickleValue::List:
    return "a list";
  case PickleValue::Tuple:
    return "a tuple";
  case PickleValue::Dict:
    return "a dict";
  case PickleValue::Set:
    return "a set";
  case PickleValue::Global:
    return "a global";
  case PickleValue::Object:
    return "an object";
  case PickleValue::EnumMember:
    return "an enum member";
  case PickleValue::Storage:
    return "a storage";
  case PickleValue::Tensor:
    return "a tensor";
  }
  return "a value";
}

/// Dicts of at least this many items (keys and values) are indexed; a
/// scan of smaller ones is as fast.
static constexpr size_t kIndexedDictSize = 32;

std::optional<PickleRef> PickleDocument::lookup(PickleRef dict,
                                                llvm::StringRef key) const {
  const PickleValue &value = values[dict];
  if (value.kind != PickleValue::Dict)
    return std::nullopt;
  if (value.items.size() >= kIndexedDictSize) {
    auto index = dictIndex.find(dict);
    assert(index != dictIndex.end() && "a large dict left unindexed");
    auto it = index->second.find(key);
    if (it == index->second.end())
      return std::nullopt;
    return it->second;
  }
  for (size_t i = 0; i + 1 < value.items.size(); i += 2) {
    const PickleValue &k = values[value.items[i]];
    if (k.kind == PickleValue::String && k.text == key)
      return value.items[i + 1];
  }
  return std::nullopt;
}

llvm::Error PickleDocument::indexDicts(bool refuseRepeats) {
  dictIndex.clear();
  auto twice = [](llvm::StringRef key) {
    return makeError("the pickle's dict holds the key '" + key +
                     "' twice; Python would keep the last value, this reader "
                     "refuses rather than pick one");
  };
  for (PickleRef ref = 0; ref < values.size(); ++ref) {
    const PickleValue &value = values[ref];
    if (value.kind != PickleValue::Dict)
      continue;
    if (value.items.size() < kIndexedDictSize) {
      if (!refuseRepeats)
        continue;
      for (size_t i = 0; i + 1 < value.items.size(); i += 2) {
        const PickleValue &k = values[value.items[i]];
        for (size_t j = 0; j < i && k.kind == PickleValue::String; j += 2) {
          const PickleValue &earlier = values[value.items[j]];
          if (earlier.kind == PickleValue::String && earlier.text == k.text)
            return twice(k.text);
        }
      }
      continue;
    }
    llvm::StringMap<PickleRef> &index = dictIndex[ref];
    for (size_t i = 0; i + 1 < value.items.size(); i += 2) {
      const PickleValue &k = values[value.items[i]];
      if (k.kind == PickleValue::String &&
          !index.try_emplace(k.text, value.items[i + 1]).second &&
          refuseRepeats)
        return twice(k.text);
    }
  }
  return llvm::Error::success();
}

namespace {

/// Prints a document one leaf per line (see printPickleTree).
class TreePrinter {
public:
  TreePrinter(const PickleDocument &document, llvm::raw_ostream &os,
              TensorPrinter printTensor = {})
      : document(document), out(&os), printTensor(printTensor) {}
  void print(PickleRef ref, const std::string &path);

private:
  /// Prints `ref` on one line if it is a scalar or a container of scalars.
  bool printInline(PickleRef ref);
  void printScalar(const PickleValue &value);

  const PickleDocument &document;
  llvm::raw_ostream *out;
  TensorPrinter printTensor;
  /// Containers printed already, by the path they were printed at: the
  /// memo may share one many times, and printing it each time could take
  /// exponentially long.
  llvm::DenseMap<PickleRef, std::string> printedAt;
};

} // namespace

void TreePrinter::printScalar(const PickleValue &value) {
  llvm::raw_ostream &os = *out;
  switch (value.kind) {
  case PickleValue::None:
    os << "None";
    break;
  case PickleValue::Bool:
    os << (value.boolean ? "True" : "False");
    break;
  case PickleValue::Int:
    os << value.integer;
    break;
  case PickleValue::Float:
    os << llvm::format("%.9g", value.number);
    break;
  case PickleValue::String:
    os << llvm::json::Value(value.text);
    break;
  case PickleValue::Bytes:
    os << "bytes of " << value.text.size();
    break;
  case PickleValue::Global:
    os << "global " << value.module << "." << value.name
       << (isAllowedPickleGlobal(value.module, value.name) ? "" : " (opaque)");
    break;
  case PickleValue::EnumMember:
    os << value.name << "." << value.text;
    break;
  case PickleValue::Storage:
    os << "storage " << getSafetensorsName(value.dtype) << " \"" << value.text
       << "\" of " << value.elements;
    break;
  default:
    break;
  }
}

bool TreePrinter::printInline(PickleRef ref) {
  llvm::raw_ostream &os = *out;
  const PickleValue &value = document.get(ref);
  auto isScalar = [&](PickleRef item) {
    PickleValue::Kind kind = document.get(item).kind;
    return kind == PickleValue::None || kind == PickleValue::Bool ||
           kind == PickleValue::Int || kind == PickleValue::Float ||
           kind == PickleValue::String;
  };
  switch (value.kind) {
  case PickleValue::List:
  case PickleValue::Tuple:
  case PickleValue::Set:
    if (!llvm::all_of(value.items, isScalar))
      return false;
    os << (value.kind == PickleValue::List  ? "["
           : value.kind == PickleValue::Set ? "set("
                                            : "(");
    for (auto [i, item] : llvm::enumerate(value.items)) {
      os << (i ? ", " : "");
      printScalar(document.get(item));
    }
    os << (value.kind == PickleValue::List  ? "]"
           : value.kind == PickleValue::Set ? ")"
           : value.items.size() == 1        ? ",)"
                                            : ")");
    return true;
  case PickleValue::Dict:
    if (!value.items.empty())
      return false;
    os << "{}";
    return true;
  case PickleValue::Object:
  case PickleValue::Tensor:
    return false;
  default:
    printScalar(value);
    return true;
  }
}

void TreePrinter::print(PickleRef ref, const std::string &path) {
  llvm::raw_ostream &os = *out;
  const PickleValue &value = document.get(ref);
  const std::string &shown = path;
  std::string line;
  llvm::raw_string_ostream lineOs(line);
  out = &lineOs;
  bool inline_ = printInline(ref);
  out = &os;
  if (inline_) {
    os << shown << ": " << line << "\n";
    return;
  }
  if (value.kind == PickleValue::Tensor) {
    const PickleValue &storage = document.get(value.storage);
    os << shown << ": tensor " << getSafetensorsName(storage.dtype) << " "
       << formatList(value.shape) << " strides " << formatList(value.strides)
       << " of storage \"" << storage.text << "\" at " << value.offset;
    if (printTensor)
      printTensor(ref, os);
    os << "\n";
    return;
  }
  auto [it, first] = printedAt.try_emplace(ref, shown);
  if (!first) {
    os << shown << ": the value of " << it->second << "\n";
    return;
  }
  if (value.kind == PickleValue::Object) {
    os << shown << ": object " << value.module << "." << value.name
       << (value.opaque ? " (opaque)" : "") << "\n";
    const PickleValue &fields = document.get(value.fields);
    if (fields.kind == PickleValue::Dict)
      for (size_t i = 0; i + 1 < fields.items.size(); i += 2) {
        const PickleValue &key = document.get(fields.items[i]);
        print(fields.items[i + 1],
              path + "." + (key.kind == PickleValue::String ? key.text : "?"));
      }
    return;
  }
  if (value.kind == PickleValue::Dict) {
    for (size_t i = 0; i + 1 < value.items.size(); i += 2) {
      std::string key;
      llvm::raw_string_ostream keyOs(key);
      const PickleValue &k = document.get(value.items[i]);
      if (k.kind == PickleValue::String)
        keyOs << llvm::json::Value(k.text);
      else
        TreePrinter(document, keyOs).printScalar(k);
      print(value.items[i + 1], path + "[" + key + "]");
    }
    return;
  }
  for (auto [i, item] : llvm::enumerate(value.items))
    print(item, path + "[" + std::to_string(i) + "]");
}

void ucp::printPickleTree(const PickleDocument &document, llvm::raw_ostream &os,
                          TensorPrinter printTensor) {
  TreePrinter(document, os, printTensor).print(document.getRoot(), "$");
}

int64_t ucp::getNextStorageKey(const PickleDocument &document) {
  int64_t next = 0;
  for (PickleRef ref = 0; ref < document.size(); ++ref) {
    const PickleValue &value = document.get(ref);
    int64_t key;
    if (value.kind == PickleValue::Storage &&
        !llvm::StringRef(value.text).getAsInteger(10, key))
      next = std::max(next, key + 1);
  }
  return next;
}
