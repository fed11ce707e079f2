#include "inductor/scheduler.h"

#include "graph/passes.h"
#include "inductor/backend.h"
#include "inductor/checked_reads.h"
#include "inductor/collapse_dims.h"
#include "inductor/graph_uses.h"
#include "inductor/injected_failure.h"
#include "inductor/kernel_builds.h"
#include "inductor/kernel_space.h"
#include "inductor/loop_order.h"
#include "inductor/merge_reduction_loops.h"
#include "inductor/shared_chains.h"
#include "inductor/lowering.h"
#include "runtime/env.h"

#include <jitc/detail/internal_assert.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <variant>

namespace jitc::inductor {

namespace {

using graph::Node;
using graph::SymShape;
using graph::ValueId;

class Scheduler {
 public:
  Scheduler(const graph::Graph& g, std::string prefix, const std::function<void(const std::string&)>& log)
      : g_(g),
        prefix_(std::move(prefix)),
        log_(log),
        extern_(g.nodes.size(), 0),
        stored_(g.values.size(), 0),
        reason_(g.nodes.size()),
        read_by_a_sibling_(g.values.size(), 0) {}

  // Lowers every node once; each attempt then places the lowered values into kernels, and ends early
  // when it decided to store a value, to place one earlier or to run a node as an extern call: the next
  // attempt starts over with that decision. Each decision is made once, so attempts are bounded.
  Plan run() {
    ctx_ = std::make_unique<LoweringContext>(g_);
    keep_break_inputs_eager();
    for (size_t i = 0; i < g_.nodes.size(); ++i)  // computed once per version of what they read (derived_values.h)
      if (g_.nodes[i].kind == graph::NodeKind::kDerived) make_extern(i, "derived from captured tensors, once per version of them");
    lower_nodes();
    store_values_read_again();
    last_reader_ = last_readers(g_);
    for (const Node& n : g_.nodes) outputs_.push_back(node_outputs(n));
    for (const auto& value : g_.values) rows_of_.push_back(without_ones(value.meta.sizes));
    freed_when_dropped_ = freed_when_dropped(g_);
    for (int attempt = 0; attempt < 4 * static_cast<int>(g_.values.size()) + 8; ++attempt) {
      attempt_log_.clear();
      decided_ = false;
      std::optional<Plan> plan = assemble();
      if (!plan) continue;
      if (log_)
        for (const auto* list : {&decisions_, &attempt_log_})
          for (const auto& m : *list) log_(m);
      return std::move(*plan);
    }
    JITC_INTERNAL_ASSERT(false, "scheduler: no fixed point");
  }

 private:
  // ---- lowering ---------------------------------------------------------------------------------
  void make_extern(size_t i, std::string why) {
    extern_[i] = 1;
    reason_[i] = std::move(why);
  }

  // Node i runs as an extern call after it was lowered: its results are buffers from now on.
  void unlower(size_t i) {
    for (ValueId out : node_outputs(g_.nodes[i])) {
      ctx_->loader[out] = nullptr;
      ctx_->view_of[out] = graph::kNoValue;
      ctx_->row_dims[out].clear();
    }
  }

  // The capabilities of the backend of v's device (graph_uses.h's unsupported_values rejected devices
  // without one).
  const Target& target_of(ValueId v) const { return backend_for(g_.values[v].meta.device.type())->target(); }

  // A graph break's value is compared with the traced one bit for bit on every replay (the callable
  // branched on it), so what it is computed from runs as eager ran it: a fused kernel's rounding would
  // make every replay fail its check and re-trace.
  void keep_break_inputs_eager() {
    std::vector<int> stack;
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (g_.nodes[i].checked())
        for (ValueId v : node_tensor_args(g_.nodes[i])) stack.push_back(g_.values[v].producer);
    while (!stack.empty()) {
      const int p = stack.back();
      stack.pop_back();
      if (p < 0 || extern_[p]) continue;
      make_extern(static_cast<size_t>(p), "a graph break reads its result, which must be eager's bit for bit");
      for (ValueId v : node_tensor_args(g_.nodes[p])) stack.push_back(g_.values[v].producer);
    }
  }

