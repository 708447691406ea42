//===- CopyProgramToCuda.cpp - Copy programs as CUDA kernels --------------===//

#include "ucp/Engine/CopyProgramToCuda.h"
#include "ucp/Map/Indexing.h"
#include "ucp/Support/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <set>

using namespace ucp;

/// ucp/Element/FloatBits.h, as text (generated at configure time).
static const char *const kFloatBitsSource =
#include "ucp/Engine/FloatBitsSource.inc"
    ;

/// The device code every module shares; `ucp_elem` and `ucp_scale` are
/// defined per element type before it.
static const char *const kKernelSource = R"cuda(
struct UcpCopy {
  long long begin;   /* first work unit of this copy in its launch */
  int rank;          /* dimensions, innermost last */
  int vector;        /* 16-byte vectors per unit of the innermost dimension
                        (1 or 2); 0: it counts elements */
  int src, dst;      /* slots in the launch's buffer table; src -1: zeroes */
  long long shape[UCP_MAX_RANK];
  long long src_offset, src_strides[UCP_MAX_RANK];
  long long dst_offset, dst_strides[UCP_MAX_RANK];
  double factor;
};

/* 16-byte aligned, so that a vector moves with one 128-bit access. */
struct alignas(16) UcpVec { unsigned int x, y, z, w; };

/* Runs work units of the copies in `table` (sorted by begin) with a
   grid-stride loop, between the buffers whose addresses `buffers` holds;
   a copy with no source zeroes its target view. A unit's
   place in its copy is decoded in `Index`: 32-bit where the launch has
   fewer than 2^32 units, since 64-bit division is many instructions on a
   GPU; offsets stay 64-bit, as a buffer may hold more elements. */
template <typename Index>
__device__ void ucp_run(const UcpCopy *table, int count, long long total,
                        ucp_elem *const *buffers) {
  for (long long unit = (long long)blockIdx.x * blockDim.x + threadIdx.x;
       unit < total; unit += (long long)gridDim.x * blockDim.x) {
    int lo = 0, hi = count - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) / 2;
      if (table[mid].begin <= unit) lo = mid; else hi = mid - 1;
    }
    const UcpCopy &c = table[lo];
    Index local = (Index)(unit - c.begin);
    long long s = c.src_offset, d = c.dst_offset;
    for (int k = c.rank - 1; k > 0; --k) {
      Index extent = (Index)c.shape[k], i = local % extent;
      local /= extent;
      s += (long long)i * c.src_strides[k];
      d += (long long)i * c.dst_strides[k];
    }
    /* What is left indexes the outermost dimension (every copy has one):
       one division fewer per unit. */
    s += (long long)local * c.src_strides[0];
    d += (long long)local * c.dst_strides[0];
    const ucp_elem *src = c.src < 0 ? 0 : buffers[c.src];
    ucp_elem *dst = buffers[c.dst];
    if (c.vector) {
      /* Both vectors of a unit are loaded before either is stored. */
      UcpVec first = {0, 0, 0, 0}, second = {0, 0, 0, 0};
      if (src) {
        const UcpVec *from = (const UcpVec *)src + s * c.vector;
        first = from[0];
        if (c.vector == 2) second = from[1];
      }
      UcpVec *to = (UcpVec *)dst + d * c.vector;
      to[0] = first;
      if (c.vector == 2) to[1] = second;
    } else if (!src) {
      dst[d] = 0;
    } else {
      dst[d] = c.factor == 1.0 ? src[s] : ucp_scale(src[s], c.factor);
    }
  }
}
)cuda";

/// The storage type and scaling function of `type`.
static void emitElementType(DType type, llvm::raw_ostream &os) {
  switch (getElementSize(type)) {
  case 1:
    os << "typedef unsigned char ucp_elem;\n";
    break;
  case 2:
    os << "typedef unsigned short ucp_elem;\n";
    break;
  case 4:
    os << "typedef unsigned int ucp_elem;\n";
    break;
  default:
    os << "typedef unsigned long long ucp_elem;\n";
    break;
  }
  os << "__device__ ucp_elem ucp_scale(ucp_elem bits, double factor) {\n";
  switch (type) {
  case DType::F32:
    os << "  return ucpScaleFloatBits(bits, (float)factor);\n";
    break;
  case DType::F64:
    os << "  return ucpScaleDoubleBits(bits, factor);\n";
    break;
  case DType::F16:
    os << "  return ucpScaleHalfBits(bits, (float)factor);\n";
    break;
  case DType::BF16:
    os << "  return ucpScaleBfloatBits(bits, (float)factor);\n";
    break;
  case DType::F8E4M3:
    os << "  return ucpScaleE4M3Bits(bits, (float)factor);\n";
    break;
  case DType::F8E5M2:
    os << "  return ucpScaleE5M2Bits(bits, (float)factor);\n";
    break;
  default:
    os << "  return bits; /* not floating point: never scaled */\n";
    break;
  }
  os << "}\n";
}

