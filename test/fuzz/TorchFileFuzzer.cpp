//===- TorchFileFuzzer.cpp - Fuzzes the torch.save file reader ------------===//
//
// The whole reader: zip container, restricted unpickler, storage checks. A
// file it accepts has every tensor inside its storage's record: reading the
// first and the last element of each must stay in the buffer (ASan says if
// not), and printing the document must terminate. Every accepted file is
// then read as DeepSpeed's model and optimizer states (AutoEP metadata and
// ZeRO-3 partition groups included, and the optimizer record ZeRO stage 0
// keeps in the model states), which must refuse or succeed cleanly, and
// its records' CRC-32s are recomputed against the zip directory's (what
// `affine-run check` does).
//
//===----------------------------------------------------------------------===//

#include "DeepSpeedReader.h"
#include "FuzzTarget.h"
#include "ucp/Formats/Torch/TorchArchive.h"
#include "ucp/Formats/Torch/TorchFile.h"

using namespace ucp;
using namespace ucp::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<std::unique_ptr<TorchFile>> file = TorchFile::parse(
      llvm::MemoryBuffer::getMemBufferCopy(asText(data, size), "fuzz.pt"));
  if (!file) {
    ignore(file.takeError());
    return 0;
  }
  const PickleDocument &document = (*file)->getDocument();
  volatile char sink = 0;
  for (PickleRef ref = 0; ref < document.size(); ++ref) {
    if (document.get(ref).kind != PickleValue::Tensor)
      continue;
    TensorData tensor = (*file)->getTensor(ref);
    int64_t last = 0;
    bool empty = false;
    for (size_t d = 0; d < tensor.shape.size(); ++d) {
      empty |= tensor.shape[d] == 0;
      last += (tensor.shape[d] - 1) * tensor.strides[d];
    }
    if (empty)
      continue;
    int64_t bytes = getElementSize(tensor.dtype);
    sink = sink + tensor.data[0] + tensor.data[last * bytes + bytes - 1];
  }
  llvm::raw_null_ostream null;
  printPickleTree(document, null);
  llvm::Expected<ModelStates> model = readModelStates(**file);
  if (!model)
    ignore(model.takeError());
  for (bool zero3 : {false, true}) {
    llvm::Expected<TensorStates> optimizer = readTensorStates(**file, zero3);
    if (!optimizer)
      ignore(optimizer.takeError());
  }
  llvm::Expected<std::unique_ptr<TorchArchive>> archive = TorchArchive::parse(
      llvm::MemoryBuffer::getMemBufferCopy(asText(data, size), "fuzz.pt"));
  if (archive) {
    llvm::Expected<std::vector<TorchArchive::CrcMismatch>> mismatches =
        (*archive)->findCrcMismatches();
    if (!mismatches)
      ignore(mismatches.takeError());
  } else {
    ignore(archive.takeError());
  }
  // ZeRO stage 0's second record, in the model states.
  llvm::Expected<TensorStates> copy =
      readTensorStates(**file, /*zero3=*/false, "optimizer");
  if (!copy)
    ignore(copy.takeError());
  return 0;
}
