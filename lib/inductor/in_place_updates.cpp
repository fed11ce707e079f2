#include "inductor/in_place_updates.h"

#include "inductor/graph_uses.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace jitc::inductor {

namespace {

using graph::ValueId;

// A write-back of the epilogue: copy_(input, value) with the input's whole layout.
struct WriteBack {
  size_t step;  // its position among the plan's steps
  ValueId input, value;
};

std::vector<WriteBack> write_backs(const Plan& plan, const graph::Graph& g) {
  std::unordered_set<ValueId> inputs;
  for (const auto& in : g.inputs)
    if (in.kind != graph::InputKind::kConstant) inputs.insert(in.value);
  std::vector<WriteBack> found;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (plan.steps[s].kind != Step::Kind::kExtern) continue;
    const graph::Node& n = g.nodes[plan.steps[s].index];
    if (n.name() != "aten::copy_") continue;
    const auto args = node_tensor_args(n);
    if (args.size() == 2 && inputs.count(args[0])) found.push_back({s, args[0], args[1]});
  }
  return found;
}

bool same_layout(const graph::TensorMeta& a, const graph::TensorMeta& b) {
  return a.dtype == b.dtype && a.device == b.device && a.sizes == b.sizes && a.strides == b.strides;
}

// The storages of the values the graph returns (a returned value must stay what eager returns; a
// training forward returns the values its backward reads).
std::unordered_set<int32_t> returned_storages(const graph::Graph& g) {
  std::unordered_set<int32_t> storages;
  for (ValueId o : g.outputs)
    if (o != graph::kNoValue) storages.insert(g.values[o].storage);
  return storages;
}

// Per storage, the steps that read or write its memory, in order.
std::unordered_map<int32_t, std::vector<size_t>> steps_by_storage(const Plan& plan, const graph::Graph& g) {
  std::unordered_map<int32_t, std::vector<size_t>> steps;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    std::vector<ValueId> values;
    if (step.kind == Step::Kind::kKernel) values = plan.kernels[step.index].buffers;
    if (step.kind == Step::Kind::kExtern) values = node_tensor_args(g.nodes[step.index]);
    for (ValueId v : values) {
      if (v == graph::kNoValue) continue;
      std::vector<size_t>& list = steps[g.values[v].storage];
      if (list.empty() || list.back() != s) list.push_back(s);
    }
  }
  return steps;
}

// The kernel's one store into buffer b (its body index).
std::optional<int> store_of(const Kernel& k, int b) {
  std::optional<int> store;
  for (size_t i = 0; i < k.body.size(); ++i) {
    if (k.body[i].op != ScalarOp::kStore || k.body[i].buffer != b) continue;
    if (store) return std::nullopt;
    store = static_cast<int>(i);
  }
  return store;
}

// Per expression: whether the store `store` computes from it.
std::vector<bool> feeding(const Kernel& k, int store) {
  std::vector<bool> feeds(k.body.size(), false);
  feeds[store] = true;
  for (int i = store; i >= 0; --i) {
    if (!feeds[i]) continue;
    for (int operand : {k.body[i].a, k.body[i].b, k.body[i].c})
      if (operand >= 0) feeds[operand] = true;
  }
  return feeds;
}

// Whether the store writes each element once: its index reads every loop variable whose extent may be
// more than 1. A value of fewer elements than the kernel's space (a 0-dim counter's increment fused
// into a pointwise kernel over a layer's channels) is stored once per row or tile; read and written in
// place, each store would add to the last one's result.
bool stores_each_element_once(const Kernel& k, int store) {
  std::vector<uint64_t> vars_read(k.body.size(), 0);
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    vars_read[i] = e.op == ScalarOp::kVar ? uint64_t{1} << e.var : 0;
    for (int operand : {e.a, e.b, e.c})
      if (operand >= 0) vars_read[i] |= vars_read[operand];
  }
  for (size_t v = 0; v < k.vars.size(); ++v) {
    const Expr& extent = k.body[k.vars[v].extent];
    const bool one = extent.op == ScalarOp::kConst && extent.ivalue == 1;
    if (!one && !(vars_read[k.body[store].a] & (uint64_t{1} << v))) return false;
  }
  return true;
}

// The loads of kernel `launch` that read the memory of `held` (the value an input's memory holds), when
// each reads that value at the element the new value's store writes and feeds that store; nullopt
// otherwise. A printer emits a store's operands before the store, and every later use of a load reuses
// its value, so each element is read before it is written.
std::optional<std::vector<int>> same_element_loads(const KernelLaunch& launch, const graph::Graph& g, ValueId held, int out) {
  const Kernel& k = launch.kernel;
  const auto store = store_of(k, out);
  if (k.num_reduction_loops > 0 || !store || !stores_each_element_once(k, *store)) return std::nullopt;
  const std::vector<bool> feeds = feeding(k, *store);
  const int32_t storage = g.values[held].storage;
  std::vector<int> loads;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    if (e.op != ScalarOp::kLoad) continue;
    const ValueId read = launch.buffers[e.buffer];
    if (read != held && g.values[read].storage != storage) continue;
    if (read != held || e.a != k.body[*store].a || !feeds[i]) return std::nullopt;
    loads.push_back(static_cast<int>(i));
  }
  return loads;
}

