// CompiledFunction: what jitc::compile returns. It has the callable's signature; a call flattens its
// arguments on the stack and hands them to the engine (guards, replay, recompiles) in lib/runtime.
#pragma once
#include <jitc/detail/leaves.h>
#include <jitc/options.h>
#include <jitc/stats.h>

#include <memory>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>

namespace torch::nn {
class Module;
}

namespace jitc {

namespace detail {
class Engine;
// `module`: the torch::nn module a compiled forward belongs to (null for other callables); its training
// flags and registered tensors are guarded.
std::shared_ptr<Engine> make_engine(Invoker invoker, Options options, int num_arguments, std::source_location where,
                                    std::shared_ptr<torch::nn::Module> module);
ResultLeaves engine_call(Engine& engine, c10::ArrayRef<Leaf> leaves);
ExplainOutput engine_explain(Engine& engine, c10::ArrayRef<Leaf> leaves);
Stats engine_stats(const Engine& engine);
void engine_wait_for_compiles(Engine& engine);
const std::string& engine_name(const Engine& engine);

template <class R>
R rebuild_result(ResultLeaves&& out) {
  if constexpr (std::is_void_v<R>) {
    (void)out;
  } else {
    size_t pos = 0;
    return ResultCodec<std::decay_t<R>>::rebuild(out, pos);
  }
}
}  // namespace detail

template <class Signature>
class CompiledFunction;

template <class R, class... Args>
class CompiledFunction<R(Args...)> {
  // clang-format 14 mangles the fold expression.
  // clang-format off
  static_assert(((!std::is_lvalue_reference_v<Args> || std::is_const_v<std::remove_reference_t<Args>>) && ...),
                "jitc::compile: the callable takes a non-const reference; it would write into a copy. Return the "
                "value instead (results may be tensors, tuples or vectors of tensors).");
  // clang-format on
  static_assert(detail::ResultCheck<std::decay_t<R>>::value);
  template <size_t... I>
  static constexpr bool check_arguments(std::index_sequence<I...>) {
    return (detail::ArgumentCheck<I, std::decay_t<Args>>::value && ...);
  }
  static_assert(check_arguments(std::index_sequence_for<Args...>{}));

 public:
  using Result = std::decay_t<R>;

  template <class F>
  CompiledFunction(F callable, Options options, std::source_location where = std::source_location::current(),
                   std::shared_ptr<torch::nn::Module> module = nullptr)
      : engine_(detail::make_engine(make_invoker(std::move(callable)), std::move(options), static_cast<int>(sizeof...(Args)), where,
                                    std::move(module))) {}

  Result operator()(Args... args) const {
    detail::Leaves leaves;
    flatten(leaves, args...);
    return detail::rebuild_result<Result>(detail::engine_call(*engine_, leaves));
  }

  // torch._dynamo.explain for one set of arguments: runs (and compiles if needed) the function once.
  ExplainOutput explain(Args... args) const {
    detail::Leaves leaves;
    flatten(leaves, args...);
    return detail::engine_explain(*engine_, leaves);
  }

  Stats stats() const { return detail::engine_stats(*engine_); }
  // Returns when the programs that calls started building in the background (Options::
  // compile_in_background) are ready: a serving process's warm-up, a benchmark before it times calls.
  void wait_for_compiles() const { detail::engine_wait_for_compiles(*engine_); }
  const std::string& name() const { return detail::engine_name(*engine_); }

 private:
  static void flatten(detail::Leaves& leaves, const std::decay_t<Args>&... args) {
    int position = 0;
    (detail::flatten_arg(leaves, position++, args), ...);
  }

  template <class F>
  static detail::Invoker make_invoker(F callable) {
    return [callable = std::move(callable)](c10::ArrayRef<detail::Leaf> leaves) mutable {
      size_t pos = 0;
      // Braced init evaluates the readers left to right, matching the flattening order.
      std::tuple<std::decay_t<Args>...> typed{detail::ArgReader<std::decay_t<Args>>::read(leaves, pos)...};
      detail::ResultLeaves out;
      if constexpr (std::is_void_v<R>) {
        std::apply(callable, typed);
      } else {
        detail::ResultCodec<Result>::flatten(out, std::apply(callable, typed));
      }
      return out;
    };
  }

  std::shared_ptr<detail::Engine> engine_;
};

}  // namespace jitc
