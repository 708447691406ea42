//===- Bindings.h - Shared helpers of the affine_ucp extension -*- C++ -*-===//
//
// The extension `affine_ucp._core` is a thin layer over the C++ libraries:
// each file binds one of them (maps, layouts, plans and execution,
// checkpoints, MPI, the memory of large outputs). Errors of the libraries (llvm::Error) become Python
// ValueErrors carrying the libraries' own messages; the Python package
// (`affine_ucp`) turns the structured results into its exception types and
// takes torch tensors and numpy arrays.
//
// This is the one part of the project built with C++ exceptions, which
// pybind11 needs; no exception crosses into the libraries, which are built
// without them (callbacks into Python catch everything they raise).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_PYTHON_BINDINGS_H
#define UCP_PYTHON_BINDINGS_H

#include "ucp/Map/ParamMap.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace ucp::python {

namespace py = pybind11;

inline std::vector<int64_t> toList(llvm::ArrayRef<int64_t> values) {
  return {values.begin(), values.end()};
}

inline Extents toExtents(const std::vector<int64_t> &values) {
  return Extents(values.begin(), values.end());
}

/// Raises `error` as a ValueError with its message.
[[noreturn]] inline void raise(llvm::Error error) {
  throw py::value_error(llvm::toString(std::move(error)));
}

/// The value of `expected`, or its error raised.
template <typename T> T unwrap(llvm::Expected<T> expected) {
  if (!expected)
    raise(expected.takeError());
  return std::move(*expected);
}

/// What `print` writes to a stream, as a string.
template <typename Print> std::string printToString(Print print) {
  std::string text;
  llvm::raw_string_ostream os(text);
  print(os);
  return os.str();
}

void bindMaps(py::module_ &m);
void bindLayouts(py::module_ &m);
void bindPlans(py::module_ &m);
void bindCheckpoints(py::module_ &m);
void bindMpi(py::module_ &m);
void bindMemory(py::module_ &m);

} // namespace ucp::python

#endif // UCP_PYTHON_BINDINGS_H
