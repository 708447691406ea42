//===- Check.cpp - A checkpoint proven sound before training --------------===//
//
// Reads everything once, in this order: the reader's own checks (opening),
// each tensor's map, then tensor by tensor each state's shards (their
// replicated blocks compared, their values scanned, their pages released),
// then each torch.save file's records against their CRC-32s. Across a
// process group, the tensors, the paddings and the files are units of work
// divided by bytes; process 0 gathers the findings, by unit.
//
//===----------------------------------------------------------------------===//

#include "ucp/Jobs/Check.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Checkpoint/Invariants.h"
#include "ucp/Checkpoint/OpenReads.h"
#include "ucp/Checkpoint/ValueCheck.h"
#include "ucp/Engine/GroupOutputs.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Formats/Torch/TorchArchive.h"
#include "ucp/Jobs/OpenCheckpoint.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Crc32.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"

#include <mutex>

using namespace ucp;

namespace {

/// Checks one checkpoint's tensors and files into a report.
class Checker {
public:
  Checker(const CheckpointSource &source, const CheckOptions &options,
          CheckReport &report)
      : source(source), options(options), report(report) {}

  /// Divides the tensors, the paddings and the files among the processes
  /// of the options' group (all to this process without one), and returns
  /// what they must agree on: what they read and who checks what.
  GroupFingerprint divide();
  /// What this process's tensors and paddings read (its files are its
  /// own: getFileHolder pins them).
  std::vector<FileBytes> getReads() const;
  void checkTensors();
  void checkPaddings();
  void checkContainers();
  /// Collective with a group: process 0's report gains every process's
  /// findings, in unit order, and every report the group's totals.
  llvm::Error combine();
  std::string describeProven() const;

private:
  /// Marks the findings so far as those of unit `unit` (or before it).
  void endUnit(size_t unit) { unitEnds.push_back({unit, report.findings.size()}); }

  void checkState(size_t index, TensorState state, DType type);
  /// Scans the values of the `shards` (by rank) of `state` of tensor
  /// `index`; `replicas`: they were compared through the mapping, whose
  /// pages are released.
  void scanValues(size_t index, TensorState state, DType type,
                  const std::map<int64_t, const char *> &shards,
                  bool replicas);
  /// Bytes [from, from + bytes) of shard `rank` of a state.
  struct Stripe {
    int64_t rank, from, bytes;
  };
  /// Reads and scans `stripes` of `state` of tensor `index` (whose shards'
  /// bytes are `shards`) on parallel threads, noting their CRC-32s; a
  /// stripe that cannot be read gets its failure in `failures`.
  std::vector<ValueScan>
  scanStripes(size_t index, TensorState state, DType type,
              llvm::ArrayRef<Stripe> stripes,
              const std::map<int64_t, const char *> &shards,
              std::vector<std::string> &failures);
  /// A shard's values its state may not hold; `data` is the shard's.
  void addValueFinding(size_t index, TensorState state, DType type,
                       const ValueProblem &problem, const char *data);

