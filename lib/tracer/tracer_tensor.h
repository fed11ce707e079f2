// TracerTensorImpl: a storage-less tensor on the real device that stands for one graph value while a
// callable is traced. It carries the dispatch key kTracerKey (so every op on it reaches the tracer's
// fallback) and holds its "shadow", the real tensor computed for it (record while executing). Reading
// its data (data_ptr, accessor) throws, which makes hidden data reads fail loudly instead of being baked
// into the graph.
#pragma once
#include "graph/graph.h"

#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>

namespace jitc::tracer {

// A free functionality key above BackendSelect and the Composite kernels (see
// shared/reference/interception.md). Kept in one place in case it has to move to DeferredInit.
constexpr auto kTracerKey = c10::DispatchKey::Fake;

class TracerTensorImpl final : public c10::TensorImpl {
 public:
  // subclass_like: ATen's isTensorSubclassLike holds for it (tracer_tensor.cpp, tracer_keys).
  TracerTensorImpl(at::Tensor shadow, graph::ValueId value, uint64_t session, bool subclass_like);

  const at::Tensor& shadow() const { return shadow_; }
  graph::ValueId value() const { return value_; }
  uint64_t session() const { return session_; }

  // After an in-place op: the tensor now stands for the next version of its value, and in-place view
  // ops (t_, squeeze_, as_strided_) may have changed its metadata.
  void rebind(graph::ValueId value);

  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(const c10::VariableVersion& version_counter,
                                                              bool allow_tensor_metadata_change) const override;
  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(c10::VariableVersion&& version_counter,
                                                              bool allow_tensor_metadata_change) const override;
  void shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl>& impl) override;
  ~TracerTensorImpl() override;

 private:
  friend size_t keep_escaped_stand_ins(uint64_t session);
  // A stand-in the callable kept beyond its trace (an optimizer's state, a member, a global), whose trace
  // became the call's real execution: from then on a plain tensor over its shadow's memory, with the
  // shadow's keys (no kTracerKey: ops, data_ptr and serialization see a real tensor).
  void become_shadow();
  bool became_shadow_ = false;  // its copies (detach, set_data) are plain tensors too
  const char* tensorimpl_type_name() const override { return "jitc::TracerTensorImpl"; }
  void sync_metadata();

  void enlist();

  at::Tensor shadow_;
  graph::ValueId value_;
  uint64_t session_;
  bool subclass_like_;
};

// The stand-ins of `session` still alive once the trace no longer holds any (the callable stored them
// elsewhere), each made a plain tensor over its shadow's memory (become_shadow); how many.
size_t keep_escaped_stand_ins(uint64_t session);

// The tracer impl behind `t`, or nullptr for a real tensor.
TracerTensorImpl* as_tracer(const at::Tensor& t);
at::Tensor make_tracer(at::Tensor shadow, graph::ValueId value, uint64_t session, bool subclass_like);

}  // namespace jitc::tracer
