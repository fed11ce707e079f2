// jitc::Fields: the customization point that lets a struct of your own be a compiled function's result.
// Specialize it with the struct's fields as pointers to members; each field may be anything a result may
// be (a tensor, a scalar, a std::tuple, std::pair or std::vector of tensors, another listed struct):
//
//   struct Output { at::Tensor logits; std::tuple<at::Tensor, at::Tensor> state; };
//   template <> struct jitc::Fields<Output> {
//     static constexpr auto members = std::make_tuple(&Output::logits, &Output::state);
//   };
//
// The struct must be default-constructible: a compiled call builds one and assigns the listed fields;
// fields not listed keep their default values.
#pragma once

namespace jitc {

template <class T>
struct Fields {};  // no `members`: the struct is not a result type

}  // namespace jitc
