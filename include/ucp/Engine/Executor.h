//===- Executor.h - Where copy programs run ---------------------*- C++ -*-===//
//
// Every job moves its bytes the same way: copy programs (ucp/Plan) bound to
// the buffers of their ranks, run by an executor. The CPU executor runs
// them with a pool of threads, the CUDA executor as generated kernels, a
// process group (ucp/Distributed) across the processes of a job, moving
// what crosses processes between them. Jobs take an Executor and never
// know which.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ENGINE_EXECUTOR_H
#define UCP_ENGINE_EXECUTOR_H

#include "ucp/Element/DType.h"
#include "ucp/Plan/CopyProgram.h"

#include "llvm/Support/Error.h"

#include <map>

namespace ucp {

/// Buffers by rank: sources are read, targets written.
struct ProgramBuffers {
  std::map<int64_t, const void *> sources;
  std::map<int64_t, void *> targets;
};

/// One parameter's copies as an executor runs them: the program, the
/// buffers of the ranks this process holds, the element type, and the power
/// of the scale the moved tensor carries (1 for parameters, -1 and -2 for
/// Adam's moments, spec §2.1), to which every copy's scale is raised.
struct ProgramRun {
  const CopyProgram *program = nullptr;
  ProgramBuffers buffers;
  DType type = DType::F32;
  int scalePower = 1;
  /// The parameter it moves, for messages.
  llvm::StringRef name;
};

/// Where copy programs run.
class Executor {
public:
  virtual ~Executor();

  /// Makes ready to run programs like `runs` (buffers need not be bound
  /// yet): the CUDA executor compiles their kernels here. Optional.
  virtual llvm::Error prepare(llvm::ArrayRef<ProgramRun> runs) {
    return llvm::Error::success();
  }
  /// Runs every program of `batch` on its buffers. For a process group,
  /// collective: every process passes the same programs, with the buffers
  /// of the ranks it holds.
  virtual llvm::Error execute(llvm::ArrayRef<ProgramRun> batch) = 0;
  /// The most target bytes one batch should move (a process group's
  /// message buffers); 0 for no bound, where batches of one program serve
  /// as well as any.
  virtual int64_t getBatchBytes() const { return 0; }
};

} // namespace ucp

#endif // UCP_ENGINE_EXECUTOR_H
