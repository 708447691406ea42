//===- HugePages.cpp - Fresh memory backed by huge pages ------------------===//

#include "ucp/Support/HugePages.h"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

bool ucp::adviseHugePages(void *address, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHugePage = uintptr_t(1) << 21;
  uintptr_t begin = reinterpret_cast<uintptr_t>(address);
  uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  uintptr_t last = (begin + bytes) & ~(kHugePage - 1);
  if (bytes == 0 || last <= first)
    return false;
  return madvise(reinterpret_cast<void *>(first), last - first,
                 MADV_HUGEPAGE) == 0;
#else
  (void)address;
  (void)bytes;
  return false;
#endif
}
