//===- UniversalTemplates.cpp - The optimizer files of a Universal folder -===//
//
// A Universal folder keeps what the optimizer files held beside the
// partitions in `zero/optimizer_state.pt`: for ZeRO-1/2 the optimizer's
// dict less the torch optimizer's state, the fp32 partitions and
// param_slice_mappings, plus the param_groups; for ZeRO-3 rank 0's whole
// dict plus the param_groups. The steps of ZeRO-1/2 are in each
// parameter's `step.pt`. From these each TP rank's optimizer file is
// rebuilt in the stage's own form (the keys in their order, the torch
// optimizer's state per group with its step), every partition an empty
// placeholder. It is written to a private temporary file, read back into
// memory under optimizer_state.pt's name, and the file removed.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "JobReads.h"
#include "ucp/Formats/Torch/TorchFileWriter.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace {

/// A document under construction and the new storages it names.
struct TemplateBuilder {
  PickleBuilder b;
  int64_t nextKey = 0;
  /// Key and bytes of each new storage.
  std::vector<std::pair<std::string, std::string>> storages;

  /// An empty fp32 tensor, where a partition was.
  PickleRef placeholder(bool requiresGrad) {
    std::string key = std::to_string(nextKey++);
    storages.push_back({key, ""});
    return b.tensor(b.storage(key, DType::F32, 0), 0, {0}, {1}, requiresGrad);
  }
  /// A 0-d fp32 tensor of the 4 bytes `bits`.
  PickleRef step(llvm::StringRef bits) {
    std::string key = std::to_string(nextKey++);
    storages.push_back({key, bits.str()});
    return b.tensor(b.storage(key, DType::F32, 1), 0, {}, {}, false);
  }
};

} // namespace

/// The step of group `g`: the 0-d fp32 tensor of every one of its
/// parameters' step.pt, which must agree.
static Expected<std::string>
readGroupStep(llvm::StringRef folder, llvm::ArrayRef<DeepSpeedParam> params,
              size_t g) {
  std::optional<std::string> step;
  for (const DeepSpeedParam &param : params) {
    if (param.group != g)
      continue;
    llvm::SmallString<256> name(folder);
    path::append(name, "zero", param.name, "step.pt");
    Expected<std::unique_ptr<TorchFile>> file = TorchFile::open(name);
    if (!file)
      return file.takeError();
    PickleCursor root((*file)->getDocument());
    TensorData tensor;
    if (root.is(PickleValue::Tensor))
      tensor = (*file)->getTensor(root.getRef());
    if (!root.is(PickleValue::Tensor) || tensor.dtype != DType::F32 ||
        !tensor.shape.empty())
      return makeError(name + ": not a 0-d fp32 tensor");
    std::string bits(tensor.data, 4);
    if (step && *step != bits)
      return makeError(name + ": a step other than the rest of group " +
                       std::to_string(g) + "'s");
    step = bits;
  }
  if (!step)
    return makeError(folder + ": parameter group " + std::to_string(g) +
                     " has no parameter, so no step");
  return *step;
}

/// ZeRO-1/2: DeepSpeedZeroOptimizer's (or BF16_Optimizer's) dict.
static Expected<PickleRef> buildZero12States(TemplateBuilder &t,
                                             const DeepSpeedCheckpoint &ckpt,
                                             const PickleCursor &saved,
                                             size_t groups) {
  llvm::DenseMap<PickleRef, PickleRef> copied;
  const PickleDocument &from = saved.getDocument();
  Expected<PickleCursor> paramGroups = saved.at("param_groups");
  if (!paramGroups)
    return paramGroups.takeError();
  std::vector<std::pair<PickleRef, PickleRef>> state;
  std::vector<PickleRef> partitions;
  for (size_t g = 0; g < groups; ++g) {
    partitions.push_back(t.placeholder(true));
    if (!ckpt.hasState(g, TensorState::ExpAvg))
      continue; // Saved before its first step: no state, no step.
    Expected<std::string> step =
        readGroupStep(ckpt.getFolder(), ckpt.getParams(), g);
    if (!step)
      return step.takeError();
    state.push_back(
        {t.b.integer(g),
         t.b.dict({{t.b.string("step"), t.step(*step)},
                   {t.b.string("exp_avg"), t.placeholder(false)},
                   {t.b.string("exp_avg_sq"), t.placeholder(false)}})});
  }
  PickleRef base = t.b.dict({{t.b.string("state"), t.b.dict(state)},
                             {t.b.string("param_groups"),
                              t.b.copy(from, paramGroups->getRef(), copied)}});
  Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
      saved.getStringItems();
  if (!items)
    return items.takeError();
  std::vector<std::pair<PickleRef, PickleRef>> out;
  bool placed = false;
  for (const auto &[key, value] : *items) {
    if (key == "param_groups")
      continue;
    out.push_back({t.b.string(key), t.b.copy(from, value.getRef(), copied)});
    // Both optimizers save the torch state and the fp32 partitions right
    // after clip_grad.
    if (key == "clip_grad") {
      out.push_back({t.b.string("base_optimizer_state"), base});
      out.push_back({t.b.string("single_partition_of_fp32_groups"),
                     t.b.list(partitions)});
      placed = true;
    }
  }
  if (!placed)
    return saved.fail("no clip_grad, after which the optimizer's state goes");
  out.push_back({t.b.string("param_slice_mappings"),
                 t.b.list(std::vector<PickleRef>(
                     groups, t.b.dict({}, /*ordered=*/true)))});
  return t.b.dict(out);
}

