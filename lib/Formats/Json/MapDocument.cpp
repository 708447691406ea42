//===- MapDocument.cpp - The JSON map document of spec §6.2 ---------------===//

#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Formats/Json/JsonReading.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace ucp;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
namespace json = llvm::json;

//===----------------------------------------------------------------------===//
// Parameter patterns
//===----------------------------------------------------------------------===//

/// The characters Python's `re.escape` escapes (Python 3.7 and later).
static constexpr StringRef kEscapedByPython = "()[]{}?*+-|^$\\.&~# \t\n\r\v\f";
/// Unescaped, these make a pattern match more than one name.
static constexpr StringRef kRegexOperators = "()[]{}?*+|^$\\";

std::string ucp::getParamPattern(StringRef name) {
  std::string pattern = "^";
  for (char c : name) {
    if (kEscapedByPython.contains(c))
      pattern += '\\';
    pattern += c;
  }
  pattern += '$';
  return pattern;
}

Expected<std::string> ucp::getParamName(StringRef pattern) {
  auto refuse = [&](const llvm::Twine &why) {
    return makeError("parameter key " + why.str());
  };
  // DeepSpeed keys AutoEP's affine_maps by the parameter's name itself.
  if (!pattern.starts_with("^")) {
    if (!llvm::any_of(pattern, [](char c) { return kRegexOperators.contains(c); }))
      return pattern.str();
    return refuse("must be a parameter name or an exact-match pattern '^' + "
                  "escaped name + '$', e.g. '" +
                  getParamPattern(pattern) + "'");
  }
  std::string name;
  for (size_t i = 1; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      name += pattern[++i];
      continue;
    }
    if (c == '$' && i + 1 == pattern.size())
      return name;
    if (kRegexOperators.contains(c))
      return refuse("has the unescaped regex operator '" + std::string(1, c) +
                    "' at position " + std::to_string(i) +
                    "; it must match exactly one name");
    name += c;
  }
  return refuse("must end with an unescaped '$', e.g. '" +
                getParamPattern(pattern.drop_front()) + "'");
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// Reads the parts of a document, tracking where it is.
class DocumentReader {
public:
  Expected<std::vector<ParamMap>> read(const json::Value &root,
                                       JsonPath path);

private:
  /// Reads `[offset, [strides]]`.
  Expected<StridedView> readView(const json::Value &value,
                                 const JsonPath &path);
  Expected<Piece> readPiece(const json::Value &value, const JsonPath &path);
  Expected<ParamMap> readParam(StringRef key, const json::Value &value,
                               const JsonPath &path);
};

} // namespace

Expected<StridedView> DocumentReader::readView(const json::Value &value,
                                               const JsonPath &path) {
  Expected<const json::Array *> array = getArray(value, path);
  if (!array)
    return array.takeError();
  if ((*array)->size() != 2)
    return path.error("expected [offset, [strides]], got an array of " +
                      std::to_string((*array)->size()) + " elements");
  StridedView view;
  Expected<int64_t> offset = getInteger((**array)[0], path.index(0));
  if (!offset)
    return offset.takeError();
  view.offset = *offset;
  Expected<Extents> strides = getIntegers((**array)[1], path.index(1));
  if (!strides)
    return strides.takeError();
  view.strides = std::move(*strides);
  return view;
}

Expected<Piece> DocumentReader::readPiece(const json::Value &value,
                                          const JsonPath &path) {
  Expected<const json::Object *> object = getObject(value, path);
  if (!object)
    return object.takeError();
  if (Error error = checkKeys(
          **object, {"shape", "source", "dest", "locations", "scale"}, path))
    return std::move(error);

  Piece piece;
  Expected<Extents> shape = getIntegersAt(**object, "shape", path);
  if (!shape)
    return shape.takeError();
  piece.shape = std::move(*shape);
  for (auto [key, view] :
       {std::pair<StringRef, StridedView *>{"source", &piece.source},
        {"dest", &piece.dest}}) {
    Expected<const json::Value *> value = getKey(**object, key, path);
    if (!value)
      return value.takeError();
    Expected<StridedView> read = readView(**value, path.field(key));
    if (!read)
      return read.takeError();
    *view = std::move(*read);
  }
  Expected<Extents> locations = getIntegersAt(**object, "locations", path);
  if (!locations)
    return locations.takeError();
  piece.locations.assign(locations->begin(), locations->end());
  if (const json::Value *scale = (*object)->get("scale")) {
    std::optional<double> number = scale->getAsNumber();
    if (!number)
      return path.field("scale").error("expected a number, got " +
                                       getKindName(*scale));
    piece.scale = *number;
  }
  return piece;
}

