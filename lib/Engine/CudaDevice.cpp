//===- CudaDevice.cpp - One NVIDIA GPU, through the driver API ------------===//

#include "CudaDriver.h"
#include "ucp/Support/Error.h"

using namespace ucp;

llvm::Expected<Driver> Driver::load() {
  void *library = openCudaLibrary({"libcuda.so.1", "libcuda.so"});
  if (!library)
    return makeError("no CUDA driver (libcuda.so.1) on this machine, so no "
                     "GPU to run on; use --device cpu");
  Driver d;
  if (!resolve(library, "cuInit", d.init) ||
      !resolve(library, "cuDeviceGetCount", d.deviceGetCount) ||
      !resolve(library, "cuDeviceGet", d.deviceGet) ||
      !resolve(library, "cuDeviceGetAttribute", d.deviceGetAttribute) ||
      !resolve(library, "cuDevicePrimaryCtxRetain", d.primaryCtxRetain) ||
      !resolve(library, "cuDevicePrimaryCtxRelease_v2", d.primaryCtxRelease) ||
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
      !resolve(library, "cuStreamQuery", d.streamQuery) ||
      !resolve(library, "cuEventCreate", d.eventCreate) ||
      !resolve(library, "cuEventRecord", d.eventRecord) ||
      !resolve(library, "cuEventSynchronize", d.eventSynchronize) ||
      // CUDA 12.8 renamed it; drivers keep the old name for old programs.
      !(resolve(library, "cuEventElapsedTime_v2", d.eventElapsedTime) ||
        resolve(library, "cuEventElapsedTime", d.eventElapsedTime)) ||
      !resolve(library, "cuEventDestroy_v2", d.eventDestroy) ||
      !resolve(library, "cuGetErrorString", d.getErrorString))
    return makeError("libcuda.so.1 lacks an entry point affine-ucp needs");
  return d;
}

CudaDevice::CudaDevice(std::unique_ptr<State> state)
    : state(std::move(state)) {}

CudaDevice::~CudaDevice() {
  if (state->context)
    state->driver.primaryCtxRelease(state->device);
}

/// The driver, started.
static llvm::Expected<Driver> startDriver() {
  llvm::Expected<Driver> driver = Driver::load();
  if (!driver)
    return driver.takeError();
  if (int result = driver->init(0))
    return makeError("the CUDA driver did not start (" +
                     driver->describe(result) + "); use --device cpu");
  return driver;
}

llvm::Expected<int> CudaDevice::getDeviceCount() {
  llvm::Expected<Driver> driver = startDriver();
  if (!driver)
    return driver.takeError();
  int count = 0;
  if (driver->deviceGetCount(&count) != 0)
    count = 0;
  return count;
}

llvm::Expected<std::shared_ptr<CudaDevice>> CudaDevice::open(int ordinal) {
  auto state = std::make_unique<State>();
  llvm::Expected<Driver> driver = startDriver();
  if (!driver)
    return driver.takeError();
  Driver &d = state->driver = *driver;
  int count = 0;
  if (d.deviceGetCount(&count) != 0 || count == 0)
    return makeError("no CUDA device is available; use --device cpu");
  if (ordinal < 0 || ordinal >= count)
    return makeError("there is no GPU " + llvm::Twine(ordinal) + ": the " +
                     "driver sees " + llvm::Twine(count));
  state->ordinal = ordinal;
  d.deviceGet(&state->device, ordinal);
  d.deviceGetAttribute(&state->major, /*COMPUTE_CAPABILITY_MAJOR=*/75,
                       state->device);
  d.deviceGetAttribute(&state->minor, /*COMPUTE_CAPABILITY_MINOR=*/76,
                       state->device);
  if (int result = d.primaryCtxRetain(&state->context, state->device))
    return makeError("cannot open a context on the GPU: " + d.describe(result));
  d.ctxSetCurrent(state->context);
  return std::shared_ptr<CudaDevice>(new CudaDevice(std::move(state)));
}

int CudaDevice::getOrdinal() const { return state->ordinal; }

std::pair<int, int> CudaDevice::getComputeCapability() const {
  return {state->major, state->minor};
}

llvm::Expected<DeviceAddress> CudaDevice::allocate(size_t bytes) const {
  DeviceAddress address = 0;
  if (int result = state->driver.memAlloc(&address, std::max<size_t>(bytes, 1)))
    return makeError("cannot allocate " + llvm::Twine(bytes) +
                     " bytes of GPU memory: " + state->driver.describe(result));
  return address;
}

void CudaDevice::free(DeviceAddress address) const {
  state->driver.memFree(address);
}

llvm::Error CudaDevice::copyToDevice(DeviceAddress to, const void *from,
                                     size_t bytes) const {
  if (int result = state->driver.memcpyHtoD(to, from, bytes))
    return makeError("cannot copy " + llvm::Twine(bytes) +
                     " bytes to the GPU: " + state->driver.describe(result));
  return llvm::Error::success();
}

llvm::Error CudaDevice::copyToHost(void *to, DeviceAddress from,
                                   size_t bytes) const {
  if (int result = state->driver.memcpyDtoH(to, from, bytes))
    return makeError(
        "cannot copy " + llvm::Twine(bytes) +
        " bytes back from the GPU: " + state->driver.describe(result));
  return llvm::Error::success();
}

llvm::Expected<bool> CudaDevice::isIdle() const {
  int result = state->driver.streamQuery(nullptr);
  if (result == kCudaNotReady)
    return false;
  if (result != 0)
    return makeError("work on the GPU failed: " +
                     state->driver.describe(result));
  return true;
}

llvm::Error CudaDevice::synchronize() const {
  if (int result = state->driver.ctxSynchronize())
    return makeError("work on the GPU failed: " +
                     state->driver.describe(result));
  return llvm::Error::success();
}

CudaMemory::~CudaMemory() {
  for (DeviceAddress address : owned)
    device->free(address);
}

llvm::Expected<DeviceAddress> CudaMemory::allocate(size_t bytes) {
  llvm::Expected<DeviceAddress> address = device->allocate(bytes);
  if (address)
    owned.push_back(*address);
  return address;
}
