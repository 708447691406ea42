//===- Check.cpp - A checkpoint proven sound before training --------------===//
//
// Reads everything once, in this order: the reader's own checks (opening),
// each tensor's map, then tensor by tensor each state's shards (their
// replicated blocks compared, their values scanned, their pages released),
// then each torch.save file's records against their CRC-32s.
//
//===----------------------------------------------------------------------===//

#include "ucp/Jobs/Check.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Checkpoint/Invariants.h"
#include "ucp/Checkpoint/ValueCheck.h"
#include "ucp/Formats/Torch/TorchArchive.h"
#include "ucp/Jobs/OpenCheckpoint.h"
#include "ucp/Map/Indexing.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"

#include <mutex>

using namespace ucp;

bool CheckReport::isSound() const {
  return llvm::none_of(findings, [](const CheckFinding &f) { return f.fatal; });
}

namespace {

/// Checks one checkpoint's tensors and files into a report.
class Checker {
public:
  Checker(const CheckpointSource &source, const CheckOptions &options,
          CheckReport &report)
      : source(source), options(options), report(report) {}

  void checkTensors();
  void checkPaddings();
  void checkContainers();
  std::string describeProven() const;

private:
  void checkState(size_t index, TensorState state, DType type);
  /// A shard's values its state may not hold; `data` is the shard's.
  void addValueFinding(size_t index, TensorState state, DType type,
                       const ValueProblem &problem, const char *data);

  const CheckpointSource &source;
  const CheckOptions &options;
  CheckReport &report;
  std::mutex findingsMutex;
  size_t done = 0, total = 0;
  bool replicated = false;
};

} // namespace

void Checker::addValueFinding(size_t index, TensorState state, DType type,
                              const ValueProblem &problem, const char *data) {
  const CheckpointTensor &tensor = source.getTensors()[index];
  CheckFinding finding;
  finding.kind = "values";
  finding.file = source.getShardFile(index, state, problem.rank);
  finding.tensor = tensor.name;
  finding.state = getStateName(state).str();
  finding.rank = problem.rank;
  finding.count = problem.count;
  finding.element = locateElement(tensor.map, problem.rank, problem.first)
                        .value_or(Extents{problem.first});
  finding.fatal = isFatal(state, problem, options.nonFiniteWeightsFatal);
  finding.message =
      describeValueProblem(tensor.map, state, type, problem, finding.file,
                           data) +
      (finding.fatal ? "" : " (weights: reported, not fatal)");
  std::lock_guard<std::mutex> lock(findingsMutex);
  report.findings.push_back(std::move(finding));
}

void Checker::checkState(size_t index, TensorState state, DType type) {
  const CheckpointTensor &tensor = source.getTensors()[index];
  const ParamMap &map = tensor.map;
  int64_t size = getElementSize(type);
  std::map<int64_t, const char *> shards;
  for (const Shard &shard : map.shards)
    if (const char *data = source.getShard(index, state, shard.rank))
      shards[shard.rank] = data;
  // P2: every block several ranks hold, the same bytes on each.
  bool replicas = llvm::any_of(map.shards, [](const Shard &shard) {
    return llvm::any_of(shard.pieces,
                        [](const Piece &p) { return p.locations.size() > 1; });
  });
  replicated |= replicas;
  if (replicas && shards.size() == map.shards.size()) {
    llvm::Expected<std::optional<ReplicaMismatch>> mismatch =
        findReplicaMismatch(map, shards, size);
    CheckFinding finding;
    finding.kind = "replicas";
    finding.tensor = tensor.name;
    finding.state = getStateName(state).str();
    if (!mismatch) {
      finding.message = llvm::toString(mismatch.takeError());
    } else if (*mismatch) {
      const ReplicaMismatch &bad = **mismatch;
      finding.rank = bad.second;
      finding.element = bad.element;
      finding.file = source.getShardFile(index, state, bad.second);
      finding.message = llvm::formatv(
          "tensor '{0}', {1}: ranks {2} ({3}) and {4} ({5}) hold different "
          "values for replicated element {6} of F (P2), which every holder "
          "keeps equal",
          tensor.name, finding.state, bad.first,
          source.getShardFile(index, state, bad.first), bad.second,
          finding.file, formatList(bad.element));
    }
    if (!finding.message.empty()) {
      std::lock_guard<std::mutex> lock(findingsMutex);
      report.findings.push_back(std::move(finding));
    }
  }
  llvm::parallelFor(0, map.shards.size(), [&](size_t s) {
    const Shard &shard = map.shards[s];
    auto found = shards.find(shard.rank);
    if (found == shards.end())
      return;
    int64_t elements = *getNumElements(shard.shape);
    for (const ValueProblem &problem : findValueProblems(
             state, type, shard.rank, found->second, elements))
      addValueFinding(index, state, type, problem, found->second);
    source.releaseShard(index, state, shard.rank, found->second,
                        elements * size);
  });
  std::lock_guard<std::mutex> lock(findingsMutex);
  for (const Shard &shard : map.shards)
    report.bytesRead += *getNumElements(shard.shape) * size;
  ++report.stateArrays;
}

