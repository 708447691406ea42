//===- SegmentStacking.cpp - Fold copies that repeat at a stride ----------===//

#include "ucp/Plan/SegmentStacking.h"

#include <numeric>

using namespace ucp;

void ucp::normalizeSegment(Segment &segment) {
  size_t rank = segment.shape.size();
  llvm::SmallVector<size_t, 4> order(rank);
  std::iota(order.begin(), order.end(), 0);
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return segment.target.strides[a] > segment.target.strides[b];
  });
  Extents shape, target, source;
  for (size_t d : order) {
    if (segment.shape[d] == 1)
      continue;
    // Merge into the previous (outer) dimension when contiguous on both
    // sides.
    if (!shape.empty() &&
        target.back() == segment.shape[d] * segment.target.strides[d] &&
        source.back() == segment.shape[d] * segment.source.strides[d]) {
      shape.back() *= segment.shape[d];
      target.back() = segment.target.strides[d];
      source.back() = segment.source.strides[d];
      continue;
    }
    shape.push_back(segment.shape[d]);
    target.push_back(segment.target.strides[d]);
    source.push_back(segment.source.strides[d]);
  }
  if (llvm::is_contained(segment.shape, 0)) {
    // An empty copy stays empty; keep its shape.
    return;
  }
  if (shape.empty()) {
    shape = {1};
    target = {1};
    source = {1};
  }
  segment.shape = std::move(shape);
  segment.target.strides = std::move(target);
  segment.source.strides = std::move(source);
}

/// Orders segments by everything but their offsets, then by target offset.
static bool lessForStacking(const Segment &a, const Segment &b) {
  auto key = [](const Segment &s) {
    return std::tie(s.sourceRank, s.scale, s.shape, s.target.strides,
                    s.source.strides, s.target.offset);
  };
  return key(a) < key(b);
}

static bool sameGroup(const Segment &a, const Segment &b) {
  return a.sourceRank == b.sourceRank && a.scale == b.scale &&
         a.shape == b.shape && a.target.strides == b.target.strides &&
         a.source.strides == b.source.strides;
}

/// Stacks one round of progressions; returns whether anything stacked.
static bool stackOnce(std::vector<Segment> &segments) {
  llvm::sort(segments, lessForStacking);
  std::vector<Segment> result;
  bool changed = false;
  for (size_t i = 0; i < segments.size();) {
    size_t end = i + 1;
    int64_t targetStep = 0, sourceStep = 0;
    if (end < segments.size() && sameGroup(segments[i], segments[end])) {
      targetStep = segments[end].target.offset - segments[i].target.offset;
      sourceStep = segments[end].source.offset - segments[i].source.offset;
      if (targetStep > 0 && sourceStep >= 0) {
        while (end < segments.size() && sameGroup(segments[i], segments[end]) &&
               segments[end].target.offset - segments[end - 1].target.offset ==
                   targetStep &&
               segments[end].source.offset - segments[end - 1].source.offset ==
                   sourceStep)
          ++end;
      } else {
        end = i + 1;
      }
    }
    Segment stacked = segments[i];
    if (end - i > 1) {
      stacked.shape.insert(stacked.shape.begin(), end - i);
      stacked.target.strides.insert(stacked.target.strides.begin(), targetStep);
      stacked.source.strides.insert(stacked.source.strides.begin(), sourceStep);
      normalizeSegment(stacked);
      changed = true;
    }
    result.push_back(std::move(stacked));
    i = end;
  }
  segments = std::move(result);
  return changed;
}

void ucp::stackSegments(std::vector<Segment> &segments) {
  for (Segment &segment : segments)
    normalizeSegment(segment);
  while (stackOnce(segments)) {
  }
}
