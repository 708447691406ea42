//===- GroupFingerprint.cpp - What the processes of a group agree on ------===//

#include "ucp/Engine/GroupFingerprint.h"
#include "ucp/Engine/ProcessGroup.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/xxhash.h"

#include <cstring>

using namespace ucp;

namespace {

/// Bytes of plain values, digested at the end. Every field is written
/// with its length first where it has one, so that two different values
/// never write the same bytes.
class Digest {
public:
  void add(int64_t value) {
    const char *bytes = reinterpret_cast<const char *>(&value);
    buffer.append(bytes, bytes + sizeof(value));
  }
  void add(double value) {
    int64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    add(bits);
  }
  void add(llvm::ArrayRef<int64_t> values) {
    add(static_cast<int64_t>(values.size()));
    for (int64_t value : values)
      add(value);
  }
  void add(const StridedView &view) {
    add(view.offset);
    add(view.strides);
  }
  void add(llvm::StringRef text) {
    add(static_cast<int64_t>(text.size()));
    buffer.append(text.begin(), text.end());
  }
  std::string finish() const {
    uint64_t digest = llvm::xxh3_64bits(
        llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(
                                    buffer.data()),
                                buffer.size()));
    return "digest " + llvm::utohexstr(digest, /*LowerCase=*/true, 16);
  }

private:
  std::string buffer;
};

/// One line per item, "what\tvalue"; tabs and line ends in either become
/// spaces (they are names and numbers).
std::string serialize(const GroupFingerprint &fingerprint) {
  auto clean = [](llvm::StringRef text) {
    std::string result = text.str();
    for (char &c : result)
      if (c == '\t' || c == '\n')
        c = ' ';
    return result;
  };
  std::string text;
  for (const auto &[what, value] : fingerprint.getItems())
    text += clean(what) + "\t" + clean(value) + "\n";
  return text;
}

} // namespace

void GroupFingerprint::addValue(llvm::StringRef what, llvm::StringRef value) {
  items.emplace_back(what.str(), value.str());
}

void GroupFingerprint::addDigest(llvm::StringRef what, llvm::StringRef text) {
  Digest digest;
  digest.add(text);
  items.emplace_back(what.str(), digest.finish());
}

void GroupFingerprint::addMap(llvm::StringRef what, const ParamMap &map) {
  Digest digest;
  digest.add(map.name);
  digest.add(map.logicalShape);
  digest.add(map.worldSize);
  digest.add(map.originalVocabSize.value_or(-1));
  digest.add(static_cast<int64_t>(map.shards.size()));
  for (const Shard &shard : map.shards) {
    digest.add(shard.rank);
    digest.add(shard.shape);
    digest.add(static_cast<int64_t>(shard.pieces.size()));
    for (const Piece &piece : shard.pieces) {
      digest.add(piece.shape);
      digest.add(piece.source);
      digest.add(piece.dest);
      digest.add(piece.locations);
      digest.add(piece.scale);
    }
  }
  items.emplace_back(what.str(), digest.finish());
}

void GroupFingerprint::addProgram(llvm::StringRef what,
                                  const CopyProgram &program) {
  Digest digest;
  digest.add(static_cast<int64_t>(program.pairs.size()));
  for (const BufferPairCopies &pair : program.pairs) {
    digest.add(pair.sourceBuffer);
    digest.add(pair.targetBuffer);
    digest.add(static_cast<int64_t>(pair.copies.size()));
    for (const StridedCopy &copy : pair.copies) {
      digest.add(copy.shape);
      digest.add(copy.source);
      digest.add(copy.target);
      digest.add(copy.scale);
    }
  }
  digest.add(static_cast<int64_t>(program.fills.size()));
  for (const StridedFill &fill : program.fills) {
    digest.add(fill.targetBuffer);
    digest.add(fill.shape);
    digest.add(fill.target);
  }
  for (const auto *elements : {&program.sourceElements,
                               &program.targetElements}) {
    digest.add(static_cast<int64_t>(elements->size()));
    for (auto [buffer, count] : *elements) {
      digest.add(buffer);
      digest.add(count);
    }
  }
  items.emplace_back(what.str(), digest.finish());
}

/// The first item of `mine` that differs from process 0's `theirs` (both
/// serialized), as a message; empty when they are the same.
static std::string describeDifference(llvm::StringRef theirs,
                                      llvm::StringRef mine, int process) {
  llvm::SmallVector<llvm::StringRef> ours, others;
  theirs.split(others, '\n', -1, /*KeepEmpty=*/false);
  mine.split(ours, '\n', -1, /*KeepEmpty=*/false);
  for (size_t i = 0; i < std::max(ours.size(), others.size()); ++i) {
    if (i < ours.size() && i < others.size() && ours[i] == others[i])
      continue;
    auto [what, value] =
        (i < ours.size() ? ours[i] : others[i]).split('\t');
    llvm::StringRef theirValue =
        i < others.size() ? others[i].split('\t').second : "nothing";
    llvm::StringRef ourValue =
        i < ours.size() ? ours[i].split('\t').second : "nothing";
    std::string theirWhat =
        i < others.size() ? others[i].split('\t').first.str() : what.str();
    if (i < others.size() && theirWhat != what)
      return "the processes were given different jobs: process 0's item " +
             std::to_string(i + 1) + " is " + theirWhat + " (" +
             theirValue.str() + "), process " + std::to_string(process) +
             "'s is " + what.str() + " (" + ourValue.str() + ")";
    return "the processes disagree on " + what.str() + ": process 0 has " +
           theirValue.str() + ", process " + std::to_string(process) +
           " has " + ourValue.str() +
           "; every process must be given the same job";
  }
  return "";
}

llvm::Error ucp::agreeOnFingerprint(ProcessGroup &group,
                                    const GroupFingerprint &fingerprint) {
  std::string mine = serialize(fingerprint);
  std::vector<int64_t> size = {static_cast<int64_t>(mine.size())};
  // Process 0's size reaches everyone through a maximum of it and zeros.
  std::vector<int64_t> rootSize = {group.getProcess() == 0 ? size[0] : 0};
  if (llvm::Error error =
          group.reduce(rootSize, ProcessGroup::Reduction::Max))
    return error;
  std::string theirs(rootSize[0], '\0');
  if (group.getProcess() == 0)
    theirs = mine;
  if (llvm::Error error = group.broadcast(
          llvm::MutableArrayRef<char>(theirs.data(), theirs.size()), 0))
    return error;
  std::string difference =
      describeDifference(theirs, mine, group.getProcess());
  return group.agree(difference.empty() ? llvm::Error::success()
                                        : makeError(difference));
}
