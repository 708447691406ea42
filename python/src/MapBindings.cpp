//===- MapBindings.cpp - Maps, their documents and their verification -----===//
//
// ParamMap, Shard and Piece as Python classes with the fields of the map
// document; parsing and writing map documents; verification (P1, P5 and
// tiling, at O(pieces)) as a structured report whose violations name the
// rank, piece and element, with the tools' own messages; canonical form;
// the summary table of `affine-translate --summarize`.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Canonical/Canonicalize.h"
#include "ucp/Dialect/UCP/Translate/MapTranslation.h"
#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/CopyProgram.h"

#include "llvm/Support/raw_ostream.h"

using namespace ucp;
using namespace ucp::python;

static const char *getKindName(ViolationKind kind) {
  switch (kind) {
  case ViolationKind::Uncovered:
    return "uncovered";
  case ViolationKind::MixedLocations:
    return "mixed_locations";
  case ViolationKind::MixedScale:
    return "mixed_scale";
  case ViolationKind::LocationsNotHolders:
    return "locations_not_holders";
  case ViolationKind::ShardHole:
    return "shard_hole";
  case ViolationKind::ShardOverlap:
    return "shard_overlap";
  case ViolationKind::TooIrregular:
    return "too_irregular";
  }
  return "unknown";
}

/// A violation as a dict: its kind, the tools' message, the rank and piece
/// at fault (and the other of a pair), the first element and the count.
static py::dict describe(const ParamMap &map, const Violation &violation) {
  py::dict entry;
  entry["kind"] = getKindName(violation.kind);
  entry["message"] = describeViolation(map, violation);
  auto place = [&](const std::optional<PieceRef> &ref, const char *rank,
                   const char *piece) {
    entry[rank] = py::none();
    entry[piece] = py::none();
    if (ref && ref->shard < map.shards.size()) {
      entry[rank] = map.shards[ref->shard].rank;
      entry[piece] = ref->piece;
    }
  };
  place(violation.first, "rank", "piece");
  place(violation.second, "other_rank", "other_piece");
  if (violation.shard && *violation.shard < map.shards.size())
    entry["rank"] = map.shards[*violation.shard].rank;
  entry["holders"] = toList(violation.holders);
  entry["element"] = toList(violation.firstElement);
  entry["count"] = violation.count;
  return entry;
}

static py::dict verify(const ParamMap &map) {
  VerifyReport report = verifyParamMap(map);
  py::dict result;
  result["ok"] = report.ok();
  result["elements"] = report.elements;
  result["replicated_elements"] = report.replicatedElements;
  result["cells"] = report.cells;
  py::list ranks;
  for (const RankAccount &account : report.ranks) {
    py::dict entry;
    entry["rank"] = account.rank;
    entry["pieces"] = account.pieces;
    entry["shard_elements"] = account.shardElements;
    entry["piece_elements"] = account.pieceElements;
    ranks.append(entry);
  }
  result["ranks"] = ranks;
  py::list violations;
  for (const Violation &violation : report.violations)
    violations.append(describe(map, violation));
  result["violations"] = violations;
  // What the tools print for the map, all violations in one message.
  llvm::Error error = checkParamMap(map);
  result["message"] = error ? llvm::toString(std::move(error)) : "";
  return result;
}

static void bindPiece(py::module_ &m) {
  py::class_<Piece>(m, "Piece",
                    "A block of F and where it sits in F and in the shard "
                    "(spec §2): shape, two strided views, the ranks holding "
                    "it and the factor the shard holds it by.")
      .def(py::init([](std::vector<int64_t> shape, int64_t sourceOffset,
                       std::vector<int64_t> sourceStrides, int64_t destOffset,
                       std::vector<int64_t> destStrides,
                       std::vector<int64_t> locations, double scale) {
             Piece piece;
             piece.shape = toExtents(shape);
             piece.source = {sourceOffset, toExtents(sourceStrides)};
             piece.dest = {destOffset, toExtents(destStrides)};
             llvm::sort(locations);
             locations.erase(std::unique(locations.begin(), locations.end()),
                             locations.end());
             piece.locations.assign(locations.begin(), locations.end());
             piece.scale = scale;
             return piece;
           }),
           py::arg("shape"), py::arg("source_offset"),
           py::arg("source_strides"), py::arg("dest_offset"),
           py::arg("dest_strides"), py::arg("locations"),
           py::arg("scale") = 1.0)
      .def_property_readonly("shape",
                             [](const Piece &p) { return toList(p.shape); })
      .def_property_readonly("source_offset",
                             [](const Piece &p) { return p.source.offset; })
      .def_property_readonly(
          "source_strides",
          [](const Piece &p) { return toList(p.source.strides); })
      .def_property_readonly("dest_offset",
                             [](const Piece &p) { return p.dest.offset; })
      .def_property_readonly(
          "dest_strides", [](const Piece &p) { return toList(p.dest.strides); })
      .def_property_readonly("locations",
                             [](const Piece &p) { return toList(p.locations); })
      .def_readonly("scale", &Piece::scale)
      .def(py::self == py::self)
      .def("__repr__", [](const Piece &p) {
        return "Piece(shape=" + formatList(p.shape) + ", source=(" +
               std::to_string(p.source.offset) + ", " +
               formatList(p.source.strides) + "), dest=(" +
               std::to_string(p.dest.offset) + ", " +
               formatList(p.dest.strides) +
               "), locations=" + formatList(p.locations) +
               ", scale=" + formatScale(p.scale) + ")";
      });
}

