// The suite's other architectures: a BERT-style encoder (post-norm blocks, bidirectional SDPA, a pooler),
// an LSTM language model (torch::nn::LSTM, as the pytorch-cpp tutorials write it), the VAE of
// pytorch/examples (reparameterization with randn_like, binary cross-entropy plus the KL term), and a
// DLRM-like recommender (EmbeddingBag tables, a bottom and a top MLP, pairwise dot interactions).
#include "models/architectures.h"
#include "models/module_forward.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/modules/activation.h>

#include <string>
#include <vector>

namespace jitc::bench {
namespace {

namespace nn = torch::nn;

// ---- BERT -------------------------------------------------------------------------------------------
struct BertLayerImpl : nn::Module {
  BertLayerImpl(int64_t width, int64_t heads, int64_t hidden)
      : heads(heads),
        qkv(register_module("qkv", nn::Linear(width, 3 * width))),
        proj(register_module("proj", nn::Linear(width, width))),
        ln1(register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({width})))),
        fc(register_module("fc", nn::Linear(width, hidden))),
        out(register_module("out", nn::Linear(hidden, width))),
        ln2(register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({width})))) {}
  at::Tensor forward(const at::Tensor& x) {
    const int64_t b = x.size(0), t = x.size(1), c = x.size(2);
    auto parts = qkv->forward(x).split(c, 2);
    auto heads_of = [&](const at::Tensor& p) { return p.view({b, t, heads, c / heads}).transpose(1, 2); };
    const at::Tensor y = at::scaled_dot_product_attention(heads_of(parts[0]), heads_of(parts[1]), heads_of(parts[2]));
    const at::Tensor h = ln1->forward(x + proj->forward(y.transpose(1, 2).reshape({b, t, c})));
    return ln2->forward(h + out->forward(at::gelu(fc->forward(h))));
  }
  int64_t heads;
  nn::Linear qkv, proj;
  nn::LayerNorm ln1;
  nn::Linear fc, out;
  nn::LayerNorm ln2;
};
TORCH_MODULE(BertLayer);

struct BertImpl : nn::Module {
  BertImpl(int64_t layers, int64_t width, int64_t heads, int64_t hidden, int64_t vocab, int64_t context)
      : tokens(register_module("tokens", nn::Embedding(vocab, width))),
        positions(register_module("positions", nn::Embedding(context, width))),
        ln(register_module("ln", nn::LayerNorm(nn::LayerNormOptions({width})))),
        pooler(register_module("pooler", nn::Linear(width, width))) {
    for (int64_t l = 0; l < layers; ++l) blocks->push_back(BertLayer(width, heads, hidden));
    register_module("blocks", blocks);
  }
  // Token ids in, the pooled first token ([CLS]) out.
  at::Tensor forward(const at::Tensor& ids) {
    const at::Tensor pos = at::arange(ids.size(1), ids.options());
    at::Tensor x = ln->forward(tokens->forward(ids) + positions->forward(pos));
    for (const auto& block : *blocks) x = block->as<BertLayer>()->forward(x);
    return at::tanh(pooler->forward(x.select(1, 0)));
  }
  nn::Embedding tokens, positions;
  nn::LayerNorm ln;
  nn::Linear pooler;
  nn::ModuleList blocks;
};
TORCH_MODULE(Bert);

// ---- LSTM language model ----------------------------------------------------------------------------
struct LstmLmImpl : nn::Module {
  LstmLmImpl(int64_t vocab, int64_t width, int64_t layers)
      : embed(register_module("embed", nn::Embedding(vocab, width))),
        lstm(register_module("lstm", nn::LSTM(nn::LSTMOptions(width, width).num_layers(layers).batch_first(true)))),
        head(register_module("head", nn::Linear(width, vocab))) {}
  // Token ids [B, T] in, logits [B, T, vocab] out (the state starts at zero each call).
  at::Tensor forward(const at::Tensor& ids) { return head->forward(std::get<0>(lstm->forward(embed->forward(ids)))); }
  nn::Embedding embed;
  nn::LSTM lstm;
  nn::Linear head;
};
TORCH_MODULE(LstmLm);

// ---- VAE --------------------------------------------------------------------------------------------
struct VaeImpl : nn::Module {
  VaeImpl(int64_t pixels, int64_t hidden, int64_t latent)
      : fc1(register_module("fc1", nn::Linear(pixels, hidden))),
        mu(register_module("mu", nn::Linear(hidden, latent))),
        logvar(register_module("logvar", nn::Linear(hidden, latent))),
        fc3(register_module("fc3", nn::Linear(latent, hidden))),
        fc4(register_module("fc4", nn::Linear(hidden, pixels))) {}
  // Images in [0, 1], flattened, in; the negative ELBO (summed binary cross-entropy plus KL) out.
  at::Tensor forward(const at::Tensor& x) {
    const at::Tensor h = at::relu(fc1->forward(x));
    const at::Tensor m = mu->forward(h), lv = logvar->forward(h);
    const at::Tensor z = m + at::randn_like(m) * at::exp(0.5 * lv);
    const at::Tensor recon = at::sigmoid(fc4->forward(at::relu(fc3->forward(z))));
    const at::Tensor bce = at::binary_cross_entropy(recon, x, {}, at::Reduction::Sum);
    return bce - 0.5 * at::sum(1 + lv - m.pow(2) - lv.exp());
  }
  nn::Linear fc1, mu, logvar, fc3, fc4;
};
TORCH_MODULE(Vae);

