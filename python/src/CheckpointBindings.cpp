//===- CheckpointBindings.cpp - DeepSpeed checkpoints and safetensors -----===//
//
// The DeepSpeed reader (a checkpoint folder or a Universal one, validated
// and memory-mapped, every parameter's map over its grid), ds-to-universal,
// ds-retarget and export as the tools run them, and the safetensors
// reader. Long runs release the GIL and report progress through a Python
// callable, called with the GIL held; whatever it raises stops the reports
// and is raised again once the run is over.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"
#include "ucp/DeepSpeed/Retarget.h"
#include "ucp/DeepSpeed/UniversalConversion.h"
#include "ucp/Formats/Safetensors/Safetensors.h"
#include "ucp/Jobs/Export.h"

using namespace ucp;
using namespace ucp::python;

namespace {
/// A Python progress callable as the libraries call it, from any thread.
class Progress {
public:
  explicit Progress(py::object callback) : callback(std::move(callback)) {}
  /// The progress function of a run: a callback that raises stops it,
  /// before anything is committed.
  ProgressFunction get() {
    if (callback.is_none())
      return {};
    return [this](size_t done, size_t total, int64_t bytes) {
      py::gil_scoped_acquire acquire;
      if (failure)
        return false;
      try {
        callback(done, total, bytes);
        return true;
      } catch (py::error_already_set &error) {
        failure = std::make_unique<py::error_already_set>(std::move(error));
        return false;
      }
    };
  }
  /// Raises what the callable raised, if it did.
  void rethrow() {
    if (failure)
      throw std::move(*failure);
  }

private:
  py::object callback;
  std::unique_ptr<py::error_already_set> failure;
};
} // namespace

/// Runs `body` (given the progress function to pass on) with the GIL
/// released; raises what `callback` raised, else the run's error.
template <typename Stats, typename Body>
static Stats runReporting(py::object callback, Body body) {
  Progress progress(std::move(callback));
  llvm::Expected<Stats> stats = [&] {
    py::gil_scoped_release release;
    return body(progress.get());
  }();
  progress.rethrow();
  return unwrap(std::move(stats));
}

/// What every run reports: files and bytes written, seconds taken.
static py::dict getRunNumbers(size_t files, int64_t bytes, double seconds) {
  py::dict result;
  result["files"] = files;
  result["bytes_written"] = bytes;
  result["seconds"] = seconds;
  return result;
}

static py::list getParams(const DeepSpeedCheckpoint &checkpoint) {
  py::list params;
  for (const DeepSpeedParam &param : checkpoint.getParams()) {
    py::dict entry;
    entry["name"] = param.name;
    entry["group"] = param.group;
    entry["map"] = param.map;
    entry["tp_map"] = param.tpMap;
    entry["expert_layer"] = param.expertLayer;
    params.append(entry);
  }
  return params;
}

static py::dict convert(const DeepSpeedCheckpoint &checkpoint,
                        const std::string &output, unsigned threads,
                        bool inject, bool strict, py::object callback) {
  UniversalOptions options;
  options.threads = threads;
  options.injectMissingState = inject;
  options.strict = strict;
  UniversalStats done =
      runReporting<UniversalStats>(std::move(callback), [&](auto report) {
        options.progress = report;
        return convertToUniversal(checkpoint, output, options);
      });
  py::dict result = getRunNumbers(done.files, done.bytesWritten, done.seconds);
  result["parameters"] = done.parameters;
  result["notices"] = done.notices;
  return result;
}

static py::dict retarget(const DeepSpeedCheckpoint &checkpoint,
                         const std::string &output, int64_t dp,
                         std::optional<int64_t> tp, std::optional<int> stage,
                         std::optional<int64_t> autoEpSize, unsigned threads,
                         py::object callback) {
  RetargetOptions options;
  options.dp = dp;
  options.tp = tp;
  options.zeroStage = stage;
  options.autoEpSize = autoEpSize;
  options.threads = threads;
  RetargetStats done =
      runReporting<RetargetStats>(std::move(callback), [&](auto report) {
        options.progress = report;
        return retargetCheckpoint(checkpoint, output, options);
      });
  py::dict result = getRunNumbers(done.files, done.bytesWritten, done.seconds);
  result["notices"] = done.pointerNote.empty()
                          ? std::vector<std::string>()
                          : std::vector<std::string>{done.pointerNote};
  return result;
}

