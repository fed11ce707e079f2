#include "tracer/tracer_tensor.h"

#include <mutex>
#include <unordered_map>

namespace jitc::tracer {

namespace {

// Every stand-in alive, with its session: a trace asks for its own once the callable has returned.
struct LiveStandIns {
  std::mutex mutex;
  std::unordered_map<TracerTensorImpl*, uint64_t> session_of;
};

LiveStandIns& live_stand_ins() {
  static LiveStandIns& live = *new LiveStandIns;
  return live;
}

// The real backend key stays, so is_cpu()/is_cuda() and autocast behave as in eager. A subclass-like
// stand-in (a training trace's second attempt, trace.cpp) also carries MetaBit, which makes ATen's
// isTensorSubclassLike hold, as for a FakeTensor: ATen's backward formulas then take their forms that read
// no data on the host (max() over all elements asking whether its maximum is NaN, prod() whether an
// element is 0), which a trace can only follow as a graph break. TensorImpl derives a tensor's autograd
// and autocast keys from its highest backend bit, MetaBit then: the real backend's are added here, and
// records redispatch without MetaBit (TraceSession::record).
c10::DispatchKeySet tracer_keys(const at::Tensor& shadow, bool subclass_like) {
  const c10::DispatchKey backend = c10::computeDispatchKey(shadow.scalar_type(), shadow.layout(), shadow.device());
  if (!subclass_like) return c10::DispatchKeySet{backend, kTracerKey};
  const c10::BackendComponent component = c10::toBackendComponent(backend);
  return c10::DispatchKeySet{backend, kTracerKey} | c10::DispatchKeySet(c10::BackendComponent::MetaBit) |
         c10::getAutogradRelatedKeySetFromBackend(component) | c10::getAutocastRelatedKeySetFromBackend(component);
}

}  // namespace

TracerTensorImpl::TracerTensorImpl(at::Tensor shadow, graph::ValueId value, uint64_t session, bool subclass_like)
    : c10::TensorImpl(tracer_keys(shadow, subclass_like), shadow.dtype(), shadow.device()),
      shadow_(std::move(shadow)),
      value_(value),
      session_(session),
      subclass_like_(subclass_like) {
  set_storage_access_should_throw();
  sync_metadata();
  enlist();
}

void TracerTensorImpl::enlist() {
  std::lock_guard<std::mutex> lock(live_stand_ins().mutex);
  live_stand_ins().session_of[this] = session_;
}

TracerTensorImpl::~TracerTensorImpl() {
  std::lock_guard<std::mutex> lock(live_stand_ins().mutex);
  live_stand_ins().session_of.erase(this);
}

void TracerTensorImpl::become_shadow() {
  storage_ = shadow_.storage();
  storage_access_should_throw_ = false;
  key_set_ = shadow_.key_set();
  sync_metadata();
  became_shadow_ = true;
}

size_t keep_escaped_stand_ins(uint64_t session) {
  LiveStandIns& live = live_stand_ins();
  std::lock_guard<std::mutex> lock(live.mutex);
  size_t kept = 0;
  for (auto it = live.session_of.begin(); it != live.session_of.end();) {
    if (it->second != session) {
      ++it;
      continue;
    }
    it->first->become_shadow();
    it = live.session_of.erase(it);
    ++kept;
  }
  return kept;
}

void TracerTensorImpl::sync_metadata() {
  set_sizes_and_strides(shadow_.sizes(), shadow_.strides(), shadow_.storage_offset());
  if (shadow_.unsafeGetTensorImpl()->is_wrapped_number()) set_wrapped_number(true);
}

void TracerTensorImpl::rebind(graph::ValueId value) {
  value_ = value;
  sync_metadata();
}

c10::intrusive_ptr<c10::TensorImpl> TracerTensorImpl::shallow_copy_and_detach(const c10::VariableVersion& version_counter,
                                                                              bool allow_tensor_metadata_change) const {
  if (became_shadow_) return c10::TensorImpl::shallow_copy_and_detach(version_counter, allow_tensor_metadata_change);
  auto copy = c10::make_intrusive<TracerTensorImpl>(shadow_, value_, session_, subclass_like_);
  copy->set_version_counter(version_counter);
  copy->set_allow_tensor_metadata_change(allow_tensor_metadata_change);
  return copy;
}

c10::intrusive_ptr<c10::TensorImpl> TracerTensorImpl::shallow_copy_and_detach(c10::VariableVersion&& version_counter,
                                                                              bool allow_tensor_metadata_change) const {
  if (became_shadow_) return c10::TensorImpl::shallow_copy_and_detach(std::move(version_counter), allow_tensor_metadata_change);
  auto copy = c10::make_intrusive<TracerTensorImpl>(shadow_, value_, session_, subclass_like_);
  copy->set_version_counter(std::move(version_counter));
  copy->set_allow_tensor_metadata_change(allow_tensor_metadata_change);
  return copy;
}

void TracerTensorImpl::shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl>& impl) {
  if (became_shadow_) return c10::TensorImpl::shallow_copy_from(impl);
  auto* other = dynamic_cast<TracerTensorImpl*>(impl.get());
  TORCH_CHECK(other, "jitc: cannot copy a real tensor's metadata into a traced tensor");
  shadow_ = other->shadow_;
  value_ = other->value_;
  session_ = other->session_;
  sync_metadata();
  enlist();
}

TracerTensorImpl* as_tracer(const at::Tensor& t) {
  if (!t.defined() || !t.key_set().has(kTracerKey)) return nullptr;
  return dynamic_cast<TracerTensorImpl*>(t.unsafeGetTensorImpl());
}

at::Tensor make_tracer(at::Tensor shadow, graph::ValueId value, uint64_t session, bool subclass_like) {
  return at::detail::make_tensor<TracerTensorImpl>(std::move(shadow), value, session, subclass_like);
}

}  // namespace jitc::tracer
