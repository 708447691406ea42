//===- GroupFingerprint.h - What the processes of a group agree on -*- C++
//-*-===//
//
// The rule of every collective job: before any byte moves, the processes
// of a group agree on everything that determines the plan and the output
// (the maps, the replica policy, which process holds which rank, element
// types, the states moved, the options that change bytes, the files, and
// the plans themselves). Processes that were given other arguments (an
// MPMD launch with another `--policy` on one process, a map with two ranks
// swapped) would otherwise each run a consistent plan of their own and
// write wrong bytes with exit 0.
//
// A job lists those things, in a fixed order, as the items of a
// GroupFingerprint: a short text shown as is (an option's value) or a
// digest (a map, a plan). agreeOnFingerprint sends process 0's items to
// every process; a process whose items differ fails, naming the first item
// that differs and what process 0 and it hold, and the group's agreement
// makes that the error of every process.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ENGINE_GROUPFINGERPRINT_H
#define UCP_ENGINE_GROUPFINGERPRINT_H

#include "ucp/Map/ParamMap.h"
#include "ucp/Plan/CopyProgram.h"

#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

namespace ucp {

class ProcessGroup;

/// What determines a collective job's output, item by item.
class GroupFingerprint {
public:
  /// Adds an item compared and shown as `value` (an option, a file name).
  void addValue(llvm::StringRef what, llvm::StringRef value);
  /// Adds `text` (a list too long to show), compared by a digest.
  void addDigest(llvm::StringRef what, llvm::StringRef text);
  /// Adds the map `map`, compared by a digest of every field.
  void addMap(llvm::StringRef what, const ParamMap &map);
  /// Adds the copy program `program`, compared by a digest of every copy.
  void addProgram(llvm::StringRef what, const CopyProgram &program);

  /// The items: what each is, and its value or digest.
  const std::vector<std::pair<std::string, std::string>> &getItems() const {
    return items;
  }

private:
  std::vector<std::pair<std::string, std::string>> items;
};

/// Collective: succeeds when every process of `group` holds the same items
/// as process 0; else fails on every process, naming the first item that
/// differs on the first process that differs, and both values.
llvm::Error agreeOnFingerprint(ProcessGroup &group,
                               const GroupFingerprint &fingerprint);

} // namespace ucp

#endif // UCP_ENGINE_GROUPFINGERPRINT_H
