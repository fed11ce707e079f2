// The miss path of Engine: explain the miss, respect the recompile limit, trace, build an entry, and
// turn two static entries that differ only in dynamic dims into one symbolic entry.
#include "graph/generalize.h"
#include "graph/passes.h"
#include "graph/written_inputs.h"
#include "runtime/engine.h"
#include "runtime/argument_grads.h"
#include "runtime/global_state.h"
#include "runtime/module_state.h"
#include "runtime/env.h"
#include "runtime/error_text.h"
#include "runtime/strict.h"
#include "runtime/log.h"
#include "runtime/marks.h"
#include "tracer/trace.h"

#include <jitc/errors.h>

#include <c10/util/bit_cast.h>
#include <fmt/format.h>

#include <chrono>

namespace jitc::detail {

namespace {

std::string indent(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += prefix + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  if (!out.empty()) out.pop_back();
  return out;
}

std::vector<size_t> inputs_written_before_last_break(const graph::Graph& g) {
  int last_break = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].checked()) last_break = static_cast<int>(i);
  return last_break < 0 ? std::vector<size_t>{} : graph::inputs_written_before(g, static_cast<size_t>(last_break));
}

bool writes_captured(const graph::Graph& g) {
  const auto written = graph::inputs_written_before(g, g.nodes.size());
  return std::any_of(written.begin(), written.end(), [&](size_t p) { return g.inputs[p].kind == graph::InputKind::kCaptured; });
}

bool draws_before_last_break(const graph::Graph& g) {
  bool draws = false;
  for (const auto& n : g.nodes) {
    if (n.checked() && draws) return true;
    draws = draws || n.op.hasTag(at::Tag::nondeterministic_seeded);
  }
  return false;
}

}  // namespace

std::vector<std::string> Engine::leaf_names(c10::ArrayRef<Leaf> leaves) const {
  std::vector<std::string> names;
  int list_arg = -1, element = 0;
  for (const auto& leaf : leaves) {
    if (runtime::is_argument_grad(leaf)) {
      names.push_back(names[leaf.i] + ".grad()");
      continue;
    }
    const auto a = static_cast<size_t>(leaf.argument);
    std::string base = a < options_.arg_names.size() ? options_.arg_names[a] : fmt::format("args[{}]", a);
    if (leaf.kind == Leaf::Kind::kListSize) {
      list_arg = leaf.argument;
      element = 0;
      names.push_back(base);
    } else if (leaf.argument == list_arg) {
      names.push_back(fmt::format("{}[{}]", base, element++));
    } else {
      names.push_back(base);
    }
  }
  return names;
}

std::vector<std::string> Engine::failure_reasons(c10::ArrayRef<Leaf> leaves, const uint64_t* marks) const {
  std::vector<std::string> reasons;
  std::shared_lock lock(entries_mutex_);
  runtime::CapturedTensors captured;
  const guards::GlobalState global = runtime::capture_global_state();
  runtime::ModuleWords module;
  if (module_) runtime::read_module_state(*module_, module);
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    const auto& e = **it;
    captured.lock(e);
    std::string why = guards::explain(e.guards, captured.view(leaves, marks, &global, module));
    if (why.empty()) why = runtime::failed_run_check(e);
    if (!why.empty()) reasons.push_back(fmt::format("{}: {}", compile_id(e.compile_number), why));
  }
  return reasons;
}

std::pair<int64_t, int64_t> Engine::mark_range(c10::ArrayRef<Leaf> leaves, size_t leaf, int dim) const {
  std::pair<int64_t, int64_t> range{2, std::numeric_limits<int64_t>::max()};
  for (const auto& m : options_.dim_marks)
    if (m.argument == leaves[leaf].argument && m.dim == dim && m.kind == DimMark::Kind::kDynamic) range = {m.min, m.max};
  if (runtime::any_marks() && dim < 8) {
    const auto marks = runtime::marks_of(leaves[leaf].tensor->unsafeGetTensorImpl());
    if (marks.dynamic >> dim & 1) range = {marks.ranges[dim].min, marks.ranges[dim].max};
  }
  range.first = std::max<int64_t>(range.first, 2);  // sizes 0 and 1 always specialize
  return range;
}

