//===- CheckReport.cpp - What a check found, as a user reads it -----------===//
//
// A check's report: its verdict, the folder it names, and its JSON form
// (which the processes of a group also send their findings in).
//
//===----------------------------------------------------------------------===//

#include "ucp/Jobs/Check.h"
#include "ucp/Support/Error.h"

using namespace ucp;

bool CheckReport::isSound() const {
  return llvm::none_of(findings, [](const CheckFinding &f) { return f.fatal; });
}

void CheckReport::showFolderAs(llvm::StringRef read, llvm::StringRef shown) {
  if (shown.empty() || shown == read)
    return;
  for (std::string *text : {&path, &pointer})
    *text = replaceAll(*text, read, shown);
  for (CheckFinding &finding : findings) {
    finding.message = replaceAll(finding.message, read, shown);
    finding.file = replaceAll(finding.file, read, shown);
  }
}

llvm::json::Object ucp::toJson(const CheckFinding &f) {
  llvm::json::Object finding{
      {"kind", f.kind}, {"message", f.message}, {"fatal", f.fatal}};
  if (!f.file.empty())
    finding["file"] = f.file;
  if (!f.tensor.empty())
    finding["tensor"] = f.tensor;
  if (!f.state.empty())
    finding["state"] = f.state;
  if (f.rank >= 0)
    finding["rank"] = f.rank;
  if (!f.element.empty())
    finding["element"] = llvm::json::Array(f.element);
  if (f.count)
    finding["count"] = f.count;
  return finding;
}

CheckFinding ucp::findingFromJson(const llvm::json::Object &value) {
  CheckFinding f;
  f.kind = value.getString("kind").value_or("").str();
  f.message = value.getString("message").value_or("").str();
  f.fatal = value.getBoolean("fatal").value_or(true);
  f.file = value.getString("file").value_or("").str();
  f.tensor = value.getString("tensor").value_or("").str();
  f.state = value.getString("state").value_or("").str();
  f.rank = value.getInteger("rank").value_or(-1);
  f.count = value.getInteger("count").value_or(0);
  if (const llvm::json::Array *element = value.getArray("element"))
    for (const llvm::json::Value &index : *element)
      f.element.push_back(index.getAsInteger().value_or(0));
  return f;
}

llvm::json::Value ucp::toJson(const CheckReport &report) {
  llvm::json::Array findings;
  for (const CheckFinding &f : report.findings)
    findings.push_back(toJson(f));
  llvm::json::Object object{{"path", report.path},
                            {"sound", report.isSound()},
                            {"summary", report.summary},
                            {"tensors", int64_t(report.tensors)},
                            {"state_arrays", int64_t(report.stateArrays)},
                            {"ranks", report.ranks},
                            {"files", int64_t(report.files)},
                            {"records", int64_t(report.records)},
                            {"paddings", int64_t(report.paddings)},
                            {"bytes_read", report.bytesRead},
                            {"findings", std::move(findings)}};
  if (!report.pointer.empty())
    object["pointer"] = report.pointer;
  return object;
}
