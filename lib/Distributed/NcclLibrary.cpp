//===- NcclLibrary.cpp - NCCL, loaded at run time -------------------------===//

#include "NcclLibrary.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/DynamicLibrary.h"

using namespace ucp;

llvm::Error NcclLibrary::fail(ncclResult_t result,
                              const llvm::Twine &what) const {
  const char *text = getErrorString ? getErrorString(result) : nullptr;
  return makeError("NCCL failed " + what.str() + ": " +
                   (text
                        ? std::string(text)
                        : "error " + std::to_string(static_cast<int>(result))));
}

/// Loads NCCL; an error string when it cannot.
static std::string load(NcclLibrary &nccl) {
  std::string message;
  llvm::sys::DynamicLibrary library;
  for (const char *name : {"libnccl.so.2", "libnccl.so"}) {
    library = llvm::sys::DynamicLibrary::getLibrary(name, &message);
    if (library.isValid())
      break;
  }
  if (!library.isValid())
    return "cannot load NCCL (libnccl.so.2): " + message;
  bool missing = false;
  auto resolve = [&](const char *name, auto &entry) {
    entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(
        library.getAddressOfSymbol(name));
    if (!entry && !missing) {
      missing = true;
      message = std::string("the NCCL library has no ") + name +
                " (NCCL 2.7 or newer is needed)";
    }
  };
  resolve("ncclGetVersion", nccl.getVersion);
  resolve("ncclGetUniqueId", nccl.getUniqueId);
  resolve("ncclCommInitRank", nccl.commInitRank);
  resolve("ncclCommDestroy", nccl.commDestroy);
  resolve("ncclCommAbort", nccl.commAbort);
  resolve("ncclCommGetAsyncError", nccl.commGetAsyncError);
  resolve("ncclGroupStart", nccl.groupStart);
  resolve("ncclGroupEnd", nccl.groupEnd);
  resolve("ncclSend", nccl.send);
  resolve("ncclRecv", nccl.recv);
  resolve("ncclGetErrorString", nccl.getErrorString);
  return missing ? message : "";
}

llvm::Expected<const NcclLibrary &> NcclLibrary::get() {
  // Loaded once; a library that failed to load fails every later call too.
  static NcclLibrary nccl;
  static const std::string failure = load(nccl);
  if (!failure.empty())
    return makeError(failure);
  return nccl;
}
