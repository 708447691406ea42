//===- PlanDocument.cpp - The JSON plan document --------------------------===//

#include "ucp/IO/PlanDocument.h"

#include "llvm/Support/JSON.h"

using namespace ucp;
namespace json = llvm::json;

/// Writes `value` on one line as a raw value of `j`.
static void writeCompact(json::OStream &j,
                         llvm::function_ref<void(json::OStream &)> write) {
  j.rawValue([&](llvm::raw_ostream &os) {
    json::OStream line(os);
    write(line);
  });
}

void ucp::writePlanDocument(llvm::ArrayRef<TransferPlan> plans,
                            llvm::raw_ostream &os) {
  std::vector<const TransferPlan *> byName;
  for (const TransferPlan &plan : plans)
    byName.push_back(&plan);
  llvm::sort(byName, [](const TransferPlan *a, const TransferPlan *b) {
    return a->name < b->name;
  });
  auto view = [](json::OStream &j, std::optional<int64_t> rank,
                 const StridedView &v) {
    j.array([&] {
      if (rank)
        j.value(*rank);
      j.value(v.offset);
      j.value(json::Array(v.strides));
    });
  };
  json::OStream j(os, /*IndentSize=*/2);
  j.object([&] {
    j.attribute("version", 1);
    j.attributeObject("params", [&] {
      for (const TransferPlan *plan : byName) {
        j.attributeObject(plan->name, [&] {
          j.attribute("source_world", plan->sourceWorld);
          j.attribute("target_world", plan->targetWorld);
          j.attributeArray("segments", [&] {
            for (const Segment &s : plan->segments)
              writeCompact(j, [&](json::OStream &line) {
                line.object([&] {
                  line.attribute("shape", json::Array(s.shape));
                  line.attributeBegin("source");
                  view(line, s.sourceRank, s.source);
                  line.attributeEnd();
                  line.attributeBegin("target");
                  view(line, s.targetRank, s.target);
                  line.attributeEnd();
                  if (s.scale != 1.0)
                    line.attribute("scale", s.scale);
                });
              });
          });
          j.attributeArray("fill", [&] {
            for (const Fill &f : plan->fills)
              writeCompact(j, [&](json::OStream &line) {
                line.object([&] {
                  line.attribute("rank", f.rank);
                  line.attribute("shape", json::Array(f.shape));
                  line.attributeBegin("target");
                  view(line, std::nullopt, f.target);
                  line.attributeEnd();
                });
              });
          });
        });
      }
    });
  });
  os << "\n";
}
