// The suite's convolutional networks, written the way the torchvision C++ ports and the pytorch/examples
// C++ programs write them: torch::nn modules, functional ATen calls between them. Architectures follow
// the published ones (ResNet-18/50, MobileNetV2, ShuffleNetV2 x1.0, a UNet); a divisor narrows every
// width for the test scale.
#include "models/architectures.h"
#include "models/module_forward.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include <cmath>
#include <memory>

namespace jitc::bench {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t groups = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).groups(groups).bias(false));
}

// A convolution, its batch norm, and optionally a ReLU (ReLU6 for MobileNetV2).
struct ConvBnImpl : nn::Module {
  enum class Act { kNone, kRelu, kRelu6 };
  ConvBnImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride, Act act, int64_t groups = 1)
      : c(register_module("conv", conv(in, out, kernel, stride, groups))), bn(register_module("bn", nn::BatchNorm2d(out))), act(act) {}
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = bn->forward(c->forward(x));
    if (act == Act::kRelu) return at::relu(y);
    if (act == Act::kRelu6) return at::hardtanh(y, 0, 6);
    return y;
  }
  nn::Conv2d c;
  nn::BatchNorm2d bn;
  Act act;
};
TORCH_MODULE(ConvBn);
using Act = ConvBnImpl::Act;

// ---- ResNet ---------------------------------------------------------------------------------------
struct ResidualBlockImpl : nn::Module {
  // bottleneck: 1x1, 3x3, 1x1 with 4x expansion (ResNet-50); otherwise two 3x3 (ResNet-18).
  ResidualBlockImpl(int64_t in, int64_t planes, int64_t stride, bool bottleneck) {
    const int64_t out = bottleneck ? planes * 4 : planes;
    if (bottleneck) {
      body = register_module("body", nn::Sequential(ConvBn(in, planes, 1, 1, Act::kRelu), ConvBn(planes, planes, 3, stride, Act::kRelu),
                                                    ConvBn(planes, out, 1, 1, Act::kNone)));
    } else {
      body = register_module("body", nn::Sequential(ConvBn(in, planes, 3, stride, Act::kRelu), ConvBn(planes, planes, 3, 1, Act::kNone)));
    }
    if (stride != 1 || in != out) shortcut = register_module("shortcut", ConvBn(in, out, 1, stride, Act::kNone));
  }
  at::Tensor forward(const at::Tensor& x) { return at::relu(body->forward(x) + (shortcut ? shortcut->forward(x) : x)); }
  nn::Sequential body;
  ConvBn shortcut{nullptr};
};
TORCH_MODULE(ResidualBlock);

struct ResNetImpl : nn::Module {
  ResNetImpl(std::vector<int64_t> blocks, bool bottleneck, int64_t width, int64_t classes) {
    stem = register_module("stem", ConvBn(3, width, 7, 2, Act::kRelu));
    int64_t in = width;
    for (size_t stage = 0; stage < blocks.size(); ++stage) {
      const int64_t planes = width << stage;
      for (int64_t b = 0; b < blocks[stage]; ++b) {
        layers->push_back(ResidualBlock(in, planes, b == 0 && stage > 0 ? 2 : 1, bottleneck));
        in = bottleneck ? planes * 4 : planes;
      }
    }
    register_module("layers", layers);
    fc = register_module("fc", nn::Linear(in, classes));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = at::max_pool2d(stem->forward(x), 3, 2, 1);
    return fc->forward(at::adaptive_avg_pool2d(layers->forward(y), {1, 1}).flatten(1));
  }
  ConvBn stem{nullptr};
  nn::Sequential layers;
  nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet);

// ---- MobileNetV2 ------------------------------------------------------------------------------------
struct InvertedResidualImpl : nn::Module {
  InvertedResidualImpl(int64_t in, int64_t out, int64_t stride, int64_t expand) : residual(stride == 1 && in == out) {
    const int64_t hidden = in * expand;
    if (expand != 1) body->push_back(ConvBn(in, hidden, 1, 1, Act::kRelu6));
    body->push_back(ConvBn(hidden, hidden, 3, stride, Act::kRelu6, hidden));  // depthwise
    body->push_back(ConvBn(hidden, out, 1, 1, Act::kNone));
    register_module("body", body);
  }
  at::Tensor forward(const at::Tensor& x) { return residual ? x + body->forward(x) : body->forward(x); }
  nn::Sequential body;
  bool residual;
};
TORCH_MODULE(InvertedResidual);