void Checker::checkTensors() {
  llvm::ArrayRef<CheckpointTensor> tensors = source.getTensors();
  total = tensors.size() + source.getFiles().size();
  report.tensors = tensors.size();
  for (auto [index, tensor] : llvm::enumerate(tensors)) {
    report.ranks = std::max(report.ranks, tensor.map.worldSize);
    if (llvm::Error error = checkParamMap(tensor.map)) {
      // Shards of a map that does not hold are not read.
      report.findings.push_back({"map", llvm::toString(std::move(error)), "",
                                 tensor.name, "", -1, {}, 0, true});
      continue;
    }
    for (auto [state, type] : tensor.states)
      checkState(index, state, type);
    llvm::consumeError(
        reportProgress(options.progress, ++done, total, report.bytesRead));
  }
}

void Checker::checkPaddings() {
  for (const CheckpointSource::Padding &padding : source.getPaddings()) {
    int64_t size = getElementSize(padding.type), nonzero = 0, first = -1;
    for (int64_t i = 0; i < padding.elements; ++i) {
      const char *element = padding.data + i * size;
      bool zero = std::all_of(element, element + size,
                              [](char byte) { return byte == 0; });
      if (!zero && nonzero++ == 0)
        first = i;
    }
    report.bytesRead += padding.elements * size;
    ++report.paddings;
    if (nonzero)
      report.findings.push_back(
          {"padding",
           llvm::formatv("{0}: {1}: {2} of its {3} padding elements (from "
                         "element {4}) are not zero, the first element {5}: "
                         "ZeRO pads its flat partitions with zeros",
                         padding.file, padding.what, nonzero, padding.elements,
                         padding.firstElement, padding.firstElement + first),
           padding.file, "", "", -1, {padding.firstElement + first}, nonzero,
           true});
  }
}

void Checker::checkContainers() {
  std::vector<std::string> files = source.getFiles();
  report.files = files.size();
  for (const std::string &file : files) {
    if (llvm::StringRef(file).ends_with(".pt")) {
      llvm::Expected<std::unique_ptr<TorchArchive>> archive =
          TorchArchive::open(file);
      if (!archive) {
        report.findings.push_back({"container",
                                   llvm::toString(archive.takeError()), file,
                                   "", "", -1, {}, 0, true});
      } else {
        report.records += (*archive)->getRecordNames().size();
        report.bytesRead += (*archive)->getBuffer().getBufferSize();
        llvm::Expected<std::vector<TorchArchive::CrcMismatch>> mismatches =
            (*archive)->findCrcMismatches();
        if (!mismatches)
          report.findings.push_back({"container",
                                     llvm::toString(mismatches.takeError()),
                                     file, "", "", -1, {}, 0, true});
        for (const TorchArchive::CrcMismatch &bad :
             mismatches ? *mismatches
                        : std::vector<TorchArchive::CrcMismatch>())
          report.findings.push_back(
              {"container",
               llvm::formatv("{0}: record '{1}' has CRC-32 {2:x8}, but the "
                             "zip directory records {3:x8} (its bytes "
                             "changed after it was written)",
                             file, bad.name, bad.computed, bad.recorded),
               file, "", "", -1, {}, 0, true});
      }
    }
    llvm::consumeError(
        reportProgress(options.progress, ++done, total, report.bytesRead));
  }
}

