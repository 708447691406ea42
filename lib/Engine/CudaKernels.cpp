//===- CudaKernels.cpp - Copy programs as kernels on an NVIDIA GPU -------===//
//
// The NVRTC entry points are declared here with the few types they need,
// and resolved with dlopen/dlsym, so nothing links against CUDA.
//
//===----------------------------------------------------------------------===//

#include "ucp/Engine/CudaKernels.h"
#include "CudaDriver.h"

#include "ucp/Support/Error.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"

using namespace ucp;

namespace {

/// NVRTC, as far as compiling one program needs.
struct Nvrtc {
  using Program = void *;
  int (*createProgram)(Program *, const char *, const char *, int,
                       const char *const *, const char *const *);
  int (*compileProgram)(Program, int, const char *const *);
  int (*getProgramLogSize)(Program, size_t *);
  int (*getProgramLog)(Program, char *);
  int (*getPTXSize)(Program, size_t *);
  int (*getPTX)(Program, char *);
  int (*destroyProgram)(Program *);
  // NVRTC 11.2 and later: the architectures it compiles for, and machine
  // code (a cubin). Null where the library predates them.
  int (*getNumSupportedArchs)(int *) = nullptr;
  int (*getSupportedArchs)(int *) = nullptr;
  int (*getCUBINSize)(Program, size_t *) = nullptr;
  int (*getCUBIN)(Program, char *) = nullptr;

