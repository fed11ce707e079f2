#include "tracer/trace_session.h"

#include "graph/functional_ops.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/isin.h>
#include <ATen/ops/ones_like.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>

namespace jitc::tracer {

namespace {

using graph::writes;

thread_local TraceSession* t_current = nullptr;
std::atomic<uint64_t> g_next_session{1};

graph::TensorMeta meta_of(const at::Tensor& t) {
  graph::TensorMeta m;
  m.dtype = t.scalar_type();
  m.device = t.device();
  m.sizes = graph::constant_shape(t.sizes().data(), t.sizes().size());
  m.strides = graph::constant_shape(t.strides().data(), t.strides().size());
  m.storage_offset = graph::SymExpr::constant(t.storage_offset());
  return m;
}

std::string op_name(const c10::OperatorHandle& op) {
  const auto& n = op.operator_name();
  return n.overload_name.empty() ? n.name : n.name + "." + n.overload_name;
}

void check_traceable_result(const at::Tensor& t, const c10::OperatorHandle& op) {
  if (t.layout() != c10::kStrided)
    throw TraceFailure(TraceFailure::Kind::kUntraceable,
                       fmt::format("{} produced a {} tensor; jitc traces strided tensors only", op_name(op), c10::toString(t.layout())));
}

at::Tensor real_of(const at::Tensor& t) { return as_tracer(t) ? as_tracer(t)->shadow() : t; }

// An op that writes into a tensor another of its inputs partly overlaps (x.mul_(x[0])) reads values it
// has already written, in the order of its loop: eager raises where ATen can tell (contiguous tensors,
// "unsupported operation: some elements of the input tensor and the written-to tensor refer to a
// single memory location"), else its result depends on that order. Compiled code reads every input
// before it writes, so such a call runs eagerly, where eager's error or eager's result comes from.
// Whether two views of one storage share some elements without being the same elements in the same
// order. Where ATen's test gives up (views that are not contiguous), the elements each view covers are
// listed and compared: once per trace, so a bound keeps it cheap (past it, overlap is assumed).
bool overlaps_partly(const at::Tensor& written, const at::Tensor& read) {
  const auto status = at::get_overlap_status(written, read);
  if (status != at::MemOverlapStatus::TooHard) return status == at::MemOverlapStatus::Partial;
  constexpr int64_t kMaxListed = int64_t{1} << 22;
  const int64_t item = written.element_size();
  const int64_t elements = static_cast<int64_t>(written.storage().nbytes()) / item;
  if (read.element_size() != item || elements > kMaxListed || written.numel() > kMaxListed || read.numel() > kMaxListed) return true;
  const at::Tensor positions = at::arange(elements, at::TensorOptions(at::kLong));
  const at::Tensor w = positions.as_strided(written.sizes(), written.strides(), written.storage_offset());
  const at::Tensor r = positions.as_strided(read.sizes(), read.strides(), read.storage_offset());
  if (w.sizes() == r.sizes() && at::equal(w, r)) return false;  // the same elements, element for element
  return at::isin(r.flatten(), w.flatten()).any().item<bool>();
}

void check_no_partial_overlap(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) {
  const auto& schema = op.schema().arguments();
  auto tensors_of = [](const c10::IValue& v) {
    std::vector<at::Tensor> out;
    if (v.isTensor() && v.toTensor().defined()) out.push_back(real_of(v.toTensor()));
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorList()) out.push_back(real_of(t));
    return out;
  };
  for (size_t w = 0; w < args.size(); ++w) {
    if (!writes(schema[w]) || !args[w].isTensor()) continue;
    const at::Tensor written = real_of(args[w].toTensor());
    for (size_t r = 0; r < args.size(); ++r) {
      if (r == w) continue;
      for (const at::Tensor& read : tensors_of(args[r])) {
        if (!read.is_alias_of(written)) continue;
        if (overlaps_partly(written, read))
          throw TraceFailure(TraceFailure::Kind::kUntraceable,
                             fmt::format("{} writes into a tensor that its argument {} ({}) partly overlaps; its result "
                                         "depends on eager's loop order. Clone that argument to compile this",
                                         op_name(op), r, schema[r].name()));
      }
    }
  }
}

bool is_checkable_scalar(const c10::IValue& v) { return v.isBool() || v.isInt() || v.isDouble() || v.isScalar(); }

// aten::index is tagged dynamic_output_shape for its boolean and byte masks; with long or int index
// tensors only, its result's shape follows the indices' shapes as any op's does (x[idx], q[rows, actions]),
// and an index out of range raises in the op, as in eager.
bool indexes_by_integers(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t begin) {
  if (op.operator_name().name != "aten::index" || stack.size() < begin + 2 || !stack[begin + 1].isList()) return false;
  bool any = false;
  for (const c10::IValue& index : stack[begin + 1].toListRef()) {
    if (index.isNone() || (index.isTensor() && !index.toTensor().defined())) continue;  // a whole dim (x[:, i])
    if (!index.isTensor()) return false;
    const c10::ScalarType t = index.toTensor().scalar_type();
    if (t != c10::kLong && t != c10::kInt) return false;
    any = true;
  }
  return any;
}

}  // namespace

