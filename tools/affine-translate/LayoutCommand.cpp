//===- LayoutCommand.cpp - affine-translate --layout ----------------------===//
//
// Exposes the layout library on the command line, so that users and tests
// can produce the map of any layout DeepSpeed writes:
//
//   affine-translate --layout codegen --hidden 64 --cols 64 --tp 4
//   affine-translate --layout split --shape 10,8 --tp 4 --emit json
//
//===----------------------------------------------------------------------===//

#include "LayoutCommand.h"
#include "MapOutput.h"

#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Formats/Json/ExpertPlacementDocument.h"
#include "ucp/Layout/ExpertPlacement.h"
#include "ucp/Layout/TensorParallelLayouts.h"
#include "ucp/Map/Invariants.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/InputFile.h"
#include "ucp/Support/CommandLine.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace ucp;
namespace cl = llvm::cl;

bool isLayoutCommand(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--layout" || arg.starts_with("--layout=") || arg == "-layout" ||
        arg.starts_with("-layout="))
      return true;
  }
  return false;
}

/// Parses "3,2,2;2,2,1" into per-sub-parameter widths.
static llvm::Expected<std::vector<Extents>> parseWidths(llvm::StringRef text) {
  std::vector<Extents> widths;
  llvm::SmallVector<llvm::StringRef> groups;
  text.split(groups, ';', -1, /*KeepEmpty=*/true);
  for (llvm::StringRef group : groups) {
    Extents &values = widths.emplace_back();
    llvm::SmallVector<llvm::StringRef> items;
    group.split(items, ',', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef item : items) {
      int64_t value;
      if (item.trim().getAsInteger(10, value))
        return makeError("'" + item.str() + "' is not an integer in '" +
                         text.str() + "'");
      values.push_back(value);
    }
  }
  return widths;
}