namespace {

bool is_number(const Leaf& l) { return l.kind == Leaf::Kind::kInt || l.kind == Leaf::Kind::kDouble; }

// What a symbol of a scalar argument holds: an int's value, a double's bits.
int64_t number_bits(const Leaf& l) { return l.kind == Leaf::Kind::kDouble ? c10::bit_cast<int64_t>(l.d) : l.i; }

std::string number_text(int64_t bits, bool real) { return real ? fmt::format("{}", c10::bit_cast<double>(bits)) : std::to_string(bits); }

}  // namespace

// A double or int64_t argument is one "dim" (bit 0) whose size is its value: it becomes a candidate
// once it changed, as a size does, unless marked static (or dynamic=false without a mark).
uint64_t Engine::scalar_candidate(c10::ArrayRef<Leaf> leaves, size_t i, const std::string& name) {
  const int64_t bits = number_bits(leaves[i]);
  if (history_.observe(i, c10::IntArrayRef(&bits, 1)) & 1)
    runtime::log(runtime::Artifact::kDynamic, fmt::format("automatic dynamic {} {} != {}: the next trace reads it at run time", name,
                                                          number_text(history_.first_size(i, 0), leaves[i].kind == Leaf::Kind::kDouble),
                                                          number_text(bits, leaves[i].kind == Leaf::Kind::kDouble)));
  uint64_t marked = 0, pinned = 0;
  for (const auto& m : options_.dim_marks)
    if (m.argument == leaves[i].argument && m.dim == DimMark::kValue) (m.kind == DimMark::Kind::kStatic ? pinned : marked) |= 1;
  return guards::dynamic_dims(history_.changed(i), options_.dynamic, marked, pinned);
}

std::vector<uint64_t> Engine::dynamic_candidates(c10::ArrayRef<Leaf> leaves) {
  history_.resize(leaves.size());
  const auto names = leaf_names(leaves);
  std::vector<uint64_t> candidates(leaves.size(), 0);
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (is_number(leaves[i])) candidates[i] = scalar_candidate(leaves, i, names[i]);
    if (leaves[i].kind != Leaf::Kind::kTensor) continue;
    const auto sizes = leaves[i].tensor->sizes();
    const uint64_t fresh = history_.observe(i, sizes);
    for (size_t d = 0; d < sizes.size() && d < 64; ++d)
      if (fresh >> d & 1)
        runtime::log(runtime::Artifact::kDynamic,
                     fmt::format("automatic dynamic {} size({}) {} != {}", names[i], d, history_.first_size(i, d), sizes[d]));
    uint64_t marked = 0, pinned = 0;
    for (const auto& m : options_.dim_marks) {
      if (m.argument != leaves[i].argument || m.dim < 0 || m.dim >= 64) continue;
      (m.kind == DimMark::Kind::kStatic ? pinned : marked) |= 1ull << m.dim;
    }
    if (runtime::any_marks()) {
      const auto marks = runtime::marks_of(leaves[i].tensor->unsafeGetTensorImpl());
      marked |= marks.dynamic;
      pinned |= marks.stat;
    }
    candidates[i] = guards::dynamic_dims(history_.changed(i), options_.dynamic, marked, pinned);
  }
  return candidates;
}

std::shared_ptr<runtime::Entry> Engine::make_entry(graph::Graph traced, c10::ArrayRef<Leaf> leaves, const ResultLeaves& result,
                                                   const std::vector<uint64_t>& dynamic_dims,
                                                   const std::vector<std::pair<int64_t, int64_t>>& ranges,
                                                   const std::vector<int>& scalar_symbols) {
  auto e = std::make_shared<runtime::Entry>();
  e->graph = graph::eliminate_common_subexpressions(graph::eliminate_dead_code(traced));
  graph::verify(e->graph);
  e->traced = std::move(traced);
  e->guards = runtime::build_guards(e->graph, leaves, leaf_names(leaves), dynamic_dims, ranges, scalar_symbols);
  if (module_) e->guards.module = runtime::snapshot_module_state(*module_);
  for (size_t k = 0; k < result.size(); ++k) {
    runtime::ResultSlot slot;
    slot.kind = result[k].kind;
    slot.value = e->graph.outputs[k];
    slot.d = result[k].d;
    slot.i = graph::SymExpr::constant(result[k].i);
    e->result.push_back(slot);
  }
  for (size_t p = 0; p < e->graph.inputs.size(); ++p)
    if (e->graph.inputs[p].kind == graph::InputKind::kCaptured) e->captured_inputs.push_back(p);
  for (const auto& leaf : leaves)
    e->leaf_sizes.push_back(leaf.kind == Leaf::Kind::kTensor
                                ? std::vector<int64_t>(leaf.tensor->sizes().begin(), leaf.tensor->sizes().end())
                                : std::vector<int64_t>{});
  e->backup_inputs = inputs_written_before_last_break(e->graph);
  e->draws_before_break = draws_before_last_break(e->graph);
  return e;
}

