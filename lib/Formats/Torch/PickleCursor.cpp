//===- PickleCursor.cpp - Typed access to an unpickled document -----------===//

#include "ucp/Formats/Torch/PickleCursor.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace ucp;
using llvm::Expected;

llvm::Error PickleCursor::fail(const llvm::Twine &why) const {
  return makeError(path + ": " + why.str());
}

llvm::Error PickleCursor::expected(llvm::StringRef what) const {
  return fail("expected " + what + ", got " + document->describe(ref));
}

/// The step of a path that reaches the value under `key`.
static std::string keyStep(const PickleValue &key) {
  if (key.kind == PickleValue::String)
    return "[" + llvm::formatv("{0}", llvm::json::Value(key.text)).str() + "]";
  return "[" + std::to_string(key.integer) + "]";
}

std::optional<PickleCursor> PickleCursor::find(llvm::StringRef key) const {
  std::optional<PickleRef> value = document->lookup(ref, key);
  if (!value)
    return std::nullopt;
  PickleValue step;
  step.kind = PickleValue::String;
  step.text = key.str();
  return child(*value, keyStep(step));
}

Expected<PickleCursor> PickleCursor::at(llvm::StringRef key) const {
  if (!is(PickleValue::Dict))
    return expected("a dict");
  if (std::optional<PickleCursor> value = find(key))
    return *value;
  return fail("has no key '" + key + "'");
}

Expected<PickleCursor> PickleCursor::at(size_t index) const {
  if (!is(PickleValue::List) && !is(PickleValue::Tuple))
    return expected("a list");
  if (index >= get().items.size())
    return fail("has " + llvm::Twine(get().items.size()) + " items, not " +
                llvm::Twine(index + 1));
  return child(get().items[index], "[" + std::to_string(index) + "]");
}

Expected<std::vector<PickleCursor>> PickleCursor::getItems() const {
  if (!is(PickleValue::List) && !is(PickleValue::Tuple))
    return expected("a list");
  std::vector<PickleCursor> items;
  for (size_t i = 0; i < get().items.size(); ++i)
    items.push_back(child(get().items[i], "[" + std::to_string(i) + "]"));
  return items;
}

Expected<std::vector<std::pair<std::string, PickleCursor>>>
PickleCursor::getStringItems() const {
  if (!is(PickleValue::Dict))
    return expected("a dict");
  std::vector<std::pair<std::string, PickleCursor>> items;
  const std::vector<PickleRef> &refs = get().items;
  for (size_t i = 0; i + 1 < refs.size(); i += 2) {
    const PickleValue &key = document->get(refs[i]);
    if (key.kind != PickleValue::String)
      return fail("has a key that is " + document->describe(refs[i]) +
                  ", not a str");
    items.emplace_back(key.text, child(refs[i + 1], keyStep(key)));
  }
  return items;
}

Expected<std::vector<std::pair<int64_t, PickleCursor>>>
PickleCursor::getIntItems() const {
  if (!is(PickleValue::Dict))
    return expected("a dict");
  std::vector<std::pair<int64_t, PickleCursor>> items;
  const std::vector<PickleRef> &refs = get().items;
  for (size_t i = 0; i + 1 < refs.size(); i += 2) {
    const PickleValue &key = document->get(refs[i]);
    if (key.kind != PickleValue::Int)
      return fail("has a key that is " + document->describe(refs[i]) +
                  ", not an int");
    items.emplace_back(key.integer, child(refs[i + 1], keyStep(key)));
  }
  return items;
}

Expected<PickleCursor> PickleCursor::getField(llvm::StringRef name) const {
  if (!is(PickleValue::Object))
    return expected("an object");
  std::optional<PickleRef> value = document->lookup(get().fields, name);
  if (!value)
    return fail("has no field '" + name + "'");
  return child(*value, "." + name.str());
}

Expected<int64_t> PickleCursor::getInt() const {
  if (!is(PickleValue::Int))
    return expected("an int");
  return get().integer;
}

Expected<double> PickleCursor::getNumber() const {
  if (is(PickleValue::Int))
    return static_cast<double>(get().integer);
  if (!is(PickleValue::Float))
    return expected("a number");
  return get().number;
}

Expected<std::string> PickleCursor::getString() const {
  if (!is(PickleValue::String))
    return expected("a str");
  return get().text;
}

Expected<Extents> PickleCursor::getInts() const {
  Expected<std::vector<PickleCursor>> items = getItems();
  if (!items)
    return items.takeError();
  Extents values;
  for (const PickleCursor &item : *items) {
    Expected<int64_t> value = item.getInt();
    if (!value)
      return value.takeError();
    values.push_back(*value);
  }
  return values;
}

Expected<PickleRef> PickleCursor::getTensor() const {
  if (!is(PickleValue::Tensor))
    return expected("a tensor");
  return ref;
}

Expected<llvm::json::Value> PickleCursor::toJson() const {
  const PickleValue &value = get();
  switch (value.kind) {
  case PickleValue::None:
    return nullptr;
  case PickleValue::Bool:
    return value.boolean;
  case PickleValue::Int:
    return value.integer;
  case PickleValue::Float:
    if (!std::isfinite(value.number))
      return fail("is " + std::to_string(value.number) +
                  ", a float JSON cannot hold");
    return value.number;
  case PickleValue::String:
    return value.text;
  case PickleValue::List:
  case PickleValue::Tuple:
  case PickleValue::Set: {
    llvm::json::Array array;
    for (size_t i = 0; i < value.items.size(); ++i) {
      Expected<llvm::json::Value> item =
          child(value.items[i], "[" + std::to_string(i) + "]").toJson();
      if (!item)
        return item.takeError();
      array.push_back(std::move(*item));
    }
    return llvm::json::Value(std::move(array));
  }
  case PickleValue::Dict: {
    llvm::json::Object object;
    for (size_t i = 0; i + 1 < value.items.size(); i += 2) {
      const PickleValue &key = document->get(value.items[i]);
      if (key.kind != PickleValue::String && key.kind != PickleValue::Int)
        return fail("has a key that is " + document->describe(value.items[i]) +
                    ", which JSON cannot hold");
      Expected<llvm::json::Value> item =
          child(value.items[i + 1], keyStep(key)).toJson();
      if (!item)
        return item.takeError();
      object[key.kind == PickleValue::String ? key.text
                                             : std::to_string(key.integer)] =
          std::move(*item);
    }
    return llvm::json::Value(std::move(object));
  }
  default:
    return fail(llvm::Twine("is ") + document->describe(ref) +
                ", which JSON cannot hold");
  }
}