bool is_data_dependent(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t begin) {
  static const char* const kNames[] = {
      "aten::item",       "aten::_local_scalar_dense", "aten::is_nonzero", "aten::equal",   "aten::allclose",
      "aten::nonzero",    "aten::masked_select",       "aten::unique",     "aten::_unique", "aten::_unique2",
      "aten::unique_dim", "aten::unique_consecutive",  "aten::tolist"};
  const auto& name = op.operator_name().name;
  if (std::find_if(std::begin(kNames), std::end(kNames), [&](const char* n) { return name == n; }) != std::end(kNames)) return true;
  if (indexes_by_integers(op, stack, begin)) return false;
  return op.hasTag(at::Tag::data_dependent_output) || op.hasTag(at::Tag::dynamic_output_shape);
}

namespace {

// Every session alive, by id (for_foreign_thread).
struct LiveSessions {
  std::mutex mutex;
  std::unordered_map<uint64_t, TraceSession*> by_id;
};

LiveSessions& live_sessions() {
  static LiveSessions& live = *new LiveSessions;
  return live;
}

}  // namespace

TraceSession::TraceSession(bool fullgraph, bool training, bool subclass_like)
    : id_(g_next_session.fetch_add(1)), fullgraph_(fullgraph), training_(training), subclass_like_(subclass_like), previous_(t_current) {
  t_current = this;
  std::lock_guard<std::mutex> lock(live_sessions().mutex);
  live_sessions().by_id[id_] = this;
}

TraceSession::~TraceSession() {
  t_current = previous_;
  std::lock_guard<std::mutex> lock(live_sessions().mutex);
  live_sessions().by_id.erase(id_);
}

TraceSession* TraceSession::current() { return t_current; }

TraceSession* TraceSession::for_foreign_thread(const torch::jit::Stack& stack, size_t begin) {
  LiveSessions& live = live_sessions();
  std::lock_guard<std::mutex> lock(live.mutex);
  for (size_t i = begin; i < stack.size(); ++i) {
    if (!stack[i].isTensor()) continue;
    if (const auto* tracer = as_tracer(stack[i].toTensor())) {
      const auto it = live.by_id.find(tracer->session());
      return it == live.by_id.end() ? nullptr : it->second;
    }
  }
  return live.by_id.size() == 1 ? live.by_id.begin()->second : nullptr;
}

TraceSession::Adopt::Adopt(TraceSession* session) : previous_(t_current) { t_current = session; }

TraceSession::Adopt::~Adopt() { t_current = previous_; }

int32_t TraceSession::storage_id(const at::Tensor& real) {
  if (!real.has_storage()) return -1;
  auto* impl = real.storage().unsafeGetStorageImpl();
  auto [it, added] = storage_ids_.emplace(impl, static_cast<int32_t>(storage_owners_.size()));
  if (added) storage_owners_.emplace_back(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(impl));
  return it->second;
}

graph::ValueId TraceSession::define(const at::Tensor& real, int32_t producer) {
  return graph_.add_value(meta_of(real), producer, storage_id(real));
}