  std::function<bool(ValueId)> computed() const {
    return [this](ValueId v) { return ctx_->loader[v] != nullptr; };
  }
  std::function<bool(size_t)> lowered() const {
    return [this](size_t i) { return !extern_[i]; };
  }

  // Values stored although no reader needs a buffer: chains several nodes would compute again, values
  // whose views are needed as tensors, values read across extern calls (shared_chains.h), checked values
  // that a node reads in part (checked_reads.h).
  void store_values_read_again() {
    auto store = [&](ValueId v, const std::string& why) {
      stored_[v] = 1;
      decisions_.push_back(fmt::format("{} is stored to a buffer: {}", describe(v), why));
    };
    auto view = [&](ValueId x) { return ctx_->view_of[x] != graph::kNoValue; };
    auto is_extern = [&](size_t i) { return extern_[i] != 0; };
    for (ValueId v : shared_chains(g_, computed(), view))
      store(v, fmt::format("read by several nodes, computed from {} buffers or more", kSharedChainSources));
    auto buffer = [&](ValueId x) { return ctx_->loader[x] == nullptr || stored_[x]; };
    for (ValueId v : values_read_across_extern_calls(g_, buffer, view, is_extern))
      store(v, "its readers lie on both sides of an extern call, and storing it frees the larger buffers it is computed from");
    auto viewed = [&](ValueId x) { return ctx_->view_of[x]; };
    for (ValueId v : roots_of_needed_views(g_, computed(), viewed, is_extern))
      store(v, "its views are needed as tensors, real views of it");
    auto inlined = [&](ValueId x) { return ctx_->loader[x] != nullptr && !stored_[x]; };
    for (ValueId v : checked_values_read_in_part(g_, ctx_->run_time_checks, inlined, lowered()))
      store(v, "its run-time checks must see every element, a node reads part");
  }

  void lower_nodes() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (extern_[i]) continue;
      if (n.checked()) {
        make_extern(i, "its result is checked on replay (graph break)");
        continue;
      }
      if (n.mutates) {
        make_extern(i, "it writes its argument");
        continue;
      }
      const LowerFn* lowering = find_lowering(n);
      if (!lowering) {
        make_extern(i, "no lowering");
        continue;
      }
      if (auto why = unsupported_values(g_, n); !why.empty()) {
        make_extern(i, why);
        continue;
      }
      const auto outs = node_outputs(n);
      try {
        if (failure_injected("lowering", {n.name()})) throw std::runtime_error(kInjectedFailure);
        JITC_INTERNAL_ASSERT(!failure_injected("bug", {n.name()}), kInjectedFailure);
        ctx_->runtime_doubles_read = 0;
        auto loaders = (*lowering)(*ctx_, n);
        if (ctx_->runtime_doubles_read != runtime_double_args(n)) throw Unsupported("its lowering reads a run-time double as a constant");
        if (loaders.size() != outs.size()) throw Unsupported(fmt::format("lowering gave {} results for {}", loaders.size(), outs.size()));
        for (size_t k = 0; k < outs.size(); ++k) ctx_->loader[outs[k]] = std::move(loaders[k]);
        for (ValueId v : outs)
          if (is_view_of_first_input(g_, n, v)) ctx_->view_of[v] = node_tensor_args(n)[0];
      } catch (const Unsupported& e) {
        for (ValueId v : outs) ctx_->loader[v] = nullptr;
        make_extern(i, e.what());
      } catch (const std::exception& e) {  // a bug, not a limit: the graph runs eagerly (see engine)
        throw InternalError(fmt::format("lowering {} (node {}) failed: {}", n.name(), i, e.what()));
      }
    }
  }

