// Values a program derives from captured tensors only (graph::NodeKind::kDerived: a batch norm folded
// into its convolution's weight and bias, a weight prepacked for oneDNN), computed once as Inductor's
// freezing computes them, but kept right when the user changes a parameter in place (an optimizer step,
// torch::load, a running statistic updated in training mode between inference calls): they are computed
// again on the first call where a captured tensor they read holds other memory or has another version
// than when they were last computed (only those: one layer's update recomputes that layer's weights).
// Writes through an alias PyTorch does not version (`p.data().mul_(2)`: a new version counter) are seen
// where they change any of 16 elements sampled across the tensor (a whole-tensor update or reinitialization);
// one that changes only elements between the samples is not. Inference tensors have no version counter:
// no value is derived from one (inductor::FrozenInputs); were one met here, its values would be computed
// on every call.
#pragma once
#include "graph/graph.h"

#include <ATen/core/Tensor.h>

#include <mutex>
#include <vector>

namespace jitc::runtime {

class DerivedValues {
 public:
  // Null when g has no derived node.
  static std::unique_ptr<DerivedValues> of(const graph::Graph& g);

  // Puts every derived value into `values` (whose inputs are filled), computing them again where a
  // captured tensor they read changed. Thread-safe: calls of one program may run at once.
  void fill(const graph::Graph& g, std::vector<at::Tensor>& values, const int64_t* symbols) const;

 private:
  // A captured tensor as the derived values last saw it.
  struct Seen {
    const c10::TensorImpl* tensor = nullptr;
    const void* data = nullptr;
    int64_t version = -1;
    uint64_t samples = 0;
    bool operator==(const Seen&) const = default;
  };
  // A derived value the rest of the program reads: cached, computed again when one of its sources changed.
  struct Output {
    graph::ValueId value;
    std::vector<int> nodes;    // positions in nodes_ of the derived nodes it needs, in order
    std::vector<int> sources;  // positions in sources_ of the captured tensors they read
  };
  static uint64_t sampled_bits(const at::Tensor& t);
  static Seen seen(const at::Tensor& t);
  Output cone_of(const graph::Graph& g, graph::ValueId v);

  std::vector<int> nodes_;               // the derived nodes, in graph order
  std::vector<graph::ValueId> sources_;  // the captured inputs they read
  std::vector<Output> outputs_;
  using Weak = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
  mutable std::mutex mutex_;
  mutable bool computed_ = false;           // the outputs were computed once
  mutable std::vector<bool> changed_;       // per source, this call (kept to allocate nothing per call)
  mutable std::vector<Seen> seen_;          // per source, when last read
  mutable std::vector<at::Tensor> cached_;  // per output (undefined: never computed)
  // The sources keep these objects: their addresses cannot be taken by other tensors while compared.
  mutable std::vector<Weak> held_;
};

}  // namespace jitc::runtime