std::string Checker::describeProven() const {
  auto count = [](int64_t n, llvm::StringRef noun) {
    return std::to_string(n) + " " + noun.str() + (n == 1 ? "" : "s");
  };
  std::string proven = count(report.tensors, "tensor") + " (" +
                       count(report.stateArrays, "state array") + ") over " +
                       count(report.ranks, "rank") + ", " +
                       count(report.files, "file") + " (" +
                       count(report.records, "record") + "): ";
  std::vector<std::string> what = {"read as the format promises",
                                   "maps verified (P1, P5, tiling)"};
  if (replicated)
    what.push_back("replicas equal (P2)");
  what.push_back("masters and moments finite, exp_avg_sq >= 0");
  if (report.paddings)
    what.push_back("padding zero");
  if (report.records)
    what.push_back("every record's CRC-32 as recorded");
  return proven + llvm::join(what, ", ");
}

CheckReport ucp::checkCheckpoint(llvm::StringRef path,
                                 const CheckOptions &options) {
  CheckReport report;
  report.path = followCheckpointPointer(path, report.pointer);
  llvm::Expected<std::unique_ptr<CheckpointSource>> source =
      openCheckpoint(report.path);
  if (!source) {
    report.findings.push_back({"reader", llvm::toString(source.takeError()),
                               report.path, "", "", -1, {}, 0, true});
    report.summary = "nothing proven: the checkpoint could not be read";
    return report;
  }
  Checker checker(**source, options, report);
  checker.checkTensors();
  checker.checkPaddings();
  checker.checkContainers();
  int64_t fatal = llvm::count_if(report.findings,
                                 [](const CheckFinding &f) { return f.fatal; });
  report.summary = fatal == 0 ? checker.describeProven()
                              : std::to_string(fatal) +
                                    (fatal == 1 ? " finding" : " findings");
  return report;
}

llvm::json::Value ucp::toJson(const CheckReport &report) {
  llvm::json::Array findings;
  for (const CheckFinding &f : report.findings) {
    llvm::json::Object finding{{"kind", f.kind},
                               {"message", f.message},
                               {"fatal", f.fatal}};
    if (!f.file.empty())
      finding["file"] = f.file;
    if (!f.tensor.empty())
      finding["tensor"] = f.tensor;
    if (!f.state.empty())
      finding["state"] = f.state;
    if (f.rank >= 0)
      finding["rank"] = f.rank;
    if (!f.element.empty())
      finding["element"] = llvm::json::Array(f.element);
    if (f.count)
      finding["count"] = f.count;
    findings.push_back(std::move(finding));
  }
  llvm::json::Object object{{"path", report.path},
                            {"sound", report.isSound()},
                            {"summary", report.summary},
                            {"tensors", int64_t(report.tensors)},
                            {"state_arrays", int64_t(report.stateArrays)},
                            {"ranks", report.ranks},
                            {"files", int64_t(report.files)},
                            {"records", int64_t(report.records)},
                            {"paddings", int64_t(report.paddings)},
                            {"bytes_read", report.bytesRead},
                            {"findings", std::move(findings)}};
  if (!report.pointer.empty())
    object["pointer"] = report.pointer;
  return object;
}