// The memory of an input the epilogue writes back, and the value it holds now: the input's own contents
// until a kernel stores a value there (the input's next version, or any value of its layout once the
// input's contents are read no more).
struct InputMemory {
  WriteBack write_back;
  ValueId held;
};

class Placer {
 public:
  Placer(Plan& plan, const graph::Graph& g)
      : plan_(plan), g_(g), returned_(returned_storages(g)), steps_by_storage_(steps_by_storage(plan, g)) {
    for (const WriteBack& w : write_backs(plan, g))
      if (!returned_.count(g.values[w.input].storage)) memories_.push_back({w, w.input});
  }

  int run() {
    int placed = 0;
    for (size_t s = 0; s < plan_.steps.size(); ++s)
      if (plan_.steps[s].kind == Step::Kind::kKernel) placed += place_outputs(s);
    drop_copies_onto_themselves();
    return placed;
  }

 private:
  // Places the outputs of the kernel at step s in input memories where nothing forbids it.
  int place_outputs(size_t s) {
    KernelLaunch& launch = plan_.kernels[plan_.steps[s].index];
    std::vector<bool> used(memories_.size(), false);  // one output per memory per kernel
    int placed = 0;
    for (size_t j = 0; j < launch.outputs.size(); ++j)
      for (size_t m = 0; m < memories_.size(); ++m) {
        if (used[m] || !place(launch, j, s, memories_[m])) continue;
        used[m] = true;
        ++placed;
        break;
      }
    return placed;
  }

  // Whether a step in [from, to) other than `except` reads or writes the storage of `v`. (The steps
  // touching each storage do not change: placing an output changes which buffer a load names, among
  // the kernel's buffers.)
  bool touched(ValueId v, size_t from, size_t to, size_t except) const {
    const auto it = steps_by_storage_.find(g_.values[v].storage);
    if (it == steps_by_storage_.end()) return false;
    for (auto s = std::lower_bound(it->second.begin(), it->second.end(), from); s != it->second.end() && *s < to; ++s)
      if (*s != except) return true;
    return false;
  }

  bool place(KernelLaunch& launch, size_t j, size_t s, InputMemory& memory) {
    const ValueId v = launch.outputs[j], held = memory.held;
    const WriteBack& w = memory.write_back;
    if (w.step < s || !same_layout(g_.values[w.input].meta, g_.values[v].meta) || returned_.count(g_.values[v].storage)) return false;
    // What the memory holds is read by nothing after this kernel: the input's contents until the
    // write-back (which writes them), a stored value ever after.
    if (touched(held, s + 1, held == w.input ? w.step : plan_.steps.size(), plan_.steps.size())) return false;
    // The write-back overwrites the memory: v must not be read after it, unless it is what it writes.
    if (v != w.value && touched(v, w.step, plan_.steps.size(), w.step)) return false;
    const int out = static_cast<int>(std::find(launch.buffers.begin(), launch.buffers.end(), v) - launch.buffers.begin());
    const auto loads = same_element_loads(launch, g_, held, out);
    if (!loads) return false;
    for (int i : *loads) launch.kernel.body[i].buffer = out;
    launch.output_memory.resize(launch.outputs.size(), graph::kNoValue);
    launch.output_memory[j] = w.input;
    memory.held = v;
    // The memory holds the written-back value from here on (the write-back reads it, so nothing is
    // placed there after it): the write-back copies the input onto itself.
    if (v == w.value) onto_themselves_.push_back(w.step);
    return true;
  }

  // Write-backs of values stored in their input's memory do nothing; each is an ATen call, and an
  // optimizer step has three per parameter. Those whose result nothing reads leave the plan.
  void drop_copies_onto_themselves() {
    if (onto_themselves_.empty()) return;
    const std::vector<int> last_reader = last_readers(g_);
    std::vector<bool> drop(plan_.steps.size(), false);
    for (size_t s : onto_themselves_) {
      const auto results = node_outputs(g_.nodes[plan_.steps[s].index]);
      drop[s] = std::all_of(results.begin(), results.end(), [&](ValueId r) { return last_reader[r] < 0; });
    }
    std::vector<Step> kept;
    for (size_t s = 0; s < plan_.steps.size(); ++s)
      if (!drop[s]) kept.push_back(plan_.steps[s]);
    plan_.steps = std::move(kept);
  }

  Plan& plan_;
  const graph::Graph& g_;
  std::unordered_set<int32_t> returned_;
  std::unordered_map<int32_t, std::vector<size_t>> steps_by_storage_;
  std::vector<InputMemory> memories_;
  std::vector<size_t> onto_themselves_;  // the steps of write-backs that copy an input onto itself
};

}  // namespace

int store_input_updates_in_place(Plan& plan, const graph::Graph& g) {
  if (std::any_of(plan.kernels.begin(), plan.kernels.end(), [](const KernelLaunch& k) { return has_checks(k.kernel); })) return 0;
  // A failed break check restores only the inputs written before the break, from copies taken before
  // the call; the write-backs come after it, in the epilogue.
  if (std::any_of(g.nodes.begin(), g.nodes.end(), [](const graph::Node& n) { return n.checked(); })) return 0;
  return Placer(plan, g).run();
}

}  // namespace jitc::inductor
