//===- PickleCalls.cpp - The calls the restricted unpickler reads ---------===//
//
// REDUCE, NEWOBJ, BUILD and BINPERSID: where a pickle would call something.
// Nothing is called; a call to one of the allowed globals of Pickle.h is
// read as the data it stands for, and any other call is refused or kept
// opaque.
//
//===----------------------------------------------------------------------===//

#include "Unpickler.h"
#include "ucp/Map/Invariants.h"

using namespace ucp;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

/// The storage classes of a persistent id and their element types.
/// torch's typed storage classes and their element types.
static constexpr std::pair<const char *, DType> kStorageClasses[] = {
    {"FloatStorage", DType::F32}, {"DoubleStorage", DType::F64},
    {"HalfStorage", DType::F16},  {"BFloat16Storage", DType::BF16},
    {"LongStorage", DType::I64},  {"IntStorage", DType::I32},
    {"ShortStorage", DType::I16}, {"CharStorage", DType::I8},
    {"ByteStorage", DType::U8},   {"BoolStorage", DType::Bool},
};

static std::optional<DType> getStorageType(StringRef module, StringRef name) {
  if (module != "torch")
    return std::nullopt;
  if (name == "UntypedStorage")
    return DType::U8;
  for (auto [className, type] : kStorageClasses)
    if (name == className)
      return type;
  return std::nullopt;
}

std::optional<StringRef> ucp::getTorchStorageClass(DType type) {
  for (auto [className, storageType] : kStorageClasses)
    if (storageType == type)
      return StringRef(className);
  return std::nullopt;
}

/// DeepSpeed's plain data classes, built by NEWOBJ then BUILD.
static bool isDataClass(StringRef module, StringRef name) {
  return (module == "deepspeed.runtime.fp16.loss_scaler" &&
          name == "LossScaler") ||
         (module == "deepspeed.utils.tensor_fragment" &&
          name == "fragment_address") ||
         (module == "deepspeed.checkpoint.universal_checkpoint" &&
          name == "SubparamShape");
}

/// The enum classes whose members getattr may name.
static bool isEnumClass(StringRef module, StringRef name) {
  return module == "deepspeed.runtime.zero.config" && name == "ZeroStageEnum";
}

/// The functions a REDUCE may call (read, never run).
static bool isAllowedCall(StringRef module, StringRef name) {
  return (module == "collections" && name == "OrderedDict") ||
         (module == "torch._utils" && name == "_rebuild_tensor_v2") ||
         (module == "torch" && name == "Size") ||
         (module == "builtins" &&
          (name == "set" || name == "frozenset" || name == "getattr"));
}

bool ucp::isAllowedPickleGlobal(StringRef module, StringRef name) {
  return isAllowedCall(module, name) || isDataClass(module, name) ||
         isEnumClass(module, name) || getStorageType(module, name);
}