// The int and double arguments whose values differ between two static entries become symbols after
// the sizes' (an int with the values of an earlier int symbol shares it: duck sizing). False if one
// may not: it is marked static, or it is an int that was 0 or 1 (those specialize, as sizes do).
bool Engine::scalar_symbols_of(const guards::GuardSet& a, const guards::GuardSet& b, const std::vector<uint64_t>& candidates,
                               graph::SymbolValues& values, std::vector<std::pair<int64_t, int64_t>>& ranges,
                               std::vector<int>& scalar_symbols) const {
  values.real.resize(values.a.size(), 0);
  for (size_t k = 0; k < a.scalars.size(); ++k) {
    const auto &x = a.scalars[k], &y = b.scalars[k];
    const bool real = x.kind == Leaf::Kind::kDouble;
    if (!real && x.kind != Leaf::Kind::kInt) continue;
    const int64_t va = real ? c10::bit_cast<int64_t>(x.d) : x.i, vb = real ? c10::bit_cast<int64_t>(y.d) : y.i;
    if (va == vb) continue;
    if (!(candidates[x.leaf] & 1) || (!real && (va == 0 || va == 1 || vb == 0 || vb == 1))) return false;
    size_t s = 0;
    while (s < values.a.size() && !(values.a[s] == va && values.b[s] == vb && values.is_real(s) == real)) ++s;
    if (s == values.a.size()) {
      if (values.a.size() == kMaxSymbols) return false;
      values.a.push_back(va);
      values.b.push_back(vb);
      values.real.push_back(real);
      ranges.emplace_back(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    }
    scalar_symbols[x.leaf] = static_cast<int>(s);
  }
  return true;
}

std::shared_ptr<runtime::Entry> Engine::generalized(const EntryPtr& first, const EntryPtr& second, c10::ArrayRef<Leaf> leaves,
                                                    const std::vector<uint64_t>& candidates) {
  const runtime::Entry& a = *first;
  const runtime::Entry& b = *second;
  if (a.traced.num_symbols != 0 || a.leaf_sizes.size() != b.leaf_sizes.size()) return nullptr;
  if (!a.backward != !b.backward) return nullptr;
  // Only sizes may differ: a scalar argument, an aliasing pattern or global state the two traces saw
  // differently could also explain a differing integer, and the fit would then be wrong.
  if (!guards::same_except_shapes(a.guards, b.guards)) return nullptr;
  graph::SymbolValues values;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t i = 0; i < b.leaf_sizes.size(); ++i) {
    if (a.leaf_sizes[i].size() != b.leaf_sizes[i].size()) return nullptr;
    for (size_t d = 0; d < b.leaf_sizes[i].size(); ++d) {
      const int64_t va = a.leaf_sizes[i][d], vb = b.leaf_sizes[i][d];
      if (va == vb) continue;
      const auto range = mark_range(leaves, i, static_cast<int>(d));
      if (!(candidates[i] >> d & 1) || std::min(va, vb) < range.first || std::max(va, vb) > range.second) return nullptr;
      size_t s = 0;
      while (s < values.a.size() && !(values.a[s] == va && values.b[s] == vb)) ++s;  // duck sizing
      if (s < values.a.size()) continue;
      if (values.a.size() == kMaxSymbols) return nullptr;
      values.a.push_back(va);
      values.b.push_back(vb);
      ranges.push_back(range);
    }
  }
  std::vector<int> scalar_symbols(leaves.size(), -1);
  if (!scalar_symbols_of(a.guards, b.guards, candidates, values, ranges, scalar_symbols)) return nullptr;
  if (values.a.empty()) return nullptr;
  std::string why;
  auto g = graph::generalize(a.traced, b.traced, values, &why);
  if (!g) {
    runtime::log(runtime::Artifact::kDynamic, fmt::format("keeping sizes and scalars static for '{}': {}", name_, why));
    return nullptr;
  }
  // A training entry's backward graph is fitted with the same symbols: it runs with the forward's values.
  std::shared_ptr<const runtime::BackwardPart> backward = a.backward ? generalized_backward(a, b, values) : nullptr;
  if (a.backward && !backward) return nullptr;
  std::vector<graph::SymExpr> result_ints;
  for (size_t k = 0; k < b.result.size(); ++k) {
    const auto fitted = graph::fit(a.result[k].i.offset, b.result[k].i.offset, values);
    if (!fitted || a.result[k].d != b.result[k].d) return nullptr;
    result_ints.push_back(*fitted);
  }
  ResultLeaves dummy(b.result.size());
  for (size_t k = 0; k < dummy.size(); ++k) dummy[k].kind = b.result[k].kind, dummy[k].d = b.result[k].d;
  auto e = make_entry(std::move(*g), leaves, dummy, candidates, ranges, scalar_symbols);
  e->backward = std::move(backward);
  for (size_t k = 0; k < result_ints.size(); ++k) e->result[k].i = result_ints[k];
  size_t bound = e->guards.symbols.size();
  for (const auto& s : e->guards.scalar_symbols) bound += s.bind;
  if (bound != values.a.size()) return nullptr;  // every symbol must be read off an argument
  e->breaks = b.breaks;
  e->run_checks = b.run_checks;
  e->first = first;
  e->second = second;
  e->symbol_values = values;
  e->sizes.record(values.a, true);  // both traces confirm the fit at their own sizes
  e->sizes.record(values.b, true);
  return e;
}

