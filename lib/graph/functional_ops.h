// The ops functionalization puts in place of mutating ones, and what it must know of a written tensor's
// memory (functionalize.cpp; the tracer reads `writes` too).
#pragma once
#include "graph/graph.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>

namespace jitc::graph {

// Whether a schema argument is written (Tensor(a!)).
bool writes(const c10::Argument& a);

std::optional<c10::OperatorHandle> find_op(const std::string& name, const std::string& overload);

// The out-of-place form of in-place op `name.overload`: the same names without the underscore, except
// where ATen names it otherwise (CPU dropout draws its mask with bernoulli_.float).
std::optional<c10::OperatorHandle> out_of_place(const c10::OperatorName& in_place);

// The functional twin ATen registers for an op that writes an argument of its own that is not self
// (`rrelu_with_noise_functional` returns the result and the noise it drew), or nullopt.
std::optional<c10::OperatorHandle> functional_twin(const c10::OperatorHandle& op);

// A meta tensor of `m`'s (static) sizes, strides and offset.
at::Tensor meta_tensor(const TensorMeta& m);

// False where two elements may share memory (an expanded tensor): eager writes such memory element by
// element, the last write winning for every element that shares it, which a functional value (one element
// per position) cannot express. True only where the strides prove every element apart.
bool elements_apart(const TensorMeta& m);

}  // namespace jitc::graph
