//===- PickleWriter.cpp - Documents written as torch.save's pickles -------===//
//
// The opcodes Python's pickler (protocol 2) emits for the values torch.save
// and DeepSpeed's checkpoints hold, and no others: the reader refuses the
// rest, so what this writes, it reads back.
//
//===----------------------------------------------------------------------===//

#include "ucp/Formats/Torch/Pickle.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Endian.h"

#include <cstring>

using namespace ucp;
using llvm::Expected;
using llvm::StringRef;

PickleBuilder::PickleBuilder() { document.values.push_back({}); }

PickleRef PickleBuilder::add(PickleValue value) {
  document.values.push_back(std::move(value));
  return document.values.size() - 1;
}

PickleRef PickleBuilder::boolean(bool value) {
  PickleValue v;
  v.kind = PickleValue::Bool;
  v.boolean = value;
  return add(std::move(v));
}

PickleRef PickleBuilder::integer(int64_t value) {
  PickleValue v;
  v.kind = PickleValue::Int;
  v.integer = value;
  return add(std::move(v));
}

PickleRef PickleBuilder::number(double value) {
  PickleValue v;
  v.kind = PickleValue::Float;
  v.number = value;
  return add(std::move(v));
}

PickleRef PickleBuilder::json(const llvm::json::Value &value) {
  switch (value.kind()) {
  case llvm::json::Value::Null:
    return none();
  case llvm::json::Value::Boolean:
    return boolean(*value.getAsBoolean());
  case llvm::json::Value::Number:
    if (std::optional<int64_t> whole = value.getAsInteger())
      return integer(*whole);
    return number(*value.getAsNumber());
  case llvm::json::Value::String:
    return string(*value.getAsString());
  case llvm::json::Value::Array: {
    std::vector<PickleRef> items;
    for (const llvm::json::Value &item : *value.getAsArray())
      items.push_back(json(item));
    return list(items);
  }
  case llvm::json::Value::Object: {
    // In key order: a json::Object keeps none.
    const llvm::json::Object &object = *value.getAsObject();
    std::vector<llvm::StringRef> keys;
    for (const auto &item : object)
      keys.push_back(item.first);
    llvm::sort(keys);
    std::vector<std::pair<PickleRef, PickleRef>> items;
    for (llvm::StringRef key : keys) {
      PickleRef name = string(key);
      items.push_back({name, json(*object.get(key))});
    }
    return dict(items);
  }
  }
  return none();
}

PickleRef PickleBuilder::string(StringRef text) {
  PickleValue v;
  v.kind = PickleValue::String;
  v.text = text.str();
  return add(std::move(v));
}

PickleRef PickleBuilder::sequence(PickleValue::Kind kind,
                                  llvm::ArrayRef<PickleRef> items) {
  PickleValue v;
  v.kind = kind;
  v.items.assign(items.begin(), items.end());
  return add(std::move(v));
}

PickleRef PickleBuilder::list(llvm::ArrayRef<PickleRef> items) {
  return sequence(PickleValue::List, items);
}

PickleRef PickleBuilder::set(llvm::ArrayRef<PickleRef> items) {
  return sequence(PickleValue::Set, items);
}

PickleRef PickleBuilder::tuple(llvm::ArrayRef<PickleRef> items) {
  return sequence(PickleValue::Tuple, items);
}

PickleRef PickleBuilder::size(llvm::ArrayRef<int64_t> extents) {
  PickleValue v;
  v.kind = PickleValue::Tuple;
  v.module = "torch";
  v.name = "Size";
  for (int64_t extent : extents)
    v.items.push_back(integer(extent));
  return add(std::move(v));
}

PickleRef
PickleBuilder::dict(llvm::ArrayRef<std::pair<PickleRef, PickleRef>> items,
                    bool ordered) {
  PickleValue v;
  v.kind = PickleValue::Dict;
  for (auto [key, value] : items) {
    v.items.push_back(key);
    v.items.push_back(value);
  }
  if (ordered) {
    v.module = "collections";
    v.name = "OrderedDict";
  }
  return add(std::move(v));
}

PickleRef PickleBuilder::object(StringRef module, StringRef name,
                                PickleRef fields) {
  PickleValue v;
  v.kind = PickleValue::Object;
  v.module = module.str();
  v.name = name.str();
  v.fields = fields;
  return add(std::move(v));
}

PickleRef PickleBuilder::enumMember(StringRef module, StringRef name,
                                    StringRef member) {
  PickleValue v;
  v.kind = PickleValue::EnumMember;
  v.module = module.str();
  v.name = name.str();
  v.text = member.str();
  return add(std::move(v));
}

PickleRef PickleBuilder::storage(StringRef key, DType type, int64_t elements) {
  PickleValue v;
  v.kind = PickleValue::Storage;
  v.text = key.str();
  v.dtype = type;
  v.elements = elements;
  return add(std::move(v));
}

