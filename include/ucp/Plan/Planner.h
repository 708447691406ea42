//===- Planner.h - The one planner: verify, compose, lower ------*- C++ -*-===//
//
// How maps become copy programs, for every caller: the passes, the tools,
// every job and Python. For each parameter of a source map set and the
// same-named one of a target map set:
//
//  1. pair them by name: each named once on each side, the same names on
//     both;
//  2. verify both maps (local invariants, P1, P5, shard tiling:
//     checkParamMap);
//  3. compose the plan M_t o M_s^-1 (composeMaps), never building F;
//  4. lower it to a copy program (lowerPlan).
//
// Plain C++, no MLIRContext: the ucp dialect is a view of these steps
// (--ucp-verify, --ucp-compose and --ucp-lower-copies run the same
// functions), not a toll every caller pays. A program does not depend on
// the state it moves: each parameter is planned once, and the power of the
// scale a state carries is given when the program runs (ProgramRun).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_PLAN_PLANNER_H
#define UCP_PLAN_PLANNER_H

#include "ucp/Plan/Compose.h"
#include "ucp/Plan/CopyProgram.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace ucp {

/// What messages call the two sides of a plan.
struct PlanSides {
  /// The maps of each side, as a whole: "source map", "target maps".
  llvm::StringRef source = "source map";
  llvm::StringRef target = "target map";
  /// What a map's verification error starts with, on each side.
  llvm::StringRef sourcePrefix = "source map";
  llvm::StringRef targetPrefix = "target map";
};

/// A side of a plan.
enum class PlanSide { Source, Target };

/// Pairs every name of `sources` with the same one of `targets`: returns,
/// for each source in order, the index of its target. A name given twice on
/// one side, or on one side only, is reported to `report` with the side
/// and index where it was found (for a name missing from the source, the
/// target's), and nothing is returned once all are reported.
std::optional<std::vector<size_t>> pairNames(
    llvm::ArrayRef<llvm::StringRef> sources,
    llvm::ArrayRef<llvm::StringRef> targets, const PlanSides &sides,
    llvm::function_ref<void(PlanSide, size_t, const std::string &)> report);

/// Verifies both maps (checkParamMap; the error names the side) and
/// composes them under `policy`; `sent` carries the Balance policy's
/// counts across the parameters of one transfer.
llvm::Expected<TransferPlan> planParam(const ParamMap &source,
                                       const ParamMap &target,
                                       const ReplicaPolicy &policy,
                                       SentElements &sent,
                                       const PlanSides &sides = {});

/// The plan of every parameter of `sources` into its target, in the order
/// of `sources`.
llvm::Expected<std::vector<TransferPlan>>
composeTransfers(llvm::ArrayRef<ParamMap> sources,
                 llvm::ArrayRef<ParamMap> targets,
                 const ReplicaPolicy &policy = {}, const PlanSides &sides = {});

/// The copy program of every parameter of `sources` into its target, by
/// name: composeTransfers, each plan lowered.
llvm::Expected<TransferPrograms> planTransfers(llvm::ArrayRef<ParamMap> sources,
                                               llvm::ArrayRef<ParamMap> targets,
                                               const ReplicaPolicy &policy = {},
                                               const PlanSides &sides = {});

} // namespace ucp

#endif // UCP_PLAN_PLANNER_H
