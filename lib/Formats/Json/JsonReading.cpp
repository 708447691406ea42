//===- JsonReading.cpp - Typed reads from JSON with paths -----------------===//

#include "ucp/Formats/Json/JsonReading.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/NestingDepth.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
namespace json = llvm::json;

JsonPath JsonPath::field(StringRef key) const {
  bool identifier =
      !key.empty() && !llvm::isDigit(key.front()) &&
      llvm::all_of(key, [](char c) { return llvm::isAlnum(c) || c == '_'; });
  Text path = text;
  llvm::raw_svector_ostream os(path);
  if (identifier)
    os << "." << key;
  else
    os << "[" << json::Value(key) << "]";
  return JsonPath(std::move(path));
}

JsonPath JsonPath::index(size_t i) const {
  Text path = text;
  llvm::raw_svector_ostream(path) << "[" << i << "]";
  return JsonPath(std::move(path));
}

Error JsonPath::error(const llvm::Twine &message) const {
  return makeError(text + ": " + message);
}

StringRef ucp::getKindName(const json::Value &value) {
  switch (value.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  llvm_unreachable("unknown JSON kind");
}

Expected<const json::Object *> ucp::getObject(const json::Value &value,
                                              const JsonPath &path) {
  if (const json::Object *object = value.getAsObject())
    return object;
  return path.error("expected an object, got " + getKindName(value));
}

Expected<const json::Array *> ucp::getArray(const json::Value &value,
                                            const JsonPath &path) {
  if (const json::Array *array = value.getAsArray())
    return array;
  return path.error("expected an array, got " + getKindName(value));
}

Expected<int64_t> ucp::getInteger(const json::Value &value,
                                  const JsonPath &path) {
  if (value.kind() == json::Value::Boolean)
    return path.error("expected an integer, got a boolean");
  if (std::optional<int64_t> integer = value.getAsInteger())
    return *integer;
  if (value.kind() == json::Value::Number)
    return path.error("expected an integer, got " +
                      std::to_string(*value.getAsNumber()));
  return path.error("expected an integer, got " + getKindName(value));
}

Expected<Extents> ucp::getIntegers(const json::Value &value,
                                   const JsonPath &path) {
  Expected<const json::Array *> array = getArray(value, path);
  if (!array)
    return array.takeError();
  Extents result;
  result.reserve((*array)->size());
  for (auto [i, element] : llvm::enumerate(**array)) {
    Expected<int64_t> integer = getInteger(element, path.index(i));
    if (!integer)
      return integer.takeError();
    result.push_back(*integer);
  }
  return result;
}

Expected<const json::Value *> ucp::getKey(const json::Object &object,
                                          StringRef key, const JsonPath &path) {
  if (const json::Value *value = object.get(key))
    return value;
  return path.error("missing key \"" + key + "\"");
}

/// Refuses an object of the valid JSON `text` that names a key twice. The
/// parser keeps one of the two values without a word (as Python's does), so
/// a map listing a parameter twice, or a file header a tensor, would lose
/// one silently.
static Error checkUniqueKeys(StringRef text) {
  // The containers open at the current character, outermost first.
  struct Container {
    bool object;
    llvm::StringSet<> keys;
    std::string key;  // The key of the value being read, in an object.
    size_t index = 0; // The index of the value being read, in an array.
    bool expectKey = false;
  };
  std::vector<Container> open;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      size_t end = i + 1;
      bool escaped = false;
      for (; text[end] != '"'; ++end)
        if (text[end] == '\\') {
          escaped = true;
          ++end;
        }
      if (!open.empty() && open.back().expectKey) {
        Container &object = open.back();
        StringRef token = text.slice(i, end + 1);
        // Keys compare decoded: "a" and "\u0061" are the same key.
        std::string key = token.drop_front().drop_back().str();
        if (escaped) {
          Expected<json::Value> decoded = json::parse(token);
          if (!decoded)
            return decoded.takeError(); // Not reached: `text` parsed.
          key = decoded->getAsString()->str();
        }
        if (!object.keys.insert(key).second) {
          JsonPath path; // Built only now: most documents have no error.
          for (const Container &outer : llvm::drop_end(open))
            path =
                outer.object ? path.field(outer.key) : path.index(outer.index);
          return path.error("key \"" + key +
                            "\" appears twice; JSON readers keep only one "
                            "of the two values");
        }
        object.key = std::move(key);
        object.expectKey = false;
      }
      i = end;
    } else if (c == '{' || c == '[') {
      open.push_back({c == '{', {}, {}, 0, c == '{'});
    } else if (c == '}' || c == ']') {
      open.pop_back();
    } else if (c == ',') {
      if (open.back().object)
        open.back().expectKey = true;
      else
        ++open.back().index;
    }
  }
  return Error::success();
}

