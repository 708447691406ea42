//===- Unpickler.cpp - The stack machine of the restricted unpickler ------===//
//
// The stack machine of Python's pickle module, for the binary opcodes of
// protocols 2 to 5. Each opcode checks what it pops, so that a malformed
// pickle is refused at the byte where it goes wrong; the calls it allows
// are read in PickleCalls.cpp.
//
//===----------------------------------------------------------------------===//

#include "Unpickler.h"
#include "ucp/Support/Error.h"
#include "ucp/Support/NestingDepth.h"

#include "llvm/ADT/StringExtras.h"

#include <cstring>

using namespace ucp;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

Error Unpickler::fail(const llvm::Twine &why) const {
  return makeError(
      "pickle byte " + std::to_string(opcodeOffset) + " (opcode 0x" +
      llvm::utohexstr(opcode, /*LowerCase=*/true, 2) + "): " + why.str());
}

PickleRef Unpickler::add(PickleValue value) {
  document.values.push_back(std::move(value));
  return document.values.size() - 1;
}

PickleRef Unpickler::addGlobal(StringRef module, StringRef name) {
  // Python 2 names the builtins module __builtin__; pickles use both.
  if (module == "__builtin__")
    module = "builtins";
  if (!isAllowedPickleGlobal(module, name))
    document.opaqueGlobals.push_back((module + "." + name).str());
  PickleValue value;
  value.kind = PickleValue::Global;
  value.module = module.str();
  value.name = name.str();
  return add(std::move(value));
}