static py::dict exportFolder(const DeepSpeedCheckpoint &checkpoint,
                             const std::string &folder,
                             const std::string &typeName, int64_t maxShardBytes,
                             bool excludeFrozen, py::object callback) {
  ExportOptions options;
  options.excludeFrozen = excludeFrozen;
  std::optional<DType> type = parseDTypeName(typeName);
  if (!type || !isFloatingPoint(*type))
    throw py::value_error("dtype '" + typeName +
                          "': expected f32, bf16 or f16");
  options.dtype = *type;
  options.maxShardBytes = maxShardBytes;
  ExportStats done =
      runReporting<ExportStats>(std::move(callback), [&](auto report) {
        options.progress = report;
        return ucp::exportModel(checkpoint, folder, options);
      });
  py::dict result = getRunNumbers(done.files, done.bytesWritten, done.seconds);
  result["tensors"] = done.tensors;
  return result;
}

/// Every tensor of a safetensors file: name -> (dtype, shape, bytes).
static py::dict readSafetensors(const std::string &path) {
  std::unique_ptr<SafetensorsReader> reader =
      unwrap(SafetensorsReader::open(path));
  py::dict tensors;
  for (const TensorInfo &tensor : reader->getTensors())
    tensors[py::str(tensor.name)] = py::make_tuple(
        getSafetensorsName(tensor.dtype).str(), toList(tensor.shape),
        py::bytes(reader->getData(tensor), tensor.end - tensor.begin));
  return tensors;
}

void ucp::python::bindCheckpoints(py::module_ &m) {
  py::class_<DeepSpeedCheckpoint>(m, "DeepSpeedCheckpoint",
                                  "A DeepSpeed ZeRO checkpoint folder, read "
                                  "without executing any of its code.")
      .def_static(
          "open",
          [](const std::string &folder) {
            return unwrap(DeepSpeedCheckpoint::open(folder));
          },
          py::arg("folder"), "Opens and validates CKPT/TAG.")
      .def_static(
          "open_universal",
          [](const std::string &folder) {
            return unwrap(DeepSpeedCheckpoint::openUniversal(folder));
          },
          py::arg("folder"), "Opens a Universal checkpoint folder.")
      .def_property_readonly("folder",
                             [](const DeepSpeedCheckpoint &checkpoint) {
                               return checkpoint.getFolder().str();
                             })
      .def_property_readonly("tp_degree", &DeepSpeedCheckpoint::getTpDegree)
      .def_property_readonly("dp_degree", &DeepSpeedCheckpoint::getDpDegree)
      .def_property_readonly("zero_stage", &DeepSpeedCheckpoint::getZeroStage)
      .def_property_readonly("autoep_size", &DeepSpeedCheckpoint::getAutoEpSize)
      .def_property_readonly("is_universal", &DeepSpeedCheckpoint::isUniversal)
      .def_property_readonly("params", &getParams,
                             "Each trainable parameter: name, group, its map "
                             "over the grid and over the TP (or EP) ranks.");
  m.def("ds_to_universal", &convert, py::arg("checkpoint"), py::arg("output"),
        py::arg("threads") = 0, py::arg("inject_missing_state") = false,
        py::arg("strict") = true, py::arg("progress") = py::none(),
        "affine-run ds-to-universal: the Universal form of `checkpoint` in "
        "the new folder `output`.");
  m.def("retarget", &retarget, py::arg("checkpoint"), py::arg("output"),
        py::arg("dp"), py::arg("tp") = py::none(),
        py::arg("zero_stage") = py::none(), py::arg("autoep_size") = py::none(),
        py::arg("threads") = 0, py::arg("progress") = py::none(),
        "affine-run ds-retarget / universal-to-ds: `checkpoint` at another "
        "topology in the new folder `output` (OUT/TAG).");
  m.def("export_model", &exportFolder, py::arg("checkpoint"), py::arg("out"),
        py::arg("dtype") = "f32", py::arg("max_shard_bytes") = 5'000'000'000,
        py::arg("exclude_frozen") = false, py::arg("progress") = py::none(),
        "affine-run export: the consolidated model as safetensors shards.");
  m.def(
      "parse_shard_size",
      [](const std::string &text) {
        std::optional<int64_t> bytes = parseShardSize(text);
        if (!bytes)
          throw py::value_error("shard size '" + text +
                                "': expected a positive size, as 5GB, "
                                "500MB, 2GiB or a number of bytes");
        return *bytes;
      },
      py::arg("text"),
      "Bytes of a shard size as Hugging Face writes it (5GB, 500MB, 2GiB).");
  m.def("read_safetensors", &readSafetensors, py::arg("path"),
        "Every tensor of a safetensors file: name -> (dtype, shape, bytes).");
}