at::Tensor TraceSession::wrap_argument(const at::Tensor& real, int leaf, std::string name) {
  const graph::ValueId v = define(real, -1);
  graph::Input in;
  in.kind = graph::InputKind::kArgument;
  in.value = v;
  in.leaf = leaf;
  in.name = std::move(name);
  graph_.inputs.push_back(std::move(in));
  inputs_by_storage_[graph_.values[v].storage].push_back(real);
  at::Tensor tracer = make_tracer(real, v, id_, subclass_like_);
  // Code may branch on requires_grad; in a training trace the stand-in is the leaf autograd differentiates
  // for (an argument's own history, if any, stays outside: the compiled function's node links to it).
  if (real.requires_grad()) tracer.unsafeGetTensorImpl()->set_requires_grad(true);
  input_positions_.emplace(tracer.unsafeGetTensorImpl(), static_cast<int>(graph_.inputs.size() - 1));
  if (real.requires_grad() && real.is_leaf() && real.grad().defined()) stand_in_for_grad(real, tracer);
  return tracer;
}

// An argument's .grad() is autograd's field, not an op: the graph cannot take it as an input. The
// stand-in gets a gradient that is defined where eager's is (without one, a callable testing
// grad().defined() traced the other branch and its compiled step skipped every update) and whose every
// use ends the trace with the reason (kArgumentGrad: the engine then traces again with the gradients as
// leaves, whose stand-ins replace this one). A training trace's backward (backward_trace.cpp) takes each
// leaf's gradient at its AccumulateGrad node and never accumulates into this one.
void TraceSession::stand_in_for_grad(const at::Tensor& real, at::Tensor& tracer) {
  at::Tensor grad = make_tracer(real.grad(), graph::kNoValue, id_, subclass_like_);
  argument_grads_.emplace(grad.unsafeGetTensorImpl(), graph_.inputs.back().name);
  tracer.mutable_grad() = grad;
}

at::Tensor TraceSession::wrap_tangent(const at::Tensor& output_shadow, size_t index, size_t* position) {
  const at::Tensor real = at::ones_like(output_shadow, at::MemoryFormat::Contiguous);
  const graph::ValueId v = define(real, -1);
  graph::Input in;
  in.kind = graph::InputKind::kArgument;
  in.value = v;
  in.name = fmt::format("tangents[{}]", index);
  *position = graph_.inputs.size();
  graph_.inputs.push_back(std::move(in));
  return make_tracer(real, v, id_, subclass_like_);
}

int TraceSession::input_position(const c10::TensorImpl* leaf) const {
  auto it = input_positions_.find(leaf);
  return it == input_positions_.end() ? -1 : it->second;
}

graph::ValueId TraceSession::captured_value(const at::Tensor& real) {
  // At every use, not only the first: a parameter first read under a NoGradGuard (an embedding's max_norm
  // renormalization) and then in grad mode needs the training trace.
  if (real.requires_grad() && at::GradMode::is_enabled() && !training_)
    throw TraceFailure(TraceFailure::Kind::kGradRequired, "a captured tensor requires grad while grad mode is on");
  auto it = captured_current_.find(real.unsafeGetTensorImpl());
  if (it != captured_current_.end()) return it->second;
  if (real.requires_grad() && !real.is_leaf() && training_)
    throw TraceFailure(TraceFailure::Kind::kTrainingUnsupported,
                       "a captured tensor requires grad and has a history of its own (it is not a leaf such as a parameter); "
                       "pass it as an argument instead");
  if (real.layout() != c10::kStrided || real.is_conj() || real.is_neg())
    throw TraceFailure(TraceFailure::Kind::kUntraceable,
                       "a captured tensor is not a plain strided tensor (sparse, conjugate or negative view)");
  const graph::ValueId v = define(real, -1);
  graph::Input in;
  in.kind = graph::InputKind::kCaptured;
  in.value = v;
  in.name = fmt::format("captured[{}]", captured_tensors_.size());
  in.captured = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(real.getIntrusivePtr());
  // Memory the tensor does not own (from_blob) may be changed or freed by the callable after this op;
  // if the tensor turns out to be a temporary of the callable, the graph keeps this copy.
  // Such storage has no allocator (ATen's own tensors always have one).
  if (real.has_storage() && real.storage().allocator() == nullptr) borrowed_snapshots_.emplace(graph_.inputs.size(), real.clone());
  captured_tensors_.emplace_back(graph_.inputs.size(), real);
  const c10::TensorImpl* impl = real.unsafeGetTensorImpl();
  captured_as_seen_.emplace_back(c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(real.getIntrusivePtr()),
                                 at::Tensor(impl->shallow_copy_and_detach(impl->version_counter(), true)));
  if (real.requires_grad())
    captured_grads_.push_back(
        {c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(real.getIntrusivePtr()), real.grad(), in.name});
  graph_.inputs.push_back(std::move(in));
  captured_current_.emplace(real.unsafeGetTensorImpl(), v);
  input_positions_.emplace(real.unsafeGetTensorImpl(), static_cast<int>(graph_.inputs.size() - 1));
  inputs_by_storage_[graph_.values[v].storage].push_back(real);
  return v;
}