// ---- DLRM -------------------------------------------------------------------------------------------
nn::Sequential mlp(const std::vector<int64_t>& widths, bool last_relu) {
  nn::Sequential s;
  for (size_t k = 0; k + 1 < widths.size(); ++k) {
    s->push_back(nn::Linear(widths[k], widths[k + 1]));
    if (k + 2 < widths.size() || last_relu) s->push_back(nn::ReLU());
  }
  return s;
}

struct DlrmImpl : nn::Module {
  DlrmImpl(const DlrmShape& shape)
      : bottom(register_module("bottom", mlp({shape.dense, 4 * shape.dim, 2 * shape.dim, shape.dim}, true))),
        top(register_module("top", mlp({shape.dim + (shape.tables + 1) * shape.tables / 2, 4 * shape.dim, 2 * shape.dim, 1}, false))) {
    for (int64_t t = 0; t < shape.tables; ++t)
      tables->push_back(nn::EmbeddingBag(nn::EmbeddingBagOptions(shape.rows, shape.dim).mode(torch::kSum)));
    register_module("tables", tables);
    // The dense features of the batch: a feature store's, held by the model so that its input is the ids.
    dense = register_buffer("dense", at::randn({shape.batch, shape.dense}));
    // Flat positions (i, j), j < i, of the interaction matrix's lower triangle.
    const int64_t features = shape.tables + 1;
    std::vector<int64_t> lower;
    for (int64_t i = 0; i < features; ++i)
      for (int64_t j = 0; j < i; ++j) lower.push_back(i * features + j);
    pairs = register_buffer("pairs", at::tensor(lower, at::kLong));
  }
  // Sparse ids [B, tables, bag] in, click probabilities [B, 1] out.
  at::Tensor forward(const at::Tensor& ids) {
    const at::Tensor d = bottom->forward(dense);
    std::vector<at::Tensor> features{d};
    for (size_t t = 0; t < tables->size(); ++t) features.push_back(tables[t]->as<nn::EmbeddingBag>()->forward(ids.select(1, t)));
    const at::Tensor all = at::stack(features, 1);
    const at::Tensor interactions = at::bmm(all, all.transpose(1, 2)).flatten(1).index_select(1, pairs);
    return at::sigmoid(top->forward(at::cat({d, interactions}, 1)));
  }
  nn::Sequential bottom, top;
  nn::ModuleList tables;
  at::Tensor dense, pairs;
};
TORCH_MODULE(Dlrm);

}  // namespace

Forward bert(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t hidden, int64_t vocab, int64_t context) {
  return forward_of(Bert(layers, width, heads, hidden, vocab, context), place);
}
Forward lstm_lm(const Placement& place, int64_t vocab, int64_t width, int64_t layers) {
  LstmLm model(vocab, width, layers);
  Forward forward = forward_of(model, place);
  model->lstm->flatten_parameters();  // one weight buffer for cuDNN after the move to the device
  return forward;
}
Forward vae(const Placement& place, int64_t pixels, int64_t hidden, int64_t latent) {
  return forward_of(Vae(pixels, hidden, latent), place);
}
Forward dlrm(const Placement& place, const DlrmShape& shape) { return forward_of(Dlrm(shape), place); }
Forward policy_mlp(const Placement& place, int64_t observations, int64_t hidden, int64_t actions) {
  return forward_of(nn::Sequential(nn::Linear(observations, hidden), nn::Tanh(), nn::Linear(hidden, hidden), nn::Tanh(),
                                   nn::Linear(hidden, actions)),
                    place);
}

Trainable train_bert(const Placement& place, int64_t layers, int64_t width, int64_t heads, int64_t hidden, int64_t vocab, int64_t context) {
  return trainable_of(Bert(layers, width, heads, hidden, vocab, context), place);
}
Trainable train_lstm_lm(const Placement& place, int64_t vocab, int64_t width, int64_t layers) {
  LstmLm model(vocab, width, layers);
  Trainable trainable = trainable_of(model, place);
  model->lstm->flatten_parameters();
  return trainable;
}
Trainable train_vae(const Placement& place, int64_t pixels, int64_t hidden, int64_t latent) {
  return trainable_of(Vae(pixels, hidden, latent), place);
}
Trainable train_dlrm(const Placement& place, const DlrmShape& shape) { return trainable_of(Dlrm(shape), place); }

}  // namespace jitc::bench
