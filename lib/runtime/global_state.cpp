#include "runtime/global_state.h"

#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/macros/Export.h>

// Exported by libtorch_cpu (ATen/autocast_mode.h); declared here because that header pulls in all of ATen.
namespace at::autocast {
TORCH_API at::ScalarType get_autocast_dtype(at::DeviceType device_type);
}  // namespace at::autocast

namespace jitc::runtime {

guards::GlobalState capture_global_state() {
  guards::GlobalState s;
  s.grad_mode = c10::GradMode::is_enabled();
  const c10::DispatchKeySet excluded = c10::impl::tls_local_dispatch_key_set().excluded_;  // one thread-local read
  s.autocast_cpu = !excluded.has(c10::DispatchKey::AutocastCPU);
  s.autocast_cuda = !excluded.has(c10::DispatchKey::AutocastCUDA);
  if (s.autocast_cpu) s.autocast_cpu_dtype = at::autocast::get_autocast_dtype(c10::DeviceType::CPU);
  if (s.autocast_cuda) s.autocast_cuda_dtype = at::autocast::get_autocast_dtype(c10::DeviceType::CUDA);
  s.default_dtype = c10::typeMetaToScalarType(c10::get_default_dtype());
  return s;
}

}  // namespace jitc::runtime
