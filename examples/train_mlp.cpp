// Compiled training from C++: a small MLP classifier trained with AdamW, its loss function compiled by jitc
// (forward and backward graphs) and its optimizer jitc::optim::AdamW (torch::optim::AdamW with a compiled
// step), side by side with the same model trained eagerly from the same weights.
//   ./build/examples/train_mlp            JITC_LOGS=aot_graphs shows the two graphs
#include <jitc/jitc.h>
#include <jitc/optim.h>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

namespace {

struct Mlp : torch::nn::Module {
  Mlp() : fc1(register_module("fc1", torch::nn::Linear(64, 256))), fc2(register_module("fc2", torch::nn::Linear(256, 10))) {}
  at::Tensor forward(const at::Tensor& x) { return fc2->forward(at::gelu(fc1->forward(x))); }
  torch::nn::Linear fc1, fc2;
};

std::shared_ptr<Mlp> make_model() {
  at::manual_seed(0);  // both copies start from the same weights
  return std::make_shared<Mlp>();
}

}  // namespace

int main() {
  auto eager_model = make_model(), model = make_model();
  torch::optim::AdamW eager_opt(eager_model->parameters(), torch::optim::AdamWOptions(1e-3));
  jitc::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
  // The loss function is what jitc compiles: calls in grad mode return a loss whose backward() runs the
  // compiled backward graph; gradients land in the parameters' .grad as eager's do.
  auto loss_of = jitc::compile([&](const at::Tensor& x, const at::Tensor& y) { return at::cross_entropy_loss(model->forward(x), y); });
  const at::Tensor x = at::randn({128, 64});
  const at::Tensor y = at::randint(0, 10, {128}, at::kLong);
  double worst = 0, eager_s = 0, jitc_s = 0;
  for (int step = 0; step < 50; ++step) {
    auto start = std::chrono::steady_clock::now();
    eager_opt.zero_grad();
    at::Tensor want = at::cross_entropy_loss(eager_model->forward(x), y);
    want.backward();
    eager_opt.step();
    auto middle = std::chrono::steady_clock::now();
    opt.zero_grad();
    at::Tensor got = loss_of(x, y);
    got.backward();
    opt.step();
    auto end = std::chrono::steady_clock::now();
    if (step == 1) {  // the programs build in the background meanwhile (steps replay eagerly): time them once built
      loss_of.wait_for_compiles();
      opt.wait_for_compiles();
    }
    if (step >= 2) {  // after the trace and the first compiled step
      eager_s += std::chrono::duration<double>(middle - start).count();
      jitc_s += std::chrono::duration<double>(end - middle).count();
    }
    worst = std::max(worst, std::abs(got.item<double>() - want.item<double>()));
    if (step % 10 == 0) std::printf("step %2d: loss eager %.6f, jitc %.6f\n", step, want.item<double>(), got.item<double>());
  }
  std::printf("time per step: eager %.3f ms, jitc %.3f ms\n", eager_s / 48 * 1e3, jitc_s / 48 * 1e3);
  const auto stats = loss_of.stats();
  std::printf("stats: compiles=%lld hits=%lld eager_fallbacks=%lld\n", static_cast<long long>(stats.compiles),
              static_cast<long long>(stats.hits), static_cast<long long>(stats.eager_fallbacks));
  const auto optimizer_stats = opt.stats();
  std::printf("optimizer: compiles=%lld hits=%lld eager_fallbacks=%lld\n", static_cast<long long>(optimizer_stats.compiles),
              static_cast<long long>(optimizer_stats.hits), static_cast<long long>(optimizer_stats.eager_fallbacks));
  const bool agree = worst < 1e-4 && stats.eager_fallbacks == 0 && optimizer_stats.eager_fallbacks == 0 && optimizer_stats.hits > 0;
  std::printf(agree ? "training losses agree with eager\n" : "training losses DIFFER from eager (largest difference %g)\n", worst);
  return agree ? 0 : 1;
}