/// The bytes each work unit of a copy moves as 16-byte vectors, where the
/// copy is unscaled, its innermost dimension contiguous on both sides, and
/// the run, every offset and every outer stride aligned to them: 32 (two
/// vectors: half the decoding per byte, two loads in flight per thread;
/// 0.97-1.14x of 16, faster on 13 of the H200 benchmark's 14 workloads,
/// docs/Execution.md) where they can be, else 16; 0 where it moves
/// elements.
static int64_t getVectorBytes(llvm::ArrayRef<int64_t> shape,
                              const StridedView *source,
                              const StridedView &target, double factor,
                              int64_t size) {
  if (factor != 1.0 || shape.empty())
    return 0;
  auto aligned = [&](const StridedView &view, int64_t bytes) {
    if (view.strides.back() != 1 || view.offset * size % bytes != 0)
      return false;
    for (size_t d = 0; d + 1 < shape.size(); ++d)
      if (view.strides[d] * size % bytes != 0)
        return false;
    return true;
  };
  for (int64_t bytes : {32, 16})
    if (shape.back() * size % bytes == 0 && aligned(target, bytes) &&
        (!source || aligned(*source, bytes)))
      return bytes;
  return 0;
}

namespace {
/// One row of a kernel's descriptor table: a copy between two slots of its
/// launch's buffer table, or with no source slot, a fill.
struct TableRow {
  StridedCopy copy;
  int sourceSlot = -1;
  int targetSlot = 0;
};
} // namespace

/// Emits the descriptor table `name` for `rows` and returns its units.
static int64_t emitTable(llvm::StringRef name, llvm::ArrayRef<TableRow> rows,
                         int64_t size, llvm::raw_ostream &os) {
  os << "__device__ const UcpCopy " << name << "[] = {\n";
  int64_t begin = 0;
  for (const TableRow &row : rows) {
    const StridedCopy &copy = row.copy;
    const StridedView *source = row.sourceSlot < 0 ? nullptr : &copy.source;
    int64_t vectorBytes =
        getVectorBytes(copy.shape, source, copy.target, copy.scale, size);
    bool vector = vectorBytes != 0;
    int64_t perUnit = vector ? vectorBytes / size : 1;
    Extents shape = copy.shape;
    if (shape.empty())
      shape = {1};
    auto list = [&](llvm::ArrayRef<int64_t> values, bool offsetIsVector) {
      os << "{";
      for (size_t d = 0; d < kMaxCopyRank; ++d) {
        int64_t v = d < values.size() ? values[d] : 0;
        if (vector && offsetIsVector)
          v = d + 1 == values.size() ? v : v / perUnit;
        os << (d ? ", " : "") << v;
      }
      os << "}";
    };
    Extents vshape = shape;
    if (vector)
      vshape.back() /= perUnit;
    Extents srcStrides = copy.source.strides, dstStrides = copy.target.strides;
    if (srcStrides.empty())
      srcStrides = {1};
    if (dstStrides.empty())
      dstStrides = {1};
    os << "  {" << begin << "LL, " << shape.size() << ", " << vectorBytes / 16
       << ", " << row.sourceSlot << ", " << row.targetSlot << ", ";
    list(vshape, false);
    os << ", " << (source ? copy.source.offset / perUnit : 0) << "LL, ";
    list(source ? srcStrides : Extents(shape.size(), 0), true);
    os << ", " << copy.target.offset / perUnit << "LL, ";
    list(dstStrides, true);
    os << ", " << llvm::format("%.17g", copy.scale) << "},\n";
    begin += getNumElements(vshape).value_or(0);
  }
  os << "};\n";
  return begin;
}

/// The type a launch of `units` work units decodes them in (see ucp_run).
static const char *getIndexType(int64_t units, CudaUnitIndex index) {
  return index == CudaUnitIndex::Narrowest && units <= int64_t(UINT32_MAX)
             ? "unsigned int"
             : "long long";
}