Error Unpickler::reduce() {
  Expected<PickleRef> argsRef = pop();
  if (!argsRef)
    return argsRef.takeError();
  Expected<PickleRef> callee = pop();
  if (!callee)
    return callee.takeError();
  const PickleValue &function = at(*callee);
  if (function.kind != PickleValue::Global)
    return fail("calls " + document.describe(*callee) + ", not a global");
  std::string module = function.module, name = function.name;
  if (!isAllowedCall(module, name))
    return fail("the pickle calls " + module + "." + name +
                ", which this reader never runs");
  if (at(*argsRef).kind != PickleValue::Tuple)
    return fail("calls " + module + "." + name + " with " +
                document.describe(*argsRef) + " for arguments");
  std::vector<PickleRef> args = at(*argsRef).items;
  if (name == "_rebuild_tensor_v2")
    return rebuildTensor(args);
  if (name == "OrderedDict") {
    if (!args.empty())
      return fail("builds an OrderedDict from arguments; torch.save passes "
                  "none");
    PickleValue dict;
    dict.kind = PickleValue::Dict;
    dict.module = "collections";
    dict.name = "OrderedDict";
    stack.push_back(add(std::move(dict)));
    return Error::success();
  }
  if (name == "Size") {
    if (args.size() != 1 || at(args[0]).kind != PickleValue::Tuple)
      return fail("builds a torch.Size of something other than a tuple");
    // The tuple, marked as a Size so that it is written back as one.
    PickleValue size = at(args[0]);
    size.module = "torch";
    size.name = "Size";
    stack.push_back(add(std::move(size)));
    return Error::success();
  }
  if (name == "set" || name == "frozenset") {
    if (args.size() > 1 ||
        (args.size() == 1 && at(args[0]).kind != PickleValue::List &&
         at(args[0]).kind != PickleValue::Tuple))
      return fail("builds a set of something other than a list");
    stack.push_back(make(PickleValue::Set, args.empty()
                                               ? std::vector<PickleRef>()
                                               : at(args[0]).items));
    return Error::success();
  }
  // getattr: only a member of an allowed enum, named by a string.
  if (args.size() != 2 || at(args[0]).kind != PickleValue::Global ||
      !isEnumClass(at(args[0]).module, at(args[0]).name) ||
      at(args[1]).kind != PickleValue::String)
    return fail("the pickle calls getattr on something other than a member of "
                "an allowed enum, which this reader never runs");
  PickleValue member;
  member.kind = PickleValue::EnumMember;
  member.module = at(args[0]).module;
  member.name = at(args[0]).name;
  member.text = at(args[1]).text;
  stack.push_back(add(std::move(member)));
  return Error::success();
}

Error Unpickler::newObject(bool withKeywords) {
  std::optional<PickleRef> keywordArgs;
  if (withKeywords) {
    Expected<PickleRef> keywords = pop();
    if (!keywords)
      return keywords.takeError();
    if (at(*keywords).kind != PickleValue::Dict)
      return fail("passes " + document.describe(*keywords) +
                  " for keyword arguments");
    keywordArgs = *keywords;
  }
  Expected<PickleRef> args = pop();
  if (!args)
    return args.takeError();
  Expected<PickleRef> cls = pop();
  if (!cls)
    return cls.takeError();
  if (at(*cls).kind != PickleValue::Global)
    return fail("makes an instance of " + document.describe(*cls) +
                ", not a class");
  if (at(*args).kind != PickleValue::Tuple)
    return fail("passes " + document.describe(*args) + " for arguments");
  PickleValue object;
  object.kind = PickleValue::Object;
  object.module = at(*cls).module;
  object.name = at(*cls).name;
  // Another class is kept opaque: reported, never constructed.
  object.opaque = !isDataClass(object.module, object.name);
  if (!object.opaque && (!at(*args).items.empty() || withKeywords))
    return fail("makes a " + object.name +
                " from arguments; its fields come from BUILD");
  // An opaque object keeps its arguments, so that it is written back as
  // it was read.
  if (object.opaque) {
    object.items = {*args};
    if (keywordArgs)
      object.items.push_back(*keywordArgs);
  }
  stack.push_back(add(std::move(object)));
  return Error::success();
}

Error Unpickler::build() {
  Expected<PickleRef> state = pop();
  if (!state)
    return state.takeError();
  if (stack.empty() || (!marks.empty() && stack.size() <= marks.back()))
    return fail("sets the state of a value the stack does not hold");
  PickleValue &object = at(stack.back());
  // An OrderedDict carries attributes too (a state_dict's `_metadata`).
  if (object.kind == PickleValue::Dict) {
    object.fields = *state;
    return Error::success();
  }
  if (object.kind != PickleValue::Object)
    return fail("sets the state of " + document.describe(stack.back()) +
                ", which is not an object");
  if (!object.opaque && at(*state).kind != PickleValue::Dict)
    return fail("sets the fields of a " + object.name + " from " +
                document.describe(*state) + ", not a dict");
  object.fields = *state;
  return Error::success();
}