Expected<json::Value> ucp::parseJson(StringRef text) {
  // The parser recurses once per level: bound the levels first.
  if (Error error = checkNestingDepth(text, TextSyntax::Json))
    return makeError("not valid JSON: " + llvm::toString(std::move(error)));
  Expected<json::Value> root = json::parse(text);
  if (!root)
    return makeError("not valid JSON: " + llvm::toString(root.takeError()));
  if (Error error = checkUniqueKeys(text))
    return std::move(error);
  return root;
}

Expected<const json::Object *> ucp::getObjectAt(const json::Object &object,
                                                StringRef key,
                                                const JsonPath &path) {
  Expected<const json::Value *> value = getKey(object, key, path);
  if (!value)
    return value.takeError();
  return getObject(**value, path.field(key));
}

Expected<const json::Array *> ucp::getArrayAt(const json::Object &object,
                                              StringRef key,
                                              const JsonPath &path) {
  Expected<const json::Value *> value = getKey(object, key, path);
  if (!value)
    return value.takeError();
  return getArray(**value, path.field(key));
}

Expected<int64_t> ucp::getIntegerAt(const json::Object &object, StringRef key,
                                    const JsonPath &path) {
  Expected<const json::Value *> value = getKey(object, key, path);
  if (!value)
    return value.takeError();
  return getInteger(**value, path.field(key));
}

Expected<Extents> ucp::getIntegersAt(const json::Object &object, StringRef key,
                                     const JsonPath &path) {
  Expected<const json::Value *> value = getKey(object, key, path);
  if (!value)
    return value.takeError();
  return getIntegers(**value, path.field(key));
}

Error ucp::checkKeys(const json::Object &object,
                     llvm::ArrayRef<StringRef> known, const JsonPath &path) {
  for (const auto &entry : object) {
    if (!llvm::is_contained(known, StringRef(entry.first)))
      return path.field(entry.first)
          .error("unknown key; expected one of " +
                 llvm::join(known.begin(), known.end(), ", "));
  }
  return Error::success();
}

Expected<const json::Object *>
ucp::getObjectWithKeys(const json::Value &value,
                       llvm::ArrayRef<StringRef> known, const JsonPath &path) {
  Expected<const json::Object *> object = getObject(value, path);
  if (!object)
    return object.takeError();
  if (Error error = checkKeys(**object, known, path))
    return std::move(error);
  return object;
}

Expected<std::map<int64_t, StringRef>>
ucp::getRankKeys(const json::Object &ranks, const JsonPath &path) {
  std::map<int64_t, StringRef> keyOfRank;
  for (const auto &entry : ranks) {
    StringRef rankKey = entry.first;
    int64_t rank;
    if (rankKey.getAsInteger(10, rank))
      return path.field(rankKey).error("rank key \"" + rankKey +
                                       "\" is not an integer");
    if (rank < 0)
      return path.field(rankKey).error("rank key \"" + rankKey +
                                       "\" is negative");
    if (rank >= kMaxWorldSize)
      return path.field(rankKey).error(
          "rank key \"" + rankKey + "\" is beyond the most ranks supported, " +
          std::to_string(kMaxWorldSize));
    auto [it, inserted] = keyOfRank.try_emplace(rank, rankKey);
    if (!inserted)
      return path.field(rankKey).error("rank " + std::to_string(rank) +
                                       " is listed twice, as \"" + it->second +
                                       "\" and \"" + rankKey + "\"");
  }
  return keyOfRank;
}