namespace {

// A tensor whose implementation still holds what it held when the trace first saw it.
bool unchanged(const c10::TensorImpl& now, const c10::TensorImpl& seen) {
  if (now.key_set() != seen.key_set() || now.dtype() != seen.dtype() || now.has_storage() != seen.has_storage()) return false;
  try {
    return !now.has_storage() || now.storage().unsafeGetStorageImpl() == seen.storage().unsafeGetStorageImpl();
  } catch (const c10::Error&) {  // a stand-in's implementation refuses access to its storage
    return false;
  }
}

}  // namespace

bool TraceSession::restore_replaced_captures() {
  bool replaced = false;
  for (auto& [weak, seen] : captured_as_seen_) {
    const auto tensor = weak.lock();
    if (!tensor || unchanged(*tensor, *seen.unsafeGetTensorImpl())) continue;
    tensor->shallow_copy_from(seen.getIntrusivePtr());
    replaced = true;
  }
  return replaced;
}

std::string TraceSession::restore_replaced_captured_grads(bool restore) {
  std::string first;
  for (auto& [weak, grad, name] : captured_grads_) {
    const auto impl = weak.lock();
    if (!impl) continue;
    at::Tensor tensor(impl);
    if (tensor.grad().unsafeGetTensorImpl() == grad.unsafeGetTensorImpl()) continue;
    if (restore) tensor.mutable_grad() = grad;
    if (first.empty()) first = name;
  }
  captured_grads_.clear();
  return first;
}

graph::ValueId TraceSession::value_of(const at::Tensor& t) {
  if (auto* tracer = as_tracer(t)) {
    if (tracer->session() != id_)
      throw TraceFailure(TraceFailure::Kind::kEscapedTracer,
                         "a tensor from an earlier trace was used (it escaped its callable, e.g. into a global)");
    // An argument that requires grad, used where the callable turned grad mode on (AutoGradMode inside a
    // call made without grad): eager's result would require grad, the inference trace's cannot.
    if (!training_ && t.requires_grad() && at::GradMode::is_enabled())
      throw TraceFailure(TraceFailure::Kind::kGradRequired, "an argument requires grad while grad mode is on");
    if (tracer->value() == graph::kNoValue) {
      const auto name = argument_grads_.find(tracer);
      throw TraceFailure(
          TraceFailure::Kind::kArgumentGrad,
          fmt::format("the callable uses {}.grad(), the gradient of a tensor passed as an argument, which cannot be an input "
                      "of the graph; capture the parameters instead (a lambda holding them or the module) or pass the "
                      "gradients as arguments",
                      name == argument_grads_.end() ? "an argument's" : name->second));
    }
    return tracer->value();
  }
  return captured_value(t);
}

graph::Arg TraceSession::record_arg(c10::IValue& v) {
  graph::Arg arg;
  if (v.isTensor() && v.toTensor().defined()) {
    const at::Tensor t = v.toTensor();
    arg.kind = graph::Arg::Kind::kValue;
    arg.value = value_of(t);
    if (auto* tracer = as_tracer(t)) v = tracer->shadow();
    return arg;
  }
  if (v.isTensorList() || v.isOptionalTensorList()) {
    const bool optional = v.isOptionalTensorList();
    arg.kind = optional ? graph::Arg::Kind::kOptionalValueList : graph::Arg::Kind::kValueList;
    if (optional) {
      c10::List<std::optional<at::Tensor>> real;
      for (const std::optional<at::Tensor>& t : v.toOptionalTensorList()) {
        const bool present = t.has_value() && t->defined();
        arg.list.push_back(present ? value_of(*t) : graph::kNoValue);
        if (!present) real.push_back(std::nullopt);
        else real.push_back(as_tracer(*t) ? as_tracer(*t)->shadow() : *t);
      }
      v = real;
    } else {
      c10::List<at::Tensor> real;
      for (const at::Tensor& t : v.toTensorList()) {
        arg.list.push_back(value_of(t));
        real.push_back(as_tracer(t) ? as_tracer(t)->shadow() : t);
      }
      v = real;
    }
    return arg;
  }
  arg.kind = graph::Arg::Kind::kConstant;
  arg.constant = v;
  return arg;
}

