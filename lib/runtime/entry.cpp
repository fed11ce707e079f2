#include "runtime/entry.h"

#include "graph/passes.h"

namespace jitc::runtime {

SizeLedger::Verdict SizeLedger::lookup(c10::ArrayRef<int64_t> symbols) const {
  std::shared_lock lock(mutex_);
  auto it = verdicts_.find(symbols);
  if (it == verdicts_.end()) return Verdict::kUnknown;
  return it->second ? Verdict::kAccepted : Verdict::kRejected;
}

void SizeLedger::record(c10::ArrayRef<int64_t> symbols, bool accepted) {
  std::unique_lock lock(mutex_);
  verdicts_.emplace(symbols.vec(), accepted);
}

void CapturedTensors::lock(const Entry& entry) {
  refs.clear();
  raw.clear();
  for (size_t position : entry.captured_inputs) {
    refs.push_back(entry.graph.inputs[position].captured.lock());
    raw.push_back(refs.back().defined() ? refs.back().get() : nullptr);
  }
}

namespace {

bool same_backward(const Entry& a, const Entry& b) {
  if (!a.backward || !b.backward) return !a.backward && !b.backward;
  return a.backward->same_layout(*b.backward) && graph::to_text(a.backward->entry->graph) == graph::to_text(b.backward->entry->graph);
}

}  // namespace

bool same_results(const Entry& a, const Entry& b) {
  if (a.result.size() != b.result.size()) return false;
  for (size_t k = 0; k < a.result.size(); ++k)
    if (a.result[k].kind != b.result[k].kind || a.result[k].i != b.result[k].i || a.result[k].d != b.result[k].d) return false;
  return true;
}

bool same_program(const Entry& a, const Entry& b) {
  return graph::to_text(a.graph) == graph::to_text(b.graph) && same_results(a, b) && same_backward(a, b);
}

std::string failed_run_check(const Entry& entry) {
  for (const auto& check : entry.run_checks) {
    try {
      if (std::string why = check(); !why.empty()) return why;
    } catch (const std::exception& e) {
      return std::string("a check of the C++ state its trace read failed: ") + e.what();
    }
  }
  return "";
}

}  // namespace jitc::runtime
