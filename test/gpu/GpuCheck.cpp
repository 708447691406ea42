//===- GpuCheck.cpp - Generated kernels on a GPU, checked and timed -------===//
//
// ucp-gpu-check runs the CUDA executor on a real GPU:
//   * check: random plans of every element type (RandomPlans.h), run by the
//     CUDA executor and by the CPU executor, compared byte for byte;
//   * bench: the copy benchmark's workloads (CopyWorkloads.h) in f32 and
//     bf16: kernel time with the buffers on the device, against a
//     device-to-device memcpy of the same bytes, and the CPU executor on
//     every core of the same machine; each result is also compared with
//     the CPU executor's;
//   * files FROM TO: affine-run's engine (runTransfer) on safetensors files
//     in every float type, extracting with the map document FROM,
//     resharding to TO and rebuilding, on the CPU and on the GPU, every
//     output file compared byte for byte (what test/Run/cuda-gpu.test
//     does with affine-run, which needs LLVM's shared library).
// It links no MLIR and LLVM's Support library statically, so the binary
// runs on a machine that has only the NVIDIA driver and NVRTC
// (scripts/gpu-check). Exit status 0: every output equal; 1: a difference
// or an error (no GPU included), said on stderr.
//
//===----------------------------------------------------------------------===//

#include "CopyWorkloads.h"
#include "RandomPlans.h"
#include "ucp/Engine/CudaKernels.h"
#include "ucp/Formats/Json/MapDocument.h"
#include "ucp/Jobs/Transfer.h"
#include "ucp/Plan/Compose.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace ucp;
using namespace ucp::testing;

namespace {

using Bytes = std::vector<uint8_t>;

/// Host buffers of one program: sources filled, targets for the CPU and
/// for the GPU.
struct HostBuffers {
  std::map<int64_t, Bytes> sources, cpuTargets, gpuTargets;
  ProgramBuffers cpu, gpu;

  HostBuffers(const HostBuffers &) = delete;
  HostBuffers(const CopyProgram &program, int64_t size, uint64_t seed) {
    for (const auto &[rank, elements] : program.sourceElements) {
      Bytes &data = sources[rank];
      data.resize(elements * size);
      // A cheap hash of the position: distinct bytes, fast at 1 GiB.
      uint64_t x = seed + rank;
      for (size_t b = 0; b < data.size(); ++b)
        data[b] = static_cast<uint8_t>((x + b) * 0x9E3779B97F4A7C15ull >> 56);
      cpu.sources[rank] = gpu.sources[rank] = data.data();
    }
    for (const auto &[rank, elements] : program.targetElements) {
      cpuTargets[rank].assign(elements * size, 0xAB);
      gpuTargets[rank].assign(elements * size, 0xCD);
      cpu.targets[rank] = cpuTargets[rank].data();
      gpu.targets[rank] = gpuTargets[rank].data();
    }
  }

