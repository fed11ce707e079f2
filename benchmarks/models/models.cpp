// The suite's list: each architecture at the benchmark's shapes (published configurations; batch sizes
// a server runs) and at the tests' small shapes (the same structure). peer_models.py mirrors this list.
#include "models/models.h"

#include "models/architectures.h"

#include <ATen/ATen.h>

namespace jitc::bench {
namespace {

std::function<at::Tensor()> images(const Placement& place, int64_t batch, int64_t size) {
  return [=] { return at::randn({batch, 3, size, size}, at::device(place.device).dtype(place.dtype)); };
}
std::function<at::Tensor()> planes(const Placement& place, int64_t batch, int64_t channels, int64_t size) {
  return [=] { return at::rand({batch, channels, size, size}, at::device(place.device).dtype(place.dtype)); };
}
std::function<at::Tensor()> scores(const Placement& place, int64_t rows, int64_t classes) {
  return [=] { return at::randn({rows, classes}, at::device(place.device).dtype(place.dtype)); };
}
std::function<at::Tensor()> token_ids(const Placement& place, int64_t batch, int64_t length, int64_t vocab) {
  return [=] { return at::randint(vocab, {batch, length}, at::device(place.device).dtype(at::kLong)); };
}

std::function<at::Tensor()> pixels(const Placement& place, int64_t batch, int64_t count) {
  return [=] { return at::rand({batch, count}, at::device(place.device).dtype(place.dtype)); };
}
std::function<at::Tensor()> sparse_ids(const Placement& place, const DlrmShape& shape) {
  return [=] { return at::randint(shape.rows, {shape.batch, shape.tables, shape.bag}, at::device(place.device).dtype(at::kLong)); };
}

std::function<at::Tensor()> optimizer_values(const Placement& place, std::vector<double> values) {
  return [=] { return at::tensor(values, at::device(place.device).dtype(at::kFloat)).squeeze(); };
}

// A model that draws random numbers: its "state" is the generator's, reset to a seed.
Model drawing(std::string name, std::string shapes, std::function<at::Tensor()> input, Forward forward) {
  return {std::move(name), std::move(shapes), std::move(input), std::move(forward), [] { at::manual_seed(0); }};
}

Model decode(std::string name, std::string shapes, std::function<at::Tensor()> input, Stateful model) {
  return {std::move(name), std::move(shapes), std::move(input), std::move(model.forward), std::move(model.reset)};
}

constexpr DlrmShape kDlrm{.batch = 512, .dense = 13, .tables = 8, .rows = 100000, .dim = 64, .bag = 8};
constexpr DlrmShape kSmallDlrm{.batch = 4, .dense = 5, .tables = 3, .rows = 50, .dim = 8, .bag = 2};

std::vector<Model> benchmark_models(const Placement& place) {
  at::manual_seed(0);
  const at::Tensor targets = at::randint(32000, {256}, at::device(place.device).dtype(at::kLong));
  return {
      {"resnet18_b1", "ResNet-18, [1, 3, 224, 224]", images(place, 1, 224), resnet(place, 18, 64, 1000)},
      {"resnet18_b32", "ResNet-18, [32, 3, 224, 224]", images(place, 32, 224), resnet(place, 18, 64, 1000)},
      {"resnet50_b1", "ResNet-50, [1, 3, 224, 224]", images(place, 1, 224), resnet(place, 50, 64, 1000)},
      {"mobilenet_v2_b1", "MobileNetV2, [1, 3, 224, 224]", images(place, 1, 224), mobilenet_v2(place, 1, 1000)},
      {"shufflenet_v2_b1", "ShuffleNetV2 x1.0, [1, 3, 224, 224]", images(place, 1, 224), shufflenet_v2(place, 1, 1000)},
      {"unet_b1", "UNet (4 levels, width 32), [1, 3, 256, 256]", images(place, 1, 256), unet(place, 32, 3)},
      {"gpt2_prefill_b1", "GPT-2 small (12 x 768, explicit attention), [1, 256] tokens", token_ids(place, 1, 256, 50257),
       gpt(place, 12, 768, 12, 50257, 1024)},
      decode("gpt2_decode_b1", "GPT-2 small decoding, 1 token per call, static KV cache of 1024", token_ids(place, 1, 1, 50257),
             gpt_decoder(place, 12, 768, 12, 50257, 1024, 1)),
      decode("gpt2_decode_b8", "GPT-2 small decoding, 8 sequences, static KV cache of 1024", token_ids(place, 8, 1, 50257),
             gpt_decoder(place, 12, 768, 12, 50257, 1024, 8)),
      {"llama_prefill_b1", "LLaMA-style (4 x 512, 8 heads, 2 kv heads, SDPA), [1, 256] tokens", token_ids(place, 1, 256, 32000),
       llama(place, 4, 512, 8, 2, 32000)},
      {"cross_entropy", "cross-entropy, [256, 32000] logits", scores(place, 256, 32000), cross_entropy(targets)},
      {"bert_base_b8", "BERT-base encoder (12 x 768, 12 heads, SDPA), [8, 128] tokens", token_ids(place, 8, 128, 30522),
       bert(place, 12, 768, 12, 3072, 30522, 512)},
      {"lstm_lm_b8", "LSTM language model (2 x 650, vocabulary 10000), [8, 35] tokens", token_ids(place, 8, 35, 10000),
       lstm_lm(place, 10000, 650, 2)},
      drawing("vae_b128", "VAE (784-400-20, pytorch/examples), [128, 784]", pixels(place, 128, 784), vae(place, 784, 400, 20)),
      {"dlrm_b512", "DLRM-like (8 EmbeddingBag tables of 100000 x 64, bags of 8), batch 512", sparse_ids(place, kDlrm), dlrm(place, kDlrm)},
      {"policy_mlp_b1", "policy MLP (64-256-256-8, tanh), one observation", scores(place, 1, 64), policy_mlp(place, 64, 256, 8)},
      {"dqn_atari_b1", "Nature DQN, [1, 4, 84, 84] frames", planes(place, 1, 4, 84), dqn(place, 84, 6)},
      {"mnist_cnn_b1", "LibTorch's MNIST example (conv 5x5 x2, fc 320-50-10), [1, 1, 28, 28]", planes(place, 1, 1, 28), mnist_cnn(place)},
      {"minigrid_ac_b1", "MiniGrid actor-critic (conv 2x2 x3, 7 actions), [1, 3, 7, 7]", planes(place, 1, 3, 7),
       minigrid_actor_critic(place, 7)},
      {"mse_loss", "MSE loss, [256, 32000]", scores(place, 256, 32000),
       mse_loss(at::randn({256, 32000}, at::device(place.device).dtype(place.dtype)))},
      {"label_smoothing_ce", "cross-entropy with label smoothing 0.1, [256, 32000] logits", scores(place, 256, 32000),
       label_smoothing_cross_entropy(targets, 0.1)},
      decode("adamw_step", "AdamW step over ResNet-18's 62 parameters (11.7M, float32)", optimizer_values(place, {-1e-3, 0.0316}),
             adamw_step(place, 64, 1000)),
      decode("sgd_momentum_step", "SGD-with-momentum step over ResNet-18's 62 parameters (float32)", optimizer_values(place, {0.1}),
             sgd_momentum_step(place, 64, 1000)),
      {"clip_grad_norm", "gradient clipping by global norm over ResNet-18's 62 gradients (float32)", optimizer_values(place, {1.0}),
       clip_grad_norm(place, 64, 1000)},
  };
}

std::vector<Model> test_models(const Placement& place) {
  at::manual_seed(0);
  const at::Tensor targets = at::randint(100, {12}, at::device(place.device).dtype(at::kLong));
  return {
      {"resnet18", "", images(place, 2, 32), resnet(place, 18, 8, 10)},
      {"resnet50", "", images(place, 1, 32), resnet(place, 50, 4, 10)},
      {"mobilenet_v2", "", images(place, 1, 32), mobilenet_v2(place, 4, 10)},
      {"shufflenet_v2", "", images(place, 1, 64), shufflenet_v2(place, 4, 10)},
      {"unet", "", images(place, 1, 32), unet(place, 4, 2)},
      {"gpt", "", token_ids(place, 2, 16, 97), gpt(place, 2, 32, 4, 97, 64)},
      decode("gpt_decode", "", token_ids(place, 2, 1, 97), gpt_decoder(place, 2, 32, 4, 97, 16, 2)),
      {"llama", "", token_ids(place, 2, 16, 97), llama(place, 2, 32, 4, 2, 97)},
      {"cross_entropy", "", scores(place, 12, 100), cross_entropy(targets)},
      {"bert", "", token_ids(place, 2, 16, 97), bert(place, 2, 32, 4, 64, 97, 32)},
      {"lstm_lm", "", token_ids(place, 2, 8, 97), lstm_lm(place, 97, 16, 2)},
      drawing("vae", "", pixels(place, 4, 64), vae(place, 64, 32, 8)),
      {"dlrm", "", sparse_ids(place, kSmallDlrm), dlrm(place, kSmallDlrm)},
      {"policy_mlp", "", scores(place, 2, 12), policy_mlp(place, 12, 16, 3)},
      {"dqn_atari", "", planes(place, 1, 4, 36), dqn(place, 36, 4)},
      {"mnist_cnn", "", planes(place, 2, 1, 28), mnist_cnn(place)},
      {"minigrid_ac", "", planes(place, 1, 3, 7), minigrid_actor_critic(place, 7)},
      {"mse_loss", "", scores(place, 12, 100), mse_loss(at::randn({12, 100}, at::device(place.device).dtype(place.dtype)))},
      {"label_smoothing_ce", "", scores(place, 12, 100), label_smoothing_cross_entropy(targets, 0.1)},
      decode("adamw_step", "", optimizer_values(place, {-1e-3, 0.0316}), adamw_step(place, 4, 10)),
      decode("sgd_momentum_step", "", optimizer_values(place, {0.1}), sgd_momentum_step(place, 4, 10)),
      {"clip_grad_norm", "", optimizer_values(place, {1.0}), clip_grad_norm(place, 4, 10)},
  };
}

}  // namespace

at::Tensor results_from_start(const Model& model, const std::function<at::Tensor(const at::Tensor&)>& call, const at::Tensor& x,
                              int steps) {
  if (!model.reset) return call(x);
  model.reset();
  std::vector<at::Tensor> results;
  for (int s = 0; s < steps; ++s) results.push_back(call(x).clone());
  return at::stack(results);
}

std::vector<Model> make_models(ModelScale scale, c10::Device device, c10::ScalarType dtype) {
  const Placement place{device, dtype};
  return scale == ModelScale::kBenchmark ? benchmark_models(place) : test_models(place);
}

}  // namespace jitc::bench