PickleRef PickleBuilder::tensor(PickleRef storage, int64_t offset,
                                llvm::ArrayRef<int64_t> shape,
                                llvm::ArrayRef<int64_t> strides,
                                bool requiresGrad) {
  PickleValue v;
  v.kind = PickleValue::Tensor;
  v.storage = storage;
  v.offset = offset;
  v.shape.assign(shape.begin(), shape.end());
  v.strides.assign(strides.begin(), strides.end());
  v.requiresGrad = requiresGrad;
  return add(std::move(v));
}

PickleRef PickleBuilder::copy(const PickleDocument &from, PickleRef ref,
                              llvm::DenseMap<PickleRef, PickleRef> &copied) {
  if (ref == 0)
    return 0;
  if (auto it = copied.find(ref); it != copied.end())
    return it->second;
  PickleValue value = from.get(ref);
  // The document has no cycles, so the parts exist before the whole.
  for (PickleRef &item : value.items)
    item = copy(from, item, copied);
  value.fields = copy(from, value.fields, copied);
  if (value.kind == PickleValue::Tensor)
    value.storage = copy(from, value.storage, copied);
  PickleRef result = add(std::move(value));
  copied[ref] = result;
  return result;
}

PickleDocument PickleBuilder::finish(PickleRef root) {
  document.root = root;
  // A builder's dicts come from its callers, who give each key once.
  llvm::consumeError(document.indexDicts(/*refuseRepeats=*/false));
  PickleDocument result = std::move(document);
  document = PickleDocument();
  document.values.push_back({});
  return result;
}

namespace {

/// Emits the opcodes of one document.
class PickleEmitter {
public:
  explicit PickleEmitter(const PickleDocument &document) : document(document) {
    countUses(document.getRoot());
  }
  llvm::Error emit(PickleRef ref);
  std::string take() { return std::move(out); }

private:
  void countUses(PickleRef ref);
  void byte(uint8_t value) { out.push_back(static_cast<char>(value)); }
  template <typename T> void little(T value) {
    char bytes[sizeof(T)];
    llvm::support::endian::write<T, llvm::endianness::little>(bytes, value);
    out.append(bytes, sizeof(T));
  }
  void emitInt(int64_t value);
  void emitString(StringRef text);
  void emitGlobal(StringRef module, StringRef name);
  /// Emits `items` between MARK and `close`, or `empty` alone.
  llvm::Error emitItems(llvm::ArrayRef<PickleRef> items, uint8_t close);
  llvm::Error emitValue(PickleRef ref);
  llvm::Error emitTensor(const PickleValue &tensor);
  void memoize(PickleRef ref);

  const PickleDocument &document;
  std::string out;
  llvm::DenseMap<PickleRef, unsigned> uses, memo;
  llvm::StringMap<unsigned> globals;
  unsigned nextMemo = 0;
};

} // namespace

void PickleEmitter::countUses(PickleRef ref) {
  if (uses[ref]++ > 0)
    return;
  const PickleValue &value = document.get(ref);
  for (PickleRef item : value.items)
    countUses(item);
  if (value.fields != 0)
    countUses(value.fields);
  if (value.kind == PickleValue::Tensor)
    countUses(value.storage);
}

void PickleEmitter::emitInt(int64_t value) {
  if (value >= 0 && value < 256) {
    byte('K');
    byte(static_cast<uint8_t>(value));
  } else if (value >= 0 && value < 65536) {
    byte('M');
    little<uint16_t>(static_cast<uint16_t>(value));
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    byte('J');
    little<int32_t>(static_cast<int32_t>(value));
  } else {
    byte(0x8a); // LONG1: 8 bytes of two's complement.
    byte(8);
    little<int64_t>(value);
  }
}

void PickleEmitter::emitString(StringRef text) {
  byte('X');
  little<uint32_t>(static_cast<uint32_t>(text.size()));
  out += text;
}

void PickleEmitter::emitGlobal(StringRef module, StringRef name) {
  std::string key = (module + "\n" + name + "\n").str();
  auto it = globals.find(key);
  if (it != globals.end()) {
    byte('j'); // LONG_BINGET
    little<uint32_t>(it->second);
    return;
  }
  byte('c');
  out += key;
  byte('r'); // LONG_BINPUT
  little<uint32_t>(nextMemo);
  globals[key] = nextMemo++;
}

void PickleEmitter::memoize(PickleRef ref) {
  if (uses.lookup(ref) < 2)
    return;
  byte('r');
  little<uint32_t>(nextMemo);
  memo[ref] = nextMemo++;
}

llvm::Error PickleEmitter::emitItems(llvm::ArrayRef<PickleRef> items,
                                     uint8_t close) {
  if (items.empty())
    return llvm::Error::success();
  byte('(');
  for (PickleRef item : items)
    if (llvm::Error error = emit(item))
      return error;
  byte(close);
  return llvm::Error::success();
}