Engine::EntryPtr Engine::install(std::shared_ptr<runtime::Entry> entry, c10::ArrayRef<Leaf> leaves,
                                 const std::vector<uint64_t>& candidates) {
  std::unique_lock lock(entries_mutex_);
  for (size_t i = entries_.size(); i-- > 0;) {
    auto symbolic = generalized(entries_[i], entry, leaves, candidates);
    if (!symbolic) continue;
    symbolic->compile_number = entry->compile_number;
    if (symbolic->backward) symbolic->backward->entry->compile_number = entry->compile_number;
    symbolic->trace_seconds = entry->trace_seconds;  // the trace that completed it
    for (const auto& sym : symbolic->guards.symbols)
      runtime::log(
          runtime::Artifact::kDynamic,
          fmt::format("create_symbol s{} = {} for {} [{}, {}]", sym.symbol,
                      leaves[symbolic->guards.tensors[sym.tensor].leaf].tensor->size(sym.dim), symbolic->guards.symbol_sources[sym.symbol],
                      sym.min, sym.max == std::numeric_limits<int64_t>::max() ? "int_oo" : std::to_string(sym.max)));
    for (const auto& sym : symbolic->guards.scalar_symbols)
      if (sym.bind)
        runtime::log(runtime::Artifact::kDynamic, fmt::format("create_symbol s{} = {} for {} ({} read at run time)", sym.symbol,
                                                              number_text(number_bits(leaves[sym.leaf]), sym.kind == Leaf::Kind::kDouble),
                                                              symbolic->guards.symbol_sources[sym.symbol],
                                                              sym.kind == Leaf::Kind::kDouble ? "a double argument" : "an int argument"));
    log_entry(*symbolic);
    runtime::supersede(*entries_[i]);
    entries_[i] = std::move(symbolic);
    most_recent_.store(i);
    return entries_[i];
  }
  log_entry(*entry);
  entries_.push_back(std::move(entry));
  most_recent_.store(entries_.size() - 1);
  return entries_.back();
}

