//===- UniversalConversion.h - DeepSpeed checkpoints to Universal -*- C++
//-*-===//
//
// ds_to_universal without its temporary files: every parameter's map over
// the checkpoint's grid is planned into the map of its full tensor by the
// reshard pipeline, and each state's copy program moves the fragments from
// the memory-mapped optimizer files straight into the mapped output file,
// in parallel across parameters. Input pages are released as they are
// read, outputs unmapped as they are finished, so resident memory stays
// near the few tensors in flight.
//
// The output folder is written under a temporary name and renamed into
// place once everything is written (and, unless asked otherwise, on disk);
// `latest_universal` beside it is written last.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DEEPSPEED_UNIVERSALCONVERSION_H
#define UCP_DEEPSPEED_UNIVERSALCONVERSION_H

#include "ucp/Support/Progress.h"
#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"

#include <functional>

namespace ucp {

class ProcessGroup;

struct UniversalOptions {
  /// Worker threads (0: every core this process may run on).
  unsigned threads = 0;
  /// Convert a ZeRO-1/2 checkpoint without universal_checkpoint_info as if
  /// it carried one that names no pattern (DeepSpeed's
  /// --inject_missing_state); without it such a checkpoint is refused, as
  /// DeepSpeed's converter refuses it.
  bool injectMissingState = false;
  /// Refuse patterns of universal_checkpoint_info that no parameter uses
  /// (DeepSpeed's default; its --no_strict turns this off).
  bool strict = true;
  /// Scan every master and moment read for NaN, Inf and negative second
  /// moments, and refuse the checkpoint at the first (ucp/Checkpoint/
  /// ValueCheck.h). Off, such values are moved as they are.
  bool checkValues = true;
  /// Return only once the outputs are on disk.
  bool syncOutputs = true;
  /// Called about once a second with (files done, files, bytes written):
  /// with a group, this process's files.
  ProgressFunction progress;
  /// The processes that share the job (ucp/Engine/GroupOutputs.h), each
  /// writing the files given to it; none: this process alone.
  ProcessGroup *group = nullptr;
  /// With a group whose input is node-local: brings the bytes this
  /// process's files read, once the files are divided.
  InputSupply supplyInput;
};

struct UniversalStats {
  /// What was written without being asked for: the states a parameter
  /// group lacks, one line each.
  std::vector<std::string> notices;
  size_t parameters = 0;
  /// The files of the checkpoint (what progress counts), not
  /// latest_universal; with a group, those of every process.
  size_t files = 0;
  /// Whether latest_universal was written (it is not where it names the
  /// input; a notice says so).
  bool pointerWritten = false;
  int64_t bytesWritten = 0;
  double seconds = 0;
};

/// Writes the Universal checkpoint of `checkpoint` to the new folder
/// `output` (making its missing parents), and `latest_universal` beside
/// it: every state each parameter has (a group saved before the
/// optimizer's first step has no Adam moments: its fp32 weights are
/// written alone, and a notice names what is missing). Nothing is left at
/// `output`, nor any folder made for it, unless everything succeeds.
llvm::Expected<UniversalStats>
convertToUniversal(const DeepSpeedCheckpoint &checkpoint,
                   llvm::StringRef output, const UniversalOptions &options);

} // namespace ucp

#endif // UCP_DEEPSPEED_UNIVERSALCONVERSION_H
