//===- FakeDriver.cpp - A stand-in CUDA driver that runs on the host ------===//
//
// libcuda.so.1 for tests on machines with no GPU: the driver entry points
// the CUDA executor resolves, with host memory as device memory and modules
// that are host libraries (FakeNvrtc.cpp compiles the generated kernels
// into one and hands its path over as the "PTX"). A launch runs the whole
// grid on the calling thread. Fresh allocations hold 0x5A bytes, so an
// element no kernel writes shows up, as uninitialised GPU memory would.
//
//===----------------------------------------------------------------------===//

#include "HostKernels.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <unistd.h>

using namespace ucp::testing;

using CUdeviceptr = unsigned long long;
using Clock = std::chrono::steady_clock;

namespace {
enum : int {
  kSuccess = 0,
  kOutOfMemory = 2,
  kInvalidValue = 1,
  kInvalidImage = 200,
  kNotFound = 500,
  kNotReady = 600,
};
int fakeContext;
} // namespace

extern "C" {

int cuInit(unsigned) { return kSuccess; }

int cuDeviceGetCount(int *count) {
  *count = 1;
  return kSuccess;
}

int cuDeviceGet(int *device, int) {
  *device = 0;
  return kSuccess;
}

int cuDeviceGetAttribute(int *value, int attribute, int) {
  // Compute capability 9.0 (major 75, minor 76); nothing else is asked.
  *value = attribute == 75 ? 9 : 0;
  return kSuccess;
}

int cuDevicePrimaryCtxRetain(void **context, int) {
  *context = &fakeContext;
  return kSuccess;
}

int cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }

int cuCtxSetCurrent(void *) { return kSuccess; }

/// `image` is the path of the host library FakeNvrtc.cpp compiled; it is
/// loaded and then removed with its folder.
int cuModuleLoadData(void **module, const void *image) {
  std::string library = static_cast<const char *>(image);
  *module = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!*module) {
    std::fprintf(stderr, "fake libcuda: %s\n", dlerror());
    return kInvalidImage;
  }
  std::remove(library.c_str());
  rmdir(library.substr(0, library.rfind('/')).c_str());
  return kSuccess;
}

int cuModuleUnload(void *module) {
  dlclose(module);
  return kSuccess;
}

int cuModuleGetFunction(void **function, void *module, const char *name) {
  *function = dlsym(module, getHostEntryName(name).c_str());
  return *function ? kSuccess : kNotFound;
}

int cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  // 256-byte aligned, as the driver's allocations are.
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return kOutOfMemory;
  std::memset(memory, 0x5A, bytes);
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  return kSuccess;
}

int cuMemFree_v2(CUdeviceptr pointer) {
  std::free(reinterpret_cast<void *>(pointer));
  return kSuccess;
}

int cuMemcpyHtoD_v2(CUdeviceptr to, const void *from, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(to), from, bytes);
  return kSuccess;
}

int cuMemcpyDtoH_v2(void *to, CUdeviceptr from, size_t bytes) {
  std::memcpy(to, reinterpret_cast<const void *>(from), bytes);
  return kSuccess;
}

int cuMemcpyDtoD_v2(CUdeviceptr to, CUdeviceptr from, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(to), reinterpret_cast<void *>(from),
              bytes);
  return kSuccess;
}

int cuLaunchKernel(void *function, unsigned gridX, unsigned gridY,
                   unsigned gridZ, unsigned blockX, unsigned blockY,
                   unsigned blockZ, unsigned sharedBytes, void *, void **params,
                   void **extra) {
  // The generated kernels use one-dimensional grids and no shared memory.
  if (gridY != 1 || gridZ != 1 || blockY != 1 || blockZ != 1 ||
      sharedBytes != 0 || extra || gridX == 0 || gridX > 2147483647u ||
      blockX == 0 || blockX > 1024)
    return kInvalidValue;
  reinterpret_cast<HostKernelEntry>(function)(gridX, blockX, params);
  return kSuccess;
}

int cuCtxSynchronize() { return kSuccess; }

// Launches and copies run when called, so the stream is always idle.
// Launches run as they are queued, so the stream is idle; unless
// UCP_FAKE_CUDA_BUSY is set: then it never is, as when queued work waits
// for a peer that is gone.
int cuStreamQuery(void *) {
  return std::getenv("UCP_FAKE_CUDA_BUSY") ? kNotReady : kSuccess;
}

int cuEventCreate(void **event, unsigned) {
  *event = new Clock::time_point();
  return kSuccess;
}

int cuEventRecord(void *event, void *) {
  *static_cast<Clock::time_point *>(event) = Clock::now();
  return kSuccess;
}

int cuEventSynchronize(void *) { return kSuccess; }

int cuEventElapsedTime_v2(float *milliseconds, void *start, void *stop) {
  *milliseconds = std::chrono::duration<float, std::milli>(
                      *static_cast<Clock::time_point *>(stop) -
                      *static_cast<Clock::time_point *>(start))
                      .count();
  return kSuccess;
}

int cuEventDestroy_v2(void *event) {
  delete static_cast<Clock::time_point *>(event);
  return kSuccess;
}

int cuGetErrorString(int result, const char **text) {
  static thread_local std::string message;
  message = "fake CUDA error " + std::to_string(result);
  *text = message.c_str();
  return kSuccess;
}

} // extern "C"
