#include "runtime/entry.h"

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

}  // namespace jitc::runtime