  // A view whose chain of views starts at a buffer (input or extern output) must be a real view when a
  // tensor is needed: it may be returned to the caller aliasing an input. Other needed values are stored.
  void need(ValueId v) {
    if (!ctx_->loader[v] || stored_[v]) return;
    ValueId root = v;
    while (ctx_->view_of[root] != graph::kNoValue && ctx_->loader[root] && !stored_[root]) root = ctx_->view_of[root];
    if (ctx_->view_of[v] != graph::kNoValue && (!ctx_->loader[root] || stored_[root])) {
      const int producer = g_.values[v].producer;
      make_extern(static_cast<size_t>(producer), "a view of a tensor, needed as a tensor (kept as a real view)");
      const ValueId viewed = ctx_->view_of[v];
      unlower(static_cast<size_t>(producer));
      need(viewed);
      return;
    }
    stored_[v] = 1;
  }

  void mark_needs() {
    // Values before views of them: a view of a stored output is then kept as a real view of it.
    for (bool views : {false, true})
      for (ValueId v : g_.outputs)
        if (v != graph::kNoValue && (ctx_->view_of[v] != graph::kNoValue) == views) need(v);
    for (size_t i = g_.nodes.size(); i-- > 0;)
      if (extern_[i])
        for (ValueId v : node_tensor_args(g_.nodes[i])) need(v);
    const ReadIndex index = read_index(g_);
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (extern_[i] && g_.nodes[i].mutates)
        for (ValueId v : read_across_write(g_, i, index, lowered(), computed())) need(v);
  }

  // ---- kernels ----------------------------------------------------------------------------------
  // Whether v's elements are the open kernel's points or rows (every flush asks it of the values after it).
  bool compatible(ValueId v) const {
    if (g_.values[v].meta.device != device_) return false;
    const SymShape& sizes = g_.values[v].meta.sizes;
    // A kernel over no elements runs no row: a value stored per row ([1] beside [0]) would never be written.
    if (has_no_elements(space_sizes_) != has_no_elements(sizes)) return false;
    return sizes == space_sizes_ || rows_of_[v] == space_rows_;
  }

  // An earlier attempt's build where nothing it read changed (kernel_builds.h; JITC_STRICT=1 rebuilds it and compares), or a new one.
  BuildResult build(const std::vector<ValueId>& members, const Space& s, int group_id) {
    const std::string key = KernelBuilds::key(members, s);
    if (const BuildResult* earlier = builds_.find(key, *ctx_, group_id)) {
      BuildResult reused = *earlier;
      if (auto* b = std::get_if<Built>(&reused)) b->kernel.name = kernel_name(b->inlined);  // numbered by its place in this attempt
      JITC_INTERNAL_ASSERT(!check_reused_builds_ || same_build(reused, build_anew(members, s, group_id)),
                           "scheduler: a reused build differs");
      return reused;
    }
    BuildResult made = build_anew(members, s, group_id);
    builds_.keep(key, *ctx_, group_id, made);
    return made;
  }

  // The kernel computing `members` over space s, or why it cannot be built.
  BuildResult build_anew(const std::vector<ValueId>& members, const Space& s, int group_id) {
    ctx_->begin_kernel(group_id);
    KernelBuilder kb(fmt::format("{}_{}", prefix_, kernels_.size()));
    std::vector<int> outer, inner;
    for (const auto& e : s.outer) outer.push_back(kb.outer_var(e));
    for (const auto& e : s.inner) inner.push_back(kb.inner_var(e));
    for (ValueId v : members) {
      const auto& m = g_.values[v].meta;
      // A value with no elements has a buffer of no bytes: nothing to store. (A store whose index needs no
      // loop variable, such as an expand of a [1] reduction to [0], would otherwise run once per row.)
      if (has_no_elements(m.sizes)) {
        ctx_->buffer(kb, v, true);  // still the kernel's output: the program allocates it
        continue;
      }
      const Index index = member_index(kb, m.sizes, s, outer, inner);
      const int value = kb.cast(ctx_->at(kb, v, index), compute_type_of(m.dtype));
      kb.store(ctx_->buffer(kb, v, true), kb.linear(index, m.strides), value);
    }
    if (ctx_->failure) return *ctx_->failure;
    if (s.inner.size() == 1 && kb.kernel().num_reduction_loops == 0) kb.set_tile(kTile);
    Built b{kb.take(), ctx_->buffer_values.back(), ctx_->inlined};
    const Target* target = members.empty() ? nullptr : &target_of(members[0]);
    if (target && target->orders_loops_as_stored) order_loops_as_stored(b.kernel);
    collapse_inner_dims(b.kernel, target ? target->divides_inner_dims_below : 0);
    if (target && target->merges_reduction_loops) merge_reduction_loops(b.kernel);
    b.kernel.name = kernel_name(b.inlined);
    return b;
  }

