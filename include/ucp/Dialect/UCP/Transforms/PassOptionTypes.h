//===- PassOptionTypes.h - Typed options of the ucp passes ------*- C++ -*-===//
//
// The types of the ucp passes' options, chosen so that a bad pipeline is
// refused when it is parsed, not when it runs: choices are enums whose
// names `--help` lists (llvm::cl::values), and integers are bounded by a
// parser that names the range.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_DIALECT_UCP_TRANSFORMS_PASSOPTIONTYPES_H
#define UCP_DIALECT_UCP_TRANSFORMS_PASSOPTIONTYPES_H

#include "ucp/Element/DTypeOption.h"
#include "ucp/Plan/TransferPlan.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace ucp {

/// An integer option value in [Lo, Hi]; llvm::cl refuses any other value
/// while parsing. Converts to and from int64_t, so code that reads the
/// option sees a plain integer.
template <int64_t Lo, int64_t Hi>
struct BoundedInt {
  static_assert(Lo <= Hi, "an empty range");
  /// llvm::cl needs a default; each option gives its own with cl::init.
  int64_t value = Lo;

  BoundedInt() = default;
  BoundedInt(int64_t value) : value(value) {}
  operator int64_t() const { return value; }

  friend llvm::raw_ostream &operator<<(llvm::raw_ostream &os, BoundedInt v) {
    return os << v.value;
  }
};

/// ranks-per-node: at least one rank per node.
using RanksPerNode = BoundedInt<1, int64_t(1) << 20>;
/// scale-power: 1 for a parameter, -1 and -2 for Adam's moments.
using ScalePower = BoundedInt<-2, 1>;

/// The replica policies as llvm::cl choices, under the names
/// getReplicaPolicyName gives them (the one table of those names).
inline llvm::cl::ValuesClass getReplicaPolicyValues() {
  auto choice = [](ReplicaPolicy::Kind kind, llvm::StringRef description) {
    return llvm::cl::OptionEnumValue{getReplicaPolicyName(kind), kind,
                                     description};
  };
  return llvm::cl::ValuesClass(
      {choice(ReplicaPolicy::Lowest, "the lowest holder"),
       choice(ReplicaPolicy::Local,
              "the target rank itself if it holds the data, else lowest"),
       choice(ReplicaPolicy::Node,
              "local, else a holder on the target's node, else lowest"),
       choice(ReplicaPolicy::Balance,
              "the holder that has sent the fewest elements")});
}

/// The element types --ucp-plans-to-memref lowers, under every spelling.
inline DTypeValues getMemrefElementTypeValues() {
  return dtypeValues({DType::F32, DType::F64, DType::F16, DType::BF16,
                      DType::I8, DType::I16, DType::I32, DType::I64});
}

} // namespace ucp

namespace llvm::cl {

/// Parses a ucp::BoundedInt, refusing a value outside its range.
template <int64_t Lo, int64_t Hi>
class parser<ucp::BoundedInt<Lo, Hi>>
    : public basic_parser<ucp::BoundedInt<Lo, Hi>> {
public:
  using Value = ucp::BoundedInt<Lo, Hi>;
  parser(Option &option) : basic_parser<Value>(option) {}

  /// Returns true (after reporting) when `arg` is no integer in range.
  bool parse(Option &option, StringRef, StringRef arg, Value &value) {
    int64_t number = 0;
    if (arg.getAsInteger(0, number) || number < Lo || number > Hi)
      return option.error("'" + arg + "' is not an integer in [" + Twine(Lo) +
                          ", " + Twine(Hi) + "]");
    value = number;
    return false;
  }
  StringRef getValueName() const override { return "int"; }
  void printOptionDiff(const Option &option, Value value,
                       const OptionValue<Value> &, size_t width) const {
    this->printOptionName(option, width);
    outs() << "= " << value << "\n";
  }
};

} // namespace llvm::cl

#endif // UCP_DIALECT_UCP_TRANSFORMS_PASSOPTIONTYPES_H
