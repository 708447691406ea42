//===- TorchFileWriterTest.cpp - torch.save files written and read back ---===//
//
// Documents of every kind of value the writer supports (shared storages,
// OrderedDicts with attributes, data classes, enum members, sets, ints of
// every width, floats) are written with TorchFileWriter and read back with
// TorchFile: the same tree, the same tensor bytes. An archive of 70,000
// records takes the zip64 path without a 4 GiB file.
//
//===----------------------------------------------------------------------===//

#include "ucp/Formats/Torch/TorchArchive.h"
#include "ucp/Formats/Torch/TorchFileWriter.h"
#include "ScratchFolder.h"
#include "ucp/Formats/Torch/TorchFile.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include <zlib.h>

using namespace ucp;
using namespace ucp::testing;

namespace {

std::string printTree(const PickleDocument &document) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printPickleTree(document, os);
  return text;
}

TEST(TorchFileWriter, WritesWhatTheReaderReadsBack) {
  PickleBuilder b;
  PickleRef flat = b.storage("0", DType::F32, 10);
  PickleRef half = b.storage("1", DType::BF16, 4);
  PickleRef module =
      b.dict({{b.string("w"), b.tensor(flat, 0, {2, 3}, {3, 1}, false)},
              {b.string("w.T"), b.tensor(flat, 0, {3, 2}, {1, 3}, false)},
              {b.string("b"), b.tensor(flat, 6, {4}, {1}, true)},
              {b.string("h"), b.tensor(half, 1, {3}, {1}, false)}},
             /*ordered=*/true);
  PickleRef address =
      b.object("deepspeed.utils.tensor_fragment", "fragment_address",
               b.dict({{b.string("numel"), b.integer(52)},
                       {b.string("start"), b.integer(384)}}));
  PickleRef shared = b.list({b.integer(1), b.integer(2)});
  PickleRef root = b.dict({
      {b.string("module"), module},
      {b.string("ints"),
       b.tuple({b.integer(0), b.integer(255), b.integer(256), b.integer(65536),
                b.integer(-1), b.integer(INT64_MIN),
                b.integer(int64_t(1) << 40)})},
      {b.string("floats"), b.list({b.number(0.01), b.number(-3.5e300)})},
      {b.string("flags"),
       b.list({b.boolean(true), b.boolean(false), b.none()})},
      {b.string("stage"), b.enumMember("deepspeed.runtime.zero.config",
                                       "ZeroStageEnum", "gradients")},
      {b.string("slice"), address},
      {b.string("again"), shared},
      {b.string("and again"), shared},
      {b.integer(7), b.tuple({})},
      {b.string("name"), b.string("tiny \xc3\xa9")},
  });
  PickleDocument document = b.finish(root);

  ScratchFolder folder;
  std::string path = folder.file("out.pt");
  llvm::Expected<std::unique_ptr<TorchFileWriter>> writer =
      TorchFileWriter::create(path, document);
  ASSERT_TRUE(static_cast<bool>(writer)) << llvm::toString(writer.takeError());
  float values[10];
  for (int i = 0; i < 10; ++i)
    values[i] = static_cast<float>(i) + 0.5f;
  // Storage "0" in two pieces, "1" whole.
  llvm::StringRef bytes(reinterpret_cast<const char *>(values), sizeof values);
  ASSERT_FALSE(static_cast<bool>((*writer)->writeStorage(
      "0", {bytes.take_front(12), bytes.drop_front(12)})));
  uint16_t halves[4] = {0x3f80, 0x4000, 0xbf00, 0x4040};
  // A storage cannot be written twice, nor with the wrong size, nor be one
  // the document lacks; an unwritten storage fails the commit.
  auto fails = [](llvm::Error error) {
    bool failed = static_cast<bool>(error);
    llvm::consumeError(std::move(error));
    return failed;
  };
  EXPECT_TRUE(fails((*writer)->writeStorage("0", {bytes})));
  EXPECT_TRUE(fails((*writer)->writeStorage("2", {bytes})));
  EXPECT_TRUE(fails((*writer)->writeStorage("1", {bytes.take_front(6)})));
  // Made a piece at a time, too few or too many bytes are refused as well.
  float one = 0;
  auto each = [&](size_t i) {
    one = values[i % 10];
    return llvm::StringRef(reinterpret_cast<const char *>(&one), 4);
  };
  EXPECT_TRUE(fails((*writer)->writeStorage("1", 1, each)));
  EXPECT_TRUE(fails((*writer)->writeStorage("1", 3, each)));
  llvm::Error unwritten = (*writer)->commit(false);
  ASSERT_TRUE(static_cast<bool>(unwritten));
  EXPECT_NE(llvm::toString(std::move(unwritten)).find("never written"),
            std::string::npos);
  writer = TorchFileWriter::create(path, document);
  ASSERT_TRUE(static_cast<bool>(writer)) << llvm::toString(writer.takeError());
  // Storage "0" an element at a time, through one reused buffer.
  ASSERT_FALSE(static_cast<bool>((*writer)->writeStorage("0", 10, each)));
  ASSERT_FALSE(static_cast<bool>((*writer)->writeStorage(
      "1", {llvm::StringRef(reinterpret_cast<const char *>(halves),
                            sizeof halves)})));
  ASSERT_FALSE(static_cast<bool>((*writer)->commit(false)));

  llvm::Expected<std::unique_ptr<TorchFile>> file = TorchFile::open(path);
  ASSERT_TRUE(static_cast<bool>(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(printTree((*file)->getDocument()), printTree(document));
  const PickleDocument &read = (*file)->getDocument();
  std::optional<PickleRef> readModule = read.lookup(read.getRoot(), "module");
  ASSERT_TRUE(readModule.has_value());
  EXPECT_EQ(read.get(*readModule).name, "OrderedDict");
  std::optional<PickleRef> bias = read.lookup(*readModule, "b");
  ASSERT_TRUE(bias.has_value());
  EXPECT_TRUE(read.get(*bias).requiresGrad);
  TensorData data = (*file)->getTensor(*bias);
  float got[4];
  std::memcpy(got, data.data, sizeof got);
  EXPECT_EQ(got[0], 6.5f);
  EXPECT_EQ(got[3], 9.5f);
  // The two tensors of storage "0" are views of one record.
  std::optional<PickleRef> weight = read.lookup(*readModule, "w");
  ASSERT_TRUE(weight.has_value());
  EXPECT_EQ((*file)->getTensor(*weight).data + 6 * sizeof(float), data.data);
}

TEST(TorchFileWriter, ManyRecordsTakeTheZip64Path) {
  PickleBuilder b;
  std::vector<PickleRef> tensors;
  for (int i = 0; i < 70000; ++i)
    tensors.push_back(b.tensor(b.storage(std::to_string(i), DType::I32, 1), 0,
                               {1}, {1}, false));
  PickleDocument document = b.finish(b.list(tensors));
  ScratchFolder folder;
  std::string path = folder.file("many.pt");
  llvm::Expected<std::unique_ptr<TorchFileWriter>> writer =
      TorchFileWriter::create(path, document);
  ASSERT_TRUE(static_cast<bool>(writer)) << llvm::toString(writer.takeError());
  for (int i = 0; i < 70000; ++i) {
    int32_t value = i * 3;
    ASSERT_FALSE(static_cast<bool>((*writer)->writeStorage(
        std::to_string(i),
        {llvm::StringRef(reinterpret_cast<const char *>(&value), 4)})));
  }
  ASSERT_FALSE(static_cast<bool>((*writer)->commit(false)));
  llvm::Expected<std::unique_ptr<TorchFile>> file = TorchFile::open(path);
  ASSERT_TRUE(static_cast<bool>(file)) << llvm::toString(file.takeError());
  const PickleDocument &read = (*file)->getDocument();
  const PickleValue &list = read.get(read.getRoot());
  ASSERT_EQ(list.items.size(), 70000u);
  int32_t last;
  std::memcpy(&last, (*file)->getTensor(list.items.back()).data, 4);
  EXPECT_EQ(last, 69999 * 3);
}

/// The CRC-32 the zip central directory of `bytes` records for the record
/// whose name ends with `suffix`, if one does.
std::optional<uint32_t> findRecordedCrc(llvm::StringRef bytes,
                                        llvm::StringRef suffix) {
  auto read = [&](size_t at, size_t size) {
    uint32_t value = 0;
    std::memcpy(&value, bytes.data() + at, size); // Little-endian hosts.
    return value;
  };
  for (size_t at = 0; at + 46 <= bytes.size(); ++at) {
    if (read(at, 4) != 0x02014b50)
      continue;
    size_t nameLength = read(at + 28, 2);
    if (bytes.substr(at + 46, nameLength).ends_with(suffix))
      return read(at + 16, 4);
  }
  return std::nullopt;
}

TEST(TorchFileWriter, RecordsTheCrcOfEveryByte) {
  // Several megabytes in pieces of uneven sizes, across the batches of
  // chunks whose CRCs are computed apart and combined.
  std::mt19937_64 rng(7);
  std::vector<char> bytes((size_t(11) << 20) + 12345);
  for (char &byte : bytes)
    byte = static_cast<char>(rng());
  PickleBuilder b;
  int64_t elements = bytes.size();
  PickleDocument document = b.finish(
      b.tensor(b.storage("0", DType::U8, elements), 0, {elements}, {1}, false));
  ScratchFolder folder;
  std::string path = folder.file("crc.pt");
  llvm::Expected<std::unique_ptr<TorchFileWriter>> writer =
      TorchFileWriter::create(path, document);
  ASSERT_TRUE(static_cast<bool>(writer)) << llvm::toString(writer.takeError());
  llvm::StringRef all(bytes.data(), bytes.size());
  ASSERT_FALSE(static_cast<bool>((*writer)->writeStorage(
      "0", {all.take_front(3), all.substr(3, (size_t(5) << 20) + 1),
            all.drop_front((size_t(5) << 20) + 4)})));
  ASSERT_FALSE(static_cast<bool>((*writer)->commit(false)));
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(static_cast<bool>(file));
  std::optional<uint32_t> crc =
      findRecordedCrc((*file)->getBuffer(), "/data/0");
  ASSERT_TRUE(crc.has_value());
  EXPECT_EQ(*crc, crc32_z(0, reinterpret_cast<const Bytef *>(bytes.data()),
                          bytes.size()));

  // The archive recomputes it, from the file and from memory, and names
  // the record once one of its bytes changes.
  auto mismatches = [](llvm::Expected<std::unique_ptr<TorchArchive>> archive) {
    EXPECT_TRUE(static_cast<bool>(archive));
    if (!archive) {
      llvm::consumeError(archive.takeError());
      return std::vector<std::string>{"(unread)"};
    }
    std::vector<std::string> names;
    llvm::Expected<std::vector<TorchArchive::CrcMismatch>> found =
        (*archive)->findCrcMismatches();
    EXPECT_TRUE(static_cast<bool>(found));
    if (found)
      for (const TorchArchive::CrcMismatch &bad : *found)
        names.push_back(bad.name);
    else
      llvm::consumeError(found.takeError());
    return names;
  };
  EXPECT_TRUE(mismatches(TorchArchive::open(path)).empty());
  std::string changed = (*file)->getBuffer().str();
  size_t at = changed.find(llvm::StringRef(bytes.data(), 64));
  ASSERT_NE(at, std::string::npos);
  changed[at + 7654321] ^= 1;
  EXPECT_EQ(mismatches(TorchArchive::parse(
                llvm::MemoryBuffer::getMemBufferCopy(changed, path))),
            std::vector<std::string>{"data/0"});
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec);
    ASSERT_FALSE(ec);
    out << changed;
  }
  EXPECT_EQ(mismatches(TorchArchive::open(path)),
            std::vector<std::string>{"data/0"});
}

TEST(TorchFileWriter, RefusesWhatItCannotWrite) {
  PickleBuilder b;
  PickleRef one = b.tensor(b.storage("0", DType::F32, 2), 0, {2}, {1}, false);
  PickleRef two = b.tensor(b.storage("0", DType::F32, 3), 0, {3}, {1}, false);
  PickleDocument document = b.finish(b.list({one, two}));
  ScratchFolder folder;
  llvm::Expected<std::unique_ptr<TorchFileWriter>> writer =
      TorchFileWriter::create(folder.file("bad.pt"), document);
  ASSERT_FALSE(static_cast<bool>(writer));
  EXPECT_EQ(llvm::toString(writer.takeError()),
            folder.file("bad.pt") + ": two storages are keyed '0'");
  EXPECT_TRUE(folder.list().empty());
}

} // namespace
