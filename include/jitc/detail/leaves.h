// Type erasure between the typed CompiledFunction and the engine: a call's arguments flatten into Leaves
// (non-owning, on the caller's stack) and its result into ResultLeaves. Internal; not part of the API.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

namespace jitc::detail {

// One flattened argument. A std::vector<Tensor> argument is a kListSize leaf then one leaf per element;
// an empty std::optional is a kNone leaf.
struct Leaf {
  enum class Kind : uint8_t { kTensor, kNone, kDouble, kInt, kBool, kListSize };
  Kind kind = Kind::kNone;
  int16_t argument = 0;  // position in the callable's signature
  const at::Tensor* tensor = nullptr;
  double d = 0;
  int64_t i = 0;  // kInt value, kBool value (0/1) or kListSize length
};
using Leaves = c10::SmallVector<Leaf, 16>;

struct ResultLeaf {
  enum class Kind : uint8_t { kTensor, kDouble, kInt, kBool };
  Kind kind = Kind::kTensor;
  at::Tensor tensor;
  double d = 0;
  int64_t i = 0;
};
using ResultLeaves = c10::SmallVector<ResultLeaf, 4>;  // inline: a call returning a few results allocates no list

// Runs the user's callable on (possibly substituted) leaves and flattens its result.
using Invoker = std::function<ResultLeaves(c10::ArrayRef<Leaf>)>;

// ---- flattening arguments -------------------------------------------------------------------------
inline Leaf tensor_leaf(const at::Tensor& t, int arg) {
  Leaf l;
  l.kind = t.defined() ? Leaf::Kind::kTensor : Leaf::Kind::kNone;
  l.argument = static_cast<int16_t>(arg);
  l.tensor = &t;
  return l;
}
inline void flatten_arg(Leaves& out, int arg, const at::Tensor& t) { out.push_back(tensor_leaf(t, arg)); }
inline void flatten_arg(Leaves& out, int arg, const std::optional<at::Tensor>& t) {
  if (t) return out.push_back(tensor_leaf(*t, arg));
  Leaf l;
  l.argument = static_cast<int16_t>(arg);
  out.push_back(l);
}
inline void flatten_arg(Leaves& out, int arg, const std::vector<at::Tensor>& list) {
  Leaf size;
  size.kind = Leaf::Kind::kListSize;
  size.argument = static_cast<int16_t>(arg);
  size.i = static_cast<int64_t>(list.size());
  out.push_back(size);
  for (const auto& t : list) out.push_back(tensor_leaf(t, arg));
}
template <class T>
void flatten_arg(Leaves& out, int arg, const std::optional<T>& value) {
  if (value) return flatten_arg(out, arg, *value);
  Leaf l;
  l.argument = static_cast<int16_t>(arg);
  out.push_back(l);
}
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
void flatten_arg(Leaves& out, int arg, T value) {
  Leaf l;
  l.argument = static_cast<int16_t>(arg);
  if constexpr (std::is_same_v<T, bool>) {
    l.kind = Leaf::Kind::kBool;
    l.i = value;
  } else if constexpr (std::is_floating_point_v<T>) {
    l.kind = Leaf::Kind::kDouble;
    l.d = value;
  } else {
    l.kind = Leaf::Kind::kInt;
    l.i = static_cast<int64_t>(value);
  }
  out.push_back(l);
}

// ---- rebuilding typed arguments from leaves (used to run the callable) ----------------------------
template <class T>
struct ArgReader;

template <>
struct ArgReader<at::Tensor> {
  static at::Tensor read(c10::ArrayRef<Leaf> leaves, size_t& pos) {
    const Leaf& l = leaves[pos++];
    return l.kind == Leaf::Kind::kTensor ? *l.tensor : at::Tensor();
  }
};
template <>
struct ArgReader<std::vector<at::Tensor>> {
  static std::vector<at::Tensor> read(c10::ArrayRef<Leaf> leaves, size_t& pos) {
    const auto n = static_cast<size_t>(leaves[pos++].i);
    std::vector<at::Tensor> list;
    list.reserve(n);
    for (size_t k = 0; k < n; ++k) list.push_back(ArgReader<at::Tensor>::read(leaves, pos));
    return list;
  }
};
template <class T>
struct ArgReader<std::optional<T>> {
  static std::optional<T> read(c10::ArrayRef<Leaf> leaves, size_t& pos) {
    if (leaves[pos].kind == Leaf::Kind::kNone) {
      ++pos;
      return std::nullopt;
    }
    return ArgReader<T>::read(leaves, pos);
  }
};
template <class T>
struct ArgReader {
  static_assert(std::is_arithmetic_v<T>,
                "jitc::compile: arguments must be at::Tensor, std::vector<at::Tensor>, double, int64_t, "
                "bool or std::optional of those");
  static T read(c10::ArrayRef<Leaf> leaves, size_t& pos) {
    const Leaf& l = leaves[pos++];
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(l.d);
    else return static_cast<T>(l.i);
  }
};

// ---- flattening and rebuilding results ------------------------------------------------------------
template <class T>
struct ResultCodec {
  static_assert(std::is_arithmetic_v<T>,
                "jitc::compile: results must be at::Tensor, std::tuple or std::vector of tensors, or a "
                "scalar");
  static void flatten(ResultLeaves& out, T value) {
    ResultLeaf l;
    if constexpr (std::is_same_v<T, bool>) {
      l.kind = ResultLeaf::Kind::kBool;
      l.i = value;
    } else if constexpr (std::is_floating_point_v<T>) {
      l.kind = ResultLeaf::Kind::kDouble;
      l.d = value;
    } else {
      l.kind = ResultLeaf::Kind::kInt;
      l.i = static_cast<int64_t>(value);
    }
    out.push_back(std::move(l));
  }
  static T rebuild(ResultLeaves& in, size_t& pos) {
    const ResultLeaf& l = in[pos++];
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(l.d);
    else return static_cast<T>(l.i);
  }
};
template <>
struct ResultCodec<at::Tensor> {
  static void flatten(ResultLeaves& out, const at::Tensor& t) {
    ResultLeaf l;
    l.tensor = t;
    out.push_back(std::move(l));
  }
  static at::Tensor rebuild(ResultLeaves& in, size_t& pos) { return std::move(in[pos++].tensor); }
};
template <>
struct ResultCodec<std::vector<at::Tensor>> {
  static void flatten(ResultLeaves& out, const std::vector<at::Tensor>& list) {
    ResultCodec<int64_t>::flatten(out, static_cast<int64_t>(list.size()));
    for (const auto& t : list) ResultCodec<at::Tensor>::flatten(out, t);
  }
  static std::vector<at::Tensor> rebuild(ResultLeaves& in, size_t& pos) {
    const auto n = static_cast<size_t>(in[pos++].i);
    std::vector<at::Tensor> list;
    list.reserve(n);
    for (size_t k = 0; k < n; ++k) list.push_back(ResultCodec<at::Tensor>::rebuild(in, pos));
    return list;
  }
};
template <class... Ts>
struct ResultCodec<std::tuple<Ts...>> {
  static void flatten(ResultLeaves& out, const std::tuple<Ts...>& tuple) {
    std::apply([&](const auto&... e) { (ResultCodec<std::decay_t<decltype(e)>>::flatten(out, e), ...); }, tuple);
  }
  static std::tuple<Ts...> rebuild(ResultLeaves& in, size_t& pos) {
    return std::tuple<Ts...>{ResultCodec<Ts>::rebuild(in, pos)...};  // braces: left-to-right order
  }
};

}  // namespace jitc::detail