  /// Describes the first byte where the GPU's targets differ from the
  /// CPU's; empty when they are equal.
  std::string difference() const {
    for (const auto &[rank, expected] : cpuTargets) {
      const Bytes &actual = gpuTargets.at(rank);
      for (size_t b = 0; b < expected.size(); ++b)
        if (expected[b] != actual[b])
          return "target rank " + std::to_string(rank) + " byte " +
                 std::to_string(b) + ": CPU " + std::to_string(expected[b]) +
                 ", GPU " + std::to_string(actual[b]);
    }
    return "";
  }
};

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Runs `programs` of `type` on the GPU (kernels decoding units as
/// `indexing` says) and on the CPU; returns false on the first difference
/// or error, reported under `name`.
bool checkPrograms(llvm::ArrayRef<std::pair<std::string, CopyProgram>> programs,
                   DType type, CudaUnitIndex indexing, const std::string &name,
                   std::mt19937_64 &rng) {
  llvm::Expected<std::unique_ptr<CudaKernels>> gpu =
      CudaKernels::create(programs, type, indexing);
  if (!gpu) {
    llvm::errs() << "ucp-gpu-check: " << name << ": "
                 << llvm::toString(gpu.takeError()) << "\n";
    return false;
  }
  for (size_t i = 0; i < programs.size(); ++i) {
    const CopyProgram &program = programs[i].second;
    HostBuffers buffers(program, getElementSize(type), rng());
    executeOnCpu({&program, buffers.cpu, type}, 0);
    if (llvm::Error e = (*gpu)->run(i, program, buffers.gpu)) {
      llvm::errs() << "ucp-gpu-check: " << name << " plan " << i << ": "
                   << llvm::toString(std::move(e)) << "\n";
      return false;
    }
    std::string difference = buffers.difference();
    if (!difference.empty()) {
      llvm::errs() << "ucp-gpu-check: " << name << " plan " << i
                   << " differs from the CPU executor at " << difference
                   << "\n";
      return false;
    }
  }
  return true;
}

/// Random plans of every dtype on the GPU and the CPU; returns false on the
/// first difference or error.
bool checkRandomPlans() {
  std::mt19937_64 rng(2026);
  size_t programCount = 0;
  auto start = std::chrono::steady_clock::now();
  for (DType type : kAllDTypes) {
    // A first program that writes nothing has no launch, so that the
    // others' launches are numbered apart from their programs.
    std::vector<std::pair<std::string, CopyProgram>> programs = {
        {"plan 0 (empty)", CopyProgram()}};
    for (const TransferPlan &plan : makeExecutionPlans(rng, type, 100))
      programs.push_back(
          {"plan " + std::to_string(programs.size()), lowerPlan(plan)});
    // Also with 64-bit unit decoding, which only launches of 2^32 units
    // use: the same code for every type, so one type of each size.
    std::vector<CudaUnitIndex> indexings = {CudaUnitIndex::Narrowest};
    if (llvm::is_contained(kOneDTypePerSize, type))
      indexings.push_back(CudaUnitIndex::Wide);
    for (CudaUnitIndex indexing : indexings) {
      std::string name =
          getSafetensorsName(type).str() +
          (indexing == CudaUnitIndex::Wide ? " (64-bit units)" : "");
      if (!checkPrograms(programs, type, indexing, name, rng))
        return false;
      programCount += programs.size();
    }
  }
  llvm::outs() << "check: " << programCount << " random programs over "
               << std::size(kAllDTypes)
               << " dtypes (4 of them also with 64-bit unit decoding): GPU "
                  "output equals the CPU executor's byte for byte ("
               << llvm::format("%.1f", secondsSince(start)) << " s)\n";
  return true;
}

/// Times the workloads named in `names` (all when empty) on the GPU and
/// the CPU in `type`, checking each result; returns false on a difference
/// or error.
bool benchWorkloads(DType type, int repeats,
                    const std::vector<std::string> &names) {
  std::string name = getSafetensorsName(type).str();
  int64_t size = getElementSize(type);
  bool headerPrinted = false;
  for (const CopyWorkload &workload : getCopyWorkloads()) {
    if (!names.empty() && !llvm::is_contained(names, workload.name))
      continue;
    std::vector<std::pair<std::string, CopyProgram>> programs;
    SentElements sent;
    for (size_t i = 0; i < workload.from.size(); ++i)
      programs.push_back({workload.from[i].name,
                          lowerPlan(*composeMaps(workload.from[i],
                                                 workload.to[i], {}, sent))});
    llvm::Expected<std::unique_ptr<CudaKernels>> gpu =
        CudaKernels::create(programs, type);
    if (!gpu) {
      llvm::errs() << "ucp-gpu-check: " << workload.name << ": "
                   << llvm::toString(gpu.takeError()) << "\n";
      return false;
    }
    if (!headerPrinted) {
      llvm::outs() << "\nbench (" << name << ", kernels for "
                   << (*gpu)->getArchitecture()
                   << ", GB/s of target bytes written; GPU: kernels only, "
                      "buffers on the device, mean of "
                   << repeats << " runs)\n";
      llvm::outs() << "workload                     MiB       GPU    memcpy "
                      "GPU/memcpy       CPU\n";
      headerPrinted = true;
    }
    CudaTiming total;
    double cpuSeconds = 0;
    for (size_t i = 0; i < programs.size(); ++i) {
      const CopyProgram &program = programs[i].second;
      HostBuffers buffers(program, size, i);
      llvm::Expected<CudaTiming> timing =
          (*gpu)->time(i, program, buffers.gpu, repeats);
      if (!timing) {
        llvm::errs() << "ucp-gpu-check: " << workload.name << ": "
                     << llvm::toString(timing.takeError()) << "\n";
        return false;
      }
      total.bytes += timing->bytes;
      total.kernelSeconds += timing->kernelSeconds;
      total.memcpySeconds += timing->memcpySeconds;
      double best = 1e30;
      for (int run = 0; run < 3; ++run) {
        auto start = std::chrono::steady_clock::now();
        executeOnCpu({&program, buffers.cpu, type}, 0);
        best = std::min(best, secondsSince(start));
      }
      cpuSeconds += best;
      std::string difference = buffers.difference();
      if (!difference.empty()) {
        llvm::errs() << "ucp-gpu-check: " << workload.name << " ("
                     << programs[i].first
                     << ") differs from the CPU executor at " << difference
                     << "\n";
        return false;
      }
    }
    double gpuRate = total.bytes / total.kernelSeconds / 1e9;
    double copyRate = total.bytes / total.memcpySeconds / 1e9;
    llvm::outs() << llvm::format("%-22s %9.0f %9.1f %9.1f %10.2f %9.2f\n",
                                 workload.name.c_str(), total.bytes / 1048576.0,
                                 gpuRate, copyRate, gpuRate / copyRate,
                                 total.bytes / cpuSeconds / 1e9);
  }
  return true;
}

/// Reads the map document at `path`; reports and returns nothing on error.
std::optional<std::vector<ParamMap>> readMapDocument(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  if (!file) {
    llvm::errs() << "ucp-gpu-check: cannot read " << path << ": "
                 << file.getError().message() << "\n";
    return std::nullopt;
  }
  llvm::Expected<std::vector<ParamMap>> maps =
      parseMapDocument((*file)->getBuffer());
  if (!maps) {
    llvm::errs() << "ucp-gpu-check: " << path << ": "
                 << llvm::toString(maps.takeError()) << "\n";
    return std::nullopt;
  }
  return std::move(*maps);
}

/// Describes the first byte where the files differ; empty when equal.
std::string compareFiles(llvm::StringRef expected, llvm::StringRef actual) {
  auto a = llvm::MemoryBuffer::getFile(expected);
  auto b = llvm::MemoryBuffer::getFile(actual);
  if (!a || !b)
    return "cannot read " + (a ? actual : expected).str();
  llvm::StringRef x = (*a)->getBuffer(), y = (*b)->getBuffer();
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i)
    if (x[i] != y[i])
      return actual.str() + " differs from the CPU's at byte " +
             std::to_string(i);
  if (x.size() != y.size())
    return actual.str() + " has " + std::to_string(y.size()) +
           " bytes, the CPU's " + std::to_string(x.size());
  return "";
}

/// The programs of `source` -> `target`, composed and lowered with the core
/// alone: this check travels without MLIR, so it cannot run affine-run's
/// reshard pipeline. What it compares (the CPU and GPU executions of the
/// same programs) does not depend on how they were planned; the example
/// maps it reads verify.
TransferPrograms planDirectly(const TransferSide &source,
                              const TransferSide &target) {
  TransferPrograms programs;
  SentElements sent;
  for (const ParamMap &from : source.maps)
    for (const ParamMap &to : target.maps)
      if (from.name == to.name)
        programs[from.name] =
            lowerPlan(llvm::cantFail(composeMaps(from, to, {}, sent)));
  return programs;
}

/// Extracts the maps `from` from random full tensors, reshards them to
/// `to` and rebuilds them, in every float type, with runTransfer on the CPU
/// and on the GPU; returns false on the first difference or error.
bool checkFiles(llvm::StringRef fromPath, llvm::StringRef toPath) {
  std::optional<std::vector<ParamMap>> from = readMapDocument(fromPath);
  std::optional<std::vector<ParamMap>> to = readMapDocument(toPath);
  if (!from || !to)
    return false;
  llvm::SmallString<128> root;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("ucp-gpu-check", root)) {
    llvm::errs() << "ucp-gpu-check: cannot make a folder: " << ec.message()
                 << "\n";
    return false;
  }
  auto removeRoot =
      llvm::make_scope_exit([&] { llvm::sys::fs::remove_directories(root); });
  auto at = [&](std::initializer_list<llvm::StringRef> parts) {
    llvm::SmallString<256> path(root);
    for (llvm::StringRef part : parts)
      llvm::sys::path::append(path, part);
    return path.str().str();
  };
  auto start = std::chrono::steady_clock::now();
  int types = 0;
  for (DType type : kAllDTypes) {
    if (!isFloatingPoint(type))
      continue; // The example models' pre-divided biases take scales.
    ++types;
    std::string name = getSafetensorsName(type).str();
    std::string full = at({name + ".safetensors"});
    if (llvm::Error error = writeRandomFullTensors(*from, full, type, 7)) {
      llvm::errs() << "ucp-gpu-check: " << llvm::toString(std::move(error))
                   << "\n";
      return false;
    }
    TransferSide fullSide = getFullTensorSide(*from, full);
    std::vector<std::string> outputs;
    for (const char *device : {"cpu", "cuda"}) {
      TransferOptions options;
      options.syncOutputs = false;
      if (llvm::StringRef(device) == "cuda")
        options.device = TransferOptions::Device::Cuda;
      TransferSide extracted = getShardSide(*from, at({name, device, "from"}));
      TransferSide resharded = getShardSide(*to, at({name, device, "to"}));
      TransferSide rebuilt =
          getFullTensorSide(*to, at({name, device, "back.safetensors"}));
      for (auto [source, target] :
           {std::pair{&fullSide, &extracted}, std::pair{&extracted, &resharded},
            std::pair{&resharded, &rebuilt}})
        if (llvm::Error error =
                runTransfer(*source, *target, planDirectly(*source, *target),
                            options)
                    .takeError()) {
          llvm::errs() << "ucp-gpu-check: files " << name << " (" << device
                       << "): " << llvm::toString(std::move(error)) << "\n";
          return false;
        }
      if (outputs.empty())
        for (const TransferSide *side : {&extracted, &resharded, &rebuilt})
          for (const auto &[rank, path] : side->files)
            outputs.push_back(path.substr(at({name, device}).size()));
    }
    for (const std::string &output : outputs) {
      std::string difference =
          compareFiles(at({name, "cpu"}) + output, at({name, "cuda"}) + output);
      if (!difference.empty()) {
        llvm::errs() << "ucp-gpu-check: files " << name << ": " << difference
                     << "\n";
        return false;
      }
    }
  }
  llvm::outs() << "files: " << from->size() << " parameters extracted, "
               << "resharded and rebuilt in " << types
               << " float types: --device cuda writes the CPU's files byte "
                  "for byte ("
               << llvm::format("%.1f", secondsSince(start)) << " s)\n";
  return true;
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  std::vector<std::string> names(argv + std::min(argc, 2), argv + argc);
  if (mode == "files" && names.size() == 2)
    return checkFiles(names[0], names[1]) ? 0 : 1;
  std::vector<std::string> known;
  for (const CopyWorkload &workload : getCopyWorkloads())
    known.push_back(workload.name);
  bool usage = !(mode.empty() || mode == "check" || mode == "bench") ||
               (mode != "bench" && !names.empty());
  for (const std::string &name : names)
    if (!llvm::is_contained(known, name)) {
      llvm::errs() << "ucp-gpu-check: no workload named '" << name << "'\n";
      usage = true;
    }
  if (usage) {
    llvm::errs() << "usage: ucp-gpu-check [check | bench [WORKLOAD...] | "
                    "files FROM.json TO.json]\n"
                    "  check: random plans of every dtype on the GPU, "
                    "compared with the CPU executor\n"
                    "  bench: the copy benchmark's workloads, GPU kernels "
                    "against device memcpy and the CPU\n"
                    "  (no argument: both)\n"
                    "  files: extract, reshard and rebuild of two map "
                    "documents' files, GPU against CPU\n"
                    "workloads: "
                 << llvm::join(known, ", ") << "\n";
    return 1;
  }
  if (mode != "bench" && !checkRandomPlans())
    return 1;
  if (mode != "check" && !(benchWorkloads(DType::F32, 20, names) &&
                           benchWorkloads(DType::BF16, 20, names)))
    return 1;
  return 0;
}
