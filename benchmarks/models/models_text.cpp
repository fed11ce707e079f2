// The suite's language models and losses: a GPT-2-style decoder with explicit softmax attention (as
// nanoGPT writes it without flash attention), a LLaMA-style decoder (RMSNorm, rotary embeddings through
// rotate_half and cat, SwiGLU, grouped-query attention through scaled_dot_product_attention), and
// cross-entropy over a vocabulary.
#include "models/architectures.h"
#include "models/module_forward.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cmath>
#include <string>
#include <vector>

namespace jitc::bench {
namespace {

namespace nn = torch::nn;

// ---- GPT-2 ------------------------------------------------------------------------------------------
struct GptBlockImpl : nn::Module {
  GptBlockImpl(int64_t width, int64_t heads)
      : heads(heads),
        ln1(register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({width})))),
        ln2(register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({width})))),
        qkv(register_module("qkv", nn::Linear(width, 3 * width))),
        proj(register_module("proj", nn::Linear(width, width))),
        fc(register_module("fc", nn::Linear(width, 4 * width))),
        out(register_module("out", nn::Linear(4 * width, width))) {}
  at::Tensor attention(const at::Tensor& x) {
    const int64_t b = x.size(0), t = x.size(1), c = x.size(2);
    auto parts = qkv->forward(x).split(c, 2);
    auto heads_of = [&](const at::Tensor& p) { return p.view({b, t, heads, c / heads}).transpose(1, 2); };
    const at::Tensor q = heads_of(parts[0]), k = heads_of(parts[1]), v = heads_of(parts[2]);
    at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(c / heads)));
    const at::Tensor causal = at::ones({t, t}, x.options().dtype(at::kBool)).tril().logical_not();
    at::Tensor y = at::matmul(at::softmax(scores.masked_fill(causal, -INFINITY), -1), v);
    return proj->forward(y.transpose(1, 2).contiguous().view({b, t, c}));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = x + attention(ln1->forward(x));
    return h + out->forward(at::gelu(fc->forward(ln2->forward(h)), "tanh"));
  }
  int64_t heads;
  nn::LayerNorm ln1, ln2;
  nn::Linear qkv, proj, fc, out;
};
TORCH_MODULE(GptBlock);

struct GptImpl : nn::Module {
  GptImpl(int64_t layers, int64_t width, int64_t heads, int64_t vocab, int64_t context)
      : tokens(register_module("tokens", nn::Embedding(vocab, width))),
        positions(register_module("positions", nn::Embedding(context, width))),
        ln(register_module("ln", nn::LayerNorm(nn::LayerNormOptions({width})))) {
    for (int64_t l = 0; l < layers; ++l) blocks->push_back(GptBlock(width, heads));
    register_module("blocks", blocks);
  }
  at::Tensor forward(const at::Tensor& ids) {
    const at::Tensor pos = at::arange(ids.size(1), ids.options());
    at::Tensor x = tokens->forward(ids) + positions->forward(pos);
    for (const auto& block : *blocks) x = block->as<GptBlock>()->forward(x);
    return at::linear(ln->forward(x), tokens->weight);  // the output head shares the embedding (GPT-2)
  }
  nn::Embedding tokens, positions;
  nn::LayerNorm ln;
  nn::ModuleList blocks;
};
TORCH_MODULE(Gpt);

