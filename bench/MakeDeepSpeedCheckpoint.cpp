//===- MakeDeepSpeedCheckpoint.cpp - DeepSpeed checkpoints of any size ----===//
//
//   ucp-make-deepspeed-checkpoint --out DIR [--tag step3] [--dp 2]
//       [--tp 1 | --pp N] [--stage 2] [--dtype bf16] [--hidden 1024
//       --layers 20 --ffn 2816 --vocab 32000 | --like CKPT/TAG]
//       [--bf16-optimizer] [--steps 3] [--seed 1] [--tie-embeddings]
//
// With --pp, DeepSpeed's PipelineModule instead: an embedding, --layers
// blocks, a final norm and a head (or the embedding tied), over N stages
// (GeneratedPipeline.cpp), the weights in layer files.
//
// Writes DIR/TAG as DeepSpeed's save_checkpoint writes a ZeRO-1/2 run,
// without tensor parallelism or with AutoTP's llama preset (--tp: q, k, v,
// gate and up split by rows, o and down by columns, the rest replicated,
// recorded in universal_checkpoint_info), and DIR/latest: the same files,
// keys, objects
// and flattening (each optimizer parameter group concatenated, padded to a
// multiple of 2 x dp, cut in dp equal partitions; fp32 partitions without
// their padding, Adam's moments with it; the model's weights as views of
// one flat storage per group). The model is a Llama-like stack, or the
// trainable parameters of a real checkpoint (--like), whose files the
// output then matches but for the values. Values are pseudo-random: a hash
// of (seed, state, parameter, element), so any rank's fragment is computed
// alone (with TP, of the element's place in the full tensor, so that TP
// shards agree and replicas are equal); the bf16 weights are the fp32
// master weights rounded.
//
// Benchmarks use it to make checkpoints of hundreds of millions of
// parameters; a test checks its files against real ones. It shares no
// layout code with the product: its flattening, padding and bf16 rounding
// are its own few lines from DeepSpeed's documented rules, so that the
// tests that read its checkpoints pin the product's.
//
//===----------------------------------------------------------------------===//

#include "GeneratedModel.h"
#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"
#include "ucp/Element/DTypeOption.h"
#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Formats/Torch/TorchFileWriter.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/CommandLine.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

using namespace ucp;
using namespace ucp::generator;
namespace cl = llvm::cl;

static cl::OptionCategory
    generatorCategory("ucp-make-deepspeed-checkpoint options");
static cl::opt<std::string> outDir("out", cl::desc("the checkpoint folder"),
                                   cl::Required, cl::cat(generatorCategory));
static cl::opt<std::string> tag("tag", cl::desc("the tag"), cl::init("step3"),
                                cl::cat(generatorCategory));
static cl::opt<int64_t> dp("dp", cl::desc("DP ranks"), cl::init(2),
                           cl::cat(generatorCategory));
static cl::opt<int64_t> tpDegree("tp", cl::desc("TP ranks (AutoTP, llama)"),
                                 cl::init(1), cl::cat(generatorCategory));
static cl::opt<int> stage("stage", cl::desc("ZeRO stage: 1 or 2"), cl::init(2),
                          cl::cat(generatorCategory));
static cl::opt<int64_t> pipelineStages(
    "pp",
    cl::desc("write a pipeline of this many stages (DeepSpeed's "
             "PipelineModule: an embedding, --layers blocks, a final norm and "
             "a head, with layer files); 0: no pipeline"),
    cl::init(0), cl::cat(generatorCategory));
static cl::opt<DType> dtype("dtype",
                            cl::desc("the model's dtype (default bf16)"),
                            dtypeValues({DType::BF16, DType::F32}),
                            cl::init(DType::BF16), cl::cat(generatorCategory));
static cl::opt<int64_t> hidden("hidden", cl::desc("the hidden size"),
                               cl::init(1024), cl::cat(generatorCategory));
static cl::opt<int64_t> layers("layers", cl::desc("the transformer blocks"),
                               cl::init(20), cl::cat(generatorCategory));
static cl::opt<int64_t> ffn("ffn", cl::desc("the MLP's intermediate size"),
                            cl::init(2816), cl::cat(generatorCategory));
static cl::opt<int64_t> vocab("vocab", cl::desc("the vocabulary's rows"),
                              cl::init(32000), cl::cat(generatorCategory));