static void bindShardAndMap(py::module_ &m) {
  py::class_<Shard>(m, "Shard", "One rank's shard: its shape and pieces.")
      .def(py::init([](int64_t rank, std::vector<int64_t> shape,
                       std::vector<Piece> pieces) {
             return Shard{rank, toExtents(shape), std::move(pieces)};
           }),
           py::arg("rank"), py::arg("shape"), py::arg("pieces"))
      .def_readonly("rank", &Shard::rank)
      .def_property_readonly("shape",
                             [](const Shard &s) { return toList(s.shape); })
      .def_readonly("pieces", &Shard::pieces)
      .def(py::self == py::self);
  py::class_<ParamMap>(m, "ParamMap",
                       "How one parameter F is spread over a world of ranks: "
                       "one Shard per rank that holds anything.")
      .def(py::init([](std::string name, std::vector<int64_t> shape,
                       int64_t world, std::vector<Shard> shards,
                       std::optional<int64_t> vocab) {
             llvm::sort(shards, [](const Shard &a, const Shard &b) {
               return a.rank < b.rank;
             });
             ParamMap map{std::move(name), toExtents(shape), world,
                          std::move(shards), vocab};
             // A map whose views leave their buffers never reaches the
             // verifier or the executor, which trust the local invariants.
             if (std::string error = checkMapInvariants(map); !error.empty())
               throw py::value_error("parameter '" + map.name + "': " +
                                     error);
             return map;
           }),
           py::arg("name"), py::arg("logical_shape"), py::arg("world_size"),
           py::arg("shards"), py::arg("original_vocab_size") = py::none())
      .def_readonly("name", &ParamMap::name)
      .def_property_readonly(
          "logical_shape",
          [](const ParamMap &p) { return toList(p.logicalShape); })
      .def_readonly("world_size", &ParamMap::worldSize)
      .def_readonly("shards", &ParamMap::shards)
      .def_readonly("original_vocab_size", &ParamMap::originalVocabSize)
      .def(py::self == py::self)
      .def("__repr__", [](const ParamMap &p) {
        size_t pieces = 0;
        for (const Shard &shard : p.shards)
          pieces += shard.pieces.size();
        return "ParamMap('" + p.name +
               "', shape=" + formatList(p.logicalShape) +
               ", world_size=" + std::to_string(p.worldSize) + ", " +
               std::to_string(pieces) + " pieces)";
      });
}

void ucp::python::bindMaps(py::module_ &m) {
  bindPiece(m);
  bindShardAndMap(m);
  m.def(
      "parse_maps",
      [](const std::string &text) { return unwrap(parseMapDocument(text)); },
      py::arg("text"),
      "Parses a map document (bare, wrapped as {'affine_map': ...}, or a "
      "whole universal_checkpoint_info); errors name the JSON path.");
  m.def(
      "write_maps",
      [](const std::vector<ParamMap> &maps) {
        return printToString(
            [&](llvm::raw_ostream &os) { writeMapDocument(maps, os); });
      },
      py::arg("maps"), "The map document of `maps`.");
  m.def("verify", &verify, py::arg("map"),
        "Checks P1, P5 and the tiling of every shard at O(pieces); returns "
        "the report (ok, elements, replicated_elements, cells, ranks, "
        "violations, message).");
  m.def(
      "canonicalize",
      [](const ParamMap &map) { return unwrap(canonicalizeParamMap(map)); },
      py::arg("map"), "The canonical form of a verified map.");
  m.def(
      "summarize",
      [](const std::vector<ParamMap> &maps) {
        return printToString(
            [&](llvm::raw_ostream &os) { printMapSummary(maps, os); });
      },
      py::arg("maps"), "affine-translate --summarize's table of `maps`.");
  m.def("full_tensor_map", &getFullTensorMap, py::arg("map"),
        "The map of one rank holding the whole of `map`'s F.");
}
