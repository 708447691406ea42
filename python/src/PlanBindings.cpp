//===- PlanBindings.cpp - Transfer plans and their execution --------------===//
//
// Composition (M_t ∘ M_s⁻¹ per parameter, both maps verified first, under a
// replica policy), the plans' segments and fills as Python objects and as
// the plan document, their lowering to copy programs at a scale power (the
// lowering affine-run's pipeline runs), and the CPU executor over buffers
// the Python side passes by address, the GIL released while it copies.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "ucp/Analysis/MapVerifier.h"
#include "ucp/Checkpoint/CheckpointModel.h"
#include "ucp/Checkpoint/Invariants.h"
#include "ucp/Dialect/UCP/Translate/MapTranslation.h"
#include "ucp/Engine/CpuExecutor.h"
#include "ucp/Formats/Json/PlanDocument.h"
#include "ucp/Plan/Compose.h"
#include "ucp/Plan/Planner.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace ucp;
using namespace ucp::python;

static ReplicaPolicy getPolicy(const std::string &name, int64_t ranksPerNode) {
  ReplicaPolicy policy;
  policy.ranksPerNode = ranksPerNode;
  if (std::optional<ReplicaPolicy::Kind> kind = parseReplicaPolicyKind(name))
    policy.kind = *kind;
  else
    throw py::value_error("replica policy '" + name +
                          "': expected lowest, local, node or balance");
  if (ranksPerNode < 1)
    throw py::value_error("ranks_per_node must be >= 1");
  return policy;
}

/// Plans every parameter of `sources` into the same-named one of
/// `targets` with the planner, each map verified first.
static std::vector<TransferPlan>
compose(const std::vector<ParamMap> &sources,
        const std::vector<ParamMap> &targets, const std::string &policyName,
        int64_t ranksPerNode, const std::vector<int64_t> &sourceProcesses,
        const std::vector<int64_t> &targetProcesses) {
  ReplicaPolicy policy = getPolicy(policyName, ranksPerNode);
  policy.sourceProcesses = sourceProcesses;
  policy.targetProcesses = targetProcesses;
  llvm::Expected<std::vector<TransferPlan>> plans = [&] {
    py::gil_scoped_release release;
    return composeTransfers(
        sources, targets, policy,
        {"source maps", "target maps", "source map", "target map"});
  }();
  if (!plans)
    throw py::value_error(llvm::toString(plans.takeError()));
  return std::move(*plans);
}

/// Checks that `buffers` holds exactly the ranks and elements `elements`
/// describes.
static void
checkBuffers(const std::map<int64_t, int64_t> &elements,
             const std::map<int64_t, std::pair<uintptr_t, int64_t>> &buffers,
             const char *side) {
  for (const auto &[rank, count] : elements) {
    auto found = buffers.find(rank);
    if (found == buffers.end())
      throw py::value_error(std::string("no ") + side + " shard of rank " +
                            std::to_string(rank));
    if (found->second.second != count)
      throw py::value_error(
          "rank " + std::to_string(rank) + " supplied a " + side +
          " shard of " + std::to_string(found->second.second) +
          " elements, but the map describes " + std::to_string(count));
  }
}

static void
execute(const CopyProgram &program,
        const std::map<int64_t, std::pair<uintptr_t, int64_t>> &sources,
        const std::map<int64_t, std::pair<uintptr_t, int64_t>> &targets,
        const std::string &typeName, unsigned threads, const std::string &name,
        int scalePower) {
  std::optional<DType> type = parseDTypeName(typeName);
  if (!type)
    throw py::value_error("dtype '" + typeName +
                          "' is not one affine-ucp moves");
  checkBuffers(program.sourceElements, sources, "source");
  checkBuffers(program.targetElements, targets, "target");
  if (llvm::Error error = checkScalePower(program, name, scalePower))
    raise(std::move(error));
  if (llvm::Error error = checkFactors(program, *type, name, scalePower))
    raise(std::move(error));
  ProgramBuffers buffers;
  for (const auto &[rank, buffer] : sources)
    buffers.sources[rank] = reinterpret_cast<const void *>(buffer.first);
  for (const auto &[rank, buffer] : targets)
    buffers.targets[rank] = reinterpret_cast<void *>(buffer.first);
  py::gil_scoped_release release;
  executeOnCpu({&program, buffers, *type, scalePower}, threads);
}

