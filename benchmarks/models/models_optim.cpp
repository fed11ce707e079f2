// Training-time pieces that inference users hit too: optimizer steps over a model's parameter list (the
// multi-tensor case: many same-op updates over tensors of different shapes) and gradient clipping by
// global norm, written with ATen ops as a C++ team writes an update to compile it; and two losses.
// peer_models.py's twins run the same ops.
#include "models/architectures.h"

#include <ATen/ATen.h>

#include <cmath>
#include <memory>
#include <vector>

namespace jitc::bench {

std::vector<std::vector<int64_t>> resnet18_parameter_shapes(int64_t width, int64_t classes) {
  std::vector<std::vector<int64_t>> shapes{{width, 3, 7, 7}, {width}, {width}};
  auto conv_bn = [&](int64_t out, int64_t in, int64_t k) {
    shapes.push_back({out, in, k, k});
    shapes.push_back({out});
    shapes.push_back({out});
  };
  int64_t in = width;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t out = width << stage;
    for (int block = 0; block < 2; ++block) {
      const int64_t block_in = block == 0 ? in : out;
      conv_bn(out, block_in, 3);
      conv_bn(out, out, 3);
      if (block == 0 && block_in != out) conv_bn(out, block_in, 1);  // the downsampling shortcut
    }
    in = out;
  }
  shapes.push_back({classes, in});
  shapes.push_back({classes});
  return shapes;
}

namespace {

using Tensors = std::vector<at::Tensor>;

// Parameters, their gradients and two state tensors each (moments, or momentum buffers), float32: an
// optimizer keeps full-precision state whatever the model computes in.
struct ParameterList {
  Tensors params, grads, first, second;
  Tensors initial;  // the parameters' first values, for reset

  ParameterList(const Placement& place, int64_t width, int64_t classes) {
    const auto options = at::device(place.device).dtype(at::kFloat);
    for (const auto& shape : resnet18_parameter_shapes(width, classes)) {
      params.push_back(at::randn(shape, options) * 0.05);
      grads.push_back(at::randn(shape, options) * 1e-3);
      first.push_back(at::zeros(shape, options));
      second.push_back(at::zeros(shape, options));
      initial.push_back(params.back().clone());
    }
  }
  void reset() {
    for (size_t i = 0; i < params.size(); ++i) {
      params[i].copy_(initial[i]);
      first[i].zero_();
      second[i].zero_();
    }
  }
};

}  // namespace

void adamw_update(const Tensors& params, const Tensors& grads, const Tensors& first, const Tensors& second, const at::Tensor& corrections,
                  double lr, double weight_decay) {
  const at::Tensor neg_step_size = corrections[0], bias2_sqrt = corrections[1];
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor &p = params[i], &g = grads[i], &m = first[i], &v = second[i];
    p.mul_(1 - lr * weight_decay);
    m.lerp_(g, 1 - 0.9);
    v.mul_(0.999).addcmul_(g, g, 1 - 0.999);
    p.add_(m / (v.sqrt() / bias2_sqrt).add_(1e-8) * neg_step_size);
  }
}

// AdamW (lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01) as torch.optim's single-tensor
// update. The input holds the two values that change every step: -lr / (1 - beta1^t) and
// sqrt(1 - beta2^t), as a tensor (a compiled function's data, not a constant of its graph).
Stateful adamw_step(const Placement& place, int64_t width, int64_t classes) {
  auto list = std::make_shared<ParameterList>(place, width, classes);
  Forward step = [list](const at::Tensor& corrections) {
    adamw_update(list->params, list->grads, list->first, list->second, corrections, 1e-3, 0.01);
    return list->params.back();
  };
  return {std::move(step), [list] { list->reset(); }};
}

// SGD with momentum 0.9 and weight decay 1e-4; the input is the learning rate (a 0-dim tensor).
Stateful sgd_momentum_step(const Placement& place, int64_t width, int64_t classes) {
  auto list = std::make_shared<ParameterList>(place, width, classes);
  Forward step = [list](const at::Tensor& lr) {
    for (size_t i = 0; i < list->params.size(); ++i) {
      const at::Tensor &p = list->params[i], &buf = list->first[i];
      const at::Tensor d = list->grads[i].add(p, 1e-4);
      buf.mul_(0.9).add_(d);
      p.sub_(buf * lr);
    }
    return list->params.back();
  };
  return {std::move(step), [list] { list->reset(); }};
}

// torch.nn.utils.clip_grad_norm_(max_norm=1): the global L2 norm over every gradient, then each scaled
// by min(1, max_norm / (norm + 1e-6)). The input scales the gradients first (a loss scale's inverse);
// each call starts from the same gradients, so it has no state between calls.
Forward clip_grad_norm(const Placement& place, int64_t width, int64_t classes) {
  auto list = std::make_shared<ParameterList>(place, width, classes);
  auto initial_grads = std::make_shared<Tensors>();
  for (const auto& g : list->grads) initial_grads->push_back(g.clone() * 1e3);  // norms well above max_norm
  return [list, initial_grads](const at::Tensor& scale) {
    Tensors norms;
    for (size_t i = 0; i < list->grads.size(); ++i)
      norms.push_back(at::linalg_vector_norm(list->grads[i].copy_((*initial_grads)[i]).mul_(scale)));
    const at::Tensor total = at::linalg_vector_norm(at::stack(norms));
    const at::Tensor coefficient = at::clamp_max(1.0 / (total + 1e-6), 1.0);
    for (const auto& g : list->grads) g.mul_(coefficient);
    return total;
  };
}

Forward mse_loss(const at::Tensor& targets) {
  return [targets](const at::Tensor& predictions) { return at::mse_loss(predictions, targets); };
}

Forward label_smoothing_cross_entropy(const at::Tensor& targets, double smoothing) {
  return [targets, smoothing](const at::Tensor& logits) {
    return at::cross_entropy_loss(logits, targets, {}, at::Reduction::Mean, -100, smoothing);
  };
}

}  // namespace jitc::bench