void TraceSession::before_write(graph::ValueId target) {
  const int32_t storage = graph_.values[target].storage;
  auto it = inputs_by_storage_.find(storage);
  if (it == inputs_by_storage_.end()) return;
  if (std::find(backed_up_storages_.begin(), backed_up_storages_.end(), storage) != backed_up_storages_.end()) return;
  backed_up_storages_.push_back(storage);
  for (const at::Tensor& input : it->second) backups_.emplace_back(input, input.clone());
}

void TraceSession::restore_mutated_inputs() {
  c10::impl::ExcludeDispatchKeyGuard no_trace(kTracerKey);
  at::NoGradGuard no_grad;  // a parameter (a leaf requiring grad) may be among them
  for (auto it = backups_.rbegin(); it != backups_.rend(); ++it) it->first.copy_(it->second);
  backups_.clear();
  backed_up_storages_.clear();
}

namespace {

// The keys a subclass-like session's op dispatches its shadows on below the tracer: without the MetaBit
// that marks its stand-ins (tracer_tensor.cpp), unless the traced tensors are meta tensors themselves.
c10::DispatchKeySet without_subclass_mark(c10::DispatchKeySet keys, const std::vector<c10::IValue>& originals) {
  auto is_meta = [](const at::Tensor& t) { return t.defined() && t.is_meta(); };
  for (const auto& v : originals) {
    if (v.isTensor() && is_meta(v.toTensor())) return keys;
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorList())
        if (is_meta(t)) return keys;
  }
  return keys.remove_backend(c10::BackendComponent::MetaBit);
}

}  // namespace

void TraceSession::record(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  std::lock_guard<std::recursive_mutex> one_at_a_time(record_mutex_);
  const auto& schema = op.schema();
  const size_t n = schema.arguments().size();
  const size_t begin = stack->size() - n;
  const bool breaks = is_data_dependent(op, *stack, begin);
  if (breaks && fullgraph_)
    throw TraceFailure(TraceFailure::Kind::kFullGraph,
                       fmt::format("fullgraph=true but {} needs a graph break (data-dependent operator); remove "
                                   "the data-dependent call or compile with fullgraph=false",
                                   op_name(op)));
  graph::Node node(op);
  node.kind = breaks ? graph::NodeKind::kBreak : graph::NodeKind::kOp;
  std::vector<c10::IValue> originals(stack->begin() + static_cast<std::ptrdiff_t>(begin), stack->end());
  for (size_t i = 0; i < n; ++i) {
    const auto& schema_arg = schema.arguments()[i];
    node.args.push_back(record_arg((*stack)[begin + i]));
    if (!writes(schema_arg)) continue;
    node.mutates = true;
    if (node.args.back().kind != graph::Arg::Kind::kValue)
      throw TraceFailure(TraceFailure::Kind::kUntraceable,
                         fmt::format("{} writes into a list of tensors; jitc does not trace that yet", op_name(op)));
    before_write(node.args.back().value);
  }
  if (graph::writes_unannotated(op, originals)) {  // e.g. batch_norm's running statistics in training mode
    node.mutates = true;
    for (const auto& arg : node.args) {
      if (arg.kind == graph::Arg::Kind::kValue) before_write(arg.value);
      for (auto v : arg.list)
        if (v != graph::kNoValue) before_write(v);
    }
  }
  if (node.mutates) check_no_partial_overlap(op, originals);
  const c10::DispatchKeySet below = keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kTracerKey);
  op.redispatchBoxed(subclass_like_ ? without_subclass_mark(below, originals) : below, stack);
  wrap_returns(op, stack, begin, originals, node);
  if (breaks) note_break(node, op, *stack, begin);
  else if (!op.schema().returns().empty() && is_checkable_scalar((*stack)[begin]))
    node.expected = (*stack)[begin];  // C++ may branch on it: replays check it like a break
  graph_.nodes.push_back(std::move(node));
}