  // The ops of the nodes computing these values, each once, in value order.
  std::vector<std::string> ops_of(const std::vector<ValueId>& values) const {
    std::vector<std::string> ops;
    for (ValueId v : values) {
      const int p = g_.values[v].producer;
      if (p >= 0 && std::find(ops.begin(), ops.end(), g_.nodes[p].name()) == ops.end()) ops.push_back(g_.nodes[p].name());
    }
    return ops;
  }

  // The ops in the order they compute (value order), views left out unless there is nothing else:
  // relu(a * b.t() + c) reads mul_add_relu.
  std::string kernel_name(std::vector<ValueId> inlined) const {
    std::sort(inlined.begin(), inlined.end());
    std::vector<ValueId> computed;
    for (ValueId v : inlined)
      if (const int p = g_.values[v].producer; p < 0 || !is_view_lowering(g_.nodes[p])) computed.push_back(v);
    return fused_kernel_name(prefix_, ops_of(computed.empty() ? inlined : computed), kernels_.size());
  }

  Space pointwise_space(ValueId v) const {
    SymShape sizes = g_.values[v].meta.sizes;
    if (sizes.empty()) return {};
    SymShape inner = {sizes.back()};
    sizes.pop_back();
    return {sizes, inner, {}};
  }
  Space reduction_space(ValueId v) const { return {g_.values[v].meta.sizes, {}, {}}; }
  // A normalization's rows over the dims it does not reduce, its element loop over those it reduces
  // (softmax over dim 0, layer_norm over two dims), where the backend takes such kernels.
  std::optional<Space> normalization_space(ValueId v) const {
    const auto& reduced = ctx_->row_dims[v];
    const SymShape& sizes = g_.values[v].meta.sizes;
    if (reduced.empty() || !target_of(v).normalization_row_kernels) return std::nullopt;
    Space s;
    for (bool inner : {false, true})
      for (size_t d = 0; d < sizes.size(); ++d)
        if (std::binary_search(reduced.begin(), reduced.end(), static_cast<int64_t>(d)) == inner) {
          (inner ? s.inner : s.outer).push_back(sizes[d]);
          s.dims.push_back(d);
        }
    return s;
  }

  std::string describe(ValueId v) const {
    const int p = g_.values[v].producer;
    return fmt::format("buf{} ({})", v, p >= 0 ? g_.nodes[p].name() : "input");
  }

  // True if the kernel failed only because v does not fit in it (v reads itself at another index, or a
  // value this kernel stores); otherwise decides what the next attempt changes (decided_).
  bool only_misfit(const BuildFailure& e, ValueId v) {
    if (e.kind == BuildFailure::Kind::kReadsUnplaced) {
      for (ValueId like : same_result_of_every_such_node(g_, e.value)) read_by_a_sibling_[like] = 1;
      decide(fmt::format("{} is placed before {}, which reads its buffer (so in every such node)", describe(e.value), describe(v)));
      return false;
    }
    if (e.value == v || (stored_[e.value] && ctx_->group[e.value] == group_id_)) return true;
    JITC_INTERNAL_ASSERT(!stored_[e.value], "scheduler: a stored value was needed again");
    for (ValueId like : same_result_of_every_like_node(g_, e.value)) stored_[like] = 1;
    decide(fmt::format("{} is stored to a buffer: {} (so in every like node)", describe(e.value), e.why));
    return false;
  }

