//===- CudaExecutor.cpp - The GPU as an executor --------------------------===//

#include "ucp/Engine/CudaExecutor.h"
#include "ucp/Engine/CudaKernels.h"
#include "ucp/Support/Error.h"

using namespace ucp;

CudaExecutor::CudaExecutor() = default;
CudaExecutor::~CudaExecutor() = default;

llvm::Error CudaExecutor::prepare(llvm::ArrayRef<ProgramRun> runs) {
  std::map<DType, std::vector<std::pair<std::string, CopyProgram>>> byType;
  for (const ProgramRun &run : runs) {
    Key key{run.program, run.type, run.scalePower};
    if (prepared.count(key))
      continue;
    auto &module = byType[run.type];
    raised.push_back(raiseScales(*run.program, run.scalePower));
    prepared[key] = {module.size(), &raised.back()};
    module.emplace_back(run.name.str(), raised.back());
  }
  for (auto &[type, programs] : byType) {
    llvm::Expected<std::unique_ptr<CudaKernels>> kernels =
        CudaKernels::create(programs, type);
    if (!kernels)
      return kernels.takeError();
    architecture = (*kernels)->getArchitecture();
    modules[type] = std::move(*kernels);
  }
  return llvm::Error::success();
}

llvm::Error CudaExecutor::execute(llvm::ArrayRef<ProgramRun> batch) {
  for (const ProgramRun &run : batch) {
    auto found = prepared.find({run.program, run.type, run.scalePower});
    if (found == prepared.end())
      return makeError("parameter '" + run.name +
                       "': its program was not prepared for the GPU");
    auto [index, program] = found->second;
    if (llvm::Error error =
            modules.at(run.type)->run(index, *program, run.buffers))
      return error;
  }
  return llvm::Error::success();
}