Expected<ParamMap> DocumentReader::readParam(StringRef key,
                                             const json::Value &value,
                                             const JsonPath &path) {
  Expected<std::string> name = getParamName(key);
  if (!name)
    return path.error(llvm::toString(name.takeError()));
  Expected<const json::Object *> object = getObject(value, path);
  if (!object)
    return object.takeError();
  if (Error error = checkKeys(
          **object, {"logical_shape", "ranks", "original_vocab_size"}, path))
    return std::move(error);

  ParamMap map;
  if (const json::Value *vocab = (*object)->get("original_vocab_size")) {
    Expected<int64_t> rows =
        getInteger(*vocab, path.field("original_vocab_size"));
    if (!rows)
      return rows.takeError();
    map.originalVocabSize = *rows;
  }
  map.name = std::move(*name);
  Expected<Extents> shape = getIntegersAt(**object, "logical_shape", path);
  if (!shape)
    return shape.takeError();
  map.logicalShape = std::move(*shape);

  JsonPath ranksPath = path.field("ranks");
  Expected<const json::Object *> ranks = getObjectAt(**object, "ranks", path);
  if (!ranks)
    return ranks.takeError();

  Expected<std::map<int64_t, StringRef>> rankKeys =
      getRankKeys(**ranks, ranksPath);
  if (!rankKeys)
    return rankKeys.takeError();
  std::map<int64_t, StringRef> &keyOfRank = *rankKeys;

  // The document does not record the world size: it is the smallest world
  // holding every rank and location it names.
  map.worldSize = keyOfRank.empty() ? 1 : keyOfRank.rbegin()->first + 1;
  for (auto [rank, rankKey] : keyOfRank) {
    JsonPath rankPath = ranksPath.field(rankKey);
    Expected<const json::Object *> rankObject = getObjectWithKeys(
        *(*ranks)->get(rankKey), {"shard_shape", "pieces"}, rankPath);
    if (!rankObject)
      return rankObject.takeError();
    Shard &shard = map.shards.emplace_back();
    shard.rank = rank;
    Expected<Extents> extents =
        getIntegersAt(**rankObject, "shard_shape", rankPath);
    if (!extents)
      return extents.takeError();
    shard.shape = std::move(*extents);
    JsonPath piecesPath = rankPath.field("pieces");
    Expected<const json::Array *> pieces =
        getArrayAt(**rankObject, "pieces", rankPath);
    if (!pieces)
      return pieces.takeError();
    for (auto [i, pieceValue] : llvm::enumerate(**pieces)) {
      Expected<Piece> piece = readPiece(pieceValue, piecesPath.index(i));
      if (!piece)
        return piece.takeError();
      for (int64_t location : piece->locations) {
        if (location >= kMaxWorldSize)
          return piecesPath.index(i)
              .field("locations")
              .error("location " + std::to_string(location) +
                     " is beyond the most ranks supported, " +
                     std::to_string(kMaxWorldSize));
        map.worldSize = std::max(map.worldSize, location + 1);
      }
      shard.pieces.push_back(std::move(*piece));
    }
  }

  // Local invariants, reported at the value that breaks them.
  if (std::string error = checkParamHeader(map.logicalShape, map.worldSize,
                                           map.originalVocabSize);
      !error.empty())
    return path.field("logical_shape").error(error);
  for (const Shard &shard : map.shards) {
    JsonPath rankPath = ranksPath.field(keyOfRank[shard.rank]);
    if (std::string error =
            checkShardHeader(shard.rank, shard.shape, map.worldSize);
        !error.empty())
      return rankPath.error(error);
    for (auto [i, piece] : llvm::enumerate(shard.pieces)) {
      if (std::string error = checkPiece(piece, map.logicalShape, shard.shape,
                                         shard.rank, map.worldSize);
          !error.empty())
        return rankPath.field("pieces").index(i).error(error);
    }
  }
  return map;
}