  void place(ValueId v) {
    if (!members_.empty()) {
      std::string why;
      if (!compatible(v))
        why = fmt::format("iteration space {} differs from the kernel's {}", graph::to_string(g_.values[v].meta.sizes), space_.text());
      else if (members_.size() >= kMaxFusedValues) why = fmt::format("exceeds max fusion size {}", kMaxFusedValues);
      if (why.empty()) {
        const auto failed = try_join(v);
        if (!failed) {
          if (logging())
            log(fmt::format("fused {} into {} (horizontal: same iteration space {})", describe(v), built_.kernel.name, space_.text()));
          return;
        }
        if (!only_misfit(*failed, v)) return;
        why = failed->why;
      }
      if (logging()) log(fmt::format("cannot fuse {} into {}: {}", describe(v), built_.kernel.name, why));
      flush();
    }
    start_group(v);
  }

  // Rebuilds the kernel with v as one more stored value; why it could not otherwise.
  std::optional<BuildFailure> try_join(ValueId v) {
    ctx_->group[v] = group_id_;
    auto members = members_;
    members.push_back(v);
    auto built = build(members, space_, group_id_);
    if (auto* failed = std::get_if<BuildFailure>(&built)) {
      ctx_->group[v] = -1;
      return std::move(*failed);
    }
    built_ = std::move(std::get<Built>(built));
    members_ = std::move(members);
    placed_[v] = 1;
    return std::nullopt;
  }

  void start_group(ValueId v) {
    ctx_->group[v] = group_id_;
    std::string why;
    std::vector<Space> spaces = {pointwise_space(v), reduction_space(v)};
    if (auto s = normalization_space(v)) spaces.push_back(*s);
    std::optional<BuildFailure> deferred;
    for (size_t k = 0; k < spaces.size(); ++k) {
      auto built = build({v}, spaces[k], group_id_);
      if (auto* kernel = std::get_if<Built>(&built)) {
        built_ = std::move(*kernel);
        members_ = {v};
        placed_[v] = 1;
        space_ = spaces[k];
        space_sizes_ = space_.value_sizes();
        space_rows_ = without_ones(space_.outer);
        device_ = g_.values[v].meta.device;
        return;
      }
      const auto& e = std::get<BuildFailure>(built);
      why = e.why;
      // v reads a normalization elementwise (log_softmax(x, 0) * 2): try the normalization's own
      // space, which computes both in one kernel, before storing the normalization.
      auto shared = deferred || e.kind != BuildFailure::Kind::kNeedsBuffer ? std::nullopt : shared_normalization_space(e.value, v);
      if (shared) {
        deferred = e;
        spaces.insert(spaces.begin() + static_cast<std::ptrdiff_t>(k) + 1, *shared);
        continue;
      }
      if (!only_misfit(e, v)) return;
    }
    if (deferred && !only_misfit(*deferred, v)) return;
    ctx_->group[v] = -1;
    make_extern(static_cast<size_t>(g_.values[v].producer), "no kernel can compute it: " + why);
    unlower(static_cast<size_t>(g_.values[v].producer));
    decide(fmt::format("{} runs as an extern call: no kernel can compute it: {}", describe(v), why));
  }

  std::optional<Space> shared_normalization_space(ValueId normalization, ValueId v) const {
    if (normalization == v || stored_[normalization] || g_.values[normalization].meta.sizes != g_.values[v].meta.sizes) return std::nullopt;
    return normalization_space(normalization);
  }

  // ---- horizontal fusion of later values ---------------------------------------------------------
  // The buffers a kernel computing v reads: graph inputs, extern outputs and stored values, reached
  // through the lowered values it inlines.
  const std::vector<ValueId>& sources(ValueId v) {
    if (sources_done_[v]) return sources_[v];
    sources_done_[v] = 1;
    const int p = g_.values[v].producer;
    std::vector<ValueId> found;
    for (ValueId a : node_tensor_args(g_.nodes[p])) {
      const int q = g_.values[a].producer;
      if (q < 0 || extern_[q] || ctx_->stored[a]) found.push_back(a);
      else
        for (ValueId s : sources(a)) found.push_back(s);
    }
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    return sources_[v] = std::move(found);
  }

