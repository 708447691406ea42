//===- GeneratedModel.h - The generator's model and values ------*- C++ -*-===//
//
// What ucp-make-deepspeed-checkpoint writes, as plain data: the parameters
// of each model-parallel rank (a TP rank, or a pipeline stage), ZeRO-1/2's
// flattening of each parameter group, and the pseudo-random value of every
// element of every state. Shared by its writers of the ZeRO files and of a
// pipeline's layer files; no layout code of the product's.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_BENCH_GENERATEDMODEL_H
#define UCP_BENCH_GENERATEDMODEL_H

#include "ucp/Element/DType.h"
#include "ucp/Formats/Torch/Pickle.h"
#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace ucp::generator {

struct Param {
  std::string name;
  /// Its shape on this TP rank.
  Extents shape;
  size_t group = 0;
  int64_t elements = 0;
  /// Where it starts in its group's flat buffer.
  int64_t offset = 0;
  /// The dimension TP splits (-1: replicated), and the full shape.
  int splitDim = -1;
  Extents fullShape;
  /// What its values are drawn with: one id per parameter of the model,
  /// the same for every TP rank and stage holding it.
  size_t id = 0;
  /// A pipeline's: the layer whose file holds its weight (-1: none, a
  /// tied copy saved by another stage), and its name there.
  int64_t layer = -1;
  std::string localName;
};

/// ZeRO-1/2's flattening of a group (stage_1_and_2.py): its parameters
/// concatenated in order, padded to a multiple of 2 x dp, cut in dp equal
/// partitions.
struct Flattening {
  std::vector<int64_t> offsets, sizes;
  int64_t total = 0, partition = 0, dp = 1;

  Flattening(const std::vector<int64_t> &elements, int64_t dp);
  /// The padding at the end of rank `rank`'s partition.
  int64_t getPadding(int64_t rank) const;
  /// Parameter `i`'s fragment on rank `rank`: its start in the partition
  /// and its elements (0 where they do not meet).
  std::pair<int64_t, int64_t> getSlice(size_t i, int64_t rank) const;
};

/// The model on one model-parallel rank: parameters in module order, and
/// the flattening of each group.
struct Model {
  int64_t tpRank = 0;
  /// Its rank in the files' names: the TP rank, or a pipeline's stage.
  int64_t mpRank = 0;
  std::vector<Param> params;
  std::vector<std::vector<size_t>> groups; // Param indices, in order.
  std::vector<Flattening> layouts;         // Each group's flattening.
  int64_t partition(size_t g) const { return layouts[g].partition; }
  int64_t padded(size_t g) const {
    return layouts[g].partition * layouts[g].dp;
  }
  /// Groups the parameters (weight decay on matrices, group 0; none on
  /// vectors, group 1) and lays each group out over `dp` ranks.
  void layOut(int64_t dp);
};

/// The state a value belongs to; also the hash's salt.
enum class State { Fp32, ExpAvg, ExpAvgSq };

/// The value of element `element` (of the full tensor) of parameter `id`.
float getValue(uint64_t seed, State state, size_t id, int64_t element);

/// Stores `value` at element `index` of `data` in `type` (F32 or BF16,
/// rounded to nearest even).
void store(DType type, char *data, int64_t index, float value);

/// A storage to write: its key, and how to fill a buffer of its bytes.
struct StorageFill {
  std::string key;
  int64_t bytes;
  std::function<void(char *)> fill;
};

/// Writes `document` to `path`, each storage filled into one buffer (reused,
/// so memory holds the largest storage once) and written whole.
llvm::Error writeFile(const std::string &path, const PickleDocument &document,
                      llvm::ArrayRef<StorageFill> storages);

/// universal_checkpoint_info's `affine_map` for `model` at TP `tp`: every
/// parameter's map, as DeepSpeed's to_dict writes it (rank keys as ints).
PickleRef buildAffineMapDocument(PickleBuilder &b, const Model &model,
                                 int64_t tp);

/// A pipeline of `stages` stages of DeepSpeed's PipelineModule: an
/// embedding, `layers` blocks (LayerNorm, Linear up, Linear down, with
/// biases), a final LayerNorm and a head (its own Linear with bias, or the
/// embedding tied), partitioned uniformly over the stages.
struct PipelineShape {
  int64_t stages = 2, layers = 4, hidden = 64, ffn = 128, vocab = 101;
  bool tied = false;
};

/// Each stage's model, parameters named as PipelineModule names them.
std::vector<Model> buildPipelineModels(const PipelineShape &shape,
                                       int64_t dp);

/// Writes the layer files of `models` (layer_XX-model_states.pt) into
/// `folder`: each layer's weights in `type`, the fp32 masters rounded.
llvm::Error writeLayerFiles(const std::vector<Model> &models, DType type,
                            uint64_t seed, const std::string &folder);

} // namespace ucp::generator

#endif // UCP_BENCH_GENERATEDMODEL_H