Expected<uint64_t> Unpickler::readUInt(unsigned width) {
  if (bytes.size() - offset < width)
    return fail("the pickle ends inside an argument");
  uint64_t value = 0;
  for (unsigned i = 0; i < width; ++i)
    value |= uint64_t(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  offset += width;
  return value;
}

Expected<StringRef> Unpickler::readBytes(uint64_t count) {
  // A length is bounded by what is left: no allocation precedes the check.
  if (count > bytes.size() - offset)
    return fail("an argument of " + std::to_string(count) +
                " bytes runs past the end of the pickle");
  StringRef result = bytes.substr(offset, count);
  offset += count;
  return result;
}

Expected<StringRef> Unpickler::readLine() {
  size_t end = bytes.find('\n', offset);
  if (end == StringRef::npos)
    return fail("the pickle ends inside a line");
  StringRef line = bytes.slice(offset, end);
  offset = end + 1;
  return line;
}

Expected<int64_t> Unpickler::readLong(uint64_t length) {
  if (length > 8)
    return fail("an integer of " + std::to_string(length) +
                " bytes, beyond int64");
  Expected<StringRef> data = readBytes(length);
  if (!data)
    return data.takeError();
  uint64_t value = 0;
  for (size_t i = 0; i < length; ++i)
    value |= uint64_t(static_cast<uint8_t>((*data)[i])) << (8 * i);
  if (length > 0 && length < 8 && ((*data)[length - 1] & 0x80))
    value |= ~uint64_t(0) << (8 * length); // Sign-extend.
  return static_cast<int64_t>(value);
}

Expected<PickleRef> Unpickler::pop() {
  size_t floor = marks.empty() ? 0 : marks.back();
  if (stack.size() <= floor)
    return fail("pops a value the stack does not hold");
  PickleRef top = stack.back();
  stack.pop_back();
  return top;
}

Expected<std::vector<PickleRef>> Unpickler::popMark() {
  if (marks.empty())
    return fail("needs a MARK that was never set");
  std::vector<PickleRef> items(stack.begin() + marks.back(), stack.end());
  stack.resize(marks.back());
  marks.pop_back();
  return items;
}

Error Unpickler::pushText(PickleValue::Kind kind, uint64_t length) {
  Expected<StringRef> text = readBytes(length);
  if (!text)
    return text.takeError();
  PickleValue value;
  value.kind = kind;
  value.text = text->str();
  stack.push_back(add(std::move(value)));
  return Error::success();
}

Error Unpickler::addToContainer(PickleValue::Kind kind,
                                std::vector<PickleRef> items) {
  Expected<PickleRef> container = pop();
  if (!container)
    return container.takeError();
  PickleValue &value = at(*container);
  if (value.kind != kind)
    return fail("adds items to " + document.describe(*container).str() +
                ", which holds none");
  if (kind == PickleValue::Dict && items.size() % 2 != 0)
    return fail("sets a key without a value");
  llvm::append_range(value.items, items);
  stack.push_back(*container);
  return Error::success();
}

PickleRef Unpickler::make(PickleValue::Kind kind,
                          std::vector<PickleRef> items) {
  PickleValue value;
  value.kind = kind;
  value.items = std::move(items);
  return add(std::move(value));
}

Error Unpickler::pushMemo(uint64_t index) {
  if (stack.empty() || (!marks.empty() && stack.size() <= marks.back()))
    return fail("memoizes a value the stack does not hold");
  memo[index] = stack.back();
  return Error::success();
}

Error Unpickler::pushGet(uint64_t index) {
  auto it = memo.find(index);
  if (it == memo.end())
    return fail("reads memo entry " + std::to_string(index) +
                ", which was never set");
  stack.push_back(it->second);
  return Error::success();
}

namespace {
/// Opcodes of the text protocols (0 and 1) and of features torch.save never
/// uses: refused by name.
const char *getRefusedOpcode(uint8_t opcode) {
  switch (opcode) {
  case 'F':
  case 'I':
  case 'L':
  case 'S':
  case 'V':
  case 'P':
  case 'g':
  case 'p':
  case 'i':
  case 'o':
    return "a protocol 0 text opcode, which torch.save never writes";
  case 0x82:
  case 0x83:
  case 0x84:
    return "an extension code, which names a callable by number";
  case 0x97:
  case 0x98:
    return "an out-of-band buffer, which a file cannot carry";
  default:
    return nullptr;
  }
}
} // namespace

Error Unpickler::pushTuple(size_t count) {
  std::vector<PickleRef> items(count);
  for (size_t i = count; i-- > 0;) {
    Expected<PickleRef> item = pop();
    if (!item)
      return item.takeError();
    items[i] = *item;
  }
  stack.push_back(make(PickleValue::Tuple, std::move(items)));
  return Error::success();
}

/// Runs PROTO, FRAME and STOP, or returns nothing for another opcode.
std::optional<Error> Unpickler::stepFraming() {
  switch (opcode) {
  case 0x80: // PROTO
  {
    Expected<uint64_t> protocol = readUInt(1);
    if (!protocol)
      return protocol.takeError();
    if (*protocol < 2 || *protocol > 5)
      return fail("pickle protocol " + std::to_string(*protocol) +
                  "; this reader reads protocols 2 to 5");
    return Error::success();
  }
  case 0x95: // FRAME: a hint of the next bytes' length.
    return readUInt(8).takeError();
  case '.': { // STOP
    Expected<PickleRef> root = pop();
    if (!root)
      return root.takeError();
    if (!stack.empty() || !marks.empty())
      return fail("stops with values or marks left on the stack");
    document.root = *root;
    stopped = true;
    return Error::success();
  }
  default:
    return std::nullopt;
  }
}

/// Pushes the scalar (None, bool, int, float, string, bytes) the opcode reads,
/// or returns nothing for another opcode.
std::optional<Error> Unpickler::stepScalar() {
  PickleValue value;
  switch (opcode) {
  case 'N':
    stack.push_back(make(PickleValue::None));
    return Error::success();
  case 0x88: // NEWTRUE
  case 0x89: // NEWFALSE
    value.kind = PickleValue::Bool;
    value.boolean = opcode == 0x88;
    stack.push_back(add(std::move(value)));
    return Error::success();
  case 'J':
  case 'K':
  case 'M': { // BININT, BININT1, BININT2
    unsigned width = opcode == 'J' ? 4 : opcode == 'K' ? 1 : 2;
    Expected<uint64_t> raw = readUInt(width);
    if (!raw)
      return raw.takeError();
    value.kind = PickleValue::Int;
    value.integer =
        opcode == 'J' ? int64_t(int32_t(uint32_t(*raw))) : int64_t(*raw);
    stack.push_back(add(std::move(value)));
    return Error::success();
  }
  case 0x8a:
  case 0x8b: { // LONG1, LONG4
    Expected<uint64_t> length = readUInt(opcode == 0x8a ? 1 : 4);
    if (!length)
      return length.takeError();
    Expected<int64_t> integer = readLong(*length);
    if (!integer)
      return integer.takeError();
    value.kind = PickleValue::Int;
    value.integer = *integer;
    stack.push_back(add(std::move(value)));
    return Error::success();
  }
  case 'G': { // BINFLOAT, big-endian.
    Expected<StringRef> raw = readBytes(8);
    if (!raw)
      return raw.takeError();
    uint64_t bits = 0;
    for (char c : *raw)
      bits = bits << 8 | static_cast<uint8_t>(c);
    value.kind = PickleValue::Float;
    std::memcpy(&value.number, &bits, sizeof(bits));
    stack.push_back(add(std::move(value)));
    return Error::success();
  }
  case 'X':
  case 0x8c:
  case 0x8d:
  case 'T':
  case 'U': { // BINUNICODE(8), SHORT_BINUNICODE, (SHORT_)BINSTRING
    unsigned width = opcode == 0x8d                    ? 8
                     : opcode == 0x8c || opcode == 'U' ? 1
                                                       : 4;
    Expected<uint64_t> length = readUInt(width);
    if (!length)
      return length.takeError();
    return pushText(PickleValue::String, *length);
  }
  case 'B':
  case 'C':
  case 0x8e:
  case 0x96: { // BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
    unsigned width = opcode == 'C' ? 1 : opcode == 'B' ? 4 : 8;
    Expected<uint64_t> length = readUInt(width);
    if (!length)
      return length.takeError();
    return pushText(PickleValue::Bytes, *length);
  }
  default:
    return std::nullopt;
  }
}

/// Builds or fills a tuple, list, dict or set, or returns nothing for another
/// opcode.
std::optional<Error> Unpickler::stepContainer() {
  switch (opcode) {
  case ')':
    stack.push_back(make(PickleValue::Tuple));
    return Error::success();
  case ']':
    stack.push_back(make(PickleValue::List));
    return Error::success();
  case '}':
    stack.push_back(make(PickleValue::Dict));
    return Error::success();
  case 0x8f: // EMPTY_SET
    stack.push_back(make(PickleValue::Set));
    return Error::success();
  case 0x85:
  case 0x86:
  case 0x87: // TUPLE1, TUPLE2, TUPLE3
    return pushTuple(opcode - 0x84);
  case '(':
    // Marks nest no deeper than values may.
    if (marks.size() >= kMaxNestingDepth)
      return fail("marks nested deeper than " +
                  std::to_string(kMaxNestingDepth) + " levels");
    marks.push_back(stack.size());
    return Error::success();
  case 't':
  case 'l':
  case 'd':
  case 0x91: { // TUPLE, LIST, DICT, FROZENSET
    Expected<std::vector<PickleRef>> items = popMark();
    if (!items)
      return items.takeError();
    if (opcode == 'd' && items->size() % 2 != 0)
      return fail("makes a dict of a key without a value");
    PickleValue::Kind kind = opcode == 't'   ? PickleValue::Tuple
                             : opcode == 'l' ? PickleValue::List
                             : opcode == 'd' ? PickleValue::Dict
                                             : PickleValue::Set;
    stack.push_back(make(kind, std::move(*items)));
    return Error::success();
  }
  case 'a': { // APPEND
    Expected<PickleRef> item = pop();
    if (!item)
      return item.takeError();
    return addToContainer(PickleValue::List, {*item});
  }
  case 's': { // SETITEM
    Expected<PickleRef> item = pop();
    if (!item)
      return item.takeError();
    Expected<PickleRef> key = pop();
    if (!key)
      return key.takeError();
    return addToContainer(PickleValue::Dict, {*key, *item});
  }
  case 'e':
  case 'u':
  case 0x90: { // APPENDS, SETITEMS, ADDITEMS
    Expected<std::vector<PickleRef>> items = popMark();
    if (!items)
      return items.takeError();
    PickleValue::Kind kind = opcode == 'e'   ? PickleValue::List
                             : opcode == 'u' ? PickleValue::Dict
                                             : PickleValue::Set;
    return addToContainer(kind, std::move(*items));
  }
  default:
    return std::nullopt;
  }
}

/// Runs the stack and memo opcodes (pop, dup, put, get), or returns nothing for
/// another opcode.
std::optional<Error> Unpickler::stepStack() {
  switch (opcode) {
  case '0': // POP
    return pop().takeError();
  case '1': // POP_MARK
    return popMark().takeError();
  case '2': { // DUP
    if (stack.empty() || (!marks.empty() && stack.size() <= marks.back()))
      return fail("duplicates a value the stack does not hold");
    stack.push_back(stack.back());
    return Error::success();
  }
  case 'q':
  case 'r': { // BINPUT, LONG_BINPUT
    Expected<uint64_t> index = readUInt(opcode == 'q' ? 1 : 4);
    if (!index)
      return index.takeError();
    return pushMemo(*index);
  }
  case 0x94: // MEMOIZE
    return pushMemo(memo.size());
  case 'h':
  case 'j': { // BINGET, LONG_BINGET
    Expected<uint64_t> index = readUInt(opcode == 'h' ? 1 : 4);
    if (!index)
      return index.takeError();
    return pushGet(*index);
  }
  default:
    return std::nullopt;
  }
}

/// Runs the globals and calls (GLOBAL, REDUCE, NEWOBJ, BUILD, persistent ids),
/// or returns nothing for another opcode.
std::optional<Error> Unpickler::stepCall() {
  switch (opcode) {
  case 'c': { // GLOBAL "module\nname\n"
    Expected<StringRef> module = readLine();
    if (!module)
      return module.takeError();
    Expected<StringRef> name = readLine();
    if (!name)
      return name.takeError();
    stack.push_back(addGlobal(*module, *name));
    return Error::success();
  }
  case 0x93: { // STACK_GLOBAL
    Expected<PickleRef> name = pop();
    if (!name)
      return name.takeError();
    Expected<PickleRef> module = pop();
    if (!module)
      return module.takeError();
    if (at(*name).kind != PickleValue::String ||
        at(*module).kind != PickleValue::String)
      return fail("names a global by something other than two strings");
    std::string moduleName = at(*module).text, globalName = at(*name).text;
    stack.push_back(addGlobal(moduleName, globalName));
    return Error::success();
  }
  case 'R':
    return reduce();
  case 0x81:
    return newObject(/*withKeywords=*/false);
  case 0x92:
    return newObject(/*withKeywords=*/true);
  case 'b':
    return build();
  case 'Q':
    return persistentLoad();
  default:
    return std::nullopt;
  }
}

Error Unpickler::step() {
  opcodeOffset = offset;
  opcode = static_cast<uint8_t>(bytes[offset++]);
  if (const char *why = getRefusedOpcode(opcode))
    return fail(llvm::Twine("the opcode is ") + why);
  for (auto family :
       {&Unpickler::stepFraming, &Unpickler::stepScalar,
        &Unpickler::stepContainer, &Unpickler::stepStack, &Unpickler::stepCall})
    if (std::optional<Error> done = (this->*family)())
      return std::move(*done);
  return fail("is not an opcode of pickle protocols 2 to 5");
}

Error Unpickler::checkTree() const {
  // Depth-first from the root, iteratively: a value on the path seen again
  // is a cycle. The memo shares values, so the nesting is the height of the
  // root, each value's height known once its children are done: a path
  // through shared values may be far longer than any path the search takes.
  enum Color : uint8_t { White, Gray, Black };
  std::vector<Color> color(document.values.size(), White);
  std::vector<unsigned> height(document.values.size(), 0);
  std::vector<std::pair<PickleRef, size_t>> path = {{document.root, 0}};
  color[document.root] = Gray;
  // A value's children are its items, then its fields, then its storage;
  // read in place, since copying them on every step is quadratic in the
  // size of a container.
  auto childCount = [&](PickleRef ref) {
    const PickleValue &v = document.values[ref];
    return v.items.size() + (v.fields != 0) +
           (v.kind == PickleValue::Tensor);
  };
  auto childAt = [&](PickleRef ref, size_t index) {
    const PickleValue &v = document.values[ref];
    if (index < v.items.size())
      return v.items[index];
    if (index == v.items.size() && v.fields != 0)
      return v.fields;
    return v.storage;
  };
  auto tooDeep = [] {
    return makeError("the pickle's values nest deeper than " +
                     std::to_string(kMaxNestingDepth) + " levels");
  };
  while (!path.empty()) {
    auto &[ref, next] = path.back();
    size_t count = childCount(ref);
    if (next == count) {
      for (size_t i = 0; i < count; ++i)
        height[ref] = std::max(height[ref], height[childAt(ref, i)] + 1);
      if (height[ref] >= kMaxNestingDepth)
        return tooDeep();
      color[ref] = Black;
      path.pop_back();
      continue;
    }
    PickleRef child = childAt(ref, next++);
    if (color[child] == Gray)
      return makeError("the pickle's values contain themselves");
    if (color[child] == Black)
      continue;
    if (path.size() >= kMaxNestingDepth)
      return tooDeep();
    color[child] = Gray;
    path.push_back({child, 0});
  }
  return Error::success();
}

Expected<PickleDocument> Unpickler::run() {
  // Value 0 is a None that Object::fields points at until BUILD.
  make(PickleValue::None);
  while (!stopped) {
    if (offset >= bytes.size())
      return makeError("the pickle ends before its STOP opcode");
    if (Error error = step())
      return std::move(error);
  }
  if (offset != bytes.size())
    return makeError("the pickle goes on " +
                     std::to_string(bytes.size() - offset) +
                     " bytes past its STOP opcode");
  if (Error error = checkTree())
    return std::move(error);
  if (Error error = document.indexDicts(/*refuseRepeats=*/true))
    return std::move(error);
  llvm::sort(document.opaqueGlobals);
  document.opaqueGlobals.erase(
      std::unique(document.opaqueGlobals.begin(), document.opaqueGlobals.end()),
      document.opaqueGlobals.end());
  return std::move(document);
}

Expected<PickleDocument> ucp::readPickle(StringRef bytes) {
  return Unpickler(bytes).run();
}
