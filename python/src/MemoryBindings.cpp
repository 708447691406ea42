//===- MemoryBindings.cpp - Outputs from the caching allocator ------------===//
//
// Large outputs the package allocates (extract's shards, rebuild's full
// tensors) come from the caching allocator: an OutputBuffer is one of its
// buffers, seen by Python through the buffer protocol (torch.frombuffer and
// numpy.frombuffer keep it alive as long as any view of it), and given back
// to the allocator when the last view dies.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "ucp/Support/CachingAllocator.h"

using namespace ucp;
using namespace ucp::python;

namespace {

/// One buffer of the caching allocator, released when Python drops it.
class OutputBuffer {
public:
  /// Takes `data`, a buffer of the caching allocator of at least `bytes`.
  OutputBuffer(void *data, size_t bytes) : data(data), bytes(bytes) {}
  OutputBuffer(const OutputBuffer &) = delete;
  OutputBuffer &operator=(const OutputBuffer &) = delete;
  ~OutputBuffer() { CachingAllocator::get().release(data); }

  py::buffer_info getInfo() const {
    return py::buffer_info(data, 1, py::format_descriptor<uint8_t>::format(), 1,
                           {bytes}, {1});
  }

private:
  void *data;
  size_t bytes;
};

} // namespace

void ucp::python::bindMemory(py::module_ &m) {
  py::class_<OutputBuffer>(m, "OutputBuffer", py::buffer_protocol(),
                           "A buffer of the caching allocator: bytes "
                           "(writable) through the buffer protocol.")
      .def_buffer(&OutputBuffer::getInfo);
  m.def(
      "allocate_output",
      [](size_t bytes) -> std::unique_ptr<OutputBuffer> {
        if (bytes == 0)
          throw py::value_error("an output buffer holds at least one byte");
        void *data = CachingAllocator::get().allocate(bytes);
        if (!data)
          return nullptr;
        return std::make_unique<OutputBuffer>(data, bytes);
      },
      py::arg("bytes"),
      "A buffer of `bytes` from the caching allocator (2 MiB aligned, on "
      "huge pages): one freed earlier where one fits, else fresh memory; "
      "None where no memory can be mapped (the process is at its limit of "
      "mappings), for the caller to allocate otherwise.");
  m.def(
      "set_cache_limit",
      [](size_t bytes) { CachingAllocator::get().setLimit(bytes); },
      py::arg("bytes"),
      "Sets the most bytes of freed outputs kept for reuse; the oldest "
      "kept beyond it are given back to the system.");
  m.def(
      "empty_cache", [] { CachingAllocator::get().releaseKept(); },
      "Gives every kept output back to the system; the limit stays.");
  m.def(
      "cache_limit", [] { return CachingAllocator::get().getLimit(); },
      "The most bytes of freed outputs kept for reuse.");
  m.def(
      "cached_bytes", [] { return CachingAllocator::get().getKeptBytes(); },
      "The bytes of freed outputs kept for reuse now.");
}
