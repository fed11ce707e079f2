// The first hit of an entry that updates captured tensors in place (Entry::checks_first_hit) traces the
// call again. A callable reads C++ values while it is traced that no guard can see: torch::optim's Adam
// computes its bias corrections from a step count kept in C++, an EMA's decay may follow a C++ counter, a
// schedule changes a learning rate. Replays would run them frozen, and the state the entry updates would
// drift from eager's without an error. Where they change from call to call, the second trace differs from
// the first, and the function runs eagerly from then on (with a warning naming the op): a check that costs
// one trace per such entry. A value that changes later (a schedule's step at call 1000) is not caught: the
// README's Semantics tell users to pass such values as 0-dim tensors.
#include "graph/passes.h"
#include "runtime/engine.h"
#include "runtime/error_text.h"
#include "runtime/log.h"
#include "runtime/strict.h"
#include "tracer/trace.h"

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>
#include <vector>

namespace jitc::detail {

namespace {

// A graph's lines, without the values its graph breaks read: a replay checks those itself (another value
// traces again), so two traces that read different ones did not freeze a C++ value.
std::vector<std::string> compared_lines(const graph::Graph& g) {
  std::vector<std::string> lines;
  std::istringstream text(graph::to_text(g));
  for (std::string line; std::getline(text, line);) {
    for (const char* mark : {"  # checked: == ", "  # graph break: == "})
      if (const size_t at = line.find(mark); at != std::string::npos) line.resize(at);
    lines.push_back(line.substr(std::min(line.find_first_not_of(' '), line.size())));
  }
  return lines;
}

// The first line where two graphs differ, for the warning.
std::string first_difference(const std::vector<std::string>& before, const std::vector<std::string>& now) {
  for (size_t i = 0; i < before.size() && i < now.size(); ++i)
    if (before[i] != now[i]) return fmt::format("`{}` at the first trace, `{}` now", before[i], now[i]);
  return "its results differ";
}

bool same_captures(const graph::Graph& a, const graph::Graph& b) {
  for (size_t p = 0; p < a.inputs.size() && p < b.inputs.size(); ++p)
    if (a.inputs[p].kind == graph::InputKind::kCaptured && a.inputs[p].captured.lock().get() != b.inputs[p].captured.lock().get())
      return false;
  return true;
}

// Whether two entries' backward graphs (training entries) are the same, or both have none.
bool same_backward(const runtime::Entry& fresh, const runtime::Entry& entry) {
  if (!fresh.backward || !entry.backward) return !fresh.backward && !entry.backward;
  return compared_lines(fresh.backward->entry->graph) == compared_lines(entry.backward->entry->graph);
}

// Why the fresh trace's entry cannot stand for `entry`, or "" where it is the same program.
std::string difference(const runtime::Entry& fresh, const runtime::Entry& entry) {
  if (!fresh.backward != !entry.backward) return fresh.backward ? "it now traces with a backward" : "it now traces without a backward";
  const auto before = compared_lines(entry.graph), now = compared_lines(fresh.graph);
  if (before == now && runtime::same_results(fresh, entry) && same_backward(fresh, entry)) {
    if (same_captures(fresh.graph, entry.graph)) return "";
    return "it updates other captured tensors than at its first trace (a C++ choice between tensors, such as a "
           "counter picking a buffer)";
  }
  return fmt::format(
      "its graph changed between two calls that pass the same guards ({}): the callable reads a C++ value that changes "
      "from call to call (an optimizer's step count, as torch::optim's Adam, AdamW and Adagrad keep, a schedule, a "
      "counter), which a replay would freeze; pass such values as 0-dim tensor arguments to compile the update",
      first_difference(before, now));
}

}  // namespace

ResultLeaves Engine::check_first_hit(const EntryPtr& entry, c10::ArrayRef<Leaf> leaves, std::unique_lock<std::mutex>& compile) {
  const auto started = std::chrono::steady_clock::now();
  tracer::TraceOutcome outcome;
  ResultLeaves eager;
  if (!trace_call(leaves, compile, outcome, eager)) return eager;  // the entry stays unchecked
  std::string why;
  std::shared_ptr<runtime::Entry> fresh;
  try {
    const std::vector<uint64_t> no_dynamic_dims(leaves.size(), 0);
    fresh = outcome.backward ? make_training_entry(outcome, leaves, no_dynamic_dims)
                             : make_entry(graph::Graph(outcome.graph), leaves, outcome.result, no_dynamic_dims, {});
    fresh->compile_number = entry->compile_number;
    why = difference(*fresh, *entry);
  } catch (const std::exception& e) {  // a jitc bug: the trace's result stands, the entry does not
    runtime::rethrow_if_strict(e);
    why = "checking its graph failed: " + runtime::error_text(e);
  }
  entry->first_hit_checked.store(true, std::memory_order_release);
  first_hit_checks_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    compile_stats_.compile_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  const std::string id = compile_id(entry->compile_number);
  if (why.empty()) {
    runtime::log(runtime::Artifact::kGuards, "first hit traced again: the same graph over the same tensors", id);
    program_for(*entry);  // as a first hit would: starts the build, or waits for it
  } else {
    runtime::supersede(*entry);  // its build, if still waiting, stops: no call will run it
    block_after(fmt::format("{}: {}", id, why), outcome.training);
  }
  if (!outcome.backward) return std::move(outcome.result);
  // A training trace's tensors have no autograd history: the call runs an entry of its graph. Where the
  // check passed, the checked entry is that graph, and runs as any hit does (its program, where built:
  // replaying it eagerly after waiting for the build cost a second eager step); otherwise the trace's own.
  if (why.empty()) {
    if (auto out = run_checked_training_entry(*entry, leaves)) return std::move(*out);
  }
  return fresh ? replay_fresh_training_entry(*fresh, leaves) : invoker_(leaves);
}

std::optional<ResultLeaves> Engine::run_checked_training_entry(const runtime::Entry& entry, c10::ArrayRef<Leaf> leaves) {
  runtime::CapturedTensors captured;
  captured.lock(entry);
  const int64_t no_symbols[1] = {0};  // checked entries have no symbols
  std::string failure;
  ResultLeaves out;
  if (!run_entry(entry, captured, leaves, no_symbols, &failure, out)) return std::nullopt;
  return out;  // counted as a first-hit check, not as a hit
}

}  // namespace jitc::detail