struct MobileNetV2Impl : nn::Module {
  MobileNetV2Impl(int64_t divisor, int64_t classes) {
    const int64_t settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                    {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    int64_t in = 32 / divisor;
    features->push_back(ConvBn(3, in, 3, 2, Act::kRelu6));
    for (const auto& s : settings)
      for (int64_t i = 0; i < s[2]; ++i) {
        features->push_back(InvertedResidual(in, s[1] / divisor, i == 0 ? s[3] : 1, s[0]));
        in = s[1] / divisor;
      }
    features->push_back(ConvBn(in, 1280 / divisor, 1, 1, Act::kRelu6));
    register_module("features", features);
    classifier = register_module("classifier", nn::Linear(1280 / divisor, classes));
  }
  at::Tensor forward(const at::Tensor& x) { return classifier->forward(features->forward(x).mean({2, 3})); }
  nn::Sequential features;
  nn::Linear classifier{nullptr};
};
TORCH_MODULE(MobileNetV2);

// ---- ShuffleNetV2 -----------------------------------------------------------------------------------
at::Tensor shuffle_channels(const at::Tensor& x, int64_t groups) {
  const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  return x.view({b, groups, c / groups, h, w}).transpose(1, 2).contiguous().view({b, c, h, w});
}

struct ShuffleUnitImpl : nn::Module {
  ShuffleUnitImpl(int64_t in, int64_t out, int64_t stride) : stride(stride) {
    const int64_t branch = out / 2;
    if (stride > 1)
      branch1 = register_module("branch1", nn::Sequential(ConvBn(in, in, 3, stride, Act::kNone, in), ConvBn(in, branch, 1, 1, Act::kRelu)));
    const int64_t in2 = stride > 1 ? in : branch;
    branch2 = register_module("branch2",
                              nn::Sequential(ConvBn(in2, branch, 1, 1, Act::kRelu), ConvBn(branch, branch, 3, stride, Act::kNone, branch),
                                             ConvBn(branch, branch, 1, 1, Act::kRelu)));
  }
  at::Tensor forward(const at::Tensor& x) {
    if (stride == 1) {
      auto halves = x.chunk(2, 1);
      return shuffle_channels(at::cat({halves[0], branch2->forward(halves[1])}, 1), 2);
    }
    return shuffle_channels(at::cat({branch1->forward(x), branch2->forward(x)}, 1), 2);
  }
  int64_t stride;
  nn::Sequential branch1{nullptr}, branch2{nullptr};
};
TORCH_MODULE(ShuffleUnit);

struct ShuffleNetV2Impl : nn::Module {
  ShuffleNetV2Impl(int64_t divisor, int64_t classes) {
    const int64_t repeats[3] = {4, 8, 4}, channels[5] = {24, 116, 232, 464, 1024};
    stem = register_module("stem", ConvBn(3, channels[0], 3, 2, Act::kRelu));
    int64_t in = channels[0];
    for (int s = 0; s < 3; ++s)
      for (int64_t i = 0; i < repeats[s]; ++i) {
        const int64_t out = channels[s + 1] / divisor / 2 * 2;  // two branches of equal width
        stages->push_back(ShuffleUnit(in, out, i == 0 ? 2 : 1));
        in = out;
      }
    register_module("stages", stages);
    head = register_module("head", ConvBn(in, channels[4] / divisor, 1, 1, Act::kRelu));
    fc = register_module("fc", nn::Linear(channels[4] / divisor, classes));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = stages->forward(at::max_pool2d(stem->forward(x), 3, 2, 1));
    return fc->forward(head->forward(y).mean({2, 3}));
  }
  ConvBn stem{nullptr}, head{nullptr};
  nn::Sequential stages;
  nn::Linear fc{nullptr};
};
TORCH_MODULE(ShuffleNetV2);

// ---- UNet -------------------------------------------------------------------------------------------
struct UNetImpl : nn::Module {
  UNetImpl(int64_t width, int64_t depth) {
    int64_t in = 3;
    for (int64_t d = 0; d <= depth; ++d) {
      down->push_back(block(in, width << d));
      in = width << d;
    }
    for (int64_t d = depth; d-- > 0;) {
      up->push_back(block(in + (width << d), width << d));  // the upsampled map, then the skip
      in = width << d;
    }
    register_module("down", down);
    register_module("up", up);
    out = register_module("out", nn::Conv2d(nn::Conv2dOptions(in, 1, 1)));
  }
  static nn::Sequential block(int64_t in, int64_t out) {
    return nn::Sequential(ConvBn(in, out, 3, 1, Act::kRelu), ConvBn(out, out, 3, 1, Act::kRelu));
  }
  at::Tensor forward(const at::Tensor& x) {
    std::vector<at::Tensor> skips;
    at::Tensor y = x;
    for (size_t d = 0; d < down->size(); ++d) {
      if (d > 0) y = at::max_pool2d(y, 2, 2);
      y = down[d]->as<nn::Sequential>()->forward(y);
      skips.push_back(y);
    }
    for (size_t u = 0; u < up->size(); ++u) {
      y = at::upsample_nearest2d(y, {y.size(2) * 2, y.size(3) * 2});
      y = up[u]->as<nn::Sequential>()->forward(at::cat({y, skips[skips.size() - 2 - u]}, 1));
    }
    return out->forward(y);
  }
  nn::ModuleList down, up;
  nn::Conv2d out{nullptr};
};
TORCH_MODULE(UNet);

// Small CNNs as control loops and tutorials run them, one input per call. The Nature DQN (Mnih et al.,
// 2015) on 4 stacked frames of size x size (84 published).
nn::Sequential dqn_net(int64_t size, int64_t actions) {
  const int64_t after = ((size - 8) / 4 + 1 - 4) / 2 + 1 - 2;  // the third convolution's output size
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(4, 32, 8).stride(4)), nn::ReLU(), nn::Conv2d(nn::Conv2dOptions(32, 64, 4).stride(2)),
                        nn::ReLU(), nn::Conv2d(nn::Conv2dOptions(64, 64, 3)), nn::ReLU(), nn::Flatten(), nn::Linear(64 * after * after, 512),
                        nn::ReLU(), nn::Linear(512, actions));
}

