#include "guards/guard_set.h"

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/bit_cast.h>
#include <c10/util/SmallVector.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fmt/ranges.h>

namespace jitc::guards {

namespace {

using Kind = detail::Leaf::Kind;

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kTensor: return "Tensor";
    case Kind::kNone: return "None";
    case Kind::kDouble: return "float";
    case Kind::kInt: return "int";
    case Kind::kBool: return "bool";
    case Kind::kListSize: return "list";
  }
  return "?";
}

std::string global_diff(const GlobalState& want, const GlobalState& got) {
  std::string s = "GLOBAL_STATE changed: ";
  if (want.grad_mode != got.grad_mode) s += "grad_mode ";
  if (want.autocast_cpu != got.autocast_cpu || want.autocast_cuda != got.autocast_cuda ||
      want.autocast_cpu_dtype != got.autocast_cpu_dtype || want.autocast_cuda_dtype != got.autocast_cuda_dtype)
    s += "autocast ";
  if (want.default_dtype != got.default_dtype) s += "default_dtype ";
  return s;
}

std::string scalar_text(const ScalarGuard& g) {
  switch (g.kind) {
    case Kind::kDouble: return fmt::format("{} == {}", g.name, g.d);
    case Kind::kBool: return fmt::format("{} == {}", g.name, g.i ? "True" : "False");
    case Kind::kListSize: return fmt::format("len({}) == {}", g.name, g.i);
    default: return fmt::format("{} == {}", g.name, g.i);
  }
}

std::string dims_text(uint64_t mask) {
  std::string s = "{";
  for (int d = 0; d < 64; ++d)
    if (mask >> d & 1) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
  return s + "}";
}

std::string expr_text(const GuardSet& g, const graph::SymExpr& e) {
  std::string s = e.to_string();
  for (int k = g.num_symbols; k-- > 0;) {  // longest names first (s12 before s1)
    const std::string name = "s" + std::to_string(k);
    for (size_t at = s.find(name); at != std::string::npos; at = s.find(name, at + 1))
      if (at + name.size() >= s.size() || !isdigit(s[at + name.size()])) s.replace(at, name.size(), g.symbol_sources[k]);
  }
  return s;
}

const char* yes_no(uintptr_t v) { return v ? "True" : "False"; }

const std::string& options_printed(const ModuleGuard& g, const std::string& path) {
  static const std::string& kUnknown = *new std::string("the options it was traced with");
  const auto it = g.options_printed.find(path);
  return it == g.options_printed.end() ? kUnknown : it->second;
}

std::string module_text(const ModuleGuard& g, size_t k, uintptr_t actual) {
  using Slot = ModuleGuard::Slot;
  const std::string& n = g.names[k];
  switch (g.slots[k]) {
    case Slot::kTraining:
      return fmt::format("module '{}' training mismatch. expected {}, actual {}", n, yes_no(g.words[k]), yes_no(actual));
    case Slot::kParameters: return fmt::format("len({}._parameters) == {}", n, g.words[k]);
    case Slot::kBuffers: return fmt::format("len({}._buffers) == {}", n, g.words[k]);
    case Slot::kChildren: return fmt::format("len({}._modules) == {}", n, g.words[k]);
    case Slot::kParameter: return fmt::format("___check_obj_id({}): registered parameter was replaced", n);
    case Slot::kBuffer: return fmt::format("___check_obj_id({}): registered buffer was replaced", n);
    case Slot::kChild: return fmt::format("___check_obj_id({}): registered submodule was replaced", n);
    case Slot::kHeld: return fmt::format("{} is referenced by its registration only: the module's field was re-assigned", n);
    case Slot::kOptions: return fmt::format("module '{}' options mismatch. expected {}", n, options_printed(g, n));
  }
  return n;
}

// One walk serves both paths: with kVerbose=false every reason lambda compiles away.
template <bool kVerbose>
class Walker {
 public:
  Walker(const GuardSet& g, const CallView& c, int64_t* symbols) : g_(g), c_(c), symbols_(symbols) {}
  std::string reason;

  bool run() {
    const GlobalState& now = *c_.global;
    if (!(now == g_.global)) return fail([&] { return global_diff(g_.global, now); });
    return module() && layout() && scalars() && tensors() && aliasing() && symbols() && scalar_symbols() && shapes();
  }

 private:
  template <class F>
  bool fail(F&& make_reason) {
    if constexpr (kVerbose) reason = make_reason();
    return false;
  }

