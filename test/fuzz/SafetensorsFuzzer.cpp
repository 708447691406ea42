//===- SafetensorsFuzzer.cpp - Fuzzes the safetensors reader --------------===//
//
// A file the reader accepts has every tensor inside its data: reading the
// first and last byte of each must stay in the buffer (ASan says if not).
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"
#include "ucp/Formats/Safetensors/Safetensors.h"

using namespace ucp;
using namespace ucp::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<std::unique_ptr<SafetensorsReader>> reader =
      SafetensorsReader::parse(llvm::MemoryBuffer::getMemBufferCopy(
          asText(data, size), "fuzz.safetensors"));
  if (!reader) {
    ignore(reader.takeError());
    return 0;
  }
  volatile char sink = 0;
  for (const TensorInfo &tensor : (*reader)->getTensors()) {
    fuzzCheck((*reader)->find(tensor.name) == &tensor,
              "every tensor is found by its name");
    if (tensor.end == tensor.begin)
      continue;
    const char *bytes = (*reader)->getData(tensor);
    sink = sink + bytes[0] + bytes[tensor.end - tensor.begin - 1];
  }
  return 0;
}
