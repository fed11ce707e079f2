#include "inductor/lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace jitc::inductor {

using c10::ScalarType;
using graph::SymExpr;
using graph::ValueId;

LoweringContext::LoweringContext(const graph::Graph& graph) : graph_(graph) {
  loader.resize(graph.values.size());
  stored.assign(graph.values.size(), 0);
  group.assign(graph.values.size(), -1);
  view_of.assign(graph.values.size(), graph::kNoValue);
  run_time_checks.assign(graph.values.size(), 0);
  row_dims.assign(graph.values.size(), {});
}

std::optional<int> LoweringContext::load_view(KernelBuilder& kb, ValueId view, const Index& index) {
  // Only a real alias may be read through its own strides: a reshape that had to copy in eager has the
  // strides of a new tensor (the trace gave it a storage of its own) and goes through the index remap.
  const int32_t storage = graph_.values[view].storage;
  ValueId root = view_of[view];
  while (root != graph::kNoValue && !is_buffer(root) && graph_.values[root].storage == storage) root = view_of[root];
  if (root == graph::kNoValue || graph_.values[root].storage != storage) return std::nullopt;
  const auto& m = meta(view);
  const int base = kb.binary(ScalarOp::kSub, kb.extent(m.storage_offset), kb.extent(meta(root).storage_offset));
  return kb.load(buffer(kb, root, false), kb.add(base, kb.linear(index, m.strides)));
}

int LoweringContext::buffer(KernelBuilder& kb, ValueId v, bool written) {
  values_read.push_back(v);
  if (!written && loader[v] && stored[v] && group[v] < 0)
    fail(kb, {BuildFailure::Kind::kReadsUnplaced, v, "it reads the buffer of a value no kernel computes yet"}, meta(v).dtype);
  const int b = kb.buffer(fmt::format("buf{}", v), meta(v).dtype, written);
  auto& values = buffer_values.back();
  if (static_cast<size_t>(b) == values.size()) values.push_back(v);
  return b;
}

int LoweringContext::fail(KernelBuilder& kb, BuildFailure why, c10::ScalarType type) {
  if (!failure) failure = std::move(why);
  return kb.constant(0, compute_type_of(type));
}

void LoweringContext::begin_kernel(int group) {
  current_group = group;
  failure.reset();
  memo_.clear();
  reduction_loops_of_.clear();
  buffer_values.emplace_back();
  inlined.clear();
  values_read.clear();
}

void LoweringContext::begin_attempt() {
  group.assign(group.size(), -1);
  buffer_values.clear();
  current_group = -1;
  memo_.clear();
  reduction_loops_of_.clear();
  inlined.clear();
  values_read.clear();
}

int LoweringContext::memoized(const std::string& key, const Index& index, const std::function<int()>& make) {
  auto it = memo_.find({key, index});
  if (it != memo_.end()) return it->second;
  const int e = make();
  memo_.emplace(std::make_pair(key, index), e);
  return e;
}

namespace {

// The element being built, for the kernel builder's checks (KernelBuilder::enter_element).
class ElementScope {
 public:
  ElementScope(KernelBuilder& kb, const Index& index) : kb_(kb) { kb_.enter_element(index); }
  ~ElementScope() { kb_.leave_element(); }
  ElementScope(const ElementScope&) = delete;
  ElementScope& operator=(const ElementScope&) = delete;

 private:
  KernelBuilder& kb_;
};

}  // namespace

// Values inlined into one kernel bring their reduction loops' variables along (the 62 per-gradient norms
// of a gradient clipping read by their total): past this many, the next one is stored by a kernel of its
// own, well before the kernel IR's limit of 64 (kernel_builder.cpp).
constexpr size_t kInlinedLoopVars = 48;