void TraceSession::wrap_returns(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t begin,
                                const std::vector<c10::IValue>& originals, graph::Node& node) {
  const auto& schema = op.schema();
  const auto producer = static_cast<int32_t>(graph_.nodes.size());
  for (size_t r = 0; r < schema.returns().size(); ++r) {
    c10::IValue& out = (*stack)[begin + r];
    const auto& ret = schema.returns()[r];
    graph::NodeOutput output;
    if (out.isTensor() && out.toTensor().defined()) {
      const at::Tensor real = out.toTensor();
      check_traceable_result(real, op);
      const graph::ValueId v = define(real, producer);
      output.values.push_back(v);
      if (ret.alias_info() && ret.alias_info()->isWrite()) {
        // In-place / out=: hand back the caller's own tensor, now standing for the new version.
        for (size_t a = 0; a < schema.arguments().size(); ++a) {
          const auto& arg = schema.arguments()[a];
          if (!arg.alias_info() || !(*arg.alias_info() == *ret.alias_info())) continue;
          const at::Tensor& original = originals[a].toTensor();
          if (auto* tracer = as_tracer(original)) tracer->rebind(v);
          else captured_current_[original.unsafeGetTensorImpl()] = v;
          out = original;
        }
      } else {
        out = make_tracer(real, v, id_, subclass_like_);
      }
    } else if (out.isTensorList()) {
      output.is_list = true;
      c10::List<at::Tensor> wrapped;
      for (const at::Tensor& real : out.toTensorList()) {
        check_traceable_result(real, op);
        const graph::ValueId v = define(real, producer);
        output.values.push_back(v);
        wrapped.push_back(make_tracer(real, v, id_, subclass_like_));
      }
      out = wrapped;
    }
    node.outputs.push_back(std::move(output));
  }
}

void TraceSession::note_break(graph::Node& node, const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t begin) {
  const bool scalar_result = !op.schema().returns().empty() && !stack[begin].isTensor() && !stack[begin].isTensorList();
  if (scalar_result) node.expected = stack[begin];
  const std::string name = op_name(op);
  breaks_.push_back(scalar_result ? BreakRecord{name, "Data dependent operator",
                                                fmt::format("Operator `{}` has a non-Tensor output whose value is dependent on the data of "
                                                            "Tensor inputs.",
                                                            name)}
                                  : BreakRecord{name, "Dynamic shape operator",
                                                fmt::format("Operator `{}`'s output shape depends on input Tensor data.", name)});
}

graph::ValueId TraceSession::bind_output(at::Tensor& result) {
  if (!result.defined()) return graph::kNoValue;
  c10::impl::ExcludeDispatchKeyGuard no_trace(kTracerKey);
  const graph::ValueId v = value_of(result);
  if (auto* tracer = as_tracer(result)) result = tracer->shadow();
  return v;
}

graph::Graph TraceSession::finish() {
  // A captured tensor only this trace still holds was created inside the callable without an op
  // (from_blob, .data()): it becomes a constant owned by the graph. One the trace wrote to cannot be replayed.
  inputs_by_storage_.clear();
  for (auto& [position, tensor] : captured_tensors_) {
    graph::Input& in = graph_.inputs[position];
    const bool written =
        std::find(backed_up_storages_.begin(), backed_up_storages_.end(), graph_.values[in.value].storage) != backed_up_storages_.end();
    if (tensor.use_count() > 1 + (written ? 1 : 0)) continue;
    if (written)
      unreplayable_ =
          "the callable wrote into a tensor it created without an ATen op (from_blob, or an alias made by .data() or "
          "variable_data(), as torch::optim's steps write parameters)";
    in.kind = graph::InputKind::kConstant;
    auto snapshot = borrowed_snapshots_.find(position);
    in.constant = snapshot != borrowed_snapshots_.end() ? snapshot->second : tensor;
    in.captured =
        c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>());
  }
  captured_tensors_.clear();
  captured_as_seen_.clear();
  captured_current_.clear();
  input_positions_.clear();
  borrowed_snapshots_.clear();
  backups_.clear();
  return std::move(graph_);
}

}  // namespace jitc::tracer