static cl::opt<std::string>
    like("like", cl::desc("take the parameters of this checkpoint (CKPT/TAG)"),
         cl::cat(generatorCategory));
static cl::opt<bool> bf16Optimizer(
    "bf16-optimizer",
    cl::desc("write BF16_Optimizer's files (bf16 with ZeRO-1 and fp32 "
             "gradient accumulation): fewer keys, padded fp32 partitions"),
    cl::cat(generatorCategory));
static cl::opt<int64_t> steps(
    "steps",
    cl::desc("optimizer steps (0: saved before the first, so without Adam "
             "moments)"),
    cl::init(3), cl::cat(generatorCategory));
static cl::opt<uint64_t> seed("seed", cl::desc("the random seed"), cl::init(1),
                              cl::cat(generatorCategory));
static cl::opt<bool> tieEmbeddings(
    "tie-embeddings",
    cl::desc("tie lm_head to the embedding, as a Hugging Face model with "
             "tie_word_embeddings: one trainable parameter, both names in the "
             "module, shared_params naming the tie"),
    cl::cat(generatorCategory));
static cl::opt<std::string> breakReplica(
    "break-replica",
    cl::desc("write this TP-replicated parameter's fp32 master on the last "
             "TP rank with its first element changed: a checkpoint whose "
             "replicas disagree, for the tests of the replica checks"),
    cl::value_desc("name"), cl::cat(generatorCategory));
static cl::opt<std::string> nanMaster(
    "nan-master",
    cl::desc("write this parameter's first element on each TP rank as NaN, "
             "its fp32 master and its weight alike, as a run that diverged "
             "saves them: a checkpoint the reader opens and `check` finds "
             "unsound, for the tests of the value checks"),
    cl::value_desc("name"), cl::cat(generatorCategory));
static cl::opt<bool> recordAffineMap(
    "affine-map",
    cl::desc("with --tp: record every parameter's TP map in "
             "universal_checkpoint_info's affine_map, as DeepSpeed's layers "
             "that publish one do"),
    cl::cat(generatorCategory));
static cl::opt<bool> breakStep(
    "break-step",
    cl::desc("write the last DP rank's Adam step one higher than the "
             "others': a checkpoint whose ranks disagree on the step, for "
             "the tests of the step check"),
    cl::cat(generatorCategory));

static cl::opt<bool> breakLr(
    "break-lr",
    cl::desc("write the last DP rank's optimizer with a learning rate the "
             "others' do not have: a checkpoint whose ranks disagree on "
             "param_groups, for the tests of that check"),
    cl::cat(generatorCategory));