void Engine::log_entry(const runtime::Entry& e) const {
  const std::string id = compile_id(e.compile_number);
  if (runtime::log_enabled(runtime::Artifact::kGraphCode))
    runtime::log(runtime::Artifact::kGraphCode, fmt::format("TRACED GRAPH\n ===== {} =====\n{}", name_, graph::to_text(e.graph)), id);
  if (runtime::log_enabled(runtime::Artifact::kGuards)) {
    std::string text = "GUARDS:";
    for (const auto& line : guards::describe(e.guards)) text += "\n+- " + line;
    runtime::log(runtime::Artifact::kGuards, text, id);
  }
  for (const auto& b : e.breaks)
    runtime::log(runtime::Artifact::kGraphBreaks,
                 fmt::format("Graph break in user code at '{}' ({})\nGraph Break Reason: {}\n  Explanation: {}\n  Hint: "
                             "the graph is split here; on replay the result is checked and a different value re-traces",
                             name_, where_, b.reason, b.explanation),
                 id);
}

ResultLeaves Engine::at_recompile_limit(c10::ArrayRef<Leaf> leaves, const std::vector<std::string>& reasons, const std::string& id) {
  const int limit = runtime::env_recompile_limit(options_.recompile_limit);
  const std::string last = reasons.empty() ? "unknown" : reasons.front();
  if (options_.fullgraph)
    throw FullGraphError(
        fmt::format("jitc hit recompile_limit ({}) with fullgraph=true in '{}' ({}); last reason: {}. "
                    "Mark the varying dims dynamic (jitc::mark_dynamic) or raise recompile_limit.",
                    limit, name_, where_, last));
  if (!warned_limit_.exchange(true))
    runtime::warn(fmt::format("jitc hit recompile_limit ({})\n   function: '{}' ({})\n   last reason: {}\nTo log all "
                              "recompilation reasons, use JITC_LOGS=\"recompiles\".",
                              limit, name_, where_, last),
                  id);
  return run_eager(leaves);
}

ResultLeaves Engine::after_trace_failure(c10::ArrayRef<Leaf> leaves, const std::exception& failure, bool training) {
  // An exception of the callable's own propagates from here, as in eager, and blocks nothing.
  ResultLeaves out = run_eager(leaves);
  if (training) {  // inference calls may still compile
    block_after(runtime::error_text(failure), true);
    return out;
  }
  eager_only_ = true;
  runtime::warn(
      fmt::format("jitc: '{}' ({}) cannot be traced and runs eagerly from now on: {}", name_, where_, runtime::error_text(failure)));
  return out;
}

bool Engine::trace_call(c10::ArrayRef<Leaf> leaves, std::unique_lock<std::mutex>& compile, tracer::TraceOutcome& outcome,
                        ResultLeaves& eager) {
  try {
    outcome = tracer::trace(invoker_, leaves, leaf_names(leaves), options_.fullgraph, expects_training());
    if (outcome.retraced_for_grad) captures_need_grad_ = true;
  } catch (const tracer::TraceFailure& f) {
    if (f.kind() == tracer::TraceFailure::Kind::kFullGraph) throw FullGraphError(f.what());
    compile.unlock();
    if (f.kind() == tracer::TraceFailure::Kind::kArgumentGrad && !reads_argument_grads_.exchange(true)) {
      eager = dispatch(leaves);  // again, with the arguments' gradients as leaves of their own
      return false;
    }
    eager = after_trace_failure(leaves, f, f.kind() == tracer::TraceFailure::Kind::kTrainingUnsupported);
    return false;
  } catch (const FullGraphError&) {
    throw;
  } catch (const Error& e) {
    compile.unlock();
    eager = after_trace_failure(leaves, e, false);
    return false;
  }
  if (outcome.unreplayable.empty()) return true;
  eager_calls_.fetch_add(1, std::memory_order_relaxed);  // its trace was its execution; no entry
  after_unreplayable_trace(outcome);
  eager = std::move(outcome.result);
  return false;
}

void Engine::after_unreplayable_trace(const tracer::TraceOutcome& outcome) {
  if (outcome.first_call_only && !retraced_unreplayable_.exchange(true)) {
    runtime::warn(
        fmt::format("jitc: '{}' ran this call as traced ({}); the next call traces it again, as the state it "
                    "created now exists",
                    name_, outcome.unreplayable));
    return;
  }
  block_after(outcome.unreplayable, outcome.training);
}

// Calls run eagerly from now on; after a training trace only those in grad mode.
void Engine::block_after(const std::string& reason, bool training) {
  if (training) {
    {
      std::lock_guard<std::mutex> lock(stats_mutex_);
      training_failure_ = reason;
    }
    grad_blocked_ = true;
    warn_eager({grad_blocked_reason(), true});
    return;
  }
  eager_only_ = true;
  runtime::warn(fmt::format("jitc: '{}' runs eagerly from now on: {}", name_, reason));
}

