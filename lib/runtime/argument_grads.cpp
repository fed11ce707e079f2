#include "runtime/argument_grads.h"

#include <ATen/core/Tensor.h>

namespace jitc::runtime {

namespace {

bool has_leaf_grad(const at::Tensor& t) { return t.defined() && t.requires_grad() && t.is_leaf() && t.grad().defined(); }

}  // namespace

c10::ArrayRef<detail::Leaf> with_argument_grads(c10::ArrayRef<detail::Leaf> leaves, detail::Leaves& storage) {
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (leaves[i].kind != detail::Leaf::Kind::kTensor || !has_leaf_grad(*leaves[i].tensor)) continue;
    if (storage.empty()) storage.assign(leaves.begin(), leaves.end());
    detail::Leaf grad;
    grad.kind = detail::Leaf::Kind::kTensor;
    grad.argument = -1;
    grad.tensor = &leaves[i].tensor->grad();
    grad.i = static_cast<int64_t>(i);
    storage.push_back(grad);
  }
  return storage.empty() ? leaves : c10::ArrayRef<detail::Leaf>(storage);
}

}  // namespace jitc::runtime
