//===- JsonReading.h - Typed reads from JSON with paths ---------*- C++ -*-===//
//
// Small helpers shared by the document readers: every read knows the JSON
// path of the value, so every error says where the problem is.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_FORMATS_JSON_JSONREADING_H
#define UCP_FORMATS_JSON_JSONREADING_H

#include "ucp/Map/ParamMap.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <map>

namespace ucp {

/// A JSON path, printed as `$.params["key"].pieces[2]`.
class JsonPath {
public:
  JsonPath() : text("$") {}
  JsonPath field(llvm::StringRef key) const;
  JsonPath index(size_t i) const;
  /// Returns an error `<path>: <message>`.
  llvm::Error error(const llvm::Twine &message) const;

private:
  /// Typical paths fit inline: a map document of tens of thousands of
  /// parameters builds a path for every value it reads.
  using Text = llvm::SmallString<96>;
  explicit JsonPath(Text text) : text(std::move(text)) {}
  Text text;
};

/// Parses `text`, refusing what is not JSON.
llvm::Expected<llvm::json::Value> parseJson(llvm::StringRef text);

/// Names the JSON type of `value` for diagnostics ("an array").
llvm::StringRef getKindName(const llvm::json::Value &value);

llvm::Expected<const llvm::json::Object *>
getObject(const llvm::json::Value &value, const JsonPath &path);
llvm::Expected<const llvm::json::Array *>
getArray(const llvm::json::Value &value, const JsonPath &path);
/// Reads an integer; `8.0` counts, `8.5` and `true` do not.
llvm::Expected<int64_t> getInteger(const llvm::json::Value &value,
                                   const JsonPath &path);
llvm::Expected<Extents> getIntegers(const llvm::json::Value &value,
                                    const JsonPath &path);
/// Returns the required `key` of `object`.
llvm::Expected<const llvm::json::Value *>
getKey(const llvm::json::Object &object, llvm::StringRef key,
       const JsonPath &path);
/// Reads the object, array or integer under the required `key` of `object`.
llvm::Expected<const llvm::json::Object *>
getObjectAt(const llvm::json::Object &object, llvm::StringRef key,
            const JsonPath &path);
llvm::Expected<const llvm::json::Array *>
getArrayAt(const llvm::json::Object &object, llvm::StringRef key,
           const JsonPath &path);
llvm::Expected<int64_t> getIntegerAt(const llvm::json::Object &object,
                                     llvm::StringRef key, const JsonPath &path);
/// Reads the integer list under the required `key` of `object`.
llvm::Expected<Extents> getIntegersAt(const llvm::json::Object &object,
                                      llvm::StringRef key,
                                      const JsonPath &path);
/// Reads an object whose keys must all be among `known`.
llvm::Expected<const llvm::json::Object *>
getObjectWithKeys(const llvm::json::Value &value,
                  llvm::ArrayRef<llvm::StringRef> known, const JsonPath &path);
/// Refuses a key of `object` outside `known`.
llvm::Error checkKeys(const llvm::json::Object &object,
                      llvm::ArrayRef<llvm::StringRef> known,
                      const JsonPath &path);
/// Reads the keys of a "ranks" object: non-negative integers, each rank
/// once. Returns the key of each rank, in ascending rank order.
llvm::Expected<std::map<int64_t, llvm::StringRef>>
getRankKeys(const llvm::json::Object &ranks, const JsonPath &path);

} // namespace ucp

#endif // UCP_FORMATS_JSON_JSONREADING_H