// LibTorch's own MNIST example (pytorch/examples, cpp/mnist), as written there.
struct MnistNetImpl : nn::Module {
  MnistNetImpl() {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  at::Tensor forward(at::Tensor x) {
    x = at::relu(at::max_pool2d(conv1->forward(x), 2));
    x = at::relu(at::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = at::relu(fc1->forward(x));
    x = at::dropout(x, 0.5, is_training());
    x = fc2->forward(x);
    return at::log_softmax(x, 1);
  }
  nn::Conv2d conv1{nn::Conv2dOptions(1, 10, 5)}, conv2{nn::Conv2dOptions(10, 20, 5)};
  nn::Dropout2d conv2_drop;
  nn::Linear fc1{320, 50}, fc2{50, 10};
};
TORCH_MODULE(MnistNet);

// torch-ac's actor-critic for MiniGrid (rl-starter-files): 2x2 convolutions over a 7x7x3 view, an actor
// (action log-probabilities) and a critic (the value), concatenated.
struct MiniGridAcImpl : nn::Module {
  explicit MiniGridAcImpl(int64_t actions)
      : image(register_module("image", nn::Sequential(nn::Conv2d(3, 16, 2), nn::ReLU(), nn::MaxPool2d(2), nn::Conv2d(16, 32, 2),
                                                      nn::ReLU(), nn::Conv2d(32, 64, 2), nn::ReLU()))),
        actor(register_module("actor", nn::Sequential(nn::Linear(64, 64), nn::Tanh(), nn::Linear(64, actions)))),
        critic(register_module("critic", nn::Sequential(nn::Linear(64, 64), nn::Tanh(), nn::Linear(64, 1)))) {}
  at::Tensor forward(const at::Tensor& observation) {
    const at::Tensor embedding = image->forward(observation).reshape({observation.size(0), -1});
    return at::cat({at::log_softmax(actor->forward(embedding), 1), critic->forward(embedding)}, 1);
  }
  nn::Sequential image, actor, critic;
};
TORCH_MODULE(MiniGridAc);

}  // namespace

Forward resnet(const Placement& place, int depth, int64_t width, int64_t classes) {
  return depth == 50 ? forward_of(ResNet(std::vector<int64_t>{3, 4, 6, 3}, true, width, classes), place)
                     : forward_of(ResNet(std::vector<int64_t>{2, 2, 2, 2}, false, width, classes), place);
}
Forward mobilenet_v2(const Placement& place, int64_t divisor, int64_t classes) { return forward_of(MobileNetV2(divisor, classes), place); }
Forward shufflenet_v2(const Placement& place, int64_t divisor, int64_t classes) {
  return forward_of(ShuffleNetV2(divisor, classes), place);
}
Forward unet(const Placement& place, int64_t width, int64_t depth) { return forward_of(UNet(width, depth), place); }
Forward dqn(const Placement& place, int64_t size, int64_t actions) { return forward_of(dqn_net(size, actions), place); }
Forward mnist_cnn(const Placement& place) { return forward_of(MnistNet(), place); }
Forward minigrid_actor_critic(const Placement& place, int64_t actions) { return forward_of(MiniGridAc(actions), place); }

Trainable train_resnet(const Placement& place, int depth, int64_t width, int64_t classes) {
  return depth == 50 ? trainable_of(ResNet(std::vector<int64_t>{3, 4, 6, 3}, true, width, classes), place)
                     : trainable_of(ResNet(std::vector<int64_t>{2, 2, 2, 2}, false, width, classes), place);
}
Trainable train_mobilenet_v2(const Placement& place, int64_t divisor, int64_t classes) {
  return trainable_of(MobileNetV2(divisor, classes), place);
}
Trainable train_shufflenet_v2(const Placement& place, int64_t divisor, int64_t classes) {
  return trainable_of(ShuffleNetV2(divisor, classes), place);
}
Trainable train_unet(const Placement& place, int64_t width, int64_t depth) { return trainable_of(UNet(width, depth), place); }

}  // namespace jitc::bench
