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
#include <jitc/detail/modules.h>
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

template <class Signature, class F>
CompiledFunction<Signature> compile_module(F&& module, Options options, std::source_location where) {
  ModuleHandle<F> handle(std::forward<F>(module));
  return CompiledFunction<Signature>(ForwardCaller<Signature>::make(std::move(handle.impl)), std::move(options), where,
                                     std::move(handle.root));
}
}  // namespace detail

// Compile a callable with an explicit signature (needed for generic lambdas, overloaded functors and
// modules whose forward is a template, such as torch::nn::Sequential returning something else than a tensor).
template <class Signature, class F>
CompiledFunction<Signature> compile(F&& callable, Options options = {}, std::source_location where = std::source_location::current()) {
  if constexpr (detail::module_form<F>() != detail::ModuleForm::kNone)
    return detail::compile_module<Signature>(std::forward<F>(callable), std::move(options), where);
  else return CompiledFunction<Signature>(std::decay_t<F>(std::forward<F>(callable)), std::move(options), where);
}

// Compile a lambda, function pointer, functor, or torch::nn module (its forward; see detail/modules.h for
// the forms a module may be passed in).
template <class F>
auto compile(F&& callable, Options options = {}, std::source_location where = std::source_location::current()) {
  if constexpr (detail::module_form<F>() != detail::ModuleForm::kNone) {
    return detail::compile_module<detail::ModuleSignature<F>>(std::forward<F>(callable), std::move(options), where);
  } else {
    using Signature = typename detail::SignatureOf<std::decay_t<F>>::type;
    return CompiledFunction<Signature>(std::decay_t<F>(std::forward<F>(callable)), std::move(options), where);
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
