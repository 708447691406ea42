//===- DeepSpeedOptions.cpp - The options of the DeepSpeed commands -------===//
//
// Each option says what it means for the commands it belongs to; where two
// commands read an option differently (--input_folder, --output_folder),
// each has its own. DeepSpeed's own spellings (--input_folder,
// --output_folder, --inject_missing_state, --no_strict) stay for drop-in
// use, and the dash forms used everywhere else answer too.
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedOptions.h"
#include "ucp/Element/DTypeOption.h"

using namespace ucp;
namespace cl = llvm::cl;

llvm::cl::OptionCategory &getDeepSpeedCategory() {
  static cl::OptionCategory category("DeepSpeed checkpoint options");
  return category;
}

namespace ds {

cl::SubCommand
    universalCommand("ds-to-universal",
                     "convert a DeepSpeed ZeRO checkpoint to a Universal "
                     "checkpoint, as DeepSpeed's ds_to_universal.py does");
cl::SubCommand
    retargetCommand("ds-retarget",
                    "write the DeepSpeed ZeRO checkpoint a job at another DP "
                    "or TP degree or ZeRO stage would have saved");
cl::SubCommand fromUniversalCommand(
    "universal-to-ds",
    "write the DeepSpeed ZeRO checkpoint a job at the given topology would "
    "have saved after loading a Universal checkpoint (load_universal, "
    "offline)");
cl::SubCommand
    exportCommand("export",
                  "write the consolidated model of a DeepSpeed or Universal "
                  "checkpoint as safetensors files, as zero_to_fp32.py does, "
                  "memory bounded by the largest tensor");
cl::SubCommand convertCommand(
    "convert",
    "write any checkpoint affine-run reads (safetensors files or a Hugging "
    "Face sharded set, a DeepSpeed or Universal checkpoint) in another "
    "format: a DeepSpeed ZeRO checkpoint at a topology (from weights alone, "
    "with an optimizer before its first step), or safetensors files");
// Each command's --input_folder says what that command reads. DeepSpeed's
// spelling stays, for scripts written for its converters; the dash form
// used everywhere else answers too.
cl::opt<std::string> deepSpeedInputFolder(
    "input_folder",
    cl::desc("the DeepSpeed checkpoint folder CKPT/TAG: the folder of the "
             "*_model_states.pt and *_optim_states.pt files save_checkpoint "
             "wrote (also --input-folder)"),
    cl::value_desc("folder"), cl::sub(universalCommand),
    cl::sub(retargetCommand), cl::cat(getDeepSpeedCategory()));
cl::opt<std::string> universalInputFolder(
    "input_folder",
    cl::desc("the Universal checkpoint folder: zero/ and the model states, "
             "as ds-to-universal writes it (also --input-folder)"),
    cl::value_desc("folder"), cl::sub(fromUniversalCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<std::string> exportInputFolder(
    "input_folder",
    cl::desc("the checkpoint: a DeepSpeed folder CKPT/TAG, a Universal "
             "folder, a safetensors file or a folder of them (also "
             "--input-folder)"),
    cl::value_desc("path"), cl::sub(exportCommand),
    cl::cat(getDeepSpeedCategory()));
static cl::alias deepSpeedInputFolderDash("input-folder",
                                          cl::aliasopt(deepSpeedInputFolder));
static cl::alias universalInputFolderDash("input-folder",
                                          cl::aliasopt(universalInputFolder));
static cl::alias exportInputFolderDash("input-folder",
                                       cl::aliasopt(exportInputFolder));

cl::opt<std::string>
    convertSource("from",
                  cl::desc("what to convert: a safetensors file, a folder of "
                           "them (or of a Hugging Face index and its files), "
                           "a DeepSpeed checkpoint folder CKPT/TAG or a "
                           "Universal checkpoint folder"),
                  cl::value_desc("path"), cl::sub(convertCommand),
                  cl::cat(getDeepSpeedCategory()));
cl::opt<ConvertTarget> convertTarget(
    "to", cl::desc("the format to write"),
    cl::values(clEnumValN(ConvertTarget::DeepSpeed, "deepspeed",
                          "a DeepSpeed ZeRO checkpoint (--output_folder "
                          "OUT/TAG) at --dp, --tp and --zero-stage"),
               clEnumValN(ConvertTarget::Safetensors, "safetensors",
                          "the consolidated model, as export writes it")),
    cl::Required, cl::sub(convertCommand), cl::cat(getDeepSpeedCategory()));
cl::opt<std::string> paramGroupsFile(
    "param-groups",
    cl::desc("from weights alone: the optimizer's parameter groups, a JSON "
             "list of lists of parameter names in the order of the model's "
             "parameters(), which ZeRO flattens them in (Python: "
             "json.dump([[n for n, _ in model.named_parameters()]], f)); "
             "required for more than one tensor"),
    cl::value_desc("FILE"), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<std::string> dsConfigFile(
    "ds-config",
    cl::desc("from weights alone: the run's DeepSpeed config (JSON), kept in "
             "the files; its optimizer.params are the parameter groups' "
             "hyper-parameters, which DeepSpeed's loader restores (default: "
             "torch Adam's)"),
    cl::value_desc("FILE"), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<std::string> universalInfoFile(
    "universal-info",
    cl::desc("from weights alone: universal_checkpoint_info (JSON), whose "
             "rules split the parameters into --tp ranks"),
    cl::value_desc("FILE"), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<std::string>
    exportFolder("out",
                 cl::desc("the new folder of model.safetensors, or of "
                          "model-0000i-of-0000N.safetensors and "
                          "model.safetensors.index.json (also "
                          "--output_folder, --output-folder)"),
                 cl::value_desc("folder"), cl::sub(exportCommand),
                 cl::cat(getDeepSpeedCategory()));
static cl::alias exportFolderDeepSpeed("output_folder",
                                       cl::aliasopt(exportFolder));
static cl::alias exportFolderDash("output-folder", cl::aliasopt(exportFolder));
cl::opt<DType> exportType(
    "dtype",
    cl::desc("the floating-point tensors' dtype (default f32: the fp32 "
             "masters as they are; bf16 and f16 round to nearest even)"),
    dtypeValues({DType::F32, DType::BF16, DType::F16}), cl::init(DType::F32), cl::sub(convertCommand), cl::sub(exportCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<bool> excludeFrozenParameters(
    "exclude_frozen_parameters",
    cl::desc("leave out the frozen parameters (requires_grad=False), as "
             "zero_to_fp32.py does with this flag; buffers stay (also "
             "--exclude-frozen-parameters)"),
    cl::sub(exportCommand), cl::cat(getDeepSpeedCategory()));
static cl::alias excludeFrozenParametersDash(
    "exclude-frozen-parameters", cl::aliasopt(excludeFrozenParameters));
cl::opt<std::string> maxShardSize(
    "max-shard-size",
    cl::desc("the most tensor bytes per file, as 5GB, 500MB, 2GiB or a "
             "number of bytes (default 5GB)"),
    cl::init("5GB"), cl::sub(convertCommand), cl::sub(exportCommand),
    cl::cat(getDeepSpeedCategory()));
/// What every --output_folder refuses, said in each command's help.
#define UCP_OUTPUT_FOLDER_RULES                                               \
  "A bare NAME is refused (write ./NAME for the current folder), as is a "    \
  "folder inside the input; a pointer file naming the input is left as it "  \
  "is (also --output-folder)"
cl::opt<std::string> universalOutputFolder(
    "output_folder",
    cl::desc("the new Universal checkpoint folder, PARENT/NAME "
             "(PARENT/latest_universal is made to name it). " UCP_OUTPUT_FOLDER_RULES),
    cl::value_desc("folder"), cl::sub(universalCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<std::string> deepSpeedOutputFolder(
    "output_folder",
    cl::desc("the new DeepSpeed checkpoint folder, OUT/TAG (OUT/latest is "
             "made to name TAG). " UCP_OUTPUT_FOLDER_RULES),
    cl::value_desc("folder"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::cat(getDeepSpeedCategory()));
cl::opt<std::string> convertOutputFolder(
    "output_folder",
    cl::desc("the new folder: OUT/TAG of the DeepSpeed checkpoint (--to "
             "deepspeed; OUT/latest is made to name TAG), or of the "
             "safetensors files (--to safetensors). " UCP_OUTPUT_FOLDER_RULES),
    cl::value_desc("folder"), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
#undef UCP_OUTPUT_FOLDER_RULES
static cl::alias universalOutputFolderDash(
    "output-folder", cl::aliasopt(universalOutputFolder));
static cl::alias deepSpeedOutputFolderDash(
    "output-folder", cl::aliasopt(deepSpeedOutputFolder));
static cl::alias convertOutputFolderDash("output-folder",
                                         cl::aliasopt(convertOutputFolder));

cl::opt<bool> injectMissingState(
    "inject_missing_state",
    cl::desc("convert a ZeRO-1/2 checkpoint without universal_checkpoint_info "
             "as one without tensor parallelism (also "
             "--inject-missing-state)"),
    cl::sub(universalCommand), cl::cat(getDeepSpeedCategory()));
static cl::alias injectMissingStateDash("inject-missing-state",
                                        cl::aliasopt(injectMissingState));
cl::opt<bool>
    noStrict("no_strict",
             cl::desc("accept universal_checkpoint_info patterns that match no "
                      "parameter (also --no-strict)"),
             cl::sub(universalCommand), cl::cat(getDeepSpeedCategory()));
static cl::alias noStrictDash("no-strict", cl::aliasopt(noStrict));
cl::opt<unsigned> universalThreads(
    "threads",
    cl::desc("worker threads (default: every core this process may run on)"),
    cl::init(0), cl::sub(universalCommand), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<bool> universalNoSync(
    "no-sync",
    cl::desc("return without waiting for the outputs to reach the disk"),
    cl::sub(universalCommand), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::sub(exportCommand),
    cl::sub(convertCommand), cl::cat(getDeepSpeedCategory()));
cl::opt<bool> noValueCheck(
    "no-value-check",
    cl::desc("move masters and moments holding NaN, Inf or a negative "
             "exp_avg_sq as they are, instead of refusing the checkpoint "
             "(every master and moment read is scanned by default; replicas "
             "are compared where the job reads them; the CRC-32s of records "
             "and values the job does not read are affine-run check's)"),
    cl::sub(universalCommand), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::sub(exportCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<bool>
    universalQuiet("quiet", cl::desc("print no progress or summary"),
                   cl::sub(universalCommand), cl::sub(retargetCommand),
                   cl::sub(fromUniversalCommand), cl::sub(exportCommand),
                   cl::sub(convertCommand), cl::cat(getDeepSpeedCategory()));
cl::opt<int64_t> targetDp("dp",
                          cl::desc("the target's DP degree (default: the "
                                   "source's; required from weights alone)"),
                                 cl::value_desc("M"), cl::sub(retargetCommand),
                                 cl::sub(fromUniversalCommand),
                                 cl::sub(convertCommand),
                                 cl::cat(getDeepSpeedCategory()));
cl::opt<int64_t> targetTp(
    "tp",
    cl::desc("the target's TP degree (default: the source's); another "
             "degree splits each parameter by universal_checkpoint_info's "
             "rules"),
    cl::value_desc("N"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<int64_t> targetPp(
    "pp",
    cl::desc("a pipeline (PipelineModule) checkpoint's target stage count "
             "(default: the source's); above 1, another count needs "
             "--pp-partition"),
    cl::value_desc("P"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<std::string> ppPartition(
    "pp-partition",
    cl::desc("the layers each target stage runs: DeepSpeed's "
             "PipelineModule.parts as B0,B1,...,BP (stage s runs layers "
             "[Bs, Bs+1)), or uniform:L for partition_method 'uniform' over "
             "L layers"),
    cl::value_desc("PARTS"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand),
    cl::cat(getDeepSpeedCategory()));
cl::list<std::string> ppTied(
    "pp-tied",
    cl::desc("the layers using tied module KEY (TiedLayerSpec), whose stages "
             "all hold its parameters; needed at another stage count above 1 "
             "and, from a Universal folder, always: its weights are written "
             "in the first layer's file (repeat for each key)"),
    cl::value_desc("KEY=L1,L2"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<int64_t> numKvHeads(
    "num-kv-heads",
    cl::desc("the model's num_kv_heads, which DeepSpeed's split of attention "
             "weights at a new TP degree depends on, where the checkpoint "
             "does not record it"),
    cl::value_desc("K"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<std::string> targetMapFile(
    "target-map",
    cl::desc("explicit maps of the target's parameters over its TP ranks (a "
             "map document) instead of universal_checkpoint_info's split "
             "rules; their world size is the target's TP degree"),
    cl::value_desc("FILE"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::sub(convertCommand),
    cl::cat(getDeepSpeedCategory()));
cl::opt<int>
    targetStage("zero-stage",
                cl::desc("the target's ZeRO stage, 1, 2 or 3 (default: the "
                         "source's)"),
                cl::value_desc("S"), cl::sub(retargetCommand),
                cl::sub(fromUniversalCommand), cl::sub(convertCommand),
                cl::cat(getDeepSpeedCategory()));
cl::opt<int64_t> targetAutoEpSize(
    "autoep-size",
    cl::desc("an AutoEP checkpoint's target autoep_size (default: the "
             "source's): the EP degree every AutoEP layer's experts are "
             "placed over; it must divide every layer's expert count and "
             "--dp"),
    cl::value_desc("E"), cl::sub(retargetCommand),
    cl::sub(fromUniversalCommand), cl::cat(getDeepSpeedCategory()));

const std::string &getInputFolder() {
  for (const cl::opt<std::string> *folder :
       {&deepSpeedInputFolder, &universalInputFolder, &exportInputFolder})
    if (folder->getNumOccurrences())
      return *folder;
  return deepSpeedInputFolder;
}

const std::string &getOutputFolder() {
  for (const cl::opt<std::string> *folder :
       {&universalOutputFolder, &deepSpeedOutputFolder, &convertOutputFolder})
    if (folder->getNumOccurrences())
      return *folder;
  return universalOutputFolder;
}

} // namespace ds
