//===- OpenCheckpoint.cpp - The reader a path needs -----------------------===//

#include "ucp/Jobs/OpenCheckpoint.h"
#include "ucp/DeepSpeed/DeepSpeedCheckpoint.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Formats/Safetensors/SafetensorsCheckpoint.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace ucp;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

CheckpointFormat ucp::detectCheckpointFormat(llvm::StringRef folder) {
  if (!fs::is_directory(folder))
    return path::extension(folder) == ".safetensors"
               ? CheckpointFormat::Safetensors
               : CheckpointFormat::DeepSpeed;
  llvm::SmallString<256> zero(folder);
  path::append(zero, "zero");
  if (fs::is_directory(zero))
    return CheckpointFormat::Universal;
  std::error_code ec;
  bool safetensors = false, torch = false;
  for (fs::directory_iterator it(folder, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = path::filename(it->path());
    safetensors |=
        name.ends_with(".safetensors") || name == kSafetensorsIndexName;
    torch |= name.ends_with(".pt");
  }
  return safetensors && !torch ? CheckpointFormat::Safetensors
                               : CheckpointFormat::DeepSpeed;
}

llvm::Expected<std::unique_ptr<CheckpointSource>>
ucp::openCheckpoint(llvm::StringRef path,
                    CheckShare share) {
  auto lift =
      [](auto opened) -> llvm::Expected<std::unique_ptr<CheckpointSource>> {
    if (!opened)
      return opened.takeError();
    return std::unique_ptr<CheckpointSource>(std::move(*opened));
  };
  switch (detectCheckpointFormat(path)) {
  case CheckpointFormat::Universal:
    return lift(DeepSpeedCheckpoint::openUniversal(path));
  case CheckpointFormat::Safetensors:
    return lift(SafetensorsCheckpoint::open(path));
  case CheckpointFormat::DeepSpeed:
    break;
  }
  return lift(DeepSpeedCheckpoint::open(path, share));
}

std::string ucp::followCheckpointPointer(llvm::StringRef path,
                                        std::string &pointer) {
  if (!fs::is_directory(path))
    return path.str();
  for (const char *name : {"latest", "latest_universal"}) {
    llvm::SmallString<256> file(path);
    llvm::sys::path::append(file, name);
    if (!fs::is_regular_file(file))
      continue;
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
        llvm::MemoryBuffer::getFile(file);
    if (!text)
      continue;
    llvm::StringRef tag = (*text)->getBuffer().trim();
    llvm::SmallString<256> folder(path);
    llvm::sys::path::append(folder, tag);
    if (!tag.empty() && tag != "." && tag != ".." && !tag.contains('/') &&
        fs::is_directory(folder)) {
      pointer = file.str().str();
      return folder.str().str();
    }
  }
  return path.str();
}

llvm::Error ucp::supplyOpenReads(llvm::StringRef folder, CheckShare share,
                                 ProcessGroup *group,
                                 const InputSupply &supply) {
  CheckShare probe = share;
  probe.compareWeights = false;
  probe.keepReads = false;
  llvm::Expected<std::unique_ptr<DeepSpeedCheckpoint>> checkpoint =
      detectCheckpointFormat(folder) == CheckpointFormat::Universal
          ? DeepSpeedCheckpoint::openUniversal(folder)
          : DeepSpeedCheckpoint::open(folder, probe);
  llvm::Error opened =
      checkpoint ? llvm::Error::success() : checkpoint.takeError();
  if (group)
    opened = group->agree(std::move(opened));
  if (opened)
    return opened;
  return supplyReads(supply, group, (*checkpoint)->getWeightCheckReads(share));
}
