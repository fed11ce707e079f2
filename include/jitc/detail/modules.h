// torch::nn modules as compiled callables, recognized by their `forward` without including torch/nn:
//  - a ModuleHolder (torch::nn::Linear, Sequential, ...) or std::shared_ptr to a module: jitc shares it;
//  - a torch::nn::AnyModule: jitc keeps a copy (which shares the module);
//  - a torch::nn::Module subclass object: an lvalue is referenced (it must outlive the compiled function,
//    as a model passed to torch.compile does), a temporary is moved into the compiled function.
// A non-template forward gives the signature; a template one (Sequential, AnyModule) defaults to
// LibTorch's own default, at::Tensor(const at::Tensor&), and jitc::compile<Sig>(module) names another.
// Internal; not part of the API.
#pragma once
#include <jitc/detail/leaves.h>

#include <memory>
#include <type_traits>
#include <utility>

namespace torch::nn {
class Module;
}

namespace jitc::detail {

template <class T>
struct ForwardPointer;
template <class C, class R, class... A>
struct ForwardPointer<R (C::*)(A...)> {
  using type = R(A...);
};
template <class C, class R, class... A>
struct ForwardPointer<R (C::*)(A...) const> {
  using type = R(A...);
};

// is_base_of accepts an incomplete base: without torch/nn included nothing is a module.
// clang-format 14 takes the && for a reference.
// clang-format off
template <class T>
constexpr bool is_module_class = std::is_class_v<T> && std::is_base_of_v<torch::nn::Module, T>;
// clang-format on

template <class M, class = void>
struct Pointee {
  using type = void;
};
template <class M>
struct Pointee<M, std::void_t<decltype(*std::declval<M&>())>> {
  using type = std::remove_reference_t<decltype(*std::declval<M&>())>;
};

template <class M, class = void>
struct IsAnyModule : std::false_type {};
template <class M>
struct IsAnyModule<M, std::void_t<decltype(std::declval<M&>().any_forward()), decltype(std::declval<M&>().ptr())>>
    : std::is_same<decltype(std::declval<M&>().ptr()), std::shared_ptr<torch::nn::Module>> {};

enum class ModuleForm { kNone, kShared, kAny, kObject };

template <class F>
constexpr ModuleForm module_form() {
  using M = std::decay_t<F>;
  if constexpr (is_module_class<std::remove_cv_t<typename Pointee<M>::type>>) return ModuleForm::kShared;
  else if constexpr (is_module_class<M>) return ModuleForm::kObject;
  else if constexpr (IsAnyModule<M>::value) return ModuleForm::kAny;
  else return ModuleForm::kNone;
}

// The object whose forward runs.
template <class F>
using ModuleImpl =
    std::conditional_t<module_form<F>() == ModuleForm::kShared, std::remove_cv_t<typename Pointee<std::decay_t<F>>::type>, std::decay_t<F>>;

template <class Impl, class = void>
struct HasPlainForward : std::false_type {};
template <class Impl>
struct HasPlainForward<Impl, std::void_t<decltype(&Impl::forward)>> : std::true_type {};

template <class Impl, class = void>
struct TakesOneTensor : std::false_type {};
template <class Impl>
struct TakesOneTensor<Impl, std::void_t<decltype(std::declval<Impl&>().forward(std::declval<const at::Tensor&>()))>> : std::true_type {};

template <class Impl>
struct DefaultSignature {
  static_assert(TakesOneTensor<Impl>::value,
                "jitc::compile: this module's forward is a template or overloaded, so its signature is unknown. Fix: "
                "name it, e.g. jitc::compile<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, double)>(module)");
  using type = at::Tensor(const at::Tensor&);
};

// Specialized so that &Impl::forward is formed only where it names one function.
template <class Impl, bool Plain = HasPlainForward<Impl>::value>
struct ForwardSignature : DefaultSignature<Impl> {};
template <class Impl>
struct ForwardSignature<Impl, true> : ForwardPointer<decltype(&Impl::forward)> {};

template <class F>
using ModuleSignature = typename ForwardSignature<ModuleImpl<F>>::type;

// Holds the module the way its form says; `root` is what the guards read.
template <class F>
struct ModuleHandle {
  using Impl = ModuleImpl<F>;
  std::shared_ptr<Impl> impl;  // kShared and kObject (non-owning for an lvalue object)
  std::shared_ptr<torch::nn::Module> root;

  explicit ModuleHandle(F&& m) {
    constexpr ModuleForm form = module_form<F>();
    if constexpr (form == ModuleForm::kAny) {
      impl = std::make_shared<Impl>(std::forward<F>(m));  // an AnyModule copy shares the module
      root = impl->ptr();
    } else if constexpr (form == ModuleForm::kObject && std::is_lvalue_reference_v<F>) {
      impl = std::shared_ptr<Impl>(std::shared_ptr<void>(), &m);  // aliasing, owns nothing: the caller's object
      root = impl;
    } else if constexpr (form == ModuleForm::kObject) {
      impl = std::make_shared<Impl>(std::move(m));
      root = impl;
    } else if constexpr (std::is_same_v<std::decay_t<F>, std::shared_ptr<Impl>>) {
      impl = m;
      root = impl;
    } else {  // a ModuleHolder
      impl = m.ptr();
      root = impl;
    }
  }
};

// Calls forward with the compiled signature's return type; a template forward is given it explicitly.
template <class R, class Impl, class... A>
R call_forward(Impl& impl, A&&... args) {
  if constexpr (std::is_void_v<R>) impl.forward(std::forward<A>(args)...);
  else if constexpr (std::is_convertible_v<decltype(impl.forward(std::forward<A>(args)...)), R>)
    return impl.forward(std::forward<A>(args)...);
  else return impl.template forward<R>(std::forward<A>(args)...);
}

template <class Signature>
struct ForwardCaller;
template <class R, class... A>
struct ForwardCaller<R(A...)> {
  template <class Impl>
  static auto make(std::shared_ptr<Impl> impl) {
    return [impl = std::move(impl)](A... args) -> R { return call_forward<R>(*impl, std::forward<A>(args)...); };
  }
};

}  // namespace jitc::detail
