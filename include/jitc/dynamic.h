// Dynamic-shape marks on tensors, with torch._dynamo's semantics except where noted:
// - mark_dynamic(t, dim, min, max): the dim may be symbolic (within [min, max]), even with dynamic=false.
//   Unlike torch._dynamo, the first entry is still static: a C++ tracer cannot see the arithmetic the
//   callable does on sizes, so the symbolic graph is derived from two traces at different sizes (see
//   lib/graph/generalize.h). The dim becomes symbolic at its first size change;
// - maybe_mark_dynamic(t, dim): symbolic if possible, no error if it must be specialized;
// - mark_static(t, dim): never symbolic (lower precedence than mark_dynamic).
// Marks live on the tensor object (its TensorImpl) until it is freed; marking a new dim later forces a
// recompile of functions whose entries treated it as static ("listen to the user").
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <limits>

namespace jitc {

void mark_dynamic(const at::Tensor& tensor, int64_t dim, int64_t min = 2, int64_t max = std::numeric_limits<int64_t>::max());
void maybe_mark_dynamic(const at::Tensor& tensor, int64_t dim);
void mark_static(const at::Tensor& tensor, int64_t dim);

}  // namespace jitc