Error Unpickler::persistentLoad() {
  Expected<PickleRef> id = pop();
  if (!id)
    return id.takeError();
  const std::vector<PickleRef> &parts = at(*id).items;
  auto isKind = [&](size_t i, PickleValue::Kind kind) {
    return at(parts[i]).kind == kind;
  };
  if (at(*id).kind != PickleValue::Tuple || parts.size() != 5 ||
      !isKind(0, PickleValue::String) || at(parts[0]).text != "storage" ||
      !isKind(1, PickleValue::Global) || !isKind(2, PickleValue::String) ||
      !isKind(3, PickleValue::String) || !isKind(4, PickleValue::Int))
    return fail("a persistent id other than ('storage', torch.<T>Storage, "
                "key, location, elements)");
  std::optional<DType> type =
      getStorageType(at(parts[1]).module, at(parts[1]).name);
  if (!type)
    return fail("a storage of " + at(parts[1]).module + "." +
                at(parts[1]).name + ", which is no storage class of torch");
  if (at(parts[4]).integer < 0)
    return fail("a storage of " + std::to_string(at(parts[4]).integer) +
                " elements");
  // torch.load loads a key once and hands the first storage to every later
  // reference, whatever type and size they name: the same key is the same
  // storage here, and one that names another type or size is refused
  // rather than read otherwise than torch reads it.
  llvm::StringRef key = at(parts[2]).text;
  int64_t elements = at(parts[4]).integer;
  auto [known, first] = storageKeys.try_emplace(key, 0);
  if (!first) {
    const PickleValue &earlier = at(known->second);
    if (earlier.dtype != *type || earlier.elements != elements)
      return fail("storage '" + key + "' is named as " +
                  std::to_string(elements) + " " +
                  getSafetensorsName(*type) + " elements after " +
                  std::to_string(earlier.elements) + " " +
                  getSafetensorsName(earlier.dtype) +
                  " ones; torch would read both as the first");
    stack.push_back(known->second);
    return Error::success();
  }
  PickleValue storage;
  storage.kind = PickleValue::Storage;
  storage.dtype = *type;
  storage.text = key.str();
  storage.elements = elements;
  known->second = add(std::move(storage));
  stack.push_back(known->second);
  return Error::success();
}

Error Unpickler::rebuildTensor(llvm::ArrayRef<PickleRef> args) {
  auto isKind = [&](size_t i, PickleValue::Kind kind) {
    return at(args[i]).kind == kind;
  };
  if ((args.size() != 6 && args.size() != 7) ||
      !isKind(0, PickleValue::Storage) || !isKind(1, PickleValue::Int) ||
      !isKind(2, PickleValue::Tuple) || !isKind(3, PickleValue::Tuple) ||
      !isKind(4, PickleValue::Bool) || !isKind(5, PickleValue::Dict))
    return fail("calls _rebuild_tensor_v2 with other arguments than (storage, "
                "offset, size, stride, requires_grad, hooks[, metadata])");
  // Hooks are callables: a tensor with any is not data.
  if (!at(args[5]).items.empty())
    return fail("a tensor with backward hooks, which are code");
  PickleValue tensor;
  tensor.kind = PickleValue::Tensor;
  tensor.storage = args[0];
  tensor.offset = at(args[1]).integer;
  tensor.requiresGrad = at(args[4]).boolean;
  for (auto [list, from] :
       {std::pair{&tensor.shape, args[2]}, std::pair{&tensor.strides, args[3]}})
    for (PickleRef item : at(from).items) {
      if (at(item).kind != PickleValue::Int)
        return fail("a tensor size or stride that is not an int");
      list->push_back(at(item).integer);
    }
  StridedView view{tensor.offset, tensor.strides};
  if (std::string error =
          checkViews(tensor.shape,
                     {{&view, at(args[0]).elements, "tensor", "its storage"}});
      !error.empty())
    return fail("a tensor of storage '" + at(args[0]).text + "': " + error);
  stack.push_back(add(std::move(tensor)));
  return Error::success();
}
