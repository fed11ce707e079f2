// Random convolutional networks for a differential test of compiled training on the CPU: stacks of the
// layers C++ vision models train (convolutions plain, strided, depthwise and transposed; batch, group and
// instance norms; activations; pools; upsampling; 2-D dropout; residual adds and skip concatenations),
// ending in a classifier, a per-pixel classifier or a reconstruction. Small images and few channels make
// activations outweigh weights, so training lays most of them out channels-last (inductor/channels_last.h):
// where jitc's layouts meet ATen's kernels, which the hand-written models of the suite did not cover
// (a group norm's and a per-pixel loss's backward were found by such models).
#pragma once
#include "support/scoped_env.h"
#include "training/training_support.h"

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/normalization.h>

#include <random>

namespace jitc::testing::random_cnn {

enum class Layer { kConv, kStridedConv, kDepthwise, kTransposed, kBatchNorm, kGroupNorm, kInstanceNorm, kActivation, kMaxPool,
                   kAvgPool, kNearest, kBilinear, kDropout, kResidual, kSkipCat };
enum class Head { kClassify, kSegment, kReconstruct };

struct Step {
  Layer layer;
  int module = -1;  // index into the network's convolutions or norms
  int choice = 0;   // which activation
};

struct RandomCnn : torch::nn::Module {
  explicit RandomCnn(uint32_t seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    int64_t channels = 3;
    const int depth = 3 + pick(6);
    for (int i = 0; i < depth; ++i) add_step(static_cast<Layer>(pick(15)), pick(8), channels);
    head = static_cast<Head>(pick(3));
    if (head == Head::kClassify) classifier = register_module("classifier", torch::nn::Linear(channels, 5));
    else out = register_module("out", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, 3, 1)));
  }

  at::Tensor forward(at::Tensor h) {
    for (const Step& s : steps) h = apply(s, h);
    if (head == Head::kClassify) return classifier->forward(at::adaptive_avg_pool2d(h, {1, 1}).flatten(1));
    return out->forward(h);
  }

  at::Tensor loss(const at::Tensor& x, const at::Tensor& target) {
    const at::Tensor y = forward(x);
    if (head == Head::kReconstruct) return at::mse_loss(y, target);
    return at::cross_entropy_loss(y, target);
  }

  // A batch and its target, of the sizes this network's head produces.
  std::pair<at::Tensor, at::Tensor> batch(int64_t n, c10::Device device) const {
    const at::Tensor x = at::randn({n, 3, kSide, kSide}, device);
    if (head == Head::kClassify) return {x, at::randint(0, 5, {n}, at::TensorOptions(device).dtype(at::kLong))};
    if (head == Head::kSegment) return {x, at::randint(0, 3, {n, side, side}, at::TensorOptions(device).dtype(at::kLong))};
    return {x, at::randn({n, 3, side, side}, device)};
  }

  static constexpr int64_t kSide = 16;
  std::vector<Step> steps;
  Head head = Head::kClassify;
  int64_t side = kSide;
  std::vector<torch::nn::Conv2d> convs;
  std::vector<torch::nn::ConvTranspose2d> transposed;
  std::vector<torch::nn::BatchNorm2d> batch_norms;
  std::vector<torch::nn::GroupNorm> group_norms;
  std::vector<torch::nn::InstanceNorm2d> instance_norms;
  torch::nn::Linear classifier{nullptr};
  torch::nn::Conv2d out{nullptr};

 private:
  int add_conv(torch::nn::Conv2dOptions options) {
    convs.push_back(register_module("conv" + std::to_string(convs.size()), torch::nn::Conv2d(options)));
    return static_cast<int>(convs.size()) - 1;
  }

  // Appends the step if the current sizes allow it (spatial sizes stay within 4..32).
  void add_step(Layer layer, int choice, int64_t& channels) {
    Step s{layer, -1, choice};
    const int64_t wider = channels < 8 ? 8 : channels;
    switch (layer) {
      case Layer::kConv: s.module = add_conv(torch::nn::Conv2dOptions(channels, wider, 3).padding(1)), channels = wider; break;
      case Layer::kStridedConv:
        if (side < 8) return;
        s.module = add_conv(torch::nn::Conv2dOptions(channels, wider, 3).stride(2).padding(1)), channels = wider, side /= 2;
        break;
      case Layer::kDepthwise: s.module = add_conv(torch::nn::Conv2dOptions(channels, channels, 3).padding(1).groups(channels)); break;
      case Layer::kTransposed:
        if (side > 16) return;
        transposed.push_back(register_module("transposed" + std::to_string(transposed.size()),
                                             torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(channels, wider, 4).stride(2).padding(1))));
        s.module = static_cast<int>(transposed.size()) - 1, channels = wider, side *= 2;
        break;
      case Layer::kBatchNorm:
        batch_norms.push_back(register_module("bn" + std::to_string(batch_norms.size()), torch::nn::BatchNorm2d(channels)));
        s.module = static_cast<int>(batch_norms.size()) - 1;
        break;
      case Layer::kGroupNorm:
        if (channels % 2) return;
        group_norms.push_back(register_module("gn" + std::to_string(group_norms.size()), torch::nn::GroupNorm(2, channels)));
        s.module = static_cast<int>(group_norms.size()) - 1;
        break;
      case Layer::kInstanceNorm:
        instance_norms.push_back(register_module("in" + std::to_string(instance_norms.size()),
                                                 torch::nn::InstanceNorm2d(torch::nn::InstanceNorm2dOptions(channels).affine(choice % 2 == 0))));
        s.module = static_cast<int>(instance_norms.size()) - 1;
        break;
      case Layer::kMaxPool:
      case Layer::kAvgPool:
        if (side < 8) return;
        side /= 2;
        break;
      case Layer::kNearest:
      case Layer::kBilinear:
        if (side > 16) return;
        side *= 2;
        break;
      case Layer::kResidual: s.module = add_conv(torch::nn::Conv2dOptions(channels, channels, 3).padding(1)); break;
      case Layer::kSkipCat: s.module = add_conv(torch::nn::Conv2dOptions(channels, channels, 1)), channels *= 2; break;
      case Layer::kActivation:
      case Layer::kDropout: break;
    }
    steps.push_back(s);
  }

  static at::Tensor activation(int choice, const at::Tensor& h) {
    switch (choice) {
      case 0: return at::relu(h);
      case 1: return at::silu(h);
      case 2: return at::gelu(h);
      case 3: return at::hardswish(h);
      case 4: return at::leaky_relu(h, 0.1);
      case 5: return at::elu(h);
      case 6: return at::hardtanh(h, 0, 6);
      default: return at::sigmoid(h) * h;
    }
  }

  at::Tensor apply(const Step& s, const at::Tensor& h) {
    switch (s.layer) {
      case Layer::kConv:
      case Layer::kStridedConv:
      case Layer::kDepthwise: return convs[s.module]->forward(h);
      case Layer::kTransposed: return transposed[s.module]->forward(h);
      case Layer::kBatchNorm: return batch_norms[s.module]->forward(h);
      case Layer::kGroupNorm: return group_norms[s.module]->forward(h);
      case Layer::kInstanceNorm: return instance_norms[s.module]->forward(h);
      case Layer::kActivation: return activation(s.choice, h);
      case Layer::kMaxPool: return at::max_pool2d(h, {2, 2});
      case Layer::kAvgPool: return at::avg_pool2d(h, {2, 2});
      case Layer::kNearest: return at::upsample_nearest2d(h, std::nullopt, std::vector<double>{2.0, 2.0});
      case Layer::kBilinear: return at::upsample_bilinear2d(h, std::nullopt, false, std::vector<double>{2.0, 2.0});
      case Layer::kDropout: return at::feature_dropout(h, 0.2, is_training());
      case Layer::kResidual: return h + convs[s.module]->forward(at::relu(h));
      case Layer::kSkipCat: return at::cat({h, convs[s.module]->forward(h)}, 1);
    }
    return h;
  }
};

