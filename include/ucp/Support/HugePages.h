//===- HugePages.h - Fresh memory backed by huge pages ----------*- C++ -*-===//
//
// Fresh anonymous memory costs a page fault per 4 KiB page when first
// written, which on a virtual machine can cost many times the copy itself
// (docs/Python.md has the numbers). Where the kernel's transparent huge
// pages are left to madvise, memory that asks for them faults once per
// 2 MiB instead.
//
//===----------------------------------------------------------------------===//

#ifndef UCP_SUPPORT_HUGEPAGES_H
#define UCP_SUPPORT_HUGEPAGES_H

#include <cstddef>

namespace ucp {

/// Asks the kernel to back the 2 MiB-aligned part of [address, address +
/// bytes) with transparent huge pages when it is first touched. For memory
/// the caller allocated and has not written yet; a hint, never an error:
/// returns whether the kernel took it (false where the range holds no whole
/// huge page or the system has no transparent huge pages).
bool adviseHugePages(void *address, size_t bytes);

} // namespace ucp

#endif // UCP_SUPPORT_HUGEPAGES_H
