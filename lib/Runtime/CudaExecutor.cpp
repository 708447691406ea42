//===- CudaExecutor.cpp - Running copy programs on an NVIDIA GPU ----------===//
//
// The NVRTC and driver entry points are declared here with the few types
// they need, and resolved with dlopen/dlsym, so nothing links against CUDA.
//
//===----------------------------------------------------------------------===//

#include "ucp/Runtime/CudaExecutor.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"

#include <dlfcn.h>

using namespace ucp;

namespace {

llvm::Error refuse(const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), why.str());
}

/// Opens the first library of `names` that loads.
void *openLibrary(std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return handle;
  return nullptr;
}

template <typename Fn> bool resolve(void *library, const char *name, Fn &fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  return fn != nullptr;
}

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
        openLibrary({"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                     "/usr/local/cuda/lib64/libnvrtc.so"});
    if (!library)
      return refuse("NVRTC (libnvrtc.so) is not installed; it compiles the "
                    "generated kernels at run time");
    Nvrtc n;
    if (!resolve(library, "nvrtcCreateProgram", n.createProgram) ||
        !resolve(library, "nvrtcCompileProgram", n.compileProgram) ||
        !resolve(library, "nvrtcGetProgramLogSize", n.getProgramLogSize) ||
        !resolve(library, "nvrtcGetProgramLog", n.getProgramLog) ||
        !resolve(library, "nvrtcGetPTXSize", n.getPTXSize) ||
        !resolve(library, "nvrtcGetPTX", n.getPTX) ||
        !resolve(library, "nvrtcDestroyProgram", n.destroyProgram))
      return refuse("libnvrtc.so lacks an entry point affine-ucp needs");
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
      return refuse("NVRTC could not create a program");
    auto destroy = llvm::make_scope_exit([&] { destroyProgram(&program); });
    std::string archOption = "--gpu-architecture=" + arch;
    const char *options[] = {archOption.c_str(), "--std=c++17"};
    int result = compileProgram(program, 2, options);
    size_t logSize = 0;
    getProgramLogSize(program, &logSize);
    std::string log(logSize, '\0');
    getProgramLog(program, log.data());
    if (result != 0)
      return refuse("NVRTC failed to compile the generated kernels for " +
                    arch + ":\n" + log);
    bool machineCode = arch.rfind("sm_", 0) == 0;
    size_t size = 0;
    if ((machineCode ? getCUBINSize : getPTXSize)(program, &size) != 0 ||
        size == 0)
      return refuse("NVRTC produced no " +
                    std::string(machineCode ? "machine code" : "PTX") +
                    " for " + arch);
    std::string image(size, '\0');
    (machineCode ? getCUBIN : getPTX)(program, image.data());
    return image;
  }
};

using CUdeviceptr = unsigned long long;