CudaGrid ucp::getLaunchGrid(int64_t units) {
  CudaGrid grid;
  grid.blocks = static_cast<unsigned>(std::clamp<int64_t>(
      (units + grid.threadsPerBlock - 1) / grid.threadsPerBlock, 1, 65535));
  return grid;
}

/// Refuses what the descriptors cannot hold exactly (see emitCuda).
static llvm::Error checkProgram(llvm::StringRef name,
                                const CopyProgram &program, DType type) {
  auto refuse = [&](const llvm::Twine &why) {
    return makeError("parameter '" + name + "': " + why.str());
  };
  for (const auto *buffers : {&program.sourceElements, &program.targetElements})
    for (const auto &[rank, elements] : *buffers)
      if (!getNumBytes({elements}, type))
        return refuse("the buffer of rank " + std::to_string(rank) + " (" +
                      std::to_string(elements) +
                      " elements) holds more bytes than int64 can count");
  auto tooDeep = [&](size_t rank) {
    return refuse("a copy of " + std::to_string(rank) +
                  " dimensions, more than the " + std::to_string(kMaxCopyRank) +
                  " a kernel descriptor holds (lowerPlan splits them)");
  };
  for (const BufferPairCopies &pair : program.pairs)
    for (const StridedCopy &copy : pair.copies)
      if (copy.shape.size() > kMaxCopyRank)
        return tooDeep(copy.shape.size());
  for (const StridedFill &fill : program.fills)
    if (fill.shape.size() > kMaxCopyRank)
      return tooDeep(fill.shape.size());
  return checkFactors(program, type, name);
}

llvm::Expected<CudaModule>
ucp::emitCuda(llvm::ArrayRef<std::pair<std::string, CopyProgram>> programs,
              DType type, CudaUnitIndex unitIndex) {
  for (const auto &[name, program] : programs)
    if (llvm::Error error = checkProgram(name, program, type))
      return std::move(error);
  CudaModule module;
  llvm::raw_string_ostream os(module.source);
  int64_t size = getElementSize(type);
  os << "// Generated by affine-ucp (affine-translate --ucp-to-cuda): copy\n"
        "// programs for elements of type "
     << getSafetensorsName(type) << ".\n";
  os << kFloatBitsSource << "\n";
  emitElementType(type, os);
  os << "#define UCP_MAX_RANK " << kMaxCopyRank << "\n";
  os << kKernelSource;
  for (auto [index, entry] : llvm::enumerate(programs)) {
    const auto &[name, program] = entry;
    // The launch's buffer table: every source the copies read, then every
    // target they or the fills write, each sorted by rank.
    CudaLaunch launch;
    launch.kernel = "ucp_program_" + std::to_string(index);
    launch.program = index;
    std::set<int64_t> sources, targets;
    for (const BufferPairCopies &pair : program.pairs)
      if (!pair.copies.empty()) {
        sources.insert(pair.sourceBuffer);
        targets.insert(pair.targetBuffer);
      }
    for (const StridedFill &fill : program.fills)
      targets.insert(fill.targetBuffer);
    if (targets.empty())
      continue;
    launch.sourceBuffers.assign(sources.begin(), sources.end());
    launch.targetBuffers.assign(targets.begin(), targets.end());
    auto slot = [](llvm::ArrayRef<int64_t> ranks, int64_t rank) {
      return static_cast<int>(llvm::lower_bound(ranks, rank) - ranks.begin());
    };
    int firstTarget = static_cast<int>(sources.size());
    std::vector<TableRow> rows;
    for (const BufferPairCopies &pair : program.pairs)
      for (const StridedCopy &copy : pair.copies)
        rows.push_back(
            {copy, slot(launch.sourceBuffers, pair.sourceBuffer),
             firstTarget + slot(launch.targetBuffers, pair.targetBuffer)});
    for (const StridedFill &fill : program.fills)
      rows.push_back(
          {{fill.shape, {0, Extents(fill.shape.size(), 0)}, fill.target, 1.0},
           -1,
           firstTarget + slot(launch.targetBuffers, fill.targetBuffer)});
    os << "\n/* " << name << " */\n";
    launch.units = emitTable(launch.kernel + "_table", rows, size, os);
    os << "extern \"C\" __global__ void " << launch.kernel
       << "(ucp_elem *const *buffers) {\n  ucp_run<"
       << getIndexType(launch.units, unitIndex) << ">(" << launch.kernel
       << "_table, " << rows.size() << ", " << launch.units
       << "LL, buffers);\n}\n";
    module.launches.push_back(std::move(launch));
  }
  return module;
}
