// The suite's architectures as callables holding their modules (eval mode, random weights from the
// current seed): models.cpp sizes them for the benchmark and for the tests.
#pragma once
#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

namespace torch::nn {
class Module;
}

namespace jitc::bench {

using Forward = std::function<at::Tensor(const at::Tensor&)>;

// Where a model's weights live and in which floating-point dtype.
struct Placement {
  c10::Device device = c10::kCPU;
  c10::ScalarType dtype = c10::kFloat;
};

// models_cnn.cpp
Forward resnet(const Placement& place, int depth, int64_t width, int64_t classes);  // depth 18 or 50; width 64 as published
Forward mobilenet_v2(const Placement& place, int64_t divisor, int64_t classes);     // divisor 1: the published widths
Forward shufflenet_v2(const Placement& place, int64_t divisor, int64_t classes);    // x1.0 at divisor 1
Forward unet(const Placement& place, int64_t width, int64_t depth);                 // 2 convolutions per level, nearest upsampling
// Small CNNs at one input per call: the Nature DQN on 4 frames of size x size (84 published), LibTorch's
// MNIST example, torch-ac's MiniGrid actor-critic on a 7x7x3 view (action log-probabilities, then the value).
Forward dqn(const Placement& place, int64_t size, int64_t actions);
Forward mnist_cnn(const Placement& place);
Forward minigrid_actor_critic(const Placement& place, int64_t actions);

// A model with state between calls (a KV cache) and how to bring it back to its initial state.
struct Stateful {
  Forward forward;
  std::function<void()> reset;
};

// models_text.cpp
Forward gpt(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t vocab,
            int64_t context);  // token ids in, logits out
Stateful gpt_decoder(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t vocab, int64_t context,
                     int64_t batch);  // one token per call, static KV cache updated in place, greedy next token
Forward llama(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t kv_heads,
              int64_t vocab);                      // RMSNorm, rotary, SwiGLU, GQA
Forward cross_entropy(const at::Tensor& targets);  // logits in, mean loss out

// models_other.cpp
Forward bert(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t hidden, int64_t vocab,
             int64_t context);                                                          // token ids in, pooled [CLS] out
Forward lstm_lm(const Placement& place, int64_t vocab, int64_t width, int64_t layers);  // token ids in, logits out
Forward vae(const Placement& place, int64_t pixels, int64_t hidden, int64_t latent);    // images in, negative ELBO out (draws noise)
struct DlrmShape {
  int64_t batch, dense, tables, rows, dim, bag;
};
Forward dlrm(const Placement& place, const DlrmShape& shape);  // sparse ids [batch, tables, bag] in, click probabilities out
// A reinforcement-learning policy (an actor's MLP with tanh, as a control loop runs it, one observation per call).
Forward policy_mlp(const Placement& place, int64_t observations, int64_t hidden, int64_t actions);  // observations in, actions out

// models_optim.cpp: steps over ResNet-18's parameter list (width 64 and 1000 classes as published),
// float32 whatever the placement's dtype.
// ResNet-18's parameter shapes (torchvision's layout: 62 tensors, 11.7M values at width 64, 1000 classes).
std::vector<std::vector<int64_t>> resnet18_parameter_shapes(int64_t width, int64_t classes);
Stateful adamw_step(const Placement& place, int64_t width, int64_t classes);         // input: [-lr / (1 - b1^t), sqrt(1 - b2^t)]
// torch.optim's single-tensor AdamW (betas 0.9 / 0.999, eps 1e-8) over a parameter list, written with ATen ops
// as a C++ team writes an update to compile it: in place into params, first and second moments.
// corrections = [-lr / (1 - beta1^t), sqrt(1 - beta2^t)], the values that change every step, as a tensor.
void adamw_update(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads, const std::vector<at::Tensor>& first,
                  const std::vector<at::Tensor>& second, const at::Tensor& corrections, double lr, double weight_decay);
Stateful sgd_momentum_step(const Placement& place, int64_t width, int64_t classes);  // input: the learning rate, 0-dim
Forward clip_grad_norm(const Placement& place, int64_t width, int64_t classes);      // input: a gradient scale, 0-dim; out: the norm
Forward mse_loss(const at::Tensor& targets);                                         // predictions in, mean loss out
Forward label_smoothing_cross_entropy(const at::Tensor& targets, double smoothing);  // logits in, mean loss out

// A model to train (bench_training.cpp): its forward in training mode, and its module, whose parameters
// an optimizer updates.
struct Trainable {
  Forward forward;
  std::shared_ptr<torch::nn::Module> module;
};
Trainable train_resnet(const Placement& place, int depth, int64_t width, int64_t classes);  // models_cnn.cpp
Trainable train_mobilenet_v2(const Placement& place, int64_t divisor, int64_t classes);     // models_cnn.cpp
Trainable train_shufflenet_v2(const Placement& place, int64_t divisor, int64_t classes);    // models_cnn.cpp
Trainable train_unet(const Placement& place, int64_t width, int64_t depth);                 // models_cnn.cpp
Trainable train_gpt(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t vocab,
                    int64_t context);  // models_text.cpp
Trainable train_llama(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t kv_heads,
                      int64_t vocab);  // models_text.cpp
// models_other.cpp
Trainable train_bert(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t hidden, int64_t vocab, int64_t context);
Trainable train_lstm_lm(const Placement& place, int64_t vocab, int64_t width, int64_t layers);
Trainable train_vae(const Placement& place, int64_t pixels, int64_t hidden, int64_t latent);
Trainable train_dlrm(const Placement& place, const DlrmShape& shape);

}  // namespace jitc::bench
