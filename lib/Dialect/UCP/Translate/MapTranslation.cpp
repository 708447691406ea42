//===- MapTranslation.cpp - Map documents <-> ucp modules -----------------===//

#include "ucp/Dialect/UCP/Translate/MapTranslation.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Dialect/UCP/IR/MapFileReader.h"
#include "ucp/Dialect/UCP/IR/ParamMapConversion.h"
#include "ucp/Dialect/UCP/IR/PlanConversion.h"
#include "ucp/Formats/Json/IndexMapDocument.h"
#include "ucp/Formats/Json/LegacyDocument.h"
#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Formats/Json/PlanDocument.h"
#include "ucp/Formats/Svg/Picture.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/InputFile.h"
#include "ucp/Support/NestingDepth.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace ucp;

/// Returns the plain maps of every `ucp.param` nested anywhere in `module`.
static std::vector<ParamMap> collectMaps(ModuleOp module) {
  std::vector<ParamMap> maps;
  module->walk([&](ParamOp param) { maps.push_back(toParamMap(param)); });
  return maps;
}

/// Returns a module at `fileLoc` whose body `build` fills (returning false
/// after emitting why it could not), once the op verifiers accept it.
static OwningOpRef<ModuleOp>
buildVerifiedModule(Location fileLoc,
                    llvm::function_ref<bool(OpBuilder &)> build) {
  fileLoc.getContext()->loadDialect<UCPDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  OpBuilder builder = OpBuilder::atBlockEnd(module->getBody());
  if (!build(builder) || failed(verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> ucp::importMapDocument(llvm::StringRef text,
                                             llvm::StringRef filename,
                                             MLIRContext *context) {
  context->loadDialect<UCPDialect>();
  Location fileLoc = FileLineColLoc::get(context, filename, 0, 0);
  llvm::Expected<std::vector<ParamMap>> maps = parseMapDocument(text);
  if (!maps) {
    emitError(fileLoc) << llvm::toString(maps.takeError());
    return nullptr;
  }
  return buildVerifiedModule(fileLoc, [&](OpBuilder &builder) {
    for (const ParamMap &map : *maps) {
      // Each op is located at its JSON path, so that later diagnostics say
      // where in the document the offending piece is.
      std::string paramPath = "$.params[\"" + getParamPattern(map.name) + "\"]";
      auto locate = [&](int shard, int piece) -> Location {
        std::string path = paramPath;
        if (shard >= 0)
          path += ".ranks[\"" + std::to_string(map.shards[shard].rank) + "\"]";
        if (piece >= 0)
          path += ".pieces[" + std::to_string(piece) + "]";
        return NameLoc::get(StringAttr::get(context, path), fileLoc);
      };
      buildParamOp(builder, fileLoc, map, locate);
    }
    return true;
  });
}

/// Builds a module holding the map `lower` returns for each of `items`;
/// emits the first error at `fileLoc` and returns null.
template <typename Item, typename LowerFn>
static OwningOpRef<ModuleOp> buildModule(llvm::ArrayRef<Item> items,
                                         Location fileLoc, LowerFn lower) {
  return buildVerifiedModule(fileLoc, [&](OpBuilder &builder) {
    for (const Item &item : items) {
      llvm::Expected<ParamMap> map = lower(item);
      // What a tool derives must be a valid map: an index map or metadata
      // that leaves elements uncovered or claims them twice is no layout.
      llvm::Error error = map ? checkParamMap(*map) : map.takeError();
      if (error) {
        emitError(fileLoc) << llvm::toString(std::move(error));
        return false;
      }
      buildParamOp(builder, fileLoc, *map);
    }
    return true;
  });
}

/// Imports an index-map document, deriving the canonical map of every
/// parameter.
OwningOpRef<ModuleOp> ucp::importIndexMapDocument(llvm::StringRef text,
                                                  llvm::StringRef filename,
                                                  MLIRContext *context) {
  Location fileLoc = FileLineColLoc::get(context, filename, 0, 0);
  llvm::Expected<std::vector<IndexMap>> indexMaps = parseIndexMapDocument(text);
  if (!indexMaps) {
    emitError(fileLoc) << llvm::toString(indexMaps.takeError());
    return nullptr;
  }
  return buildModule(llvm::ArrayRef<IndexMap>(*indexMaps), fileLoc,
                     deriveParamMap);
}

/// Imports legacy checkpoint metadata, lowering every parameter.
OwningOpRef<ModuleOp> ucp::importLegacyDocument(llvm::StringRef text,
                                                llvm::StringRef filename,
                                                MLIRContext *context) {
  Location fileLoc = FileLineColLoc::get(context, filename, 0, 0);
  llvm::Expected<LegacyDocument> document = parseLegacyDocument(text);
  if (!document) {
    emitError(fileLoc) << llvm::toString(document.takeError());
    return nullptr;
  }
  return buildModule(llvm::ArrayRef<LegacyParam>(document->params), fileLoc,
                     [&](const LegacyParam &param) {
                       return lowerLegacyParam(param, document->categories,
                                               document->tp);
                     });
}

/// Imports a plan document as a module of `ucp.plan` ops.
OwningOpRef<ModuleOp> ucp::importPlanDocument(llvm::StringRef text,
                                              llvm::StringRef filename,
                                              MLIRContext *context) {
  context->loadDialect<UCPDialect>();
  Location fileLoc = FileLineColLoc::get(context, filename, 0, 0);
  llvm::Expected<std::vector<TransferPlan>> plans = parsePlanDocument(text);
  if (!plans) {
    emitError(fileLoc) << llvm::toString(plans.takeError());
    return nullptr;
  }
  return buildVerifiedModule(fileLoc, [&](OpBuilder &builder) {
    for (const TransferPlan &plan : *plans)
      buildPlanOp(builder, fileLoc, plan);
    return true;
  });
}

OwningOpRef<ModuleOp>
ucp::parseMlirText(std::unique_ptr<llvm::MemoryBuffer> text,
                   MLIRContext *context) {
  context->loadDialect<UCPDialect>();
  Location fileLoc =
      FileLineColLoc::get(context, text->getBufferIdentifier(), 0, 0);
  if (llvm::Error error =
          checkNestingDepth(text->getBuffer(), TextSyntax::Mlir)) {
    emitError(fileLoc) << llvm::toString(std::move(error));
    return nullptr;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(text), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, context);
}

OwningOpRef<ModuleOp> ucp::readMapModule(llvm::StringRef path,
                                         MLIRContext *context) {
  context->loadDialect<UCPDialect>();
  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> file =
      readInputFile(path);
  if (!file) {
    // The message names the file already.
    emitError(UnknownLoc::get(context))
        << "cannot read the map " << llvm::toString(file.takeError());
    return nullptr;
  }
  OwningOpRef<ModuleOp> module =
      path.ends_with(".json")
          ? importMapDocument((*file)->getBuffer(), path, context)
          : parseMlirText(std::move(*file), context);
  if (!module)
    return nullptr;
  // What is not a map must not pass for an empty one: every tensor would
  // then be ignored.
  bool plans = false;
  size_t params = 0;
  module->walk([&](Operation *op) {
    plans |= isa<PlanOp>(op);
    params += isa<ParamOp>(op);
  });
  if (plans) {
    emitError(fileLoc) << path
                       << " holds transfer plans (ucp.plan), not parameter "
                          "maps (ucp.param)";
    return nullptr;
  }
  if (params == 0) {
    emitError(fileLoc) << path << " describes no parameters";
    return nullptr;
  }
  return module;
}

/// Returns the plain plans of every `ucp.plan` nested anywhere in `module`.
static std::vector<TransferPlan> collectPlans(ModuleOp module) {
  std::vector<TransferPlan> plans;
  module->walk([&](PlanOp plan) { plans.push_back(toTransferPlan(plan)); });
  return plans;
}

/// Refuses two ops named alike (from nested modules): a document keys its
/// entries by name, and would hold one of them twice.
template <typename OpT> static LogicalResult checkUniqueNames(ModuleOp module) {
  llvm::StringSet<> names;
  WalkResult result = module->walk([&](OpT op) {
    if (names.insert(op.getSymName()).second)
      return WalkResult::advance();
    op.emitError("'") << op.getSymName()
                      << "' appears twice in the module; a document keys "
                         "each name once";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

LogicalResult ucp::exportMapDocument(ModuleOp module, llvm::raw_ostream &os) {
  if (failed(checkUniqueNames<ParamOp>(module)))
    return failure();
  writeMapDocument(collectMaps(module), os);
  return success();
}

LogicalResult ucp::renderPicture(ModuleOp module, PictureFormat format,
                                 llvm::raw_ostream &os) {
  if (failed(checkUniqueNames<ParamOp>(module)) ||
      failed(checkUniqueNames<PlanOp>(module)))
    return failure();
  std::vector<ParamMap> maps = collectMaps(module);
  for (const ParamMap &map : maps)
    if (llvm::Error error = checkParamMap(map))
      return module.emitError() << llvm::toString(std::move(error));
  std::vector<TransferPlan> plans = collectPlans(module);
  if (maps.empty() && plans.empty())
    return module.emitError() << "no ucp.param or ucp.plan to draw";
  if (llvm::Error error = writePicture(maps, plans, format, os))
    return module.emitError() << llvm::toString(std::move(error));
  return success();
}

void ucp::printMapSummary(llvm::ArrayRef<ParamMap> maps,
                          llvm::raw_ostream &os) {
  size_t nameWidth = 9;
  for (const ParamMap &map : maps)
    nameWidth = std::max(nameWidth, map.name.size());

  os << llvm::left_justify("parameter", nameWidth) << "  "
     << llvm::left_justify("shape", 14) << " world  "
     << llvm::left_justify("pieces/rank", 18)
     << llvm::right_justify("elements", 12) << llvm::right_justify("stored", 12)
     << "  verify\n";
  int64_t pieces = 0, elements = 0, stored = 0, failing = 0;
  for (const ParamMap &map : maps) {
    VerifyReport report = verifyParamMap(map);
    std::string perRank;
    int64_t mapStored = 0;
    for (const RankAccount &account : report.ranks) {
      perRank += (perRank.empty() ? "" : " ") + std::to_string(account.pieces);
      pieces += account.pieces;
      mapStored += account.shardElements;
    }
    elements += report.elements;
    stored += mapStored;
    failing += !report.ok();
    os << llvm::left_justify(map.name, nameWidth) << "  "
       << llvm::left_justify(formatList(map.logicalShape), 14)
       << llvm::format_decimal(map.worldSize, 6) << "  "
       << llvm::left_justify(perRank, 18)
       << llvm::format_decimal(report.elements, 12)
       << llvm::format_decimal(mapStored, 12) << "  "
       << (report.ok()
               ? "ok"
               : std::to_string(report.violations.size()) + " violations")
       << "\n";
  }
  os << "total: " << maps.size() << " parameters, " << pieces << " pieces, "
     << elements << " elements of F, " << stored << " stored ("
     << llvm::format("%.2f", elements ? double(stored) / elements : 0.0)
     << "x replication), " << failing << " failing verification\n";
}

void ucp::printPlanSummary(llvm::ArrayRef<TransferPlan> plans,
                           llvm::raw_ostream &os) {
  size_t nameWidth = 9;
  for (const TransferPlan &plan : plans)
    nameWidth = std::max(nameWidth, plan.name.size());
  os << llvm::left_justify("parameter", nameWidth) << "  worlds  "
     << llvm::right_justify("copies", 7) << llvm::right_justify("fills", 6)
     << llvm::right_justify("copied", 12) << llvm::right_justify("remote", 12)
     << "\n";
  int64_t copies = 0, fills = 0, copied = 0, remote = 0;
  for (const TransferPlan &plan : plans) {
    int64_t planCopied = 0, planRemote = 0;
    for (const Segment &segment : plan.segments) {
      int64_t n = getNumElements(segment.shape).value_or(0);
      planCopied += n;
      if (segment.sourceRank != segment.targetRank)
        planRemote += n;
    }
    copies += plan.segments.size();
    fills += plan.fills.size();
    copied += planCopied;
    remote += planRemote;
    os << llvm::left_justify(plan.name, nameWidth) << "  "
       << llvm::left_justify(std::to_string(plan.sourceWorld) + "->" +
                                 std::to_string(plan.targetWorld),
                             6)
       << llvm::format_decimal(plan.segments.size(), 7)
       << llvm::format_decimal(plan.fills.size(), 6)
       << llvm::format_decimal(planCopied, 12)
       << llvm::format_decimal(planRemote, 12) << "\n";
  }
  os << "total: " << plans.size() << " plans, " << copies << " copies, "
     << fills << " fills, " << copied << " elements copied, " << remote
     << " of them between different ranks\n";
}

LogicalResult ucp::printModuleSummary(ModuleOp module, llvm::raw_ostream &os) {
  std::vector<ParamMap> maps = collectMaps(module);
  std::vector<TransferPlan> plans = collectPlans(module);
  if (!maps.empty() || plans.empty())
    printMapSummary(maps, os);
  if (!plans.empty())
    printPlanSummary(plans, os);
  return success();
}

LogicalResult ucp::exportPlanDocument(ModuleOp module, llvm::raw_ostream &os) {
  if (failed(checkUniqueNames<PlanOp>(module)))
    return failure();
  writePlanDocument(collectPlans(module), os);
  return success();
}

void ucp::registerMapFileReader() { setMapFileReader(&readMapModule); }
