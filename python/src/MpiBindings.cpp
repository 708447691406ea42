//===- MpiBindings.cpp - Transfers across mpi4py's processes --------------===//
//
// `_core.execute_mpi` runs copy programs across the processes of an mpi4py
// communicator (MpiGroup). Built where MPI and mpi4py's headers were found;
// elsewhere `_core.has_mpi` is false and the package says so.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#ifdef UCP_HAS_MPI4PY
#include "ucp/Distributed/MpiTransfer.h"

#include <mpi4py/mpi4py.h>
#endif

using namespace ucp;
using namespace ucp::python;

#ifdef UCP_HAS_MPI4PY

namespace {

using Buffers = std::map<int64_t, std::pair<uintptr_t, int64_t>>;

/// Checks that `buffers` holds a buffer of the right size for exactly the
/// ranks of `elements` this process holds.
void checkHeldBuffers(const std::map<int64_t, int64_t> &elements,
                      const Buffers &buffers,
                      llvm::function_ref<bool(int64_t)> holds, const char *side,
                      const std::string &name) {
  for (const auto &[rank, count] : elements) {
    auto found = buffers.find(rank);
    if (!holds(rank)) {
      if (found != buffers.end())
        throw py::value_error("parameter '" + name + "': a " + side +
                              " shard of rank " + std::to_string(rank) +
                              ", which another process holds");
      continue;
    }
    if (found == buffers.end())
      throw py::value_error("parameter '" + name + "': no " + side +
                            " shard of rank " + std::to_string(rank) +
                            ", which this process holds");
    if (found->second.second != count)
      throw py::value_error("parameter '" + name + "': the " + side +
                            " shard of rank " + std::to_string(rank) + " has " +
                            std::to_string(found->second.second) +
                            " elements, but the map describes " +
                            std::to_string(count));
  }
}

/// One parameter of a call of execute_mpi.
struct MpiItem {
  const CopyProgram *program;
  Buffers sources, targets;
  std::string dtype, name;
  int scalePower = 1;
};

void executeMpi(py::object comm, const std::vector<MpiItem> &items,
                const std::vector<int64_t> &sourceProcesses,
                const std::vector<int64_t> &targetProcesses, unsigned threads,
                double timeout) {
  if (import_mpi4py() < 0)
    throw py::error_already_set();
  if (!PyObject_TypeCheck(comm.ptr(), &PyMPIComm_Type))
    throw py::type_error("expected an mpi4py communicator");
  MPI_Comm communicator = *PyMPIComm_Get(comm.ptr());
  MpiGroupOptions options;
  options.timeoutSeconds = timeout;
  options.threads = threads;
  std::unique_ptr<MpiGroup> group = unwrap(MpiGroup::create(
      communicator, {sourceProcesses, targetProcesses}, options));
  std::vector<ProgramRun> batch;
  for (const MpiItem &item : items) {
    std::optional<DType> type = parseDTypeName(item.dtype);
    if (!type)
      throw py::value_error("dtype '" + item.dtype +
                            "' is not one affine-ucp moves");
    checkHeldBuffers(
        item.program->sourceElements, item.sources,
        [&](int64_t rank) { return group->holdsSource(rank); }, "source",
        item.name);
    checkHeldBuffers(
        item.program->targetElements, item.targets,
        [&](int64_t rank) { return group->holdsTarget(rank); }, "target",
        item.name);
    if (llvm::Error error =
            checkScalePower(*item.program, item.name, item.scalePower))
      raise(std::move(error));
    if (llvm::Error error =
            checkFactors(*item.program, *type, item.name, item.scalePower))
      raise(std::move(error));
    ProgramRun run{item.program, {}, *type, item.scalePower, item.name};
    for (const auto &[rank, buffer] : item.sources)
      run.buffers.sources[rank] = reinterpret_cast<const void *>(buffer.first);
    for (const auto &[rank, buffer] : item.targets)
      run.buffers.targets[rank] = reinterpret_cast<void *>(buffer.first);
    batch.push_back(std::move(run));
  }
  llvm::Error error = llvm::Error::success();
  {
    py::gil_scoped_release release;
    // Every process checked its own buffers; a process that refused them
    // has raised and will not join, so the others time out rather than
    // move half a batch.
    error = group->execute(batch);
  }
  if (error)
    raise(std::move(error));
}

} // namespace

void ucp::python::bindMpi(py::module_ &m) {
  m.attr("has_mpi") = true;
  py::class_<MpiItem>(m, "MpiItem",
                      "One parameter of execute_mpi: its program and the "
                      "(address, elements) of the shards this process "
                      "holds.")
      .def(py::init<const CopyProgram *, Buffers, Buffers, std::string,
                    std::string, int>(),
           py::arg("program"), py::arg("sources"), py::arg("targets"),
           py::arg("dtype"), py::arg("name"), py::arg("scale_power") = 1,
           py::keep_alive<1, 2>());
  m.def("execute_mpi", &executeMpi, py::arg("comm"), py::arg("items"),
        py::arg("source_processes"), py::arg("target_processes"),
        py::arg("threads") = 0, py::arg("timeout") = 300.0,
        "Collective over `comm`: runs the programs of `items` across its "
        "processes, each holding the ranks the process lists give it. The "
        "GIL is released.");
}

#else

void ucp::python::bindMpi(py::module_ &m) { m.attr("has_mpi") = false; }

#endif
