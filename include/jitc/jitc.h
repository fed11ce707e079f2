// jitc: torch.compile for C++ programs using LibTorch.
//
//   auto f = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return at::relu(x.matmul(w)); });
//   auto y = f(x, w);   // first call: trace (result exactly eager's); later calls: guards + replay
//
// Semantics, as jax.jit documents them: the callable runs only while tracing. Side effects outside ATen
// (printing, counters, values of variables captured by the lambda) happen then, not on replay. Ops on
// captured tensors (module parameters) are recorded and the tensors read by reference at every call.
#pragma once
#include <jitc/compiled_function.h>
#include <jitc/dynamic.h>
#include <jitc/errors.h>
#include <jitc/options.h>
#include <jitc/stats.h>

#include <source_location>
#include <type_traits>
#include <utility>

namespace jitc {

namespace detail {
template <class T>
struct SignatureOf : SignatureOf<decltype(&T::operator())> {};
template <class R, class... A>
struct SignatureOf<R (*)(A...)> {
  using type = R(A...);
};
template <class R, class... A>
struct SignatureOf<R(A...)> {
  using type = R(A...);
};
template <class C, class R, class... A>
struct SignatureOf<R (C::*)(A...)> {
  using type = R(A...);
};
template <class C, class R, class... A>
struct SignatureOf<R (C::*)(A...) const> {
  using type = R(A...);
};

// A torch::nn module: a ModuleHolder or std::shared_ptr whose pointee has one non-template forward.
template <class M, class = void>
struct IsModule : std::false_type {};
template <class M>
struct IsModule<M, std::void_t<decltype(&std::decay_t<decltype(*std::declval<M&>())>::forward)>>
    : std::true_type {};

template <class M, class R, class... A>
CompiledFunction<R(A...)> compile_module(M module, Options options, R (*)(A...), std::source_location where) {
  return CompiledFunction<R(A...)>(
      [module = std::move(module)](A... args) mutable -> R { return (*module).forward(std::forward<A>(args)...); },
      std::move(options), where);
}
template <class T>
struct ForwardPointer;
template <class C, class R, class... A>
struct ForwardPointer<R (C::*)(A...)> {
  using type = R (*)(A...);
};
template <class C, class R, class... A>
struct ForwardPointer<R (C::*)(A...) const> {
  using type = R (*)(A...);
};
}  // namespace detail

// Compile a callable with an explicit signature (needed for generic lambdas and overloaded functors).
template <class Signature, class F>
CompiledFunction<Signature> compile(F callable, Options options = {},
                                    std::source_location where = std::source_location::current()) {
  return CompiledFunction<Signature>(std::move(callable), std::move(options), where);
}

// Compile a lambda, function pointer, functor, or torch::nn module (its forward).
template <class F>
auto compile(F callable, Options options = {}, std::source_location where = std::source_location::current()) {
  if constexpr (detail::IsModule<F>::value) {
    using Impl = std::decay_t<decltype(*std::declval<F&>())>;
    using Pointer = typename detail::ForwardPointer<decltype(&Impl::forward)>::type;
    return detail::compile_module(std::move(callable), std::move(options), Pointer{}, where);
  } else {
    using Signature = typename detail::SignatureOf<std::decay_t<F>>::type;
    return CompiledFunction<Signature>(std::move(callable), std::move(options), where);
  }
}

// torch._dynamo.explain: graphs, breaks with reasons, ops per graph and guards for these arguments.
template <class Signature, class... Args>
ExplainOutput explain(const CompiledFunction<Signature>& f, Args&&... args) {
  return f.explain(std::forward<Args>(args)...);
}

// Drop every compiled entry of every compiled function (torch._dynamo.reset).
void reset();

// Empty the compile cache: compiled programs kept in memory and every entry under JITC_CACHE_DIR.
// Compiled functions keep the programs they already use.
void clear_cache();

}  // namespace jitc
