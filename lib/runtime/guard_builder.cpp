#include "runtime/entry.h"
#include "runtime/global_state.h"

#include <fmt/format.h>

namespace jitc::runtime {

namespace {

using guards::kSymbolic;
using Kind = detail::Leaf::Kind;

guards::TensorGuard tensor_guard(const at::Tensor& t, std::string name, int leaf) {
  guards::TensorGuard g;
  g.name = std::move(name);
  g.leaf = leaf;
  g.dispatch_keys = t.key_set().raw_repr();
  g.dtype = t.scalar_type();
  g.device = t.device();
  g.requires_grad = t.requires_grad();
  g.sizes.assign(t.sizes().begin(), t.sizes().end());
  g.strides.assign(t.strides().begin(), t.strides().end());
  return g;
}

class Builder {
 public:
  Builder(const graph::Graph& g, c10::ArrayRef<detail::Leaf> leaves, const std::vector<std::string>& names,
          const std::vector<std::pair<int64_t, int64_t>>& ranges)
      : g_(g), leaves_(leaves), ranges_(ranges) {
    out_.leaf_names = names;
    out_.num_symbols = g.num_symbols;
    out_.symbol_sources.resize(g.num_symbols);
    bound_.assign(g.num_symbols, false);
  }

  guards::GuardSet build(const std::vector<uint64_t>& dynamic_dims, const std::vector<int>& scalar_symbols) {
    scalar_symbols_ = scalar_symbols;
    out_.global = capture_global_state();
    for (size_t i = 0; i < leaves_.size(); ++i) {
      out_.layout.push_back(leaves_[i].kind);
      if (leaves_[i].kind == Kind::kTensor) add_argument(i, dynamic_dims[i]);
      else if (leaves_[i].kind != Kind::kNone) add_scalar(i);
    }
    out_.num_argument_tensors = static_cast<int>(out_.tensors.size());
    add_scalar_symbols();
    for (size_t i = 0; i < leaves_.size(); ++i)
      if (leaves_[i].kind == Kind::kTensor) real_.push_back(*leaves_[i].tensor);
    for (const auto& in : g_.inputs)
      if (in.kind == graph::InputKind::kCaptured) {
        real_.emplace_back(in.captured.lock());
        out_.tensors.push_back(tensor_guard(real_.back(), in.name, -1));
      }
    add_aliasing();
    return std::move(out_);
  }

 private:
  int scalar_symbol(size_t leaf) const { return leaf < scalar_symbols_.size() ? scalar_symbols_[leaf] : -1; }

  void add_scalar(size_t i) {
    if (scalar_symbol(i) >= 0) return;  // a symbol: add_scalar_symbols guards it
    const auto& l = leaves_[i];
    out_.scalars.push_back({out_.leaf_names[i], static_cast<int>(i), l.kind, l.d, l.i});
  }

  // After the sizes: a symbol a size bound already only has to equal the argument.
  void add_scalar_symbols() {
    for (size_t i = 0; i < leaves_.size(); ++i) {
      const int s = scalar_symbol(i);
      if (s < 0) continue;
      out_.scalar_symbols.push_back({s, static_cast<int>(i), leaves_[i].kind, !bound_[s]});
      if (bound_[s]) continue;
      bound_[s] = true;
      out_.symbol_sources[s] = out_.leaf_names[i];
    }
  }

  const graph::Input* input_for_leaf(size_t leaf) const {
    for (const auto& in : g_.inputs)
      if (in.kind == graph::InputKind::kArgument && in.leaf == static_cast<int>(leaf)) return &in;
    return nullptr;
  }

  void add_argument(size_t leaf, uint64_t dynamic_dims) {
    const at::Tensor& t = *leaves_[leaf].tensor;
    auto guard = tensor_guard(t, out_.leaf_names[leaf], static_cast<int>(leaf));
    guard.dynamic_dims = dynamic_dims;
    const int index = static_cast<int>(out_.tensors.size());
    if (const graph::Input* in = input_for_leaf(leaf)) {
      const auto& meta = g_.values[in->value].meta;
      for (size_t d = 0; d < meta.sizes.size(); ++d) symbolic_dim(guard, index, d, meta.sizes[d], false);
      for (size_t d = 0; d < meta.strides.size(); ++d) symbolic_dim(guard, index, d, meta.strides[d], true);
    } else {  // the same object as an earlier argument: the aliasing guard covers its metadata
      std::fill(guard.sizes.begin(), guard.sizes.end(), kSymbolic);
      std::fill(guard.strides.begin(), guard.strides.end(), kSymbolic);
    }
    out_.tensors.push_back(std::move(guard));
  }

  void symbolic_dim(guards::TensorGuard& guard, int index, size_t d, const graph::SymExpr& e, bool stride) {
    if (e.is_constant()) return;
    (stride ? guard.strides : guard.sizes)[d] = kSymbolic;
    const bool plain = e.coeff == 1 && e.offset == 0 && e.factors[1] < 0;
    if (!stride && plain && !bound_[e.factors[0]]) {
      const int s = e.factors[0];
      bound_[s] = true;
      out_.symbols.push_back({s, index, static_cast<int>(d), ranges_[s].first, ranges_[s].second});
      out_.symbol_sources[s] = fmt::format("{}.size()[{}]", guard.name, d);
      return;
    }
    out_.shapes.push_back({index, static_cast<int>(d), stride, e});
  }

  // Aliasing among arguments and captured tensors (a module's own buffer passed back in, say).
  void add_aliasing() {
    const int n = static_cast<int>(real_.size());
    for (int i = 0; i < n; ++i) {
      const at::Tensor& a = real_[i];
      int object = i, storage = i;
      for (int j = 0; j < i; ++j) {
        const at::Tensor& b = real_[j];
        if (object == i && a.unsafeGetTensorImpl() == b.unsafeGetTensorImpl()) object = j;
        if (storage == i && a.has_storage() && b.has_storage() && a.storage().unsafeGetStorageImpl() == b.storage().unsafeGetStorageImpl())
          storage = j;
      }
      out_.same_object.push_back(static_cast<int16_t>(object));
      out_.same_storage.push_back(static_cast<int16_t>(storage));
    }
  }

  const graph::Graph& g_;
  c10::ArrayRef<detail::Leaf> leaves_;
  const std::vector<std::pair<int64_t, int64_t>>& ranges_;
  guards::GuardSet out_;
  std::vector<bool> bound_;
  std::vector<int> scalar_symbols_;  // per leaf: the symbol of a dynamic int or double argument, or -1
  std::vector<at::Tensor> real_;     // per tensor guard: the tensor it was built from
};

}  // namespace

guards::GuardSet build_guards(const graph::Graph& graph, c10::ArrayRef<detail::Leaf> leaves, const std::vector<std::string>& leaf_names,
                              const std::vector<uint64_t>& dynamic_dims, const std::vector<std::pair<int64_t, int64_t>>& symbol_ranges,
                              const std::vector<int>& scalar_symbols) {
  return Builder(graph, leaves, leaf_names, symbol_ranges).build(dynamic_dims, scalar_symbols);
}

}  // namespace jitc::runtime
