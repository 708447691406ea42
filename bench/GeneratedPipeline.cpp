//===- GeneratedPipeline.cpp - A PipelineModule's stages and layers -------===//
//
// The generator's pipeline-parallel model, as DeepSpeed's PipelineModule
// builds and saves it: layers numbered globally, partitioned uniformly over
// the stages (partition_uniform: equal chunks, the first stages one more
// where they do not divide); each stage's parameters named
// `<layer>.<local name>`, a tied module's `tied_modules.<key>.<local name>`
// first on every stage using it; each layer's weights in
// `layer_XX-model_states.pt`, a tied module's once, by the stage of the
// first layer using it.
//
//===----------------------------------------------------------------------===//

#include "GeneratedModel.h"
#include "ucp/DeepSpeed/PipelineLayout.h"
#include "ucp/Formats/Torch/Pickle.h"
#include "ucp/Map/Indexing.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace ucp;
using namespace ucp::generator;

std::vector<Model> ucp::generator::buildPipelineModels(
    const PipelineShape &shape, int64_t dp) {
  int64_t head = shape.layers + 2, items = shape.layers + 3;
  std::vector<int64_t> bounds = getUniformPartition(items, shape.stages);
  std::map<std::string, size_t> ids;
  std::vector<Model> models;
  for (int64_t s = 0; s < shape.stages; ++s) {
    Model &model = models.emplace_back();
    model.mpRank = s;
    auto holds = [&](int64_t layer) {
      return bounds[s] <= layer && layer < bounds[s + 1];
    };
    auto add = [&](std::string name, Extents dims, int64_t layer,
                   std::string local) {
      Param param{name, dims, dims.size() > 1 ? 0u : 1u};
      param.fullShape = dims;
      param.id = ids.try_emplace(name, ids.size()).first->second;
      param.layer = layer;
      param.localName = std::move(local);
      model.params.push_back(std::move(param));
    };
    Extents embedding{shape.vocab, shape.hidden};
    if (shape.tied && (holds(0) || holds(head)))
      add("tied_modules.embed.weight", embedding, holds(0) ? 0 : -1,
          "weight");
    for (int64_t l = bounds[s]; l < bounds[s + 1]; ++l) {
      auto local = [&](const char *name, Extents dims) {
        add(std::to_string(l) + "." + name, dims, l, name);
      };
      if (l == 0 && !shape.tied) {
        local("weight", embedding);
      } else if (l >= 1 && l <= shape.layers + 1) {
        local("ln.weight", {shape.hidden});
        local("ln.bias", {shape.hidden});
        if (l <= shape.layers) {
          local("fc1.weight", {shape.ffn, shape.hidden});
          local("fc1.bias", {shape.ffn});
          local("fc2.weight", {shape.hidden, shape.ffn});
          local("fc2.bias", {shape.hidden});
        }
      } else if (l == head && !shape.tied) {
        local("proj.weight", embedding);
        local("proj.bias", {shape.vocab});
      }
    }
    model.layOut(dp);
  }
  return models;
}

llvm::Error ucp::generator::writeLayerFiles(const std::vector<Model> &models,
                                            DType type, uint64_t seed,
                                            const std::string &folder) {
  for (const Model &model : models) {
    // Each layer's weights, in module order, one storage each.
    std::map<int64_t, std::vector<const Param *>> layers;
    for (const Param &param : model.params)
      if (param.layer >= 0)
        layers[param.layer].push_back(&param);
    for (const auto &[layer, params] : layers) {
      PickleBuilder b;
      std::vector<std::pair<PickleRef, PickleRef>> items;
      std::vector<StorageFill> fills;
      for (const Param *param : params) {
        std::string key = std::to_string(fills.size());
        PickleRef storage = b.storage(key, type, param->elements);
        items.push_back({b.string(param->localName),
                         b.tensor(storage, 0, param->shape,
                                  getRowMajorStrides(param->shape), false)});
        fills.push_back({key, param->elements * getElementSize(type),
                         [=](char *data) {
                           for (int64_t x = 0; x < param->elements; ++x)
                             store(type, data, x,
                                   getValue(seed, State::Fp32, param->id, x));
                         }});
      }
      std::string path = folder + "/layer_" +
                         llvm::formatv("{0:d2}", layer).str() +
                         "-model_states.pt";
      if (llvm::Error error =
              writeFile(path, b.finish(b.dict(items, /*ordered=*/true)), fills))
        return error;
    }
  }
  return llvm::Error::success();
}