// Reductions that an inlined value brought into another reduction's operand (the per-gradient sums of
// squares that `stack(sums).sum()` totals), over other and more than kNestedReductionElements elements:
// the kernel would run them one after the other in the outer reduction's row, one CUDA block or CPU
// thread for all of them. Stored by kernels of their own, each is split over blocks or threads. A
// normalization's statistics (the max that softmax's sum reads) loop over the same row and stay inlined.
namespace {

constexpr int64_t kNestedReductionElements = 4096;

bool nests_other_reductions(const KernelBuilder& kb, int enclosing, std::pair<int, int> loops) {
  if (enclosing < 0) return false;
  const int64_t outer = kb.loop_elements(enclosing);
  for (int loop = loops.first; loop < loops.second; ++loop) {
    const int64_t inner = kb.loop_elements(loop);
    if (inner != outer && (inner < 0 || inner > kNestedReductionElements)) return true;
  }
  return false;
}

}  // namespace

int LoweringContext::at(KernelBuilder& kb, ValueId v, const Index& index) {
  // Eager stores every op's result in its dtype: an inlined half or bfloat16 value is rounded as that
  // store would round it, so no lowering has to remember to (rounding a rounded value is folded).
  if (failure) return kb.constant(0, compute_type_of(meta(v).dtype));  // the kernel is discarded
  if (!is_buffer(v)) {
    const int enclosing = kb.open_reduction_loop();
    const int value = memoized(fmt::format("%{}", v), index, [&] {
      if (std::find(inlined.begin(), inlined.end(), v) == inlined.end()) inlined.push_back(v);
      const ElementScope element(kb, index);
      const int loops_before = kb.kernel().num_reduction_loops;
      const int computed = kb.round_to(loader[v](kb, index), meta(v).dtype);
      reduction_loops_of_[v] = {loops_before, kb.kernel().num_reduction_loops};
      return computed;
    });
    // Also where v was computed before, outside this reduction (a value the kernel stores).
    if (nests_other_reductions(kb, enclosing, reduction_loops_of_[v]))
      return fail(kb, {BuildFailure::Kind::kNeedsBuffer, v, "a large reduction inside another reduction's operand runs on one block"},
                  meta(v).dtype);
    if (kb.kernel().vars.size() > kInlinedLoopVars)
      return fail(kb,
                  {BuildFailure::Kind::kNeedsBuffer, v,
                   fmt::format("inlined, the kernel would loop over more than {} variables", kInlinedLoopVars)},
                  meta(v).dtype);
    return value;
  }
  const auto& m = meta(v);
  return kb.load(buffer(kb, v, false), kb.linear(index, m.strides));
}

Loader LoweringContext::broadcast(ValueId v, const graph::SymShape& shape) {
  const graph::SymShape own = sizes(v);
  if (own == shape) return input(v);
  if (own.size() > shape.size()) throw Unsupported("an operand has more dims than the result");
  return [this, v, own, shape](KernelBuilder& kb, const Index& index) {
    Index mine(own.size());
    const size_t lead = shape.size() - own.size();
    for (size_t d = 0; d < own.size(); ++d) mine[d] = own[d].is_one() && !shape[lead + d].is_one() ? kb.index_constant(0) : index[lead + d];
    return at(kb, v, mine);
  };
}

Loader LoweringContext::operand(const Operand& o, const graph::SymShape& shape, ScalarType dtype) {
  if (o.is_tensor()) {
    Loader l = broadcast(o.value, shape);
    return [l, dtype](KernelBuilder& kb, const Index& index) { return kb.cast(l(kb, index), dtype); };
  }
  if (o.runtime_double()) {
    const int symbol = o.symbolic->factors[0];
    return [symbol, dtype](KernelBuilder& kb, const Index&) { return kb.cast(kb.sym_double(symbol), dtype); };
  }
  if (o.symbolic) {
    const SymExpr e = *o.symbolic;
    return [e, dtype](KernelBuilder& kb, const Index&) { return kb.cast(kb.extent(e), dtype); };
  }
  const c10::Scalar s = o.scalar;
  return [s, dtype](KernelBuilder& kb, const Index&) {
    if (s.isFloatingPoint()) return kb.cast(kb.floating(s.toDouble(), ScalarType::Double), dtype);
    if (s.isBoolean()) return kb.cast(kb.integer(s.toBool(), ScalarType::Bool), dtype);
    return kb.cast(kb.integer(s.toLong(), ScalarType::Long), dtype);
  };
}

ValueId LoweringContext::tensor_arg(const graph::Node& n, size_t i) const {
  if (i >= n.args.size() || n.args[i].kind != graph::Arg::Kind::kValue)
    throw Unsupported(fmt::format("argument {} of {} is not a tensor", i, n.name()));
  return n.args[i].value;
}