// Trains two copies of seed's network side by side for three SGD steps, one through a compiled loss: the
// losses, parameters and buffers agree at every step (train_side_by_side). Odd seeds build in the
// background, so that their first steps replay the forward and backward graphs eagerly.
inline void check_training(uint32_t seed, c10::Device device) {
  INFO("random CNN seed " << seed << " (JITC_RANDOM_SEED=" << seed << " reruns it)");
  ScopedEnv background("JITC_COMPILE_IN_BACKGROUND", seed % 2 ? "1" : "0");
  at::manual_seed(seed);
  auto eager_model = std::make_shared<RandomCnn>(seed), model = std::make_shared<RandomCnn>(seed);
  eager_model->to(device);
  model->to(device);
  auto data = [&] { return eager_model->batch(3, device); };
  auto loss_of = [](RandomCnn& m, const at::Tensor& x, const at::Tensor& y) { return m.loss(x, y); };
  train_side_by_side(eager_model, model, data, loss_of, 3, 1e-4);
}

// The same network compiled for inference: in eval mode (batch norms folded into prepacked convolutions,
// frozen_weights.h) and in train mode under NoGradGuard (running statistics updated in place), over
// changing batch sizes (a static entry, then a symbolic one): outputs and buffers equal eager's.
inline void check_inference(uint32_t seed, c10::Device device, bool train) {
  INFO("random CNN seed " << seed << (train ? ", train mode" : ", eval mode") << " (JITC_RANDOM_SEED=" << seed << " reruns it)");
  at::manual_seed(seed);
  auto eager_model = std::make_shared<RandomCnn>(seed), model = std::make_shared<RandomCnn>(seed);
  copy_state(*eager_model, *model);
  eager_model->to(device);
  model->to(device);
  eager_model->train(train);
  model->train(train);
  torch::NoGradGuard no_grad;
  auto compiled = jitc::compile([&](const at::Tensor& x) { return model->forward(x); });
  for (int64_t n : {2, 3, 4, 3}) {
    INFO("batch " << n);
    const at::Tensor x = eager_model->batch(n, device).first;
    at::manual_seed(n);
    const at::Tensor want = eager_model->forward(x);
    at::manual_seed(n);
    const at::Tensor got = compiled(x);
    CHECK(at::allclose(got, want, 1e-4, 1e-5));
    CHECK(max_buffer_difference(*model, *eager_model) < 1e-5);
  }
  CHECK(compiled.stats().eager_fallbacks == 0);
}

}  // namespace jitc::testing::random_cnn