/// The CUDA driver API, as far as copy programs need.
struct Driver {
  int (*init)(unsigned);
  int (*deviceGetCount)(int *);
  int (*deviceGet)(int *, int);
  int (*deviceGetAttribute)(int *, int, int);
  int (*primaryCtxRetain)(void **, int);
  int (*primaryCtxRelease)(int);
  int (*ctxSetCurrent)(void *);
  int (*moduleLoadData)(void **, const void *);
  int (*moduleUnload)(void *);
  int (*moduleGetFunction)(void **, void *, const char *);
  int (*memAlloc)(CUdeviceptr *, size_t);
  int (*memFree)(CUdeviceptr);
  int (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  int (*memcpyDtoH)(void *, CUdeviceptr, size_t);
  int (*memcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  int (*launchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                      unsigned, unsigned, void *, void **, void **);
  int (*ctxSynchronize)();
  int (*eventCreate)(void **, unsigned);
  int (*eventRecord)(void *, void *);
  int (*eventSynchronize)(void *);
  int (*eventElapsedTime)(float *, void *, void *);
  int (*eventDestroy)(void *);
  int (*getErrorString)(int, const char **);

  std::string describe(int result) const {
    const char *text = nullptr;
    if (getErrorString)
      getErrorString(result, &text);
    return text ? text : "CUDA error " + std::to_string(result);
  }

  static llvm::Expected<Driver> load() {
    void *library = openLibrary({"libcuda.so.1", "libcuda.so"});
    if (!library)
      return refuse("no CUDA driver (libcuda.so.1) on this machine, so no "
                    "GPU to run on; use --device cpu");
    Driver d;
    if (!resolve(library, "cuInit", d.init) ||
        !resolve(library, "cuDeviceGetCount", d.deviceGetCount) ||
        !resolve(library, "cuDeviceGet", d.deviceGet) ||
        !resolve(library, "cuDeviceGetAttribute", d.deviceGetAttribute) ||
        !resolve(library, "cuDevicePrimaryCtxRetain", d.primaryCtxRetain) ||
        !resolve(library, "cuDevicePrimaryCtxRelease_v2",
                 d.primaryCtxRelease) ||
        !resolve(library, "cuCtxSetCurrent", d.ctxSetCurrent) ||
        !resolve(library, "cuModuleLoadData", d.moduleLoadData) ||
        !resolve(library, "cuModuleUnload", d.moduleUnload) ||
        !resolve(library, "cuModuleGetFunction", d.moduleGetFunction) ||
        !resolve(library, "cuMemAlloc_v2", d.memAlloc) ||
        !resolve(library, "cuMemFree_v2", d.memFree) ||
        !resolve(library, "cuMemcpyHtoD_v2", d.memcpyHtoD) ||
        !resolve(library, "cuMemcpyDtoH_v2", d.memcpyDtoH) ||
        !resolve(library, "cuMemcpyDtoD_v2", d.memcpyDtoD) ||
        !resolve(library, "cuLaunchKernel", d.launchKernel) ||
        !resolve(library, "cuCtxSynchronize", d.ctxSynchronize) ||
        !resolve(library, "cuEventCreate", d.eventCreate) ||
        !resolve(library, "cuEventRecord", d.eventRecord) ||
        !resolve(library, "cuEventSynchronize", d.eventSynchronize) ||
        // CUDA 12.8 renamed it; drivers keep the old name for old programs.
        !(resolve(library, "cuEventElapsedTime_v2", d.eventElapsedTime) ||
          resolve(library, "cuEventElapsedTime", d.eventElapsedTime)) ||
        !resolve(library, "cuEventDestroy_v2", d.eventDestroy) ||
        !resolve(library, "cuGetErrorString", d.getErrorString))
      return refuse("libcuda.so.1 lacks an entry point affine-ucp needs");
    return d;
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
      return refuse("this GPU is sm_" + digits + " (compute capability " +
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

struct CudaExecutor::State {
  Driver driver;
  int device = 0;
  void *context = nullptr;
  void *module = nullptr;
  CudaModule kernels;
  /// The loaded kernel of each of `kernels.launches`.
  std::vector<void *> functions;
  /// What NVRTC compiled the kernels for ("sm_90", "compute_86").
  std::string architecture;
  DType type = DType::F32;
};

CudaExecutor::CudaExecutor(std::unique_ptr<State> state)
    : state(std::move(state)) {}

CudaExecutor::~CudaExecutor() {
  if (state->module)
    state->driver.moduleUnload(state->module);
  if (state->context)
    state->driver.primaryCtxRelease(state->device);
}

const std::string &CudaExecutor::getArchitecture() const {
  return state->architecture;
}

llvm::Expected<std::unique_ptr<CudaExecutor>> CudaExecutor::create(
    llvm::ArrayRef<std::pair<std::string, CopyProgram>> programs, DType type,
    CudaUnitIndex unitIndex) {
  auto state = std::make_unique<State>();
  state->type = type;
  llvm::Expected<CudaModule> kernels = emitCuda(programs, type, unitIndex);
  if (!kernels)
    return kernels.takeError();
  state->kernels = std::move(*kernels);

  llvm::Expected<Driver> driver = Driver::load();
  if (!driver)
    return driver.takeError();
  state->driver = *driver;
  Driver &d = state->driver;
  if (int result = d.init(0))
    return refuse("the CUDA driver did not start (" + d.describe(result) +
                  "); use --device cpu");
  int count = 0;
  if (d.deviceGetCount(&count) != 0 || count == 0)
    return refuse("no CUDA device is available; use --device cpu");
  d.deviceGet(&state->device, 0);
  int major = 0, minor = 0;
  d.deviceGetAttribute(&major, /*COMPUTE_CAPABILITY_MAJOR=*/75, state->device);
  d.deviceGetAttribute(&minor, /*COMPUTE_CAPABILITY_MINOR=*/76, state->device);
  llvm::Expected<CompiledKernels> compiled =
      compileCudaForDevice(state->kernels.source, major, minor);
  if (!compiled)
    return compiled.takeError();
  state->architecture = compiled->architecture;
  if (int result = d.primaryCtxRetain(&state->context, state->device))
    return refuse("cannot open a context on the GPU: " + d.describe(result));
  d.ctxSetCurrent(state->context);
  if (int result = d.moduleLoadData(&state->module, compiled->image.c_str())) {
    // CUDA_ERROR_UNSUPPORTED_PTX_VERSION: PTX newer than the driver.
    constexpr int kUnsupportedPtxVersion = 222;
    return refuse(
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
      return refuse("the generated kernel " + launch.kernel +
                    " is missing: " + d.describe(result));
    state->functions.push_back(function);
  }
  return std::unique_ptr<CudaExecutor>(new CudaExecutor(std::move(state)));
}

namespace {

/// Device memory, freed when it goes out of scope.
class DeviceMemory {
public:
  explicit DeviceMemory(const Driver &driver) : driver(driver) {}
  DeviceMemory(const DeviceMemory &) = delete;
  ~DeviceMemory() {
    for (CUdeviceptr pointer : owned)
      driver.memFree(pointer);
  }

  /// Allocates `bytes` (at least one) into `pointer`.
  llvm::Error allocate(CUdeviceptr &pointer, size_t bytes) {
    if (int result = driver.memAlloc(&pointer, std::max<size_t>(bytes, 1)))
      return refuse("cannot allocate " + std::to_string(bytes) +
                    " bytes of GPU memory: " + driver.describe(result));
    owned.push_back(pointer);
    return llvm::Error::success();
  }

private:
  const Driver &driver;
  std::vector<CUdeviceptr> owned;
};

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

/// A program's buffers on the device: sources uploaded, targets allocated,
/// and the table of their addresses its kernel takes.
struct CudaExecutor::DeviceBuffers {
  explicit DeviceBuffers(const Driver &driver) : memory(driver) {}
  DeviceMemory memory;
  std::map<int64_t, CUdeviceptr> sources, targets;
  CUdeviceptr table = 0;
};

llvm::Error CudaExecutor::check(int result, const char *what) const {
  if (result == 0)
    return llvm::Error::success();
  return refuse(std::string(what) + ": " + state->driver.describe(result));
}

const CudaLaunch *CudaExecutor::findLaunch(size_t index) const {
  // Launches are in program order, at most one per program.
  const std::vector<CudaLaunch> &launches = state->kernels.launches;
  auto found = llvm::partition_point(launches, [&](const CudaLaunch &launch) {
    return launch.program < index;
  });
  return found == launches.end() || found->program != index || found->units == 0
             ? nullptr
             : &*found;
}

llvm::Error CudaExecutor::upload(size_t index, const CopyProgram &program,
                                 const ProgramBuffers &buffers,
                                 DeviceBuffers &device) const {
  int64_t size = getElementSize(state->type);
  for (const auto &[rank, elements] : program.sourceElements) {
    if (elements == 0 || !buffers.sources.count(rank))
      continue;
    if (llvm::Error e =
            device.memory.allocate(device.sources[rank], elements * size))
      return e;
    if (llvm::Error e = check(state->driver.memcpyHtoD(device.sources[rank],
                                                       buffers.sources.at(rank),
                                                       elements * size),
                              "cannot copy a source shard to the GPU"))
      return e;
  }
  for (const auto &[rank, elements] : program.targetElements)
    if (elements != 0)
      if (llvm::Error e =
              device.memory.allocate(device.targets[rank], elements * size))
        return e;
  const CudaLaunch *launch = findLaunch(index);
  if (!launch)
    return llvm::Error::success();
  std::vector<CUdeviceptr> table;
  for (int64_t rank : launch->sourceBuffers)
    table.push_back(device.sources.at(rank));
  for (int64_t rank : launch->targetBuffers)
    table.push_back(device.targets.at(rank));
  size_t bytes = table.size() * sizeof(CUdeviceptr);
  if (llvm::Error e = device.memory.allocate(device.table, bytes))
    return e;
  return check(state->driver.memcpyHtoD(device.table, table.data(), bytes),
               "cannot copy the buffer table to the GPU");
}

llvm::Error CudaExecutor::launch(size_t index,
                                 const DeviceBuffers &device) const {
  const CudaLaunch *launch = findLaunch(index);
  if (!launch)
    return llvm::Error::success();
  void *function = state->functions.at(launch - state->kernels.launches.data());
  CUdeviceptr table = device.table;
  void *arguments[] = {&table};
  CudaGrid grid = getLaunchGrid(launch->units);
  return check(state->driver.launchKernel(function, grid.blocks, 1, 1,
                                          grid.threadsPerBlock, 1, 1, 0,
                                          nullptr, arguments, nullptr),
               "a kernel launch failed");
}

llvm::Error CudaExecutor::download(const CopyProgram &program,
                                   const ProgramBuffers &buffers,
                                   const DeviceBuffers &device) const {
  int64_t size = getElementSize(state->type);
  for (const auto &[rank, pointer] : device.targets)
    if (llvm::Error e = check(
            state->driver.memcpyDtoH(buffers.targets.at(rank), pointer,
                                     program.targetElements.at(rank) * size),
            "cannot copy a target shard back from the GPU"))
      return e;
  return llvm::Error::success();
}

llvm::Error CudaExecutor::run(size_t index, const CopyProgram &program,
                              const ProgramBuffers &buffers) {
  DeviceBuffers device(state->driver);
  if (llvm::Error e = upload(index, program, buffers, device))
    return e;
  if (llvm::Error e = launch(index, device))
    return e;
  if (llvm::Error e =
          check(state->driver.ctxSynchronize(), "the kernels failed"))
    return e;
  return download(program, buffers, device);
}

llvm::Expected<CudaTiming> CudaExecutor::time(size_t index,
                                              const CopyProgram &program,
                                              const ProgramBuffers &buffers,
                                              int repeats) {
  Driver &d = state->driver;
  DeviceBuffers device(d);
  if (llvm::Error e = upload(index, program, buffers, device))
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
      measure([&] { return launch(index, device); });
  if (!kernels)
    return kernels.takeError();
  timing.kernelSeconds = *kernels;
  if (llvm::Error e = download(program, buffers, device))
    return std::move(e);
  CUdeviceptr from = 0, to = 0;
  if (llvm::Error e = device.memory.allocate(from, timing.bytes))
    return std::move(e);
  if (llvm::Error e = device.memory.allocate(to, timing.bytes))
    return std::move(e);
  llvm::Expected<double> copy = measure([&] {
    return check(d.memcpyDtoD(to, from, timing.bytes),
                 "a device-to-device copy failed");
  });
  if (!copy)
    return copy.takeError();
  timing.memcpySeconds = *copy;
  return timing;
}