  // True when every buffer w reads exists at this point of the plan (node `position_` is next).
  bool ready(ValueId w) {
    for (ValueId s : sources(w)) {
      const int q = g_.values[s].producer;
      if (q >= 0 && (extern_[q] ? q >= position_ : !placed_[s])) return false;
    }
    return true;
  }

  bool shares_a_source(ValueId w) {
    const std::vector<ValueId>& read = sources(w);
    auto reads = [&](ValueId s) { return std::binary_search(read.begin(), read.end(), s); };
    for (ValueId m : members_)
      if (reads(m) || std::any_of(sources(m).begin(), sources(m).end(), reads)) return true;
    return false;
  }

  // Before the kernel is closed: later stored values of its iteration space that read its buffers or values
  // (a batch norm's weight gradient of its sums) and need nothing not yet computed join it, up to the first
  // op that writes a tensor ((x.sin(), x.sum(0), x.cos()) share a kernel). One that does not fit stays.
  void fuse_later_values() {
    for (size_t j = static_cast<size_t>(position_); j < g_.nodes.size() && members_.size() < kMaxFusedValues; ++j) {
      if (g_.nodes[j].mutates) return;
      if (extern_[j]) continue;
      for (ValueId w : outputs_[j]) {
        if (!ctx_->stored[w] || placed_[w] || members_.size() >= kMaxFusedValues || !compatible(w)) continue;
        // One that fails (its node's other results come first, or it reads a value it cannot) keeps its place.
        if (!ready(w) || !shares_a_source(w) || try_join(w)) continue;
        if (logging())
          log(fmt::format("fused {} into {} (horizontal: same iteration space {}, reads the same inputs; moved before node {})",
                          describe(w), built_.kernel.name, space_.text(), position_));
      }
    }
  }

  void flush() {
    if (members_.empty()) return;
    fuse_later_values();
    KernelLaunch launch{std::move(built_.kernel), device_, built_.buffers, members_, ops_of(built_.inlined)};
    if (logging()) log_kernel(launch.kernel.name);
    steps_.push_back({Step::Kind::kKernel, static_cast<int>(kernels_.size())});
    kernels_.push_back(std::move(launch));
    members_.clear();
    ++group_id_;
  }