  const c10::TensorImpl* tensor(size_t i) const {
    const TensorGuard& t = g_.tensors[i];
    if (t.leaf >= 0) return c_.leaves[t.leaf].tensor->unsafeGetTensorImpl();
    return c_.captured[i - g_.num_argument_tensors];
  }

  // Words are compared in the order they were read, so the first difference is the outermost change (a
  // count before the identities it shifts).
  bool module() {
    const auto& want = g_.module.words;
    if (want.empty()) return true;
    const auto& got = c_.module;
    if (got.size() == want.size() && std::memcmp(got.data(), want.data(), want.size() * sizeof(uintptr_t)) == 0) return true;
    return fail([&] {
      for (size_t k = 0; k < want.size(); ++k)
        if (k >= got.size() || got[k] != want[k]) return module_text(g_.module, k, k < got.size() ? got[k] : 0);
      return fmt::format("module state mismatch. expected {} words, actual {}", want.size(), got.size());
    });
  }

  // Structure first; a list of another length is reported as its len() guard, as Dynamo does.
  bool layout() {
    const size_t n = std::min(c_.leaves.size(), g_.layout.size());
    for (size_t i = 0; i < n; ++i) {
      if (c_.leaves[i].kind != g_.layout[i])
        return fail([&] {
          return fmt::format("argument '{}' mismatch. expected {}, actual {}", g_.leaf_names[i], kind_name(g_.layout[i]),
                             kind_name(c_.leaves[i].kind));
        });
      if (g_.layout[i] == Kind::kListSize)
        for (const auto& s : g_.scalars)
          if (s.leaf == static_cast<int>(i) && s.i != c_.leaves[i].i) return fail([&] { return scalar_text(s); });
    }
    if (c_.leaves.size() != g_.layout.size())
      return fail(
          [&] { return fmt::format("argument structure mismatch. expected {} leaves, actual {}", g_.layout.size(), c_.leaves.size()); });
    return true;
  }

  bool scalars() {
    for (const auto& s : g_.scalars) {
      const auto& leaf = c_.leaves[s.leaf];
      // Doubles compare bitwise: the graph holds the traced value, and -0.0 and NaN payloads matter.
      const bool same = s.kind == Kind::kDouble ? std::memcmp(&leaf.d, &s.d, sizeof s.d) == 0 : leaf.i == s.i;
      if (!same) return fail([&] { return scalar_text(s); });
    }
    return true;
  }

  bool tensors() {
    for (size_t i = 0; i < g_.tensors.size(); ++i)
      if (!tensor_matches(g_.tensors[i], tensor(i))) return false;
    return true;
  }

  bool tensor_matches(const TensorGuard& want, const c10::TensorImpl* got) {
    const std::string& n = want.name;
    if (!got) return fail([&] { return fmt::format("captured tensor '{}' was freed", n); });
    if (got->key_set().raw_repr() != want.dispatch_keys)
      return fail([&] {
        return fmt::format("tensor '{}' dispatch key set mismatch. expected {}, actual {}", n,
                           c10::toString(c10::DispatchKeySet(c10::DispatchKeySet::RAW, want.dispatch_keys)), c10::toString(got->key_set()));
      });
    if (c10::typeMetaToScalarType(got->dtype()) != want.dtype)
      return fail([&] {
        return fmt::format("tensor '{}' dtype mismatch. expected {}, actual {}", n, c10::toString(want.dtype),
                           c10::toString(c10::typeMetaToScalarType(got->dtype())));
      });
    if (got->device() != want.device)
      return fail([&] {
        return fmt::format("tensor '{}' Tensor device index mismatch. Expected device index to be {}, actual {}", n, want.device.index(),
                           got->device().index());
      });
    if (got->requires_grad() != want.requires_grad)
      return fail([&] { return fmt::format("tensor '{}' requires_grad mismatch. expected requires_grad={}", n, int(want.requires_grad)); });
    const auto dim = static_cast<size_t>(got->dim());
    if (dim != want.sizes.size())
      return fail([&] { return fmt::format("tensor '{}' rank mismatch. expected {}, actual {}", n, want.sizes.size(), dim); });
    const auto sizes = got->sizes();
    const auto strides = got->strides();
    for (size_t d = 0; d < dim; ++d)
      if (want.sizes[d] != kSymbolic && want.sizes[d] != sizes[d])
        return fail(
            [&] { return fmt::format("tensor '{}' size mismatch at index {}. expected {}, actual {}", n, d, want.sizes[d], sizes[d]); });
    for (size_t d = 0; d < dim; ++d)
      if (want.strides[d] != kSymbolic && want.strides[d] != strides[d])
        return fail([&] {
          return fmt::format("tensor '{}' stride mismatch at index {}. expected {}, actual {}", n, d, want.strides[d], strides[d]);
        });
    if (c_.marks && want.leaf >= 0 && (c_.marks[want.leaf] & ~want.dynamic_dims))
      return fail([&] { return fmt::format("{}._dynamo_dynamic_indices.issubset({})", n, dims_text(want.dynamic_dims)); });
    return true;
  }