static void bindPlanTypes(py::module_ &m) {
  py::class_<Segment>(m, "Segment",
                      "One copy of a plan: a block from a source shard to a "
                      "target shard, times `scale`.")
      .def_property_readonly("shape",
                             [](const Segment &s) { return toList(s.shape); })
      .def_readonly("source_rank", &Segment::sourceRank)
      .def_property_readonly("source_offset",
                             [](const Segment &s) { return s.source.offset; })
      .def_property_readonly(
          "source_strides",
          [](const Segment &s) { return toList(s.source.strides); })
      .def_readonly("target_rank", &Segment::targetRank)
      .def_property_readonly("target_offset",
                             [](const Segment &s) { return s.target.offset; })
      .def_property_readonly(
          "target_strides",
          [](const Segment &s) { return toList(s.target.strides); })
      .def_readonly("scale", &Segment::scale);
  py::class_<Fill>(m, "Fill",
                   "Target elements no source holds (a padded vocabulary's "
                   "padding), written as zeros.")
      .def_readonly("rank", &Fill::rank)
      .def_property_readonly("shape",
                             [](const Fill &f) { return toList(f.shape); })
      .def_property_readonly("target_offset",
                             [](const Fill &f) { return f.target.offset; })
      .def_property_readonly("target_strides", [](const Fill &f) {
        return toList(f.target.strides);
      });
  py::class_<TransferPlan>(m, "TransferPlan",
                           "One parameter's moves from its source shards to "
                           "its target shards.")
      .def_readonly("name", &TransferPlan::name)
      .def_readonly("source_world", &TransferPlan::sourceWorld)
      .def_readonly("target_world", &TransferPlan::targetWorld)
      .def_property_readonly("source_shards",
                             [](const TransferPlan &p) {
                               std::map<int64_t, std::vector<int64_t>> out;
                               for (const auto &[r, s] : p.sourceShards)
                                 out[r] = toList(s);
                               return out;
                             })
      .def_property_readonly("target_shards",
                             [](const TransferPlan &p) {
                               std::map<int64_t, std::vector<int64_t>> out;
                               for (const auto &[r, s] : p.targetShards)
                                 out[r] = toList(s);
                               return out;
                             })
      .def_readonly("segments", &TransferPlan::segments)
      .def_readonly("fills", &TransferPlan::fills);
  py::class_<CopyProgram>(m, "CopyProgram",
                          "A plan lowered to strided copies, ready to "
                          "execute at any scale power.")
      .def_readonly("source_elements", &CopyProgram::sourceElements)
      .def_readonly("target_elements", &CopyProgram::targetElements)
      .def_property_readonly("copies", [](const CopyProgram &p) {
        size_t copies = 0;
        for (const BufferPairCopies &pair : p.pairs)
          copies += pair.copies.size();
        return copies;
      });
}

void ucp::python::bindPlans(py::module_ &m) {
  bindPlanTypes(m);
  // The one table of states and the scale powers they carry.
  py::dict powers;
  for (TensorState state : {TensorState::Master, TensorState::ExpAvg,
                            TensorState::ExpAvgSq, TensorState::Weight})
    powers[py::str(getStateName(state).str())] = getScalePower(state);
  m.attr("state_scale_powers") = powers;
  m.def("compose", &compose, py::arg("sources"), py::arg("targets"),
        py::arg("policy") = "local", py::arg("ranks_per_node") = 8,
        py::arg("source_processes") = std::vector<int64_t>(),
        py::arg("target_processes") = std::vector<int64_t>(),
        "Plans each source map into the target map of its name (both "
        "verified first) under a replica policy: lowest, local, node or "
        "balance; with the process of every source and target rank, the "
        "policies prefer holders in the target's process.");
  m.def(
      "write_plans",
      [](const std::vector<TransferPlan> &plans) {
        return printToString(
            [&](llvm::raw_ostream &os) { writePlanDocument(plans, os); });
      },
      py::arg("plans"), "The plan document of `plans`.");
  m.def(
      "parse_plans",
      [](const std::string &text) { return unwrap(parsePlanDocument(text)); },
      py::arg("text"), "Parses and checks a plan document.");
  m.def(
      "summarize_plans",
      [](const std::vector<TransferPlan> &plans) {
        return printToString(
            [&](llvm::raw_ostream &os) { printPlanSummary(plans, os); });
      },
      py::arg("plans"), "The summary table of `plans`.");
  m.def("lower", &lowerPlan, py::arg("plan"),
        "The copy program of `plan`, for every state of its parameter.");
  m.def("program_into", &getProgramInto, py::arg("program"),
        py::arg("target"),
        "The part of `program` that writes target shard `target`.");
  m.def("execute", &execute, py::arg("program"), py::arg("sources"),
        py::arg("targets"), py::arg("dtype"), py::arg("threads") = 0,
        py::arg("name") = "", py::arg("scale_power") = 1,
        "Runs `program` on the CPU for tensors carrying "
        "scale^scale_power: sources and targets map each rank to "
        "(address, elements) of a buffer of `dtype`. The GIL is released.");
  m.def(
      "check_replicas",
      [](const ParamMap &map, const std::map<int64_t, uintptr_t> &shards,
         int64_t elementSize) {
        std::map<int64_t, const char *> data;
        for (const auto &[rank, address] : shards)
          data[rank] = reinterpret_cast<const char *>(address);
        for (const Shard &shard : map.shards)
          if (!data.count(shard.rank))
            throw py::value_error("no shard of rank " +
                                  std::to_string(shard.rank));
        llvm::Error error = llvm::Error::success();
        {
          py::gil_scoped_release release;
          error = checkReplicas(map, data, elementSize);
        }
        if (error)
          raise(std::move(error));
      },
      py::arg("map"), py::arg("shards"), py::arg("element_size"),
      "Checks that every replicated block of `map` holds the same bytes on "
      "each of its holders (shards: rank -> address).");
}