  const CheckpointSource &source;
  const CheckOptions &options;
  CheckReport &report;
  std::mutex findingsMutex;
  size_t done = 0, total = 0;
  bool replicated = false;
  /// The units of work: each tensor, the paddings, each file, in order.
  OutputShare share;
  size_t paddingUnit = 0;
  /// CRC-32s of the file bytes the tensors' scans read.
  RangeCrcs readCrcs;
  /// Per unit checked here: its number and the findings up to its end.
  std::vector<std::pair<size_t, size_t>> unitEnds;
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
  scanValues(index, state, type, shards, replicas);
  std::lock_guard<std::mutex> lock(findingsMutex);
  for (const Shard &shard : map.shards)
    report.bytesRead += *getNumElements(shard.shape) * size;
  ++report.stateArrays;
}

void Checker::scanValues(size_t index, TensorState state, DType type,
                         const std::map<int64_t, const char *> &shards,
                         bool replicas) {
  const CheckpointTensor &tensor = source.getTensors()[index];
  const ParamMap &map = tensor.map;
  int64_t size = getElementSize(type);
  // Each shard is read from its file in stripes on parallel threads (a
  // tensor may lie wholly on one rank), each stripe a chunk at a time into
  // memory that stays in the cache, and scanned there: a scan through the
  // mapping waits on a page fault and a cold miss per 4 KiB page.
  constexpr int64_t kStripeBytes = int64_t(4) << 20;
  std::vector<Stripe> stripes;
  // Each shard's scan: read whole on open, or its stripes' joined.
  std::map<int64_t, ValueScan> wholes;
  const OpenReads *openReads = source.getOpenReads();
  for (const Shard &shard : map.shards) {
    if (!shards.count(shard.rank))
      continue;
    if (std::optional<ValueScan> scan =
            openReads ? openReads->findScan(index, state, shard.rank)
                      : std::nullopt) {
      wholes.emplace(shard.rank, *scan);
      continue;
    }
    int64_t bytes = *getNumElements(shard.shape) * size;
    for (int64_t from = 0; from < bytes; from += kStripeBytes)
      stripes.push_back({shard.rank, from, std::min(kStripeBytes, bytes - from)});
  }
  std::vector<std::string> failures;
  std::vector<ValueScan> scans =
      scanStripes(index, state, type, stripes, shards, failures);
  // The findings in shard order.
  std::map<int64_t, std::string> failed;
  for (size_t k = 0; k < stripes.size(); ++k) {
    int64_t rank = stripes[k].rank;
    wholes.try_emplace(rank, state, type, rank).first->second.append(scans[k]);
    if (!failures[k].empty())
      failed.try_emplace(rank, failures[k]);
  }
  std::string stateName = getStateName(state).str();
  for (const Shard &shard : map.shards) {
    auto whole = wholes.find(shard.rank);
    if (whole == wholes.end())
      continue; // Not held here.
    const char *data = shards.at(shard.rank);
    if (auto failure = failed.find(shard.rank); failure != failed.end()) {
      std::lock_guard<std::mutex> lock(findingsMutex);
      report.findings.push_back(
          {"container",
           "tensor '" + tensor.name + "', " + stateName + ", rank " +
               std::to_string(shard.rank) + ": " + failure->second,
           source.getShardFile(index, state, shard.rank), tensor.name,
           stateName, shard.rank, {}, 0, true});
      continue;
    }
    for (const ValueProblem &problem : whole->second.getProblems())
      addValueFinding(index, state, type, problem, data);
    if (replicas) // Compared through the mapping.
      source.releaseShard(index, state, shard.rank, data,
                          *getNumElements(shard.shape) * size);
  }
}

std::vector<ValueScan> Checker::scanStripes(
    size_t index, TensorState state, DType type,
    llvm::ArrayRef<Stripe> stripes,
    const std::map<int64_t, const char *> &shards,
    std::vector<std::string> &failures) {
  constexpr size_t kChunkBytes = size_t(256) << 10;
  int64_t size = getElementSize(type);
  std::vector<ValueScan> scans;
  for (const Stripe &stripe : stripes)
    scans.emplace_back(state, type, stripe.rank);
  failures.assign(stripes.size(), "");
  llvm::parallelFor(0, stripes.size(), [&](size_t k) {
    const Stripe &stripe = stripes[k];
    uint32_t crc = 0;
    if (llvm::Error error = source.readShard(
            index, state, stripe.rank, stripe.from, stripe.bytes, kChunkBytes,
            [&](llvm::StringRef chunk, size_t) {
              scans[k].add(chunk.data(), chunk.size() / size);
              crc = combineCrc32(crc, computeCrc32(chunk), chunk.size());
            })) {
      failures[k] = llvm::toString(std::move(error));
      return;
    }
    // The CRC of bytes read here: the check of the file's records does not
    // read them again.
    if (const llvm::MemoryBuffer *file =
            source.getShardBuffer(index, state, stripe.rank))
      readCrcs.add(file->getBufferIdentifier(),
                   shards.at(stripe.rank) + stripe.from -
                       file->getBufferStart(),
                   stripe.bytes, crc);
  });
  return scans;
}

GroupFingerprint Checker::divide() {
  llvm::ArrayRef<CheckpointTensor> tensors = source.getTensors();
  for (const CheckpointTensor &tensor : tensors) {
    int64_t bytes = 0;
    for (auto [state, type] : tensor.states)
      for (const Shard &shard : tensor.map.shards)
        bytes += getNumElements(shard.shape).value_or(0) * getElementSize(type);
    share.add(tensor.name, bytes);
  }
  int64_t paddingBytes = 0;
  for (const CheckpointSource::Padding &padding : source.getPaddings())
    paddingBytes += padding.elements * getElementSize(padding.type);
  paddingUnit = share.add("the paddings", paddingBytes);
  for (const std::string &file : source.getFiles()) {
    uint64_t size = 0;
    if (llvm::sys::fs::file_size(file, size))
      size = 0; // Its reading fails, and says so, in checkContainers.
    // Named within the checkpoint: each process of a node-local input
    // reads a folder of its own.
    llvm::StringRef name = file;
    if (name.consume_front(source.getPath()))
      name = name.ltrim('/');
    share.add(name, int64_t(size),
              options.getFileHolder ? options.getFileHolder(file) : -1);
  }
  share.divide(options.group);
  // Progress counts tensors and files.
  total = share.countMine() - share.isMine(paddingUnit);
  GroupFingerprint plan;
  plan.addValue("the job", "check");
  addInputFiles(plan, source.getPath(), source.getFiles());
  for (const CheckpointTensor &tensor : tensors)
    plan.addMap("the map of '" + tensor.name + "'", tensor.map);
  share.addTo(plan);
  return plan;
}

std::vector<FileBytes> Checker::getReads() const {
  std::vector<FileBytes> reads;
  for (auto [index, tensor] : llvm::enumerate(source.getTensors()))
    if (share.isMine(index))
      for (auto [state, type] : tensor.states)
        source.addStateBytes(index, state, reads);
  if (share.isMine(paddingUnit))
    for (const CheckpointSource::Padding &padding : source.getPaddings())
      reads.push_back({padding.file, padding.offset,
                       padding.elements * getElementSize(padding.type)});
  return reads;
}

void Checker::checkTensors() {
  if (const OpenReads *openReads = source.getOpenReads())
    readCrcs.addAll(openReads->crcs);
  llvm::ArrayRef<CheckpointTensor> tensors = source.getTensors();
  report.tensors = tensors.size();
  for (auto [index, tensor] : llvm::enumerate(tensors)) {
    report.ranks = std::max(report.ranks, tensor.map.worldSize);
    if (!share.isMine(index))
      continue;
    if (llvm::Error error = checkParamMap(tensor.map)) {
      // Shards of a map that does not hold are not read.
      report.findings.push_back({"map", llvm::toString(std::move(error)), "",
                                 tensor.name, "", -1, {}, 0, true});
    } else {
      for (auto [state, type] : tensor.states)
        checkState(index, state, type);
    }
    endUnit(index);
    llvm::consumeError(
        reportProgress(options.progress, ++done, total, report.bytesRead));
  }
}

void Checker::checkPaddings() {
  if (!share.isMine(paddingUnit))
    return;
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
  endUnit(paddingUnit);
}

void Checker::checkContainers() {
  std::vector<std::string> files = source.getFiles();
  report.files = files.size();
  for (auto [f, file] : llvm::enumerate(files)) {
    size_t unit = paddingUnit + 1 + f;
    if (!share.isMine(unit))
      continue;
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
            (*archive)->findCrcMismatches(&readCrcs);
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
    endUnit(unit);
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

/// The fatal findings of `report`.
static int64_t countFatal(const CheckReport &report) {
  return llvm::count_if(report.findings,
                        [](const CheckFinding &f) { return f.fatal; });
}

/// The checkpoint at `path`, opened with `share` on every process of the
/// options' group, after bringing what opening reads where it is
/// node-local.
static llvm::Expected<std::unique_ptr<CheckpointSource>>
openOnEveryProcess(llvm::StringRef path, CheckShare share,
                   const CheckOptions &options) {
  llvm::Error supplied =
      options.supplyInput
          ? supplyOpenReads(path, share, options.group, options.supplyInput)
          : llvm::Error::success();
  llvm::Expected<std::unique_ptr<CheckpointSource>> source =
      supplied ? llvm::Expected<std::unique_ptr<CheckpointSource>>(
                     std::move(supplied))
               : openCheckpoint(path, share);
  llvm::Error opened = source ? llvm::Error::success() : source.takeError();
  if (options.group)
    opened = options.group->agree(std::move(opened));
  if (opened)
    return std::move(opened);
  return source;
}

CheckReport ucp::checkCheckpoint(llvm::StringRef path,
                                 const CheckOptions &options) {
  CheckReport report;
  report.path = followCheckpointPointer(path, report.pointer);
  // Across a group, each process makes its part of the reader's checks,
  // and one process that cannot read it stops every one.
  // The reader keeps what it reads whole on opening: not read again here.
  CheckShare share;
  share.keepReads = true;
  if (options.group) {
    share.process = options.group->getProcess();
    share.processes = options.group->getProcessCount();
  }
  llvm::Expected<std::unique_ptr<CheckpointSource>> source =
      openOnEveryProcess(report.path, share, options);
  if (!source) {
    std::string error = llvm::toString(source.takeError());
    report.findings.push_back(
        {"reader", error, report.path, "", "", -1, {}, 0, true});
    report.summary = "nothing proven: the checkpoint could not be read";
    report.showFolderAs(path, options.shownPath);
    return report;
  }
  Checker checker(**source, options, report);
  GroupFingerprint plan = checker.divide();
  // Processes that read other files would each check a part of their own
  // checkpoint, and a unit none of them holds would go unchecked.
  llvm::Error agreed = options.group ? agreeOnFingerprint(*options.group, plan)
                                     : llvm::Error::success();
  const char *unproven =
      "nothing proven: the processes disagree on the checkpoint";
  if (!agreed && options.supplyInput) {
    agreed =
        supplyReads(options.supplyInput, options.group, checker.getReads());
    unproven = "nothing proven: the processes could not bring the bytes "
               "they check";
  }
  if (agreed) {
    std::string error = llvm::toString(std::move(agreed));
    report.findings.push_back({"group", error, "", "", "", -1, {}, 0, true});
    report.summary = unproven;
    report.showFolderAs(path, options.shownPath);
    return report;
  }
  checker.checkTensors();
  checker.checkPaddings();
  checker.checkContainers();
  // Each process's findings name its own folder: the one shown, before
  // process 0 gathers them.
  report.showFolderAs(path, options.shownPath);
  std::vector<int64_t> fatal = {countFatal(report)};
  llvm::Error combined = checker.combine();
  if (!combined)
    combined = sumOverGroup(options.group, fatal);
  if (combined) {
    report.findings.push_back({"group",
                               "the processes could not combine their "
                               "reports: " +
                                   llvm::toString(std::move(combined)),
                               "", "", "", -1, {}, 0, true});
  } else if (options.group && options.group->getProcess() != 0) {
    // Process 0 reports; the others say only whether it is sound.
    report.findings.clear();
    if (fatal[0])
      report.findings.push_back({"group",
                                 std::to_string(fatal[0]) +
                                     " findings, reported by process 0",
                                 "", "", "", -1, {}, 0, true});
  }
  int64_t found = countFatal(report);
  report.summary = found == 0 ? checker.describeProven()
                              : std::to_string(found) +
                                    (found == 1 ? " finding" : " findings");
  return report;
}

/// Collective: process `from`'s `text` on process 0 (others: empty).
static llvm::Expected<std::string> sendToFirst(ProcessGroup &group, int from,
                                               std::string text) {
  std::vector<int64_t> size = {
      group.getProcess() == from ? int64_t(text.size()) : 0};
  if (llvm::Error error = group.reduce(size, ProcessGroup::Reduction::Max))
    return std::move(error);
  text.resize(size[0]);
  if (llvm::Error error = group.broadcast({text.data(), text.size()}, from))
    return std::move(error);
  return group.getProcess() == 0 ? text : std::string();
}

llvm::Error Checker::combine() {
  ProcessGroup *group = options.group;
  if (!group)
    return llvm::Error::success();
  // This process's findings, each with its unit.
  llvm::json::Array mine;
  size_t at = 0;
  for (auto [unit, end] : unitEnds)
    for (; at < end; ++at) {
      llvm::json::Object finding = toJson(report.findings[at]);
      finding["unit"] = int64_t(unit);
      mine.push_back(std::move(finding));
    }
  std::string text = llvm::formatv("{0}", llvm::json::Value(std::move(mine)));
  std::vector<std::pair<int64_t, CheckFinding>> all;
  for (int from = 0; from < group->getProcessCount(); ++from) {
    llvm::Expected<std::string> sent = sendToFirst(*group, from, text);
    if (!sent)
      return sent.takeError();
    if (sent->empty())
      continue;
    llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(*sent);
    if (!parsed)
      return parsed.takeError();
    const llvm::json::Array *findings = parsed->getAsArray();
    if (!findings)
      return makeError("process " + std::to_string(from) +
                       " sent findings that are not a list");
    for (const llvm::json::Value &value : *findings)
      if (const llvm::json::Object *object = value.getAsObject())
        all.push_back({object->getInteger("unit").value_or(0),
                       findingFromJson(*object)});
  }
  if (group->getProcess() == 0) {
    llvm::stable_sort(all, [](const auto &a, const auto &b) {
      return a.first < b.first;
    });
    report.findings.clear();
    for (auto &[unit, finding] : all)
      report.findings.push_back(std::move(finding));
  }
  std::vector<int64_t> totals = {int64_t(report.stateArrays),
                                 int64_t(report.records),
                                 int64_t(report.paddings), report.bytesRead,
                                 replicated};
  if (llvm::Error error = sumOverGroup(group, totals))
    return error;
  report.stateArrays = totals[0];
  report.records = totals[1];
  report.paddings = totals[2];
  report.bytesRead = totals[3];
  replicated = totals[4] != 0;
  return llvm::Error::success();
}
