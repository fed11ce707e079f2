// Type erasure between the typed CompiledFunction and the engine: a call's arguments flatten into Leaves
// (non-owning, on the caller's stack) and its result into ResultLeaves. Internal; not part of the API.
#pragma once
#include <jitc/fields.h>

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace jitc::detail {

// One flattened argument. A std::vector<Tensor> argument is a kListSize leaf then one leaf per element, a
// std::tuple or std::pair a kListSize leaf (its arity) then its elements' leaves; an empty std::optional is
// a kNone leaf.
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

template <class... Ts>
void flatten_arg(Leaves& out, int arg, const std::tuple<Ts...>& tuple);
template <class A, class B>
void flatten_arg(Leaves& out, int arg, const std::pair<A, B>& pair) {
  flatten_arg(out, arg, std::tuple<const A&, const B&>(pair.first, pair.second));
}
// The arity leaf keeps an empty std::optional<std::tuple<...>> (kNone) apart from a tuple whose first
// element is an empty optional.
template <class... Ts>
void flatten_arg(Leaves& out, int arg, const std::tuple<Ts...>& tuple) {
  Leaf size;
  size.kind = Leaf::Kind::kListSize;
  size.argument = static_cast<int16_t>(arg);
  size.i = static_cast<int64_t>(sizeof...(Ts));
  out.push_back(size);
  std::apply([&](const auto&... e) { (flatten_arg(out, arg, e), ...); }, tuple);
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
template <class... Ts>
struct ArgReader<std::tuple<Ts...>> {
  static std::tuple<Ts...> read(c10::ArrayRef<Leaf> leaves, size_t& pos) {
    ++pos;                                                                        // the arity leaf
    return std::tuple<Ts...>{ArgReader<std::decay_t<Ts>>::read(leaves, pos)...};  // braces: left-to-right order
  }
};
template <class A, class B>
struct ArgReader<std::pair<A, B>> {
  static std::pair<A, B> read(c10::ArrayRef<Leaf> leaves, size_t& pos) {
    auto t = ArgReader<std::tuple<A, B>>::read(leaves, pos);
    return {std::move(std::get<0>(t)), std::move(std::get<1>(t))};
  }
};
template <class T>
struct ArgReader {
  static T read(c10::ArrayRef<Leaf> leaves, size_t& pos) {
    const Leaf& l = leaves[pos++];
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(l.d);
    else return static_cast<T>(l.i);
  }
};

// ---- flattening and rebuilding results ------------------------------------------------------------
template <class T, class = void>
struct HasFields : std::false_type {};
template <class T>
struct HasFields<T, std::void_t<decltype(Fields<T>::members)>> : std::true_type {};

template <class T>
struct ScalarCodec;
template <class T>
struct FieldsCodec;
// Scalars and jitc::Fields structs; the specializations below take tensors, vectors, tuples and pairs.
template <class T>
struct ResultCodec : std::conditional_t<HasFields<T>::value, FieldsCodec<T>, ScalarCodec<T>> {};

template <class T>
struct ScalarCodec {
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
template <class A, class B>
struct ResultCodec<std::pair<A, B>> {
  static void flatten(ResultLeaves& out, const std::pair<A, B>& pair) {
    ResultCodec<std::decay_t<A>>::flatten(out, pair.first);
    ResultCodec<std::decay_t<B>>::flatten(out, pair.second);
  }
  static std::pair<A, B> rebuild(ResultLeaves& in, size_t& pos) {
    return std::pair<A, B>{ResultCodec<A>::rebuild(in, pos), ResultCodec<B>::rebuild(in, pos)};
  }
};
template <class T>
struct FieldsCodec {
  static_assert(std::is_default_constructible_v<T>, "jitc::compile: a struct result listed in jitc::Fields must be default-constructible");
  template <class M>
  using Field = std::decay_t<decltype(std::declval<T&>().*std::declval<M>())>;

  static void flatten(ResultLeaves& out, const T& value) {
    std::apply([&](auto... m) { (ResultCodec<Field<decltype(m)>>::flatten(out, value.*m), ...); }, Fields<T>::members);
  }
  static T rebuild(ResultLeaves& in, size_t& pos) {
    T value{};
    std::apply([&](auto... m) { ((value.*m = ResultCodec<Field<decltype(m)>>::rebuild(in, pos)), ...); },
               Fields<T>::members);  // a fold over `,` runs left to right
    return value;
  }
};

// ---- what may cross the boundary (checked where the signature is known, naming the position) --------
template <class T>
struct IsArgument : std::bool_constant<std::is_arithmetic_v<T>> {};
template <>
struct IsArgument<at::Tensor> : std::true_type {};
template <>
struct IsArgument<std::vector<at::Tensor>> : std::true_type {};
template <class T>
struct IsArgument<std::optional<T>> : IsArgument<T> {};
template <class... Ts>
struct IsArgument<std::tuple<Ts...>> : std::bool_constant<(IsArgument<std::decay_t<Ts>>::value && ...)> {};
template <class A, class B>
struct IsArgument<std::pair<A, B>> : std::bool_constant<IsArgument<A>::value && IsArgument<B>::value> {};

template <class T>
struct IsResult : std::bool_constant<std::is_arithmetic_v<T> || std::is_void_v<T> || HasFields<T>::value> {};
template <>
struct IsResult<at::Tensor> : std::true_type {};
template <>
struct IsResult<std::vector<at::Tensor>> : std::true_type {};
template <class... Ts>
struct IsResult<std::tuple<Ts...>> : std::bool_constant<(IsResult<std::decay_t<Ts>>::value && ...)> {};
template <class A, class B>
struct IsResult<std::pair<A, B>> : std::bool_constant<IsResult<A>::value && IsResult<B>::value> {};

// Instantiated per argument: a compile error shows ArgumentCheck<position, type>.
template <size_t Position, class T>
struct ArgumentCheck {
  static_assert(IsArgument<T>::value,
                "jitc::compile: the argument at `Position` (see ArgumentCheck<Position, T> in this error) has a type "
                "jitc cannot pass. Arguments may be at::Tensor, double, int64_t, bool, std::vector<at::Tensor>, and "
                "std::tuple, std::pair or std::optional of those. Fix: capture other values in a lambda, e.g. "
                "jitc::compile([&](const at::Tensor& x) { return model->forward(x, options); })");
  static constexpr bool value = true;
};
template <class T>
struct ResultCheck {
  static_assert(IsResult<T>::value,
                "jitc::compile: the result type (see ResultCheck<T> in this error) cannot be returned. Results may be "
                "at::Tensor, a scalar, void, std::vector<at::Tensor>, std::tuple or std::pair of those, or a struct "
                "listed in jitc::Fields (include/jitc/fields.h). Fix: specialize jitc::Fields for the struct, or "
                "return its tensors from a lambda");
  static constexpr bool value = true;
};

}  // namespace jitc::detail