void Engine::add_entry(tracer::TraceOutcome& outcome, c10::ArrayRef<Leaf> leaves, const std::vector<uint64_t>& candidates, int number,
                       std::chrono::steady_clock::time_point started) {
  try {
    auto entry = outcome.backward ? make_training_entry(outcome, leaves, candidates)
                                  : make_entry(graph::Graph(outcome.graph), leaves, outcome.result, candidates, {});
    entry->compile_number = number;
    if (entry->backward) entry->backward->entry->compile_number = number;
    // Traced again at its first hit (first_hit.cpp), training entries too: their call returns through
    // the entry (run_after_training_trace), so the trace is the only run of the callable's C++ code.
    entry->checks_first_hit = entry->graph.num_symbols == 0 && writes_captured(entry->graph);
    entry->breaks = outcome.breaks;
    entry->run_checks = std::move(outcome.run_checks);
    entry->trace_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    request_build(*install(std::move(entry), leaves, candidates));
  } catch (const std::exception& e) {
    runtime::rethrow_if_strict(e);
    eager_only_ = true;
    runtime::warn(fmt::format("jitc: building the entry for '{}' failed and it runs eagerly from now on (this is a "
                              "jitc bug; please report it with JITC_LOGS=graph_code): {}",
                              name_, runtime::error_text(e)),
                  compile_id(number));
  }
}

ResultLeaves Engine::compile_and_run(c10::ArrayRef<Leaf> leaves, const uint64_t* marks, const std::string& break_failure, uint64_t skip) {
  std::unique_lock compile(compile_mutex_);
  std::string again;
  Unchecked unchecked;
  ResultLeaves hit;
  if (try_entries(leaves, marks, &again, &unchecked, skip, hit)) {  // another thread compiled it meanwhile
    hits_.fetch_add(1, std::memory_order_relaxed);
    return hit;
  }
  if (unchecked.first_hit) return check_first_hit(unchecked.first_hit, leaves, compile);  // replays a fresh entry
  if (!unchecked.candidates.empty()) return check_sizes_and_run(unchecked, leaves, marks, compile);
  auto reasons = failure_reasons(leaves, marks);
  if (!again.empty() || !break_failure.empty()) reasons.insert(reasons.begin(), again.empty() ? break_failure : again);
  size_t count;
  {
    std::shared_lock lock(entries_mutex_);
    count = entries_.size();
  }
  const int number = next_compile_number_;
  if (count >= static_cast<size_t>(runtime::env_recompile_limit(options_.recompile_limit))) {
    compile.unlock();
    return at_recompile_limit(leaves, reasons, compile_id(number));
  }
  if (count > 0) {
    std::string list;
    for (const auto& r : reasons) list += (list.empty() ? "" : "\n") + r;
    runtime::log(runtime::Artifact::kRecompiles,
                 fmt::format("Recompiling function {} in {}\n{}", name_, where_,
                             indent("triggered by the following guard failure(s):\n" + indent(list, "- "), "    ")),
                 compile_id(number));
    std::lock_guard<std::mutex> lock(stats_mutex_);
    compile_stats_.recompile_reasons.push_back(reasons.empty() ? "unknown" : reasons.front());
  }
  const auto candidates = dynamic_candidates(leaves);
  const auto started = std::chrono::steady_clock::now();
  tracer::TraceOutcome outcome;
  ResultLeaves eager;
  if (!trace_call(leaves, compile, outcome, eager)) return eager;
  next_compile_number_++;
  add_entry(outcome, leaves, candidates, number, started);
  if (outcome.backward) outcome.result = run_after_training_trace(leaves, marks);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    compile_stats_.compiles++;
    compile_stats_.recompiles += count > 0;
    compile_stats_.graph_breaks += static_cast<int64_t>(outcome.breaks.size());
    compile_stats_.compile_seconds += seconds;
  }
  return std::move(outcome.result);
}

namespace {

std::string sizes_text(const std::vector<int64_t>& symbols, const graph::SymbolValues& values) {
  std::string s;
  for (size_t k = 0; k < symbols.size(); ++k) s += fmt::format("{}s{}={}", k ? ", " : "", k, number_text(symbols[k], values.is_real(k)));
  return s;
}

}  // namespace