llvm::Error PickleEmitter::emitTensor(const PickleValue &tensor) {
  const PickleValue &storage = document.get(tensor.storage);
  std::optional<StringRef> storageClass = getTorchStorageClass(storage.dtype);
  if (!storageClass)
    return makeError("torch has no storage class of " +
                     getSafetensorsName(storage.dtype));
  emitGlobal("torch._utils", "_rebuild_tensor_v2");
  byte('(');
  if (auto it = memo.find(tensor.storage); it != memo.end()) {
    byte('j');
    little<uint32_t>(it->second);
  } else {
    byte('(');
    emitString("storage");
    emitGlobal("torch", *storageClass);
    emitString(storage.text);
    emitString("cpu");
    emitInt(storage.elements);
    byte('t');
    byte('Q'); // BINPERSID
    memoize(tensor.storage);
  }
  emitInt(tensor.offset);
  for (const Extents *list : {&tensor.shape, &tensor.strides}) {
    byte('(');
    for (int64_t value : *list)
      emitInt(value);
    byte('t');
  }
  byte(tensor.requiresGrad ? 0x88 : 0x89);
  emitGlobal("collections", "OrderedDict");
  byte(')');
  byte('R');
  byte('t');
  byte('R');
  return llvm::Error::success();
}

llvm::Error PickleEmitter::emitValue(PickleRef ref) {
  const PickleValue &value = document.get(ref);
  auto refuse = [&](StringRef what) {
    return makeError("cannot write " + what + " as a pickle");
  };
  switch (value.kind) {
  case PickleValue::None:
    byte('N');
    return llvm::Error::success();
  case PickleValue::Bool:
    byte(value.boolean ? 0x88 : 0x89);
    return llvm::Error::success();
  case PickleValue::Int:
    emitInt(value.integer);
    return llvm::Error::success();
  case PickleValue::Float: {
    byte('G');
    uint64_t bits;
    std::memcpy(&bits, &value.number, sizeof bits);
    char bytes[8];
    llvm::support::endian::write<uint64_t, llvm::endianness::big>(bytes, bits);
    out.append(bytes, 8);
    return llvm::Error::success();
  }
  case PickleValue::String:
    emitString(value.text);
    break;
  case PickleValue::List:
    byte(']');
    memoize(ref);
    return emitItems(value.items, 'e');
  case PickleValue::Tuple:
    if (value.name == "Size") {
      emitGlobal("torch", "Size");
      if (value.items.empty())
        byte(')');
      else if (llvm::Error error = emitItems(value.items, 't'))
        return error;
      byte(0x85); // TUPLE1
      byte('R');
      break;
    }
    if (value.items.empty()) {
      byte(')');
      break;
    }
    if (llvm::Error error = emitItems(value.items, 't'))
      return error;
    break;
  case PickleValue::Set:
    emitGlobal("__builtin__", "set");
    byte(']');
    if (llvm::Error error = emitItems(value.items, 'e'))
      return error;
    byte(0x85); // TUPLE1
    byte('R');
    break;
  case PickleValue::Dict: {
    if (value.name == "OrderedDict") {
      emitGlobal("collections", "OrderedDict");
      byte(')');
      byte('R');
    } else {
      byte('}');
    }
    memoize(ref);
    if (llvm::Error error = emitItems(value.items, 'u'))
      return error;
    if (value.fields != 0) {
      if (llvm::Error error = emit(value.fields))
        return error;
      byte('b');
    }
    return llvm::Error::success();
  }
  case PickleValue::Object:
    // NEWOBJ with the arguments read (none for a data class), then BUILD
    // with the fields: what the file held, which writing runs nothing of.
    if (value.items.size() > 1)
      return refuse("an object of " + value.module + "." + value.name +
                    " made with keyword arguments (protocol 2 has no "
                    "NEWOBJ_EX)");
    emitGlobal(value.module, value.name);
    if (value.items.empty())
      byte(')');
    else if (llvm::Error error = emit(value.items[0]))
      return error;
    byte(0x81); // NEWOBJ
    memoize(ref);
    if (value.fields == 0)
      return llvm::Error::success();
    if (llvm::Error error = emit(value.fields))
      return error;
    byte('b');
    return llvm::Error::success();
  case PickleValue::Global:
    // Written back as the same reference: GLOBAL names it, calls nothing.
    emitGlobal(value.module, value.name);
    break;
  case PickleValue::EnumMember:
    emitGlobal("__builtin__", "getattr");
    emitGlobal(value.module, value.name);
    emitString(value.text);
    byte(0x86); // TUPLE2
    byte('R');
    break;
  case PickleValue::Tensor:
    if (llvm::Error error = emitTensor(value))
      return error;
    break;
  default:
    return refuse(document.describe(ref).str());
  }
  memoize(ref);
  return llvm::Error::success();
}

llvm::Error PickleEmitter::emit(PickleRef ref) {
  if (auto it = memo.find(ref); it != memo.end()) {
    byte('j');
    little<uint32_t>(it->second);
    return llvm::Error::success();
  }
  return emitValue(ref);
}

Expected<std::string> ucp::writePickle(const PickleDocument &document) {
  PickleEmitter emitter(document);
  std::string header = "\x80\x02";
  if (llvm::Error error = emitter.emit(document.getRoot()))
    return std::move(error);
  return header + emitter.take() + ".";
}
