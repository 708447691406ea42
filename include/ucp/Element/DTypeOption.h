//===- DTypeOption.h - Command-line options of element types ----*- C++ -*-===//
//
// An option whose value is an element type accepts every spelling of
// getDTypeSpellings (f32, fp32, float32, ...), the same names in every tool
// and pass, from the one table. Give `dtypeValues({...})` where cl::values
// would go: on a cl::opt<DType> or an MLIR pass option of type DType.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_ELEMENT_DTYPEOPTION_H
#define UCP_ELEMENT_DTYPEOPTION_H

#include "ucp/Element/DType.h"

#include <string>
#include <vector>

namespace ucp {

/// The values of a DType option: `types` under all their spellings.
class DTypeValues {
public:
  explicit DTypeValues(std::vector<DType> types) : types(std::move(types)) {}

  /// Adds each spelling as a literal of `option`'s parser (what cl::values
  /// does): the canonical name with its description, the others as its
  /// aliases.
  template <typename Option> void apply(Option &option) const {
    for (DType type : types)
      for (const DTypeSpelling &spelling : getDTypeSpellings())
        if (spelling.type == type)
          option.getParser().addLiteralOption(
              spelling.name, type,
              spelling.name == getDTypeName(type)
                  ? llvm::StringRef(getDTypeDescription(type))
                  : llvm::StringRef(""));
  }

private:
  std::vector<DType> types;
};

/// The values of an option accepting `types`.
inline DTypeValues dtypeValues(std::vector<DType> types) {
  return DTypeValues(std::move(types));
}

} // namespace ucp

#endif // UCP_ELEMENT_DTYPEOPTION_H