bool Engine::follows(const runtime::Entry& symbolic, const EntryPtr& fresh, c10::ArrayRef<Leaf> leaves,
                     const std::vector<uint64_t>& candidates) {
  for (const auto& origin : {symbolic.first, symbolic.second}) {
    if (!origin) continue;
    auto again = generalized(origin, fresh, leaves, candidates);
    if (again && runtime::same_program(*again, symbolic)) return true;
  }
  return false;
}

// A symbolic entry meets sizes (or scalar values) it was not checked against: trace this call and keep
// the entry for these values only if the trace generalizes to the very same program; otherwise the
// values get their own entry. Every symbolic entry whose guards pass is checked against the one trace.
ResultLeaves Engine::check_sizes_and_run(const Unchecked& unchecked, c10::ArrayRef<Leaf> leaves, const uint64_t* marks,
                                         std::unique_lock<std::mutex>& compile) {
  const auto candidates = dynamic_candidates(leaves);
  const auto started = std::chrono::steady_clock::now();
  tracer::TraceOutcome outcome;
  ResultLeaves eager;
  if (!trace_call(leaves, compile, outcome, eager)) return eager;
  const Unchecked::Candidate* confirmed = nullptr;
  try {
    std::shared_ptr<const runtime::Entry> fresh = outcome.backward
                                                      ? make_training_entry(outcome, leaves, candidates)
                                                      : make_entry(graph::Graph(outcome.graph), leaves, outcome.result, candidates, {});
    for (const auto& c : unchecked.candidates) {
      const bool ok = follows(*c.entry, fresh, leaves, candidates);
      c.entry->sizes.record(c.symbols, ok);
      if (ok) {
        confirmed = &c;
        break;
      }
    }
  } catch (const std::exception& e) {  // a jitc bug: keep the trace's result, never confirm
    runtime::rethrow_if_strict(e);
    runtime::warn(fmt::format("jitc: checking sizes for '{}' failed: {}", name_, runtime::error_text(e)));
    for (const auto& c : unchecked.candidates) c.entry->sizes.record(c.symbols, false);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    compile_stats_.size_checks += confirmed != nullptr;  // a rejected check counts below, as a compile or an eager call
    compile_stats_.compile_seconds += seconds;
  }
  if (confirmed) {
    const runtime::Entry& symbolic = *confirmed->entry;
    runtime::log(runtime::Artifact::kDynamic,
                 fmt::format("{}: sizes {} follow the symbolic graph", name_, sizes_text(confirmed->symbols, symbolic.symbol_values)),
                 compile_id(symbolic.compile_number));
    return outcome.backward ? run_after_training_trace(leaves, marks) : std::move(outcome.result);
  }
  const Unchecked::Candidate& first = unchecked.candidates.front();
  const runtime::Entry& symbolic = *first.entry;
  const std::string id = compile_id(symbolic.compile_number);
  runtime::log(runtime::Artifact::kDynamic,
               fmt::format("{}: at sizes {} the trace does not follow the symbolic graph (an integer computed from a "
                           "size or scalar is not the fitted expression, or C++ branched on it); these values get "
                           "their own entry",
                           name_, sizes_text(first.symbols, symbolic.symbol_values)),
               id);
  size_t count;
  {
    std::shared_lock lock(entries_mutex_);
    count = entries_.size();
  }
  if (count >= static_cast<size_t>(runtime::env_recompile_limit(options_.recompile_limit))) {
    eager_calls_.fetch_add(1, std::memory_order_relaxed);  // its ops ran once, for real; no entry
    return outcome.backward ? invoker_(leaves) : std::move(outcome.result);
  }
  add_entry(outcome, leaves, candidates, next_compile_number_++, started);
  if (outcome.backward) outcome.result = run_after_training_trace(leaves, marks);
  std::lock_guard<std::mutex> lock(stats_mutex_);
  compile_stats_.compiles++;
  compile_stats_.recompiles++;
  compile_stats_.recompile_reasons.push_back(
      fmt::format("{}: sizes {} do not follow the symbolic graph", id, sizes_text(first.symbols, symbolic.symbol_values)));
  return std::move(outcome.result);
}

}  // namespace jitc::detail