// ---- GPT-2 decoding with a static KV cache -----------------------------------------------------------
// One token per call through GPT blocks. Each block's keys and values are kept in a static cache [B, H, T,
// D] written in place at the current position (an int64 buffer, advanced in place); attention runs over
// the whole cache with the positions not yet written masked, so the shapes never change, as in a
// static-cache serving loop. Returns each sequence's greedy next token.
struct DecoderImpl : nn::Module {
  DecoderImpl(int64_t layers, int64_t width, int64_t heads, int64_t vocab, int64_t context, int64_t batch)
      : heads(heads),
        tokens(register_module("tokens", nn::Embedding(vocab, width))),
        positions(register_module("positions", nn::Embedding(context, width))),
        ln(register_module("ln", nn::LayerNorm(nn::LayerNormOptions({width})))) {
    for (int64_t l = 0; l < layers; ++l) {
      blocks->push_back(GptBlock(width, heads));
      keys.push_back(register_buffer("keys" + std::to_string(l), at::zeros({batch, heads, context, width / heads})));
      values.push_back(register_buffer("values" + std::to_string(l), at::zeros({batch, heads, context, width / heads})));
    }
    register_module("blocks", blocks);
    pos = register_buffer("pos", at::zeros({1}, at::kLong));
  }
  at::Tensor attention(GptBlockImpl& block, size_t l, const at::Tensor& x) {
    const int64_t batch = x.size(0), c = x.size(2), d = c / heads;
    auto parts = block.qkv->forward(x).split(c, 2);
    auto heads_of = [&](const at::Tensor& p) { return p.view({batch, 1, heads, d}).transpose(1, 2); };
    keys[l].index_copy_(2, pos, heads_of(parts[1]));
    values[l].index_copy_(2, pos, heads_of(parts[2]));
    at::Tensor scores = at::matmul(heads_of(parts[0]), keys[l].transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d)));
    const at::Tensor unwritten = at::arange(keys[l].size(2), pos.options()) > pos;
    at::Tensor y = at::matmul(at::softmax(scores.masked_fill(unwritten, -INFINITY), -1), values[l]);
    return block.proj->forward(y.transpose(1, 2).reshape({batch, 1, c}));
  }
  at::Tensor forward(const at::Tensor& ids) {
    at::Tensor x = tokens->forward(ids) + positions->forward(pos);
    for (size_t l = 0; l < blocks->size(); ++l) {
      auto& block = *blocks[l]->as<GptBlock>();
      x = x + attention(block, l, block.ln1->forward(x));
      x = x + block.out->forward(at::gelu(block.fc->forward(block.ln2->forward(x)), "tanh"));
    }
    at::Tensor next = at::linear(ln->forward(x), tokens->weight).argmax(-1);
    pos.add_(1).remainder_(keys[0].size(2));  // wraps around: a benchmark runs more steps than the context
    return next;
  }
  void reset() {
    for (size_t l = 0; l < keys.size(); ++l) keys[l].zero_(), values[l].zero_();
    pos.zero_();
  }
  int64_t heads;
  nn::Embedding tokens, positions;
  nn::LayerNorm ln;
  nn::ModuleList blocks;
  std::vector<at::Tensor> keys, values;
  at::Tensor pos;
};
TORCH_MODULE(Decoder);

// ---- LLaMA ------------------------------------------------------------------------------------------
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight) { return x * at::rsqrt(x.pow(2).mean(-1, true) + 1e-6) * weight; }

at::Tensor rotate_half(const at::Tensor& x) {
  auto halves = x.chunk(2, -1);
  return at::cat({-halves[1], halves[0]}, -1);
}

