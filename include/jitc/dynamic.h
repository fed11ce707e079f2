// Dynamic-shape marks on tensors, with torch._dynamo's semantics:
// - mark_dynamic(t, dim, min, max): the dim is symbolic from the start (within [min, max]);
// - maybe_mark_dynamic(t, dim): symbolic if possible, no error if it must be specialized;
// - mark_static(t, dim): never symbolic (lower precedence than mark_dynamic).
// Marks live on the tensor object (its TensorImpl) until it is freed; marking a new dim later forces a
// recompile of functions whose entries treated it as static ("listen to the user").
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <limits>

namespace jitc {

void mark_dynamic(const at::Tensor& tensor, int64_t dim, int64_t min = 2,
                  int64_t max = std::numeric_limits<int64_t>::max());
void maybe_mark_dynamic(const at::Tensor& tensor, int64_t dim);
void mark_static(const at::Tensor& tensor, int64_t dim);

}  // namespace jitc