  void log_kernel(const std::string& name) {
    std::vector<std::string> inlined, stored;
    for (ValueId v : built_.inlined)
      if (std::find(members_.begin(), members_.end(), v) == members_.end()) inlined.push_back(describe(v));
    for (ValueId v : members_) stored.push_back(describe(v));
    log(fmt::format("kernel {} over {}: stores {}; inlines {} (vertical)", name, space_.text(), fmt::join(stored, ", "),
                    inlined.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(inlined, ", "))));
  }

  // Whether the open kernel reads a buffer last that nothing before extern node i reads after it: kept open
  // across the call, the kernel would keep that buffer live through it (a batch norm's backward: the kernel
  // of the weight's gradient kept the saved statistics and its sums live through a convolution's backward).
  bool frees_buffers_before(size_t i) {
    for (ValueId m : members_)
      for (ValueId s : sources(m))
        if (freed_when_dropped_[s] && last_reader_[s] < static_cast<int>(i)) return true;
    return false;
  }

  // Why the open kernel must end before extern node i (nullptr: it may stay open across the call).
  const char* reason_to_end_kernel_before(const Node& n, size_t i) {
    if (members_.empty()) return nullptr;
    if (n.mutates) return "it writes a tensor the kernel may read";
    if (reads_current_group(n)) return "it reads the kernel's output";
    if (frees_buffers_before(i)) return "buffers the kernel reads last are freed before it";
    return nullptr;
  }

  bool reads_current_group(const Node& n) const {
    for (ValueId v : node_tensor_args(n))
      if (std::find(members_.begin(), members_.end(), v) != members_.end()) return true;
    return false;
  }

  // One attempt: the plan, or nullopt when a decision (decided_) asks for another attempt.
  std::optional<Plan> assemble() {
    ctx_->begin_attempt();
    kernels_.clear();
    steps_.clear();
    members_.clear();
    group_id_ = 0;
    mark_needs();
    for (size_t v = 0; v < g_.values.size(); ++v) ctx_->stored[v] = stored_[v] && ctx_->loader[v];
    placed_.assign(g_.values.size(), 0);
    sources_.assign(g_.values.size(), {});
    sources_done_.assign(g_.values.size(), 0);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      position_ = static_cast<int>(i);
      const Node& n = g_.nodes[i];
      if (extern_[i]) {
        if (const char* why = reason_to_end_kernel_before(n, i)) {
          if (logging()) log(fmt::format("kernel {} ends before extern {} ({})", built_.kernel.name, n.name(), why));
          flush();
        }
        steps_.push_back({Step::Kind::kExtern, static_cast<int>(i)});
        continue;
      }
      // A node's results in the order they read each other: native_layer_norm's output reads its
      // statistics from their buffers, so those go first once a kernel found it reading them.
      std::vector<ValueId> outs = node_outputs(n);
      std::stable_partition(outs.begin(), outs.end(), [&](ValueId v) { return read_by_a_sibling_[v]; });
      for (ValueId v : outs) {
        if (!ctx_->stored[v] || placed_[v]) continue;
        place(v);
        if (decided_) return std::nullopt;
      }
    }
    position_ = static_cast<int>(g_.nodes.size());
    flush();
    Plan plan;
    plan.kernels = std::move(kernels_);
    plan.steps = with_releases(g_, steps_, plan.kernels);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!extern_[i]) continue;
      if (logging()) log(fmt::format("{} (node {}) is not fused: it runs as an extern ATen call ({})", g_.nodes[i].name(), i, reason_[i]));
      if (!is_view_lowering(g_.nodes[i]) && g_.nodes[i].op.operator_name().name != "aten::copy_")
        plan.extern_reasons.push_back(fmt::format("{}: {}", g_.nodes[i].name(), reason_[i]));
    }
    return plan;
  }

  // Messages of the attempt that succeeds, after the decisions that caused restarts; formatted only where
  // someone reads them (JITC_LOGS=fusion).
  bool logging() const { return static_cast<bool>(log_); }
  void log(const std::string& message) { attempt_log_.push_back(message); }
  // A decision that changes what the next attempt does: stored values, extern nodes, placement order.
  void decide(const std::string& message) {
    decisions_.push_back(message);
    decided_ = true;
  }

  const graph::Graph& g_;
  std::string prefix_;
  const std::function<void(const std::string&)>& log_;
  std::vector<char> extern_, stored_;
  std::vector<std::string> reason_;
  std::unique_ptr<LoweringContext> ctx_;
  KernelBuilds builds_;
  const bool check_reused_builds_ = runtime::env_strict();
  std::vector<KernelLaunch> kernels_;
  std::vector<Step> steps_;
  std::vector<ValueId> members_;
  Space space_;
  SymShape space_sizes_, space_rows_;  // space_.value_sizes() and its outer dims other than 1
  c10::Device device_{c10::kCPU};
  Built built_;
  int group_id_ = 0;
  int position_ = 0;                           // the node being scheduled
  bool decided_ = false;                       // this attempt made a decision: the next one starts over
  std::vector<char> placed_;                   // per stored value: in a kernel already
  std::vector<char> read_by_a_sibling_;        // results placed before the other results of their node
  std::vector<std::vector<ValueId>> sources_;  // memo of sources(), filled where sources_done_
  std::vector<char> sources_done_;
  std::vector<SymShape> rows_of_;              // per value: its dims other than 1
  std::vector<std::vector<ValueId>> outputs_;  // per node (node_outputs): every flush scans the nodes after it
  std::vector<int> last_reader_;               // per value (last_readers)
  std::vector<char> freed_when_dropped_;       // per value (freed_when_dropped)
  std::vector<std::string> decisions_, attempt_log_;
};

}  // namespace

Plan schedule(const graph::Graph& graph, const std::string& prefix, const std::function<void(const std::string&)>& log) {
  return Scheduler(graph, prefix, log).run();
}

}  // namespace jitc::inductor