namespace {

/// How AutoTP's llama preset splits `name`: 0 by rows, 1 by columns, -1
/// not at all.
static int getSplitDim(llvm::StringRef name) {
  for (const char *rows :
       {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"})
    if (name.contains(rows))
      return 0;
  return name.contains("o_proj") || name.contains("down_proj") ? 1 : -1;
}

/// The place in the full tensor of element `local` of `param`'s shard on
/// TP rank `rank`.
static int64_t getFullIndex(const Param &param, int64_t rank, int64_t local) {
  if (param.splitDim == 0)
    return rank * param.elements + local;
  if (param.splitDim == 1) {
    int64_t columns = param.shape[1];
    return local / columns * param.fullShape[1] + rank * columns +
           local % columns;
  }
  return local;
}

Model buildModel(int64_t tpRank) {
  Model model;
  model.tpRank = model.mpRank = tpRank;
  auto add = [&](std::string name, Extents shape) {
    // Weight decay on matrices (group 0), none on vectors (group 1).
    Param param{name, shape, shape.size() > 1 ? 0u : 1u};
    param.fullShape = shape;
    if (tpDegree > 1 && (param.splitDim = getSplitDim(name)) >= 0)
      param.shape[param.splitDim] /= tpDegree; // main checks it divides.
    model.params.push_back(std::move(param));
  };
  if (!like.empty()) {
    auto checkpoint = DeepSpeedCheckpoint::open(like);
    if (!checkpoint) {
      llvm::errs() << llvm::toString(checkpoint.takeError()) << "\n";
      std::exit(1);
    }
    // Module order is the order of the model-state file's `module`.
    const PickleDocument &doc =
        (*checkpoint)->getModelFiles().front()->getDocument();
    PickleRef module = *doc.lookup(doc.getRoot(), "module");
    const auto &items = doc.get(module).items;
    for (size_t i = 0; i < items.size(); i += 2)
      for (const DeepSpeedParam &param : (*checkpoint)->getParams())
        if (param.name == doc.get(items[i]).text)
          model.params.push_back({param.name, param.tpShapes[0], param.group});
  } else {
    add("model.embed_tokens.weight", {vocab, hidden});
    for (int64_t l = 0; l < layers; ++l) {
      std::string p = "model.layers." + std::to_string(l) + ".";
      add(p + "input_layernorm.weight", {hidden});
      for (const char *m : {"q", "k", "v", "o"})
        add(p + "self_attn." + m + "_proj.weight", {hidden, hidden});
      add(p + "post_attention_layernorm.weight", {hidden});
      add(p + "mlp.gate_proj.weight", {ffn, hidden});
      add(p + "mlp.up_proj.weight", {ffn, hidden});
      add(p + "mlp.down_proj.weight", {hidden, ffn});
    }
    add("model.norm.weight", {hidden});
    if (!tieEmbeddings)
      add("lm_head.weight", {vocab, hidden});
  }
  for (size_t i = 0; i < model.params.size(); ++i)
    model.params[i].id = i;
  model.layOut(dp);
  return model;
}

/// The ds_config of the fixtures' runs, with this run's stage and dtype.
/// Micro-batches per step: a pipeline's run has two in flight.
int64_t getAccumulationSteps() { return pipelineStages > 0 ? 2 : 1; }

PickleRef buildConfig(PickleBuilder &b) {
  auto s = [&](llvm::StringRef text) { return b.string(text); };
  PickleRef adam =
      b.dict({{s("lr"), b.number(0.01)},
              {s("betas"), b.list({b.number(0.9), b.number(0.95)})},
              {s("eps"), b.number(1e-8)},
              {s("weight_decay"), b.number(0.01)},
              {s("torch_adam"), b.boolean(true)}});
  PickleRef zero = b.dict({{s("stage"), b.integer(stage)},
                           {s("reduce_bucket_size"), b.number(5e8)},
                           {s("allgather_bucket_size"), b.number(5e8)},
                           {s("overlap_comm"), b.boolean(false)},
                           {s("contiguous_gradients"), b.boolean(true)},
                           {s("reduce_scatter"), b.boolean(true)}});
  std::vector<std::pair<PickleRef, PickleRef>> config = {
      {s("train_micro_batch_size_per_gpu"), b.integer(2)},
      {s("gradient_accumulation_steps"), b.integer(getAccumulationSteps())},
      {s("steps_per_print"), b.integer(1000)},
      {s("wall_clock_breakdown"), b.boolean(false)},
      {s("gradient_clipping"), b.number(1.0)},
      {s("optimizer"), b.dict({{s("type"), s("Adam")}, {s("params"), adam}})},
      {s("zero_optimization"), zero}};
  if (dtype == DType::BF16)
    config.push_back({s("bf16"), b.dict({{s("enabled"), b.boolean(true)}})});
  if (tpDegree > 1)
    config.push_back(
        {s("tensor_parallel"), b.dict({{s("autotp_size"), b.integer(tpDegree)},
                                       {s("preset_model"), s("llama")}})});
  return b.dict(config);
}

constexpr llvm::StringLiteral kVersion = "0.19.6+edaa72212";

} // namespace

/// `value` rounded to bfloat16, to nearest even as torch rounds (the
/// values here are finite).
/// Fills elements [begin, end) of the flat buffer of group `g`, held at
/// `data` from element `base` on, with `state`'s values (padding: zero).
static void fillFlat(const Model &model, size_t g, State state, DType type,
                     char *data, int64_t base, int64_t begin, int64_t end) {
  for (size_t p : model.groups[g]) {
    const Param &param = model.params[p];
    int64_t lo = std::max(begin, param.offset);
    int64_t hi = std::min(end, param.offset + param.elements);
    for (int64_t x = lo; x < hi; ++x) {
      float value =
          getValue(seed, state, param.id,
                   getFullIndex(param, model.tpRank, x - param.offset));
      // The replica that disagrees: the last TP rank's first element.
      if (x == param.offset && state == State::Fp32 && param.splitDim < 0 &&
          param.name == breakReplica && model.tpRank == tpDegree - 1)
        value += 1.0f;
      // The diverged parameter: its master, and the weight rounded from it.
      if (x == param.offset && state == State::Fp32 && param.name == nanMaster)
        value = std::nanf("");
      store(type, data, x - base, value);
    }
  }
}

/// AutoTP's universal_checkpoint_info for the llama preset: each split or
/// replicated parameter's exact pattern.
static PickleRef buildUniversalInfo(PickleBuilder &b, const Model &model) {
  std::vector<std::string> rows, replicated;
  for (const Param &param : model.params)
    if (param.splitDim == 1)
      rows.push_back(getParamPattern(param.name));
    else if (param.splitDim < 0)
      replicated.push_back(getParamPattern(param.name));
  auto list = [&](std::vector<std::string> patterns) {
    llvm::sort(patterns);
    std::vector<PickleRef> items;
    for (const std::string &pattern : patterns)
      items.push_back(b.string(pattern));
    return b.list(items);
  };
  auto s = [&](llvm::StringRef text) { return b.string(text); };
  std::vector<std::pair<PickleRef, PickleRef>> info = {
      {s("universal_checkpoint_version"), b.number(0.4)},
      {s("parameter_with_row_parallelism_patterns"), list(rows)},
      {s("tp_replicated_parameter_patterns"), list(replicated)},
      {s("vocabulary_parameter_patterns"), b.list({})},
      {s("parameter_with_sub_params"), b.list({})},
      {s("autotp_unsupported_parameter_patterns"), b.dict({})}};
  if (recordAffineMap)
    info.push_back(
        {s("affine_map"), buildAffineMapDocument(b, model, tpDegree)});
  return b.dict(info);
}

/// The name of TP rank `t`'s part of a file name ("mp_rank_01").
static std::string getTpRankName(int64_t t) {
  return (t < 10 ? "mp_rank_0" : "mp_rank_") + std::to_string(t);
}

static llvm::Error writeModelStates(const Model &model, DType type,
                                    const std::string &folder) {
  PickleBuilder b;
  auto s = [&](llvm::StringRef text) { return b.string(text); };
  // One flat storage per group, keyed in order of first use.
  std::vector<std::string> keys(model.groups.size());
  std::vector<PickleRef> storages(model.groups.size(), 0);
  int next = 0;
  std::vector<std::pair<PickleRef, PickleRef>> module;
  bool pipeline = pipelineStages > 0; // Its weights are in layer files.
  for (const Param &param : model.params) {
    if (pipeline)
      break;
    if (!storages[param.group]) {
      keys[param.group] = std::to_string(next++);
      storages[param.group] =
          b.storage(keys[param.group], type, model.padded(param.group));
    }
    module.push_back({s(param.name),
                      b.tensor(storages[param.group], param.offset, param.shape,
                               getRowMajorStrides(param.shape), false)});
  }
  // A tied lm_head is the embedding's tensor under a second name.
  std::vector<std::pair<PickleRef, PickleRef>> shared;
  if (tieEmbeddings && !pipeline) {
    module.push_back({s("lm_head.weight"), module.front().second});
    shared.push_back({s("lm_head.weight"), s(model.params.front().name)});
  }
  std::vector<PickleRef> shapes;
  for (const std::vector<size_t> &group : model.groups) {
    std::vector<std::pair<PickleRef, PickleRef>> items;
    for (size_t p : group)
      items.push_back({s(model.params[p].name), b.size(model.params[p].shape)});
    shapes.push_back(b.dict(items, /*ordered=*/true));
  }
  // ZeRO-1 records no frozen parameters as None, ZeRO-2 as empty dicts.
  auto frozen = [&] { return stage == 1 ? b.none() : b.dict({}, true); };
  PickleRef root = b.dict({
      {s("module"), pipeline ? b.none() : b.dict(module, /*ordered=*/true)},
      {s("buffer_names"), b.list({})},
      {s("optimizer"), b.none()},
      {s("param_shapes"), b.list(shapes)},
      {s("frozen_param_shapes"), frozen()},
      {s("shared_params"), b.dict(shared)},
      {s("frozen_param_fragments"), frozen()},
      {s("lr_scheduler"), b.none()},
      {s("data_sampler"), b.none()},
      {s("random_ltd"), b.none()},
      {s("sparse_tensor_module_names"), b.set({})},
      {s("skipped_steps"), b.integer(0)},
      {s("global_steps"), b.integer(steps)},
      {s("global_samples"), b.integer(steps * 2 * getAccumulationSteps() * dp)},
      {s("dp_world_size"), b.integer(dp)},
      {s("mp_world_size"),
       b.integer(pipeline ? pipelineStages * tpDegree : tpDegree)},
      {s("checkpoint_parallel_dimensions"),
       b.dict(
           {{s("pp_degree"), b.integer(std::max<int64_t>(pipelineStages, 1))},
            {s("tp_degree"), b.integer(tpDegree)}})},
      {s("ds_config"), buildConfig(b)},
      {s("ds_version"), s(kVersion)},
  });
  if (tpDegree > 1) { // The root's items, and AutoTP's record after them.
    PickleValue items = b.getValue(root);
    std::vector<std::pair<PickleRef, PickleRef>> pairs;
    for (size_t i = 0; i + 1 < items.items.size(); i += 2)
      pairs.push_back({items.items[i], items.items[i + 1]});
    pairs.push_back(
        {s("universal_checkpoint_info"), buildUniversalInfo(b, model)});
    root = b.dict(pairs);
  }
  std::vector<StorageFill> fills;
  for (size_t g = 0; g < model.groups.size() && !pipeline; ++g)
    fills.push_back(
        {keys[g], model.padded(g) * getElementSize(type), [&, g](char *data) {
           fillFlat(model, g, State::Fp32, type, data, 0, 0, model.padded(g));
         }});
  return writeFile(folder + "/" + getTpRankName(model.mpRank) +
                       "_model_states.pt",
                   b.finish(root), fills);
}

/// What one storage of an optimizer file is filled with: `length`
/// elements of `state` from the start of the rank's partition of `group`,
/// or (length 0) the step.
struct OptimizerFill {
  std::string key;
  size_t group;
  State state;
  int64_t length;
};

/// param_slice_mappings[g] of DP rank `rank`.
static PickleRef buildSliceMappings(PickleBuilder &b, const Model &model,
                                    size_t g, int64_t rank) {
  std::vector<std::pair<PickleRef, PickleRef>> slices;
  for (size_t i = 0; i < model.groups[g].size(); ++i) {
    auto [start, count] = model.layouts[g].getSlice(i, rank);
    if (count == 0)
      continue;
    slices.push_back(
        {b.string(model.params[model.groups[g][i]].name),
         b.object("deepspeed.utils.tensor_fragment", "fragment_address",
                  b.dict({{b.string("numel"), b.integer(count)},
                          {b.string("start"), b.integer(start)}}))});
  }
  return b.dict(slices, /*ordered=*/true);
}

/// The torch optimizer's param group `g`, of learning rate `lr`.
static PickleRef buildParamGroup(PickleBuilder &b, size_t g, double lr) {
  auto s = [&](llvm::StringRef text) { return b.string(text); };
  return b.dict({
      {s("weight_decay"), b.number(g == 0 ? 0.01 : 0.0)},
      {s("lr"), b.number(lr)},
      {s("betas"), b.list({b.number(0.9), b.number(0.95)})},
      {s("eps"), b.number(1e-8)},
      {s("amsgrad"), b.boolean(false)},
      {s("foreach"), b.none()},
      {s("maximize"), b.boolean(false)},
      {s("capturable"), b.boolean(false)},
      {s("params"), b.list({b.integer(g)})},
  });
}

/// Writes DP rank `rank`'s optimizer file.
static llvm::Error writeTensorStates(const Model &model, int64_t rank,
                                     const std::string &path) {
  PickleBuilder b;
  auto s = [&](llvm::StringRef text) { return b.string(text); };
  std::vector<OptimizerFill> fills;
  auto newTensor = [&](size_t g, State state, int64_t length,
                       bool requiresGrad = false) {
    std::string key = std::to_string(fills.size());
    fills.push_back({key, g, state, length});
    Extents shape = length ? Extents{length} : Extents{};
    return b.tensor(b.storage(key, DType::F32, std::max<int64_t>(length, 1)), 0,
                    shape, getRowMajorStrides(shape), requiresGrad);
  };
  std::vector<std::pair<PickleRef, PickleRef>> state;
  std::vector<PickleRef> groups, fp32, paddings, counts, mappings;
  for (size_t g = 0; g < model.groups.size(); ++g) {
    // torch's Adam makes a group's state at its first step.
    int64_t ps = model.partition(g);
    if (steps > 0) {
      PickleRef step = newTensor(g, State::Fp32, 0);
      PickleRef avg = newTensor(g, State::ExpAvg, ps);
      PickleRef avgSq = newTensor(g, State::ExpAvgSq, ps);
      state.push_back({b.integer(g), b.dict({{s("step"), step},
                                             {s("exp_avg"), avg},
                                             {s("exp_avg_sq"), avgSq}})});
    }
    groups.push_back(
        buildParamGroup(b, g, breakLr && rank == dp - 1 ? 0.02 : 0.01));
    paddings.push_back(b.integer(model.layouts[g].getPadding(rank)));
    counts.push_back(b.integer(dp));
    mappings.push_back(buildSliceMappings(b, model, g, rank));
  }
  // The fp32 partitions (trainable, so they require grad): without their
  // padding, but for BF16_Optimizer's.
  for (size_t g = 0; g < model.groups.size(); ++g)
    fp32.push_back(
        newTensor(g, State::Fp32,
                  model.partition(g) -
                      (bf16Optimizer ? 0 : model.layouts[g].getPadding(rank)),
                  /*requiresGrad=*/true));
  PickleRef scaler =
      b.object("deepspeed.runtime.fp16.loss_scaler", "LossScaler",
               b.dict({{s("cur_scale"), b.number(1.0)},
                       {s("dynamic"), b.boolean(false)}}));
  PickleRef base = b.dict(
      {{s("state"), b.dict(state)}, {s("param_groups"), b.list(groups)}});
  std::vector<std::pair<PickleRef, PickleRef>> items;
  if (!bf16Optimizer)
    items = {{s("loss_scaler"), scaler},
             {s("dynamic_loss_scale"), b.boolean(false)},
             {s("overflow"), b.boolean(false)}};
  items.push_back({s("clip_grad"), b.number(1.0)});
  items.push_back({s("base_optimizer_state"), base});
  items.push_back({s("single_partition_of_fp32_groups"), b.list(fp32)});
  if (!bf16Optimizer)
    items.push_back(
        {s("zero_stage"),
         b.enumMember("deepspeed.runtime.zero.config", "ZeroStageEnum",
                      stage == 1 ? "optimizer_states" : "gradients")});
  items.push_back({s("group_paddings"), b.list(paddings)});
  items.push_back({s("partition_count"), b.list(counts)});
  items.push_back({s("ds_version"), s(kVersion)});
  items.push_back({s("param_slice_mappings"), b.list(mappings)});
  PickleRef optimizer = b.dict(items);
  PickleRef root = b.dict({{s("optimizer_state_dict"), optimizer},
                           {s("ds_config"), buildConfig(b)},
                           {s("ds_version"), s(kVersion)}});
  std::vector<StorageFill> storages;
  for (const OptimizerFill &fill : fills)
    storages.push_back(
        {fill.key, std::max<int64_t>(fill.length, 1) * 4, [&](char *data) {
           if (fill.length == 0) {
             bool last = rank == dp - 1;
             store(DType::F32, data, 0,
                   float(steps + (breakStep && last ? 1 : 0)));
             return;
           }
           int64_t begin = rank * model.partition(fill.group);
           fillFlat(model, fill.group, fill.state, DType::F32, data, begin,
                    begin, begin + fill.length);
         }});
  return writeFile(path, b.finish(root), storages);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(generatorCategory);
  setVersionPrinter("ucp-make-deepspeed-checkpoint");
  cl::ParseCommandLineOptions(argc, argv,
                              "writes a DeepSpeed ZeRO-1/2 checkpoint of "
                              "pseudo-random values\n");
  if (llvm::Error error = checkOptionsGivenOnce(argc, argv)) {
    llvm::errs() << "ucp-make-deepspeed-checkpoint: "
                 << llvm::toString(std::move(error)) << "\n";
    return 1;
  }
  if ((stage != 1 && stage != 2) || dp < 1 || dp > kMaxWorldSize ||
      tpDegree < 1 || tpDegree > kMaxWorldSize / dp ||
      (tpDegree > 1 && !like.empty()) || (recordAffineMap && tpDegree < 2) ||
      (bf16Optimizer && (stage != 1 || dtype != DType::BF16)) ||
      pipelineStages < 0 ||
      (pipelineStages > 0 && (tpDegree > 1 || !like.empty()))) {
    llvm::errs()
        << "ucp-make-deepspeed-checkpoint: --stage 1|2, --dp and --tp with "
           "dp x tp in [1, 2^20], --tp without --like; --affine-map with "
           "--tp 2 or more; "
           "--bf16-optimizer with bf16 and stage 1; --pp without --tp or "
           "--like\n";
    return 1;
  }
  DType type = dtype;
  std::vector<Model> models;
  if (pipelineStages > 0) {
    models = buildPipelineModels(
        {pipelineStages, layers, hidden, ffn, vocab, tieEmbeddings}, dp);
    // Both groups on every stage, as the fixtures' runs have them.
    for (const Model &stageModel : models)
      if (stageModel.groups.size() != 2 || stageModel.groups[0].empty()) {
        llvm::errs() << "ucp-make-deepspeed-checkpoint: stage "
                     << stageModel.mpRank
                     << " holds no weight matrix or no vector; give each of "
                        "the --pp stages more of the --layers + 3 layers\n";
        return 1;
      }
  } else
    for (int64_t t = 0; t < tpDegree; ++t)
      models.push_back(buildModel(t));
  for (const Param &param : models[0].params)
    if (param.splitDim >= 0 && param.fullShape[param.splitDim] % tpDegree) {
      llvm::errs() << "ucp-make-deepspeed-checkpoint: --tp " << tpDegree
                   << " does not divide the " << param.fullShape[param.splitDim]
                   << " of '" << param.name << "'\n";
      return 1;
    }
  std::string folder = outDir + "/" + tag;
  if (std::error_code ec = llvm::sys::fs::create_directories(folder)) {
    llvm::errs() << folder << ": " << ec.message() << "\n";
    return 1;
  }
  std::string prefix = type == DType::BF16 ? "bf16_" : "";
  llvm::DefaultThreadPool pool;
  std::vector<llvm::Error> errors;
  std::mutex mutex;
  auto run = [&](std::function<llvm::Error()> write) {
    pool.async([&, write] {
      llvm::Error error = write();
      std::lock_guard<std::mutex> lock(mutex);
      errors.push_back(std::move(error));
    });
  };
  for (const Model &tpModel : models) {
    run([&] { return writeModelStates(tpModel, type, folder); });
    for (int64_t r = 0; r < dp; ++r)
      run([&, r] {
        return writeTensorStates(
            tpModel, r,
            folder + "/" + prefix + "zero_pp_rank_" + std::to_string(r) + "_" +
                getTpRankName(tpModel.mpRank) + "_optim_states.pt");
      });
  }
  if (pipelineStages > 0)
    run([&] { return writeLayerFiles(models, type, seed, folder); });
  pool.wait();
  int status = 0;
  for (llvm::Error &error : errors)
    if (error) {
      llvm::errs() << llvm::toString(std::move(error)) << "\n";
      status = 1;
    }
  std::error_code ec;
  llvm::raw_fd_ostream latest(outDir + "/latest", ec);
  latest << tag;
  // Per TP rank; a pipeline's stages together (a tied copy counted on each).
  int64_t total = 0, count = 0;
  for (const Model &counted : llvm::ArrayRef(models).take_front(
           pipelineStages > 0 ? models.size() : 1))
    for (const Param &param : counted.params) {
      total += param.elements;
      ++count;
    }
  llvm::outs() << "ucp-make-deepspeed-checkpoint: " << count << " parameters, "
               << total
               << (pipelineStages > 0 ? " elements over the stages, ZeRO-"
                                      : " elements per TP rank, ZeRO-")
               << stage;
  if (pipelineStages > 0)
    llvm::outs() << " PP " << pipelineStages;
  llvm::outs() << " TP " << tpDegree << " x DP " << dp << ", "
               << getDTypeName(dtype) << ", in " << folder << "\n";
  return status;
}