Operand LoweringContext::operand_of(const graph::Node& n, size_t i) const {
  if (i >= n.args.size()) throw Unsupported(fmt::format("{} has no argument {}", n.name(), i));
  const auto& a = n.args[i];
  Operand o;
  if (a.kind == graph::Arg::Kind::kValue) {
    o.value = a.value;
    return o;
  }
  if (a.kind != graph::Arg::Kind::kConstant) throw Unsupported(fmt::format("argument {} of {} is a list", i, n.name()));
  if (!a.symbolic.empty() && a.constant.isDouble()) {
    if (i < 64) runtime_doubles_read |= uint64_t{1} << i;
    o.symbolic = a.symbolic[0];
    o.scalar = a.constant.toDouble();
    return o;
  }
  if (!a.symbolic.empty()) {
    if (!a.constant.isInt()) throw Unsupported(fmt::format("argument {} of {} is a symbolic list", i, n.name()));
    o.symbolic = a.symbolic[0];
    o.scalar = a.constant.toInt();
    return o;
  }
  if (a.constant.isDouble()) o.scalar = a.constant.toDouble();
  else if (a.constant.isInt()) o.scalar = a.constant.toInt();
  else if (a.constant.isBool()) o.scalar = a.constant.toBool();
  else if (a.constant.isScalar()) o.scalar = a.constant.toScalar();
  else throw Unsupported(fmt::format("argument {} of {} is not a number", i, n.name()));
  if (o.scalar.isComplex()) throw Unsupported(fmt::format("argument {} of {} is complex", i, n.name()));
  return o;
}

namespace {

// ATen's ResultTypeState (aten/src/ATen/native/TypeProperties.cpp): tensors with dims, zero-dim tensors
// and wrapped numbers promote separately; a lower group only matters when it is of a higher category.
ScalarType promote(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  return c10::promoteTypes(a, b);
}

ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (c10::isFloatingType(higher)) return higher;
  if (higher == ScalarType::Bool || c10::isFloatingType(lower)) return promote(higher, lower);
  if (higher != ScalarType::Undefined) return higher;
  return lower;
}

}  // namespace

ScalarType LoweringContext::result_type(const std::vector<Operand>& operands) const {
  ScalarType dim = ScalarType::Undefined, zero = ScalarType::Undefined, wrapped = ScalarType::Undefined;
  for (const auto& o : operands) {
    if (o.is_tensor()) {
      const auto& m = meta(o.value);
      (m.sizes.empty() ? zero : dim) = promote(m.sizes.empty() ? zero : dim, m.dtype);
      continue;
    }
    ScalarType t = o.scalar.isFloatingPoint() ? c10::typeMetaToScalarType(c10::get_default_dtype())
                   : o.scalar.isBoolean()     ? ScalarType::Bool
                                              : ScalarType::Long;
    if (o.symbolic && !o.runtime_double()) t = ScalarType::Long;
    wrapped = promote(wrapped, t);
  }
  return combine_categories(dim, combine_categories(zero, wrapped));
}

namespace {

const Registry& registry() {
  static const Registry& all = *new Registry([] {
    Registry r;
    register_pointwise(r);
    register_reductions(r);
    register_views(r);
    register_windows(r);
    register_gradients(r);
    return r;
  }());
  return all;
}

}  // namespace

const LowerFn* find_lowering(const graph::Node& node) {
  const auto& r = registry();
  const auto& name = node.op.operator_name();
  // The default overload is "name.default" in the registry (as in Python): aten::sum's default takes a
  // dtype where sum.dim_IntList takes dims, so it must not fall through to the bare name's lowering.
  auto it = r.find(name.name + "." + (name.overload_name.empty() ? "default" : name.overload_name));
  if (it == r.end()) it = r.find(name.name);
  return it == r.end() ? nullptr : &it->second;
}

bool is_view_lowering(const graph::Node& node) {
  const auto& schema = node.op.schema();
  if (schema.returns().empty()) return false;
  const auto* info = schema.returns()[0].alias_info();
  return info && !info->isWrite();
}

}  // namespace jitc::inductor
