//===- Module.cpp - The affine_ucp._core extension module -----------------===//

#include "Bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "affine-ucp's C++ core: maps, layouts, plans, execution and "
            "checkpoints (use the affine_ucp package, which wraps it)";
  ucp::python::bindMaps(m);
  ucp::python::bindLayouts(m);
  ucp::python::bindPlans(m);
  ucp::python::bindCheckpoints(m);
  ucp::python::bindMpi(m);
  ucp::python::bindMemory(m);
}