struct LlamaBlockImpl : nn::Module {
  LlamaBlockImpl(int64_t width, int64_t heads, int64_t kv_heads)
      : heads(heads),
        kv_heads(kv_heads),
        head_dim(width / heads),
        q(register_module("q", nn::Linear(nn::LinearOptions(width, width).bias(false)))),
        kv(register_module("kv", nn::Linear(nn::LinearOptions(width, 2 * kv_heads * head_dim).bias(false)))),
        o(register_module("o", nn::Linear(nn::LinearOptions(width, width).bias(false)))),
        gate_up(register_module("gate_up", nn::Linear(nn::LinearOptions(width, 2 * 4 * width).bias(false)))),
        down(register_module("down", nn::Linear(nn::LinearOptions(4 * width, width).bias(false)))) {
    norm1 = register_parameter("norm1", at::ones({width}));
    norm2 = register_parameter("norm2", at::ones({width}));
  }
  at::Tensor attention(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    const int64_t b = x.size(0), t = x.size(1);
    at::Tensor query = q->forward(x).view({b, t, heads, head_dim}).transpose(1, 2);
    auto kvs = kv->forward(x).view({b, t, 2 * kv_heads, head_dim}).transpose(1, 2).chunk(2, 1);
    auto rotate = [&](const at::Tensor& h) { return h * cos + rotate_half(h) * sin; };
    const at::Tensor key = rotate(kvs[0]).repeat_interleave(heads / kv_heads, 1), value = kvs[1].repeat_interleave(heads / kv_heads, 1);
    at::Tensor y = at::scaled_dot_product_attention(rotate(query), key, value, {}, 0.0, true);
    return o->forward(y.transpose(1, 2).reshape({b, t, heads * head_dim}));
  }
  at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    at::Tensor h = x + attention(rms_norm(x, norm1), cos, sin);
    auto gu = gate_up->forward(rms_norm(h, norm2)).chunk(2, -1);
    return h + down->forward(at::silu(gu[0]) * gu[1]);
  }
  int64_t heads, kv_heads, head_dim;
  nn::Linear q, kv, o, gate_up, down;
  at::Tensor norm1, norm2;
};
TORCH_MODULE(LlamaBlock);

struct LlamaImpl : nn::Module {
  LlamaImpl(int64_t layers, int64_t width, int64_t heads, int64_t kv_heads, int64_t vocab)
      : head_dim(width / heads), tokens(register_module("tokens", nn::Embedding(vocab, width))) {
    for (int64_t l = 0; l < layers; ++l) blocks->push_back(LlamaBlock(width, heads, kv_heads));
    register_module("blocks", blocks);
    head = register_module("head", nn::Linear(nn::LinearOptions(width, vocab).bias(false)));
    norm = register_parameter("norm", at::ones({width}));
  }
  at::Tensor forward(const at::Tensor& ids) {
    const auto options = norm.options();  // the weights' device and dtype
    const at::Tensor inverse = at::pow(10000.0, -at::arange(0, head_dim, 2, options.dtype(at::kFloat)) / static_cast<double>(head_dim));
    const at::Tensor angles = at::outer(at::arange(ids.size(1), options.dtype(at::kFloat)), inverse);
    const at::Tensor both = at::cat({angles, angles}, -1);
    const at::Tensor cos = both.cos().to(options.dtype()), sin = both.sin().to(options.dtype());
    at::Tensor x = tokens->forward(ids);
    for (const auto& block : *blocks) x = block->as<LlamaBlock>()->forward(x, cos, sin);
    return head->forward(rms_norm(x, norm));
  }
  int64_t head_dim;
  nn::Embedding tokens;
  nn::ModuleList blocks;
  nn::Linear head{nullptr};
  at::Tensor norm;
};
TORCH_MODULE(Llama);

}  // namespace

Forward gpt(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t vocab, int64_t context) {
  return forward_of(Gpt(layers, width, heads, vocab, context), place);
}
Stateful gpt_decoder(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t vocab, int64_t context, int64_t batch) {
  Decoder decoder(layers, width, heads, vocab, context, batch);
  Forward forward = forward_of(decoder, place);
  return {forward, [impl = decoder.ptr()] {
            at::NoGradGuard no_grad;
            impl->reset();
          }};
}
Forward llama(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t kv_heads, int64_t vocab) {
  return forward_of(Llama(layers, width, heads, kv_heads, vocab), place);
}
Trainable train_gpt(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t vocab, int64_t context) {
  return trainable_of(Gpt(layers, width, heads, vocab, context), place);
}
Trainable train_llama(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t kv_heads, int64_t vocab) {
  return trainable_of(Llama(layers, width, heads, kv_heads, vocab), place);
}
Forward cross_entropy(const at::Tensor& targets) {
  return [targets](const at::Tensor& logits) { return at::cross_entropy_loss(logits, targets); };
}

}  // namespace jitc::bench
