//===- Executor.cpp - Where copy programs run -----------------------------===//

#include "ucp/Engine/Executor.h"
#include "ucp/Engine/ProcessGroup.h"

using namespace ucp;

Executor::~Executor() = default;
ProcessGroup::~ProcessGroup() = default;
