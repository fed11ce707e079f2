// Calls that run eagerly by design, on a GPU ([cuda]: skipped without one): the CUDA twins of test_e2e's
// and test_modules' cases where the callable keeps a tensor beyond the call or converts its module
// (Module::to moves it to the GPU or changes its dtype inside the call).
#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <catch2/catch.hpp>
#include <torch/nn/modules/linear.h>

namespace {

bool have_gpu() { return at::hasCUDA() && c10::cuda::device_count() > 0; }

}  // namespace

TEST_CASE("CUDA: a tensor stored outside the callable while tracing stays usable, and the function runs eagerly from then on", "[cuda]") {
  if (!have_gpu()) return;
  static at::Tensor leaked;
  auto f = jitc::compile([](const at::Tensor& x) {
    auto y = x + 1;
    leaked = y * 2;
    return y;
  });
  const auto cuda = at::TensorOptions(at::kCUDA);
  CHECK(at::equal(f(at::zeros({2}, cuda)), at::ones({2}, cuda)));
  CHECK(at::equal(leaked + 1, at::full({2}, 3.f, cuda)));
  CHECK(at::equal(f(at::ones({2}, cuda)), at::full({2}, 2.f, cuda)));
  CHECK(at::equal(leaked, at::full({2}, 4.f, cuda)));  // the second call's, as in eager
  CHECK(at::equal(f(at::full({2}, 2.f, cuda)), at::full({2}, 3.f, cuda)));
  CHECK(at::equal(leaked, at::full({2}, 6.f, cuda)));
  CHECK(f.stats().compiles == 0);
  CHECK(f.stats().eager_fallbacks == 3);  // two traces kept as their calls' execution, then an eager call
  leaked = at::Tensor();
}

// Module::to inside the callable replaces every parameter's data (Tensor::set_data, which the dispatcher
// does not see), here across devices: the trace puts the parameters back and the function runs eagerly,
// so the conversion happens as in eager and the module ends on the GPU.
TEST_CASE("CUDA: a callable that moves its module to the GPU or converts it there (Module::to) runs eagerly", "[cuda]") {
  if (!have_gpu()) return;
  at::NoGradGuard no_grad;
  for (const auto dtype : {at::kFloat, at::kDouble}) {
    INFO(c10::toString(dtype));
    torch::nn::Linear moved(4, 3), eager(4, 3);
    eager->weight.copy_(moved->weight);
    eager->bias.copy_(moved->bias);
    eager->to(at::kCUDA, dtype);
    auto f = jitc::compile([&](const at::Tensor& x) {
      moved->to(x.device(), x.scalar_type());
      return moved(x);
    });
    for (int call = 0; call < 3; ++call) {
      INFO("call " << call);
      const at::Tensor x = at::randn({2, 4}, at::TensorOptions(at::kCUDA).dtype(dtype));
      CHECK(at::equal(f(x), eager(x)));
    }
    CHECK(moved->weight.is_cuda());
    CHECK(moved->weight.scalar_type() == dtype);
    CHECK(f.stats().eager_fallbacks == 3);
  }
}