/// ZeRO-3: rank 0's dict as it was, the added param_groups dropped.
static Expected<PickleRef>
buildZero3States(TemplateBuilder &t, const PickleCursor &saved, size_t groups) {
  llvm::DenseMap<PickleRef, PickleRef> copied;
  const PickleDocument &from = saved.getDocument();
  Expected<PickleCursor> flat = saved.at("fp32_flat_groups");
  Expected<PickleCursor> inner = saved.at("optimizer_state_dict");
  if (!flat || !inner)
    return flat ? inner.takeError() : flat.takeError();
  Expected<PickleCursor> state = inner->at("state");
  if (!state)
    return state.takeError();
  Expected<std::vector<std::pair<int64_t, PickleCursor>>> moments =
      state->getIntItems();
  if (!moments)
    return moments.takeError();
  if (moments->size() != groups)
    return state->fail("holds " + std::to_string(moments->size()) +
                       " groups, the model states " + std::to_string(groups));
  for (size_t g = 0; g < groups; ++g) {
    Expected<PickleCursor> partition = flat->at(g);
    if (!partition)
      return partition.takeError();
    copied[partition->getRef()] = t.placeholder(partition->get().requiresGrad);
    for (llvm::StringRef name : {"exp_avg", "exp_avg_sq"}) {
      Expected<PickleCursor> moment = (*moments)[g].second.at(name);
      if (!moment)
        return moment.takeError();
      copied[moment->getRef()] = t.placeholder(false);
    }
  }
  Expected<std::vector<std::pair<std::string, PickleCursor>>> items =
      saved.getStringItems();
  if (!items)
    return items.takeError();
  std::vector<std::pair<PickleRef, PickleRef>> out;
  for (const auto &[key, value] : *items)
    if (key != "param_groups")
      out.push_back({t.b.string(key), t.b.copy(from, value.getRef(), copied)});
  return t.b.dict(out, saved.get().module == "collections");
}

Expected<std::unique_ptr<llvm::MemoryBuffer>> ucp::writeTemplateFile(
    const PickleDocument &document,
    llvm::ArrayRef<std::pair<std::string, std::string>> storages,
    const TorchFile *source) {
  llvm::SmallString<128> dir;
  if (std::error_code error = fs::createUniqueDirectory("ucp-template", dir))
    return makeError("a temporary folder: " + error.message());
  llvm::SmallString<128> file(dir);
  path::append(file, "template.pt");
  auto cleanUp = llvm::make_scope_exit([&] {
    fs::remove(file);
    fs::remove(dir);
  });
  Expected<std::unique_ptr<TorchFileWriter>> writer =
      TorchFileWriter::create(file, document);
  if (!writer)
    return writer.takeError();
  for (const auto &[key, bytes] : storages)
    if (Error error = (*writer)->writeStorage(key, {llvm::StringRef(bytes)}))
      return std::move(error);
  if (source)
    if (Error error = (*writer)->copyStoragesFrom(*source))
      return std::move(error);
  if (Error error = (*writer)->commit(/*durable=*/false))
    return std::move(error);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> bytes =
      llvm::MemoryBuffer::getFile(file);
  if (!bytes)
    return makeError(file + ": " + bytes.getError().message());
  return std::move(*bytes);
}

Error DeepSpeedReader::buildUniversalTemplates() {
  llvm::SmallString<256> name(checkpoint.folder);
  path::append(name, "zero", "optimizer_state.pt");
  Expected<std::unique_ptr<TorchFile>> saved = TorchFile::open(name);
  if (!saved)
    return saved.takeError();
  auto inSaved = [&](Error error) {
    return makeError(name + ": " + llvm::toString(std::move(error)));
  };
  TemplateBuilder t;
  t.nextKey = getNextStorageKey((*saved)->getDocument());
  size_t groups = getModel(0).groups.size();
  PickleCursor root((*saved)->getDocument());
  Expected<PickleRef> states =
      files.zero3 ? buildZero3States(t, root, groups)
                  : buildZero12States(t, checkpoint, root, groups);
  if (!states)
    return inSaved(states.takeError());
  // ds_config and ds_version as the model states record them.
  const PickleDocument &model = checkpoint.modelFiles[0]->getDocument();
  llvm::DenseMap<PickleRef, PickleRef> copied;
  std::vector<std::pair<PickleRef, PickleRef>> items = {
      {t.b.string("optimizer_state_dict"), *states}};
  for (llvm::StringRef key : {"ds_config", "ds_version"}) {
    std::optional<PickleRef> value = model.lookup(model.getRoot(), key);
    if (!value)
      return makeError(files.modelFiles[0] + ": no " + key);
    items.push_back({t.b.string(key), t.b.copy(model, *value, copied)});
  }
  PickleDocument document = t.b.finish(t.b.dict(items));
  // The storages it keeps are copied into the templates, in memory.
  addCopiedReads(**saved, document, checkpoint.readIntoMemory);
  Expected<std::unique_ptr<llvm::MemoryBuffer>> bytes =
      writeTemplateFile(document, t.storages, saved->get());
  if (!bytes)
    return bytes.takeError();
  for (int64_t rank = 0; rank < files.mp; ++rank) {
    Expected<std::unique_ptr<TorchFile>> file = TorchFile::parse(
        llvm::MemoryBuffer::getMemBufferCopy((*bytes)->getBuffer(), name));
    if (!file)
      return file.takeError();
    checkpoint.ranks.emplace_back().file = std::move(*file);
  }
  return Error::success();
}
