//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The driver entry points the CUDA device and executor use, declared here
// with the few types they need and resolved with dlopen/dlsym, so nothing
// links against CUDA (CudaDevice.cpp loads them).
//
//===----------------------------------------------------------------------===//

#ifndef UCP_LIB_ENGINE_CUDADRIVER_H
#define UCP_LIB_ENGINE_CUDADRIVER_H

#include "ucp/Engine/CudaDevice.h"
#include "ucp/Support/Error.h"

#include "llvm/Support/Error.h"

#include <dlfcn.h>
#include <string>

namespace ucp {

using CUdeviceptr = DeviceAddress;

/// CUDA_ERROR_NOT_READY: queued work has not finished.
constexpr int kCudaNotReady = 600;

/// Opens the first library of `names` that loads.
inline void *openCudaLibrary(std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return handle;
  return nullptr;
}

/// Sets `fn` to `library`'s entry point `name`; false where it has none.
template <typename Fn> bool resolve(void *library, const char *name, Fn &fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  return fn != nullptr;
}

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
  int (*streamQuery)(void *);
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

  /// Loads libcuda.so.1 and resolves every entry point above.
  static llvm::Expected<Driver> load();
};

/// What CudaDevice holds: the driver, and the GPU it opened.
struct CudaDevice::State {
  Driver driver;
  int ordinal = 0;
  /// The driver's handle of the GPU.
  int device = 0;
  void *context = nullptr;
  int major = 0, minor = 0;
};

} // namespace ucp

#endif // UCP_LIB_ENGINE_CUDADRIVER_H