Expected<std::vector<ParamMap>> DocumentReader::read(const json::Value &root,
                                                     JsonPath path) {
  Expected<const json::Object *> object = getObject(root, path);
  if (!object)
    return object.takeError();
  // A whole UNIVERSAL_CHECKPOINT_INFO object, or a wrapper, carries the map
  // under "affine_map"; an AutoEP layer entry under "affine_maps".
  const json::Value *inner = nullptr;
  for (StringRef wrapper : {"affine_map", "affine_maps"}) {
    inner = (*object)->get(wrapper);
    if (inner) {
      path = path.field(wrapper);
      break;
    }
  }
  if (inner) {
    object = getObject(*inner, path);
    if (!object)
      return object.takeError();
  } else if (!(*object)->get("params")) {
    return path.error("not a map document: expected an object with "
                      "\"params\", or one with \"affine_map\" or "
                      "\"affine_maps\"");
  }
  if (Error error = checkKeys(**object, {"version", "params"}, path))
    return std::move(error);

  if (const json::Value *version = (*object)->get("version")) {
    Expected<int64_t> number = getInteger(*version, path.field("version"));
    if (!number)
      return number.takeError();
    if (*number > 1)
      return path.field("version").error(
          "map encoding version " + std::to_string(*number) +
          " is newer than the supported version 1");
    if (*number < 1)
      return path.field("version").error("map encoding version " +
                                         std::to_string(*number) +
                                         " is not a valid version");
  }

  JsonPath paramsPath = path.field("params");
  Expected<const json::Object *> params = getObjectAt(**object, "params", path);
  if (!params)
    return params.takeError();

  std::vector<ParamMap> maps;
  // ParamMap's move may throw (SmallVector's does not promise otherwise),
  // so a growing vector would copy every map it holds.
  maps.reserve((*params)->size());
  std::map<std::string, std::string> keyOfName;
  for (const auto &entry : **params) {
    StringRef key = entry.first;
    Expected<ParamMap> map =
        readParam(key, entry.second, paramsPath.field(key));
    if (!map)
      return map.takeError();
    auto [it, inserted] = keyOfName.try_emplace(map->name, key.str());
    if (!inserted)
      return paramsPath.field(key).error("parameter '" + map->name +
                                         "' is also keyed as \"" + it->second +
                                         "\"");
    maps.push_back(std::move(*map));
  }
  llvm::sort(maps, [](const ParamMap &a, const ParamMap &b) {
    return a.name < b.name;
  });
  return maps;
}

Expected<std::vector<ParamMap>> ucp::parseMapDocument(StringRef text) {
  Expected<json::Value> root = parseJson(text);
  if (!root)
    return root.takeError();
  return DocumentReader().read(*root, JsonPath());
}

Expected<std::vector<ParamMap>> ucp::readMapDocument(const json::Value &root,
                                                     const JsonPath &path) {
  return DocumentReader().read(root, path);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// Writes `piece` on one line, keys in the spec's order.
static void writePiece(const Piece &piece, llvm::raw_ostream &os) {
  json::OStream j(os);
  auto view = [&](const StridedView &v) {
    j.array([&] {
      j.value(v.offset);
      j.value(json::Array(v.strides));
    });
  };
  j.object([&] {
    j.attribute("shape", json::Array(piece.shape));
    j.attributeBegin("source");
    view(piece.source);
    j.attributeEnd();
    j.attributeBegin("dest");
    view(piece.dest);
    j.attributeEnd();
    j.attribute("locations", json::Array(piece.locations));
    if (piece.scale != 1.0)
      j.attribute("scale", piece.scale);
  });
}

/// Writes `values` on one line.
static void writeList(json::OStream &j, StringRef key,
                      llvm::ArrayRef<int64_t> values) {
  j.attributeBegin(key);
  j.rawValue(
      [&](llvm::raw_ostream &os) { os << json::Value(json::Array(values)); });
  j.attributeEnd();
}

void ucp::writeMapDocument(llvm::ArrayRef<ParamMap> maps,
                           llvm::raw_ostream &os) {
  std::vector<const ParamMap *> byPattern;
  for (const ParamMap &map : maps)
    byPattern.push_back(&map);
  llvm::sort(byPattern, [](const ParamMap *a, const ParamMap *b) {
    return getParamPattern(a->name) < getParamPattern(b->name);
  });

  json::OStream j(os, /*IndentSize=*/2);
  j.object([&] {
    j.attribute("version", 1);
    j.attributeObject("params", [&] {
      for (const ParamMap *map : byPattern) {
        std::map<int64_t, const Shard *> shardOfRank;
        for (const Shard &shard : map->shards)
          shardOfRank[shard.rank] = &shard;
        j.attributeObject(getParamPattern(map->name), [&] {
          writeList(j, "logical_shape", map->logicalShape);
          if (map->originalVocabSize)
            j.attribute("original_vocab_size", *map->originalVocabSize);
          j.attributeObject("ranks", [&] {
            for (int64_t rank = 0; rank < map->worldSize; ++rank) {
              auto it = shardOfRank.find(rank);
              j.attributeObject(std::to_string(rank), [&] {
                if (it == shardOfRank.end()) {
                  // A rank holding nothing is listed so that the world size
                  // survives the round trip.
                  writeList(j, "shard_shape",
                            Extents(map->logicalShape.size(), 0));
                  j.attributeArray("pieces", [] {});
                  return;
                }
                writeList(j, "shard_shape", it->second->shape);
                j.attributeArray("pieces", [&] {
                  for (const Piece &piece : it->second->pieces)
                    j.rawValue([&](llvm::raw_ostream &out) {
                      writePiece(piece, out);
                    });
                });
              });
            }
          });
        });
      }
    });
  });
  os << "\n";
}