  // Each argument tensor must be the same object as, and share storage with, the same earlier
  // arguments as when traced. Storage pointers are read once per argument.
  bool aliasing() {
    const int n = static_cast<int>(g_.tensors.size());  // arguments and captured tensors
    c10::SmallVector<const void*, 16> storages(n);
    for (int i = 0; i < n; ++i) {
      const auto* t = tensor(i);
      storages[i] = t->has_storage() ? static_cast<const void*>(t->storage().unsafeGetStorageImpl()) : t;
    }
    for (int i = 0; i < n; ++i) {
      const auto* a = tensor(i);
      int object = i, storage = i;
      for (int j = 0; j < i && (object == i || storage == i); ++j) {
        if (object == i && a == tensor(j)) object = j;
        if (storage == i && storages[i] == storages[j]) storage = j;
      }
      if (object != g_.same_object[i] || storage != g_.same_storage[i]) return alias_failure(i);
    }
    return true;
  }

  bool alias_failure(int i) {
    return fail([&] {
      if (g_.same_storage[i] == i)
        return fmt::format("Duplicate tensor found where not expected! {}should not alias to anything, but is aliased", g_.tensors[i].name);
      return fmt::format("tensor '{}' is expected to alias '{}', but does not", g_.tensors[i].name, g_.tensors[g_.same_storage[i]].name);
    });
  }

  bool symbols() {
    for (const auto& s : g_.symbols) {
      const int64_t v = tensor(s.tensor)->sizes()[s.dim];
      if (v < s.min) return fail([&] { return fmt::format("{} <= {}", s.min, g_.symbol_sources[s.symbol]); });
      if (v > s.max) return fail([&] { return fmt::format("{} <= {}", g_.symbol_sources[s.symbol], s.max); });
      symbols_[s.symbol] = v;
    }
    return true;
  }

  bool scalar_symbols() {
    for (const auto& s : g_.scalar_symbols) {
      const auto& leaf = c_.leaves[s.leaf];
      const int64_t v = s.kind == Kind::kDouble ? c10::bit_cast<int64_t>(leaf.d) : leaf.i;
      if (s.kind == Kind::kInt && (v == 0 || v == 1))
        return fail([&] { return fmt::format("{} == {} (ints 0 and 1 specialize)", g_.leaf_names[s.leaf], v); });
      if (s.bind) symbols_[s.symbol] = v;
      else if (symbols_[s.symbol] != v)
        return fail([&] { return fmt::format("{} == {}", g_.leaf_names[s.leaf], g_.symbol_sources[s.symbol]); });
    }
    return true;
  }

  bool shapes() {
    for (const auto& s : g_.shapes) {
      const auto* t = tensor(s.tensor);
      const int64_t v = s.stride ? t->strides()[s.dim] : t->sizes()[s.dim];
      if (v != s.expr.eval(symbols_))
        return fail([&] {
          return fmt::format("{}.{}()[{}] == {}", g_.tensors[s.tensor].name, s.stride ? "stride" : "size", s.dim, expr_text(g_, s.expr));
        });
    }
    return true;
  }

  const GuardSet& g_;
  const CallView& c_;
  int64_t* symbols_;
};

}  // namespace

bool check(const GuardSet& guards, const CallView& call, int64_t* symbols) { return Walker<false>(guards, call, symbols).run(); }

std::string explain(const GuardSet& guards, const CallView& call) {
  std::vector<int64_t> symbols(static_cast<size_t>(guards.num_symbols) + 1);
  Walker<true> w(guards, call, symbols.data());
  return w.run() ? std::string() : w.reason;
}