namespace {

/// The command line of `--layout`, registered only when it runs (so that it
/// does not clash with mlir-translate's options).
struct LayoutFlags {
  cl::OptionCategory category{"Layout options"};
  cl::opt<std::string> layout{
      "layout", cl::Required, cl::cat(category),
      cl::desc("the layout: replicated, scaled-bias, split, sub-params, "
               "split-sub-params, padded-vocab, bigcode, codegen, yuan, "
               "experts")};
  cl::opt<std::string> name{"name", cl::init("weight"), cl::cat(category),
                            cl::desc("the parameter name")};
  cl::list<int64_t> shape{"shape", cl::CommaSeparated, cl::cat(category),
                          cl::desc("the logical shape, e.g. 48,8 (experts: "
                                   "the shape of one expert)")};
  cl::opt<int64_t> tp{"tp", cl::init(0), cl::cat(category),
                      cl::desc("the tensor- (or expert-) parallel degree")};
  cl::opt<int64_t> dim{"dim", cl::init(0), cl::cat(category),
                       cl::desc("the split dimension (split, sub-params; "
                                "yuan: 0 value, 1 o_proj)")};
  cl::list<int64_t> sizes{
      "sizes", cl::CommaSeparated, cl::cat(category),
      cl::desc("split: explicit partition sizes (default: DeepSpeed's rule)")};
  cl::opt<std::string> widths{
      "widths", cl::cat(category),
      cl::desc("sub-params: sub_param_shard_widths, ranks by ',' and "
               "sub-parameters by ';', e.g. '3,2,2;2,2,1;1,1,1'")};
  cl::list<int64_t> subSizes{
      "sub-sizes", cl::CommaSeparated, cl::cat(category),
      cl::desc("split-sub-params: the sub-parameter sizes, e.g. 24,6,6")};
  cl::opt<int64_t> kvHeads{
      "kv-heads", cl::init(0), cl::cat(category),
      cl::desc("num_kv_heads for DeepSpeed's split rule (0: unset)")};
  cl::opt<int64_t> grain{"grain", cl::init(1), cl::cat(category),
                         cl::desc("tp_grain_size for the split rule")};
  cl::opt<double> scale{"scale", cl::init(1.0), cl::cat(category),
                        cl::desc("replicated: the scale")};
  cl::opt<int64_t> vocab{"vocab", cl::init(0), cl::cat(category),
                         cl::desc("padded-vocab: the vocabulary size")};
  cl::opt<int64_t> hidden{"hidden", cl::init(0), cl::cat(category),
                          cl::desc("padded-vocab, codegen: the hidden size")};
  cl::opt<int64_t> cols{"cols", cl::init(0), cl::cat(category),
                        cl::desc("bigcode, codegen: columns of F")};
  cl::opt<int64_t> qRows{"q-rows", cl::init(0), cl::cat(category),
                         cl::desc("bigcode: the q rows (n_embd)")};
  cl::opt<int64_t> kvRows{"kv-rows", cl::init(0), cl::cat(category),
                          cl::desc("bigcode: the replicated kv rows")};
  cl::opt<int64_t> heads{"heads", cl::init(0), cl::cat(category),
                         cl::desc("yuan: num_kv_heads")};
  cl::opt<int64_t> mpNum{"mp-num", cl::init(4), cl::cat(category),
                         cl::desc("codegen: mp_num")};
  cl::opt<std::string> placement{
      "placement", cl::cat(category),
      cl::desc("experts: an AutoEP placement descriptor (JSON)")};
  cl::opt<std::string> emit{"emit", cl::init("mlir"), cl::cat(category),
                            cl::desc("output: mlir (ucp IR), json (a map "
                                     "document), svg or png (a picture; "
                                     "png where the build found librsvg)")};
  cl::opt<std::string> output{"o", cl::init("-"), cl::cat(category),
                              cl::desc("output file"),
                              cl::value_desc("filename")};
};

/// Returns an error unless `value` is positive.
llvm::Error requirePositive(const LayoutFlags &flags, llvm::StringRef what,
                            int64_t value) {
  if (value > 0)
    return llvm::Error::success();
  return makeError("--layout " + flags.layout + " needs a positive --" + what);
}

/// Builds the map the flags describe.
llvm::Expected<ParamMap> buildLayout(const LayoutFlags &flags) {
  if (std::string error = checkWorldSize(flags.tp, "--tp"); !error.empty())
    return makeError("--layout " + flags.layout + ": " + error);
  Extents shape(flags.shape.begin(), flags.shape.end());
  if (llvm::Error error = checkLayoutInputs(flags.name, shape, flags.tp))
    return std::move(error);
  SplitRule rule;
  if (flags.kvHeads > 0)
    rule.numKvHeads = flags.kvHeads;
  rule.grainSize = flags.grain;
  rule.name = flags.name;
  const std::string &layout = flags.layout;

  if (layout == "replicated")
    return buildReplicatedLayout(flags.name, shape, flags.tp, flags.scale);
  if (layout == "scaled-bias")
    return buildScaledBiasLayout(flags.name, shape, flags.tp);
  if (layout == "split") {
    if (flags.dim < 0 || flags.dim >= static_cast<int64_t>(shape.size()))
      return makeError("--layout split needs --shape and a --dim inside it");
    Extents parts(flags.sizes.begin(), flags.sizes.end());
    if (parts.empty())
      parts = getShardSizes(shape[flags.dim], flags.tp, rule);
    return buildSplitLayout(flags.name, shape, flags.dim, parts);
  }
  if (layout == "sub-params") {
    llvm::Expected<std::vector<Extents>> widths = parseWidths(flags.widths);
    if (!widths)
      return widths.takeError();
    return buildSubParamLayout(flags.name, shape, flags.dim, *widths);
  }
  if (layout == "split-sub-params")
    return buildSplitSubParamLayout(
        flags.name, shape, flags.dim,
        Extents(flags.subSizes.begin(), flags.subSizes.end()), flags.tp, rule);
  if (layout == "padded-vocab") {
    if (llvm::Error error =
            llvm::joinErrors(requirePositive(flags, "vocab", flags.vocab),
                             requirePositive(flags, "hidden", flags.hidden)))
      return std::move(error);
    // F has the vocabulary padded to a multiple of tp.
    std::optional<int64_t> rows = getPaddedVocabRows(flags.vocab, flags.tp);
    if (!rows)
      return makeError(
          "--layout padded-vocab: --vocab " + std::to_string(flags.vocab) +
          " padded to a multiple of --tp is more than int64 holds");
    if (llvm::Error error =
            checkLayoutInputs(flags.name, {*rows, flags.hidden}, flags.tp))
      return std::move(error);
    return buildPaddedVocabLayout(flags.name, flags.vocab, flags.hidden,
                                  flags.tp);
  }
  if (layout == "bigcode") {
    if (llvm::Error error = llvm::joinErrors(
            requirePositive(flags, "q-rows", flags.qRows),
            llvm::joinErrors(requirePositive(flags, "kv-rows", flags.kvRows),
                             requirePositive(flags, "cols", flags.cols))))
      return std::move(error);
    int64_t rows = 0;
    if (llvm::AddOverflow(int64_t(flags.qRows), int64_t(flags.kvRows), rows))
      return makeError("--layout bigcode: --q-rows plus --kv-rows is more than "
                       "int64 holds");
    if (llvm::Error error =
            checkLayoutInputs(flags.name, {rows, flags.cols}, flags.tp))
      return std::move(error);
    return buildBigcodeLayout(flags.name, flags.qRows, flags.kvRows, flags.cols,
                              flags.tp, rule);
  }
  if (layout == "codegen") {
    if (llvm::Error error =
            llvm::joinErrors(requirePositive(flags, "hidden", flags.hidden),
                             requirePositive(flags, "cols", flags.cols)))
      return std::move(error);
    return buildCodegenLayout(flags.name, flags.hidden, flags.cols, flags.tp,
                              flags.mpNum);
  }
  if (layout == "yuan") {
    if (llvm::Error error = requirePositive(flags, "heads", flags.heads))
      return std::move(error);
    return buildYuanLayout(flags.name, shape, flags.dim, flags.tp, flags.heads);
  }
  if (layout == "experts") {
    llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> file =
        readInputFile(flags.placement);
    if (!file)
      return makeError("--placement: " + llvm::toString(file.takeError()));
    llvm::Expected<ExpertPlacement> placement =
        parseExpertPlacement((*file)->getBuffer());
    if (!placement)
      return makeError(flags.placement + ": " +
                       llvm::toString(placement.takeError()));
    if (placement->epSize != flags.tp)
      return makeError(
          "--tp " + std::to_string(flags.tp) + " differs from the ep_size " +
          std::to_string(placement->epSize) + " of " + flags.placement);
    return buildExpertLayout(flags.name, *placement, shape);
  }
  return makeError("unknown layout '" + layout + "'; --help lists them");
}

} // namespace

int runLayoutCommand(int argc, char **argv) {
  static LayoutFlags flags;
  cl::HideUnrelatedOptions(flags.category);
  ucp::setVersionPrinter("affine-translate");
  cl::ParseCommandLineOptions(
      argc, argv,
      "affine-translate --layout: the map of one of DeepSpeed's layouts\n");
  auto fail = [](const llvm::Twine &message) {
    llvm::errs() << "affine-translate: " << message << "\n";
    return 1;
  };
  if (llvm::Error error = ucp::checkOptionsGivenOnce(argc, argv))
    return fail(llvm::toString(std::move(error)));
  llvm::Expected<ParamMap> map = buildLayout(flags);
  if (!map)
    return fail(llvm::toString(map.takeError()));
  // What the options build must be a valid map before it is written: a
  // scale of 0 or NaN, say, is refused here rather than written as `nan`.
  if (llvm::Error error = checkParamMap(*map))
    return fail(llvm::toString(std::move(error)));
  if (llvm::Error error = writeMaps({*map}, flags.emit, flags.output))
    return fail(llvm::toString(std::move(error)));
  return 0;
}