  static llvm::Expected<Nvrtc> load() {
    void *library =
        openCudaLibrary({"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                         "/usr/local/cuda/lib64/libnvrtc.so"});
    if (!library)
      return makeError("NVRTC (libnvrtc.so) is not installed; it compiles the "
                       "generated kernels at run time");
    Nvrtc n;
    if (!resolve(library, "nvrtcCreateProgram", n.createProgram) ||
        !resolve(library, "nvrtcCompileProgram", n.compileProgram) ||
        !resolve(library, "nvrtcGetProgramLogSize", n.getProgramLogSize) ||
        !resolve(library, "nvrtcGetProgramLog", n.getProgramLog) ||
        !resolve(library, "nvrtcGetPTXSize", n.getPTXSize) ||
        !resolve(library, "nvrtcGetPTX", n.getPTX) ||
        !resolve(library, "nvrtcDestroyProgram", n.destroyProgram))
      return makeError("libnvrtc.so lacks an entry point affine-ucp needs");
    if (!resolve(library, "nvrtcGetNumSupportedArchs",
                 n.getNumSupportedArchs) ||
        !resolve(library, "nvrtcGetSupportedArchs", n.getSupportedArchs) ||
        !resolve(library, "nvrtcGetCUBINSize", n.getCUBINSize) ||
        !resolve(library, "nvrtcGetCUBIN", n.getCUBIN))
      n.getCUBIN = nullptr;
    return n;
  }

  /// The compute capabilities it compiles for (90 for 9.0), ascending; empty
  /// where it cannot say.
  std::vector<int> supportedArchitectures() const {
    int count = 0;
    if (!getCUBIN || getNumSupportedArchs(&count) != 0 || count <= 0)
      return {};
    std::vector<int> architectures(count);
    if (getSupportedArchs(architectures.data()) != 0)
      return {};
    llvm::sort(architectures);
    return architectures;
  }

  /// Compiles `source` for `arch` ("sm_90": machine code; "compute_90":
  /// PTX) and returns that image; the error carries NVRTC's log.
  llvm::Expected<std::string> compile(const std::string &source,
                                      const std::string &arch) const {
    Program program = nullptr;
    if (createProgram(&program, source.c_str(), "ucp_copies.cu", 0, nullptr,
                      nullptr) != 0)
      return makeError("NVRTC could not create a program");
    auto destroy = llvm::make_scope_exit([&] { destroyProgram(&program); });
    std::string archOption = "--gpu-architecture=" + arch;
    const char *options[] = {archOption.c_str(), "--std=c++17"};
    int result = compileProgram(program, 2, options);
    size_t logSize = 0;
    getProgramLogSize(program, &logSize);
    std::string log(logSize, '\0');
    getProgramLog(program, log.data());
    if (result != 0)
      return makeError("NVRTC failed to compile the generated kernels for " +
                       arch + ":\n" + log);
    bool machineCode = arch.rfind("sm_", 0) == 0;
    size_t size = 0;
    if ((machineCode ? getCUBINSize : getPTXSize)(program, &size) != 0 ||
        size == 0)
      return makeError("NVRTC produced no " +
                       std::string(machineCode ? "machine code" : "PTX") +
                       " for " + arch);
    std::string image(size, '\0');
    (machineCode ? getCUBIN : getPTX)(program, image.data());
    return image;
  }
};

} // namespace

llvm::Expected<std::string> ucp::compileCudaToPtx(const std::string &source,
                                                  const std::string &arch) {
  llvm::Expected<Nvrtc> nvrtc = Nvrtc::load();
  if (!nvrtc)
    return nvrtc.takeError();
  return nvrtc->compile(source, arch);
}

llvm::Expected<CompiledKernels>
ucp::compileCudaForDevice(const std::string &source, int major, int minor) {
  llvm::Expected<Nvrtc> nvrtc = Nvrtc::load();
  if (!nvrtc)
    return nvrtc.takeError();
  int capability = major * 10 + minor;
  std::string digits = std::to_string(capability);
  std::vector<int> known = nvrtc->supportedArchitectures();
  CompiledKernels kernels;
  if (known.empty()) {
    // An NVRTC that cannot list them: PTX for the GPU's own architecture.
    kernels.architecture = "compute_" + digits;
  } else if (llvm::is_contained(known, capability)) {
    kernels.architecture = "sm_" + digits;
  } else {
    auto below = llvm::find_if(llvm::reverse(known),
                               [&](int arch) { return arch <= capability; });
    if (below == known.rend())
      return makeError("this GPU is sm_" + digits + " (compute capability " +
                       std::to_string(major) + "." + std::to_string(minor) +
                       "), and the NVRTC found compiles for sm_" +
                       std::to_string(known.front()) + " to sm_" +
                       std::to_string(known.back()) +
                       " only; install a CUDA toolkit that supports this GPU, "
                       "or use --device cpu");
    // A GPU newer than NVRTC: PTX the driver compiles for it.
    kernels.architecture = "compute_" + std::to_string(*below);
  }
  llvm::Expected<std::string> image =
      nvrtc->compile(source, kernels.architecture);
  if (!image)
    return image.takeError();
  kernels.image = std::move(*image);
  return kernels;
}

struct CudaKernels::State {
  std::shared_ptr<CudaDevice> device;
  const Driver &driver() const { return device->getState().driver; }
  void *module = nullptr;
  CudaModule kernels;
  /// The loaded kernel of each of `kernels.launches`.
  std::vector<void *> functions;
  /// What NVRTC compiled the kernels for ("sm_90", "compute_86").
  std::string architecture;
  DType type = DType::F32;
};

CudaKernels::CudaKernels(std::unique_ptr<State> state)
    : state(std::move(state)) {}

CudaKernels::~CudaKernels() {
  if (state->module)
    state->driver().moduleUnload(state->module);
}

const std::string &CudaKernels::getArchitecture() const {
  return state->architecture;
}

const std::shared_ptr<CudaDevice> &CudaKernels::getDevice() const {
  return state->device;
}

llvm::Expected<std::unique_ptr<CudaKernels>> CudaKernels::create(
    llvm::ArrayRef<std::pair<std::string, CopyProgram>> programs, DType type,
    CudaUnitIndex unitIndex, std::shared_ptr<CudaDevice> device) {
  auto state = std::make_unique<State>();
  state->type = type;
  llvm::Expected<CudaModule> kernels = emitCuda(programs, type, unitIndex);
  if (!kernels)
    return kernels.takeError();
  state->kernels = std::move(*kernels);
  if (!device) {
    llvm::Expected<std::shared_ptr<CudaDevice>> opened = CudaDevice::open(0);
    if (!opened)
      return opened.takeError();
    device = std::move(*opened);
  }
  state->device = std::move(device);
  const Driver &d = state->driver();
  auto [major, minor] = state->device->getComputeCapability();
  llvm::Expected<CompiledKernels> compiled =
      compileCudaForDevice(state->kernels.source, major, minor);
  if (!compiled)
    return compiled.takeError();
  state->architecture = compiled->architecture;
  d.ctxSetCurrent(state->device->getState().context);
  if (int result = d.moduleLoadData(&state->module, compiled->image.c_str())) {
    // CUDA_ERROR_UNSUPPORTED_PTX_VERSION: PTX newer than the driver.
    constexpr int kUnsupportedPtxVersion = 222;
    return makeError(
        "cannot load the kernels compiled for " + compiled->architecture +
        ": " + d.describe(result) +
        (result == kUnsupportedPtxVersion
             ? "; the CUDA driver is older than NVRTC, whose PTX it cannot "
               "read: install a newer driver, or an NVRTC no newer than it"
             : ""));
  }
  for (const CudaLaunch &launch : state->kernels.launches) {
    void *function = nullptr;
    if (int result = d.moduleGetFunction(&function, state->module,
                                         launch.kernel.c_str()))
      return makeError("the generated kernel " + launch.kernel +
                       " is missing: " + d.describe(result));
    state->functions.push_back(function);
  }
  return std::unique_ptr<CudaKernels>(new CudaKernels(std::move(state)));
}

namespace {

/// A CUDA event, destroyed when it goes out of scope.
struct Event {
  const Driver &driver;
  void *handle = nullptr;
  explicit Event(const Driver &driver) : driver(driver) {}
  ~Event() {
    if (handle)
      driver.eventDestroy(handle);
  }
};

} // namespace

/// A program's buffers on the device, for a run from host buffers:
/// sources uploaded, targets allocated, and the launch of its kernel.
struct CudaKernels::StagedRun {
  explicit StagedRun(std::shared_ptr<CudaDevice> device)
      : memory(std::move(device)) {}
  CudaMemory memory;
  DeviceProgramBuffers buffers;
  DeviceLaunch launch;
};

llvm::Error CudaKernels::check(int result, const char *what) const {
  if (result == 0)
    return llvm::Error::success();
  return makeError(std::string(what) + ": " + state->driver().describe(result));
}

const CudaLaunch *CudaKernels::findLaunch(size_t index) const {
  // Launches are in program order, at most one per program.
  const std::vector<CudaLaunch> &launches = state->kernels.launches;
  auto found = llvm::partition_point(launches, [&](const CudaLaunch &launch) {
    return launch.program < index;
  });
  return found == launches.end() || found->program != index || found->units == 0
             ? nullptr
             : &*found;
}

llvm::Expected<DeviceLaunch>
CudaKernels::prepare(size_t index, const DeviceProgramBuffers &buffers,
                     CudaMemory &memory) const {
  DeviceLaunch prepared;
  prepared.index = index;
  const CudaLaunch *launch = findLaunch(index);
  if (!launch)
    return prepared;
  std::vector<CUdeviceptr> table;
  auto add = [&](const std::map<int64_t, DeviceAddress> &side, int64_t rank,
                 const char *what) -> llvm::Error {
    auto found = side.find(rank);
    if (found == side.end())
      return makeError("program " + llvm::Twine(index) + " has no " + what +
                       " buffer for rank " + llvm::Twine(rank));
    if (found->second % kDeviceBufferAlignment != 0)
      return makeError("the " + llvm::Twine(what) + " buffer of rank " +
                       llvm::Twine(rank) + " of program " + llvm::Twine(index) +
                       " is not " + llvm::Twine(kDeviceBufferAlignment) +
                       "-byte aligned");
    table.push_back(found->second);
    return llvm::Error::success();
  };
  for (int64_t rank : launch->sourceBuffers)
    if (llvm::Error e = add(buffers.sources, rank, "source"))
      return std::move(e);
  for (int64_t rank : launch->targetBuffers)
    if (llvm::Error e = add(buffers.targets, rank, "target"))
      return std::move(e);
  size_t bytes = table.size() * sizeof(CUdeviceptr);
  llvm::Expected<DeviceAddress> address = memory.allocate(bytes);
  if (!address)
    return address.takeError();
  prepared.table = *address;
  if (llvm::Error e =
          memory.getDevice()->copyToDevice(prepared.table, table.data(), bytes))
    return std::move(e);
  return prepared;
}

llvm::Error CudaKernels::enqueue(const DeviceLaunch &prepared) const {
  const CudaLaunch *launch = findLaunch(prepared.index);
  if (!launch)
    return llvm::Error::success();
  void *function = state->functions.at(launch - state->kernels.launches.data());
  CUdeviceptr table = prepared.table;
  void *arguments[] = {&table};
  CudaGrid grid = getLaunchGrid(launch->units);
  return check(state->driver().launchKernel(function, grid.blocks, 1, 1,
                                            grid.threadsPerBlock, 1, 1, 0,
                                            nullptr, arguments, nullptr),
               "a kernel launch failed");
}

llvm::Error CudaKernels::upload(size_t index, const CopyProgram &program,
                                const ProgramBuffers &buffers,
                                StagedRun &staged) const {
  int64_t size = getElementSize(state->type);
  const CudaDevice &device = *state->device;
  for (const auto &[rank, elements] : program.sourceElements) {
    if (elements == 0 || !buffers.sources.count(rank))
      continue;
    llvm::Expected<DeviceAddress> address =
        staged.memory.allocate(elements * size);
    if (!address)
      return address.takeError();
    staged.buffers.sources[rank] = *address;
    if (llvm::Error e = device.copyToDevice(*address, buffers.sources.at(rank),
                                            elements * size))
      return e;
  }
  for (const auto &[rank, elements] : program.targetElements) {
    if (elements == 0)
      continue;
    llvm::Expected<DeviceAddress> address =
        staged.memory.allocate(elements * size);
    if (!address)
      return address.takeError();
    staged.buffers.targets[rank] = *address;
  }
  llvm::Expected<DeviceLaunch> launch =
      prepare(index, staged.buffers, staged.memory);
  if (!launch)
    return launch.takeError();
  staged.launch = *launch;
  return llvm::Error::success();
}

llvm::Error CudaKernels::download(const CopyProgram &program,
                                  const ProgramBuffers &buffers,
                                  const StagedRun &staged) const {
  int64_t size = getElementSize(state->type);
  for (const auto &[rank, address] : staged.buffers.targets)
    if (llvm::Error e =
            state->device->copyToHost(buffers.targets.at(rank), address,
                                      program.targetElements.at(rank) * size))
      return e;
  return llvm::Error::success();
}

llvm::Error CudaKernels::run(size_t index, const CopyProgram &program,
                             const ProgramBuffers &buffers) {
  StagedRun staged(state->device);
  if (llvm::Error e = upload(index, program, buffers, staged))
    return e;
  if (llvm::Error e = enqueue(staged.launch))
    return e;
  if (llvm::Error e = state->device->synchronize())
    return e;
  return download(program, buffers, staged);
}

llvm::Expected<CudaTiming> CudaKernels::time(size_t index,
                                             const CopyProgram &program,
                                             const ProgramBuffers &buffers,
                                             int repeats) {
  const Driver &d = state->driver();
  StagedRun staged(state->device);
  if (llvm::Error e = upload(index, program, buffers, staged))
    return std::move(e);
  Event start(d), stop(d);
  if (llvm::Error e =
          check(d.eventCreate(&start.handle, 0), "cannot create a CUDA event"))
    return std::move(e);
  if (llvm::Error e =
          check(d.eventCreate(&stop.handle, 0), "cannot create a CUDA event"))
    return std::move(e);
  // Seconds per repetition of `body`, after one untimed warm-up.
  auto measure = [&](auto body) -> llvm::Expected<double> {
    if (llvm::Error e = body())
      return std::move(e);
    if (llvm::Error e = check(d.eventRecord(start.handle, nullptr),
                              "cannot record a CUDA event"))
      return std::move(e);
    for (int i = 0; i < repeats; ++i)
      if (llvm::Error e = body())
        return std::move(e);
    if (llvm::Error e = check(d.eventRecord(stop.handle, nullptr),
                              "cannot record a CUDA event"))
      return std::move(e);
    if (llvm::Error e =
            check(d.eventSynchronize(stop.handle), "the kernels failed"))
      return std::move(e);
    float milliseconds = 0;
    if (llvm::Error e =
            check(d.eventElapsedTime(&milliseconds, start.handle, stop.handle),
                  "cannot read a CUDA event"))
      return std::move(e);
    return milliseconds / 1e3 / std::max(repeats, 1);
  };
  CudaTiming timing;
  int64_t size = getElementSize(state->type);
  for (const auto &[rank, elements] : program.targetElements)
    timing.bytes += elements * size;
  llvm::Expected<double> kernels =
      measure([&] { return enqueue(staged.launch); });
  if (!kernels)
    return kernels.takeError();
  timing.kernelSeconds = *kernels;
  if (llvm::Error e = download(program, buffers, staged))
    return std::move(e);
  llvm::Expected<DeviceAddress> from = staged.memory.allocate(timing.bytes);
  if (!from)
    return from.takeError();
  llvm::Expected<DeviceAddress> to = staged.memory.allocate(timing.bytes);
  if (!to)
    return to.takeError();
  llvm::Expected<double> copy = measure([&] {
    return check(d.memcpyDtoD(*to, *from, timing.bytes),
                 "a device-to-device copy failed");
  });
  if (!copy)
    return copy.takeError();
  timing.memcpySeconds = *copy;
  return timing;
}