bool same_except_shapes(const GuardSet& a, const GuardSet& b) {
  if (a.layout != b.layout || !(a.global == b.global) || !(a.module == b.module) || a.num_argument_tensors != b.num_argument_tensors ||
      a.same_object != b.same_object || a.same_storage != b.same_storage || a.tensors.size() != b.tensors.size() ||
      a.scalars.size() != b.scalars.size())
    return false;
  for (size_t i = 0; i < a.scalars.size(); ++i) {
    const auto &x = a.scalars[i], &y = b.scalars[i];
    if (x.leaf != y.leaf || x.kind != y.kind) return false;
    const bool may_differ = x.kind == Kind::kInt || x.kind == Kind::kDouble;
    if (!may_differ && (x.i != y.i || std::memcmp(&x.d, &y.d, sizeof x.d) != 0)) return false;
  }
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto &x = a.tensors[i], &y = b.tensors[i];
    if (x.leaf != y.leaf || x.dispatch_keys != y.dispatch_keys || x.dtype != y.dtype || x.device != y.device ||
        x.requires_grad != y.requires_grad || x.sizes.size() != y.sizes.size())
      return false;
  }
  return true;
}

std::vector<std::string> describe(const GuardSet& g) {
  std::vector<std::string> lines;
  const auto& s = g.global;
  lines.push_back(fmt::format("GLOBAL_STATE: grad_mode={} autocast_cpu={} ({}) autocast_cuda={} ({}) default_dtype={}", s.grad_mode,
                              s.autocast_cpu, c10::toString(s.autocast_cpu_dtype), s.autocast_cuda, c10::toString(s.autocast_cuda_dtype),
                              c10::toString(s.default_dtype)));
  for (size_t k = 0; k < g.module.words.size(); ++k)
    if (g.module.slots[k] == ModuleGuard::Slot::kTraining)
      lines.push_back(fmt::format("MODULE_MATCH: {}.training == {}", g.module.names[k], yes_no(g.module.words[k])));
    else if (g.module.slots[k] >= ModuleGuard::Slot::kParameter && g.module.slots[k] <= ModuleGuard::Slot::kChild)
      lines.push_back(fmt::format("ID_MATCH: ___check_obj_id({}, {:#x})", g.module.names[k], g.module.words[k]));
    else if (g.module.slots[k] == ModuleGuard::Slot::kOptions && (k == 0 || g.module.slots[k - 1] != ModuleGuard::Slot::kOptions))
      lines.push_back(fmt::format("OPTIONS_MATCH: {}.options == {}", g.module.names[k], options_printed(g.module, g.module.names[k])));
  for (const auto& t : g.tensors) {
    std::vector<std::string> sizes, strides;
    for (auto v : t.sizes) sizes.push_back(v == kSymbolic ? "None" : std::to_string(v));
    for (auto v : t.strides) strides.push_back(v == kSymbolic ? "None" : std::to_string(v));
    lines.push_back(fmt::format("TENSOR_MATCH: check_tensor({}, {}, {}, device={}, requires_grad={}, size=[{}], stride=[{}])", t.name,
                                c10::toString(c10::DispatchKeySet(c10::DispatchKeySet::RAW, t.dispatch_keys)), c10::toString(t.dtype),
                                t.device.str(), t.requires_grad ? "True" : "False", fmt::join(sizes, ", "), fmt::join(strides, ", ")));
  }
  for (const auto& sc : g.scalars) lines.push_back("EQUALS_MATCH: " + scalar_text(sc));
  std::vector<std::string> distinct;
  for (int i = 0; i < g.num_argument_tensors; ++i)
    if (g.same_storage[i] == i) distinct.push_back(g.tensors[i].name);
  if (distinct.size() > 1) lines.push_back(fmt::format("NO_TENSOR_ALIASING: check_no_aliasing({})", fmt::join(distinct, ", ")));
  for (const auto& sy : g.symbols) {
    std::string range = fmt::format("{} <= {}", sy.min, g.symbol_sources[sy.symbol]);
    if (sy.max != std::numeric_limits<int64_t>::max()) range += fmt::format(" and {} <= {}", g.symbol_sources[sy.symbol], sy.max);
    lines.push_back("LAMBDA_GUARD: " + range);
  }
  for (const auto& ss : g.scalar_symbols)
    if (!ss.bind) lines.push_back(fmt::format("LAMBDA_GUARD: {} == {}", g.leaf_names[ss.leaf], g.symbol_sources[ss.symbol]));
    else if (ss.kind == Kind::kInt) lines.push_back(fmt::format("LAMBDA_GUARD: {} not in (0, 1)", g.leaf_names[ss.leaf]));
  for (const auto& sh : g.shapes)
    lines.push_back(fmt::format("LAMBDA_GUARD: {}.{}()[{}] == {}", g.tensors[sh.tensor].name, sh.stride ? "stride" : "size", sh.dim,
                                expr_text(g, sh.expr)));
  return lines;
}

}  // namespace jitc::guards
