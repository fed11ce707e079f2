#include "runtime/module_options.h"

#include <torch/nn/modules.h>

#include <cstring>
#include <mutex>
#include <typeindex>
#include <unordered_map>
#include <utility>

namespace jitc::runtime {

namespace {

using Words = c10::SmallVectorImpl<uintptr_t>;

// Options whose bytes are their value (numbers, enums, fixed arrays, optionals and variants of those):
// compared as bytes. Padding bytes take part too; they change only if the whole options object is assigned
// anew, which at worst re-traces once.
template <class Options>
void append_bytes(const Options& options, Words& out) {
  static_assert(std::is_trivially_copyable_v<Options>);
  constexpr size_t kWords = (sizeof(Options) + sizeof(uintptr_t) - 1) / sizeof(uintptr_t);
  uintptr_t words[kWords] = {};
  std::memcpy(words, &options, sizeof(Options));
  out.append(words, words + kWords);
}

// Field by field, for options holding a vector, a string, a tensor or a function.
class Fields {
 public:
  explicit Fields(Words& out) : out_(out) {}

  template <class... T>
  void add(const T&... fields) {
    (one(fields), ...);
  }

 private:
  void one(double v) { out_.push_back(c10::bit_cast<uint64_t>(v)); }  // -0.0 and NaN payloads stay distinct
  void one(int64_t v) { out_.push_back(static_cast<uintptr_t>(v)); }
  void one(bool v) { out_.push_back(v); }
  // A tensor in options (a loss's weight) is read by reference at every call, as a captured tensor is:
  // its identity is what the trace fixed.
  void one(const at::Tensor& t) { out_.push_back(reinterpret_cast<uintptr_t>(t.unsafeGetTensorImpl())); }
  void one(const std::string& s) {
    out_.push_back(s.size());
    for (size_t i = 0; i < s.size(); i += sizeof(uintptr_t)) {
      uintptr_t w = 0;
      std::memcpy(&w, s.data() + i, std::min(sizeof(uintptr_t), s.size() - i));
      out_.push_back(w);
    }
  }
  template <class T>
  void one(const std::vector<T>& v) {
    out_.push_back(v.size());
    for (const auto& x : v) one(x);
  }
  template <class A, class B>
  void one(const std::pair<A, B>& p) {
    one(p.first);
    one(p.second);
  }
  template <class T>
  void one(const std::optional<T>& o) {
    out_.push_back(o.has_value());
    if (o) one(*o);
  }
  template <size_t D, class T>
  void one(const torch::ExpandingArray<D, T>& a) {
    for (const T& x : *a) one(x);
  }
  // A variant of LibTorch's enum tags (a mode, a reduction, an activation): which one it holds. A
  // function it holds cannot be compared and is not guarded.
  template <class... T>
  void one(const std::variant<T...>& v) {
    out_.push_back(v.index());
  }
  template <class R, class... A>
  void one(const std::function<R(A...)>&) {}

  Words& out_;
};

// The options LibTorch's modules keep in a field named `options`.
template <class Impl>
const auto& options_of(const torch::nn::Module& m) {
  return static_cast<const Impl&>(m).options;
}

template <class Impl>
void append_options_bytes(const torch::nn::Module& m, Words& out) {
  append_bytes(options_of<Impl>(m), out);
}

void append_embedding(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::EmbeddingImpl>(m);
  Fields(out).add(o.num_embeddings(), o.embedding_dim(), o.padding_idx(), o.max_norm(), o.norm_type(), o.scale_grad_by_freq(), o.sparse(),
                  o._weight());
}
void append_embedding_bag(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::EmbeddingBagImpl>(m);
  Fields(out).add(o.num_embeddings(), o.embedding_dim(), o.max_norm(), o.norm_type(), o.scale_grad_by_freq(), o.mode(), o.sparse(),
                  o._weight(), o.include_last_offset(), o.padding_idx());
}
void append_gelu(const torch::nn::Module& m, Words& out) { Fields(out).add(options_of<torch::nn::GELUImpl>(m).approximate()); }
void append_layer_norm(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::LayerNormImpl>(m);
  Fields(out).add(o.normalized_shape(), o.eps(), o.elementwise_affine());
}
void append_unflatten(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::UnflattenImpl>(m);
  Fields(out).add(o.dim(), o.dimname(), o.sizes(), o.namedshape());
}
void append_upsample(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::UpsampleImpl>(m);
  Fields(out).add(o.size(), o.scale_factor(), o.mode(), o.align_corners());
}
void append_adaptive_log_softmax(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::AdaptiveLogSoftmaxWithLossImpl>(m);
  Fields(out).add(o.in_features(), o.n_classes(), o.cutoffs(), o.div_value(), o.head_bias());
}
template <class Impl>
void append_fractional_max_pool(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<Impl>(m);
  Fields(out).add(o.kernel_size(), o.output_size(), o.output_ratio(), o._random_samples());
}
template <class Impl>
void append_transformer_layer(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<Impl>(m);
  Fields(out).add(o.d_model(), o.nhead(), o.dim_feedforward(), o.dropout(), o.activation());
}
template <class Impl>
void append_layer_stack(const torch::nn::Module& m, Words& out) {  // its layers and norm are submodules
  Fields(out).add(options_of<Impl>(m).num_layers());
}
void append_transformer(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::TransformerImpl>(m);
  Fields(out).add(o.d_model(), o.nhead(), o.num_encoder_layers(), o.num_decoder_layers(), o.dim_feedforward(), o.dropout(), o.activation());
}
void append_bce(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::BCELossImpl>(m);
  Fields(out).add(o.weight(), o.reduction());
}
void append_bce_with_logits(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::BCEWithLogitsLossImpl>(m);
  Fields(out).add(o.weight(), o.reduction(), o.pos_weight());
}
void append_multi_margin(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::MultiMarginLossImpl>(m);
  Fields(out).add(o.p(), o.margin(), o.weight(), o.reduction());
}
void append_multilabel_soft_margin(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::MultiLabelSoftMarginLossImpl>(m);
  Fields(out).add(o.weight(), o.reduction());
}
void append_nll(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::NLLLossImpl>(m);
  Fields(out).add(o.weight(), o.ignore_index(), o.reduction());
}
void append_cross_entropy(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::CrossEntropyLossImpl>(m);
  Fields(out).add(o.weight(), o.ignore_index(), o.reduction(), o.label_smoothing());
}
void append_triplet_with_distance(const torch::nn::Module& m, Words& out) {
  const auto& o = options_of<torch::nn::TripletMarginWithDistanceLossImpl>(m);
  Fields(out).add(o.distance_function().has_value(), o.margin(), o.swap(), o.reduction());
}

using Appender = void (*)(const torch::nn::Module&, Words&);

// Every LibTorch module with options. Types without (ReLU-like modules without options, Sequential,
// ModuleList, Functional, Identity) and the user's own modules have no entry.
std::unordered_map<std::type_index, Appender> make_appenders() {
  std::unordered_map<std::type_index, Appender> table;
#define JITC_OPTIONS_AS_BYTES(Name) table.emplace(typeid(torch::nn::Name##Impl), &append_options_bytes<torch::nn::Name##Impl>);
  // clang-format off
  JITC_OPTIONS_AS_BYTES(AdaptiveAvgPool1d) JITC_OPTIONS_AS_BYTES(AdaptiveAvgPool2d) JITC_OPTIONS_AS_BYTES(AdaptiveAvgPool3d)
  JITC_OPTIONS_AS_BYTES(AdaptiveMaxPool1d) JITC_OPTIONS_AS_BYTES(AdaptiveMaxPool2d) JITC_OPTIONS_AS_BYTES(AdaptiveMaxPool3d)
  JITC_OPTIONS_AS_BYTES(AlphaDropout) JITC_OPTIONS_AS_BYTES(AvgPool1d) JITC_OPTIONS_AS_BYTES(AvgPool2d) JITC_OPTIONS_AS_BYTES(AvgPool3d)
  JITC_OPTIONS_AS_BYTES(BatchNorm1d) JITC_OPTIONS_AS_BYTES(BatchNorm2d) JITC_OPTIONS_AS_BYTES(BatchNorm3d) JITC_OPTIONS_AS_BYTES(Bilinear)
  JITC_OPTIONS_AS_BYTES(CELU) JITC_OPTIONS_AS_BYTES(ConstantPad1d) JITC_OPTIONS_AS_BYTES(ConstantPad2d) JITC_OPTIONS_AS_BYTES(ConstantPad3d)
  JITC_OPTIONS_AS_BYTES(Conv1d) JITC_OPTIONS_AS_BYTES(Conv2d) JITC_OPTIONS_AS_BYTES(Conv3d)
  JITC_OPTIONS_AS_BYTES(ConvTranspose1d) JITC_OPTIONS_AS_BYTES(ConvTranspose2d) JITC_OPTIONS_AS_BYTES(ConvTranspose3d)
  JITC_OPTIONS_AS_BYTES(CosineSimilarity) JITC_OPTIONS_AS_BYTES(CrossMapLRN2d) JITC_OPTIONS_AS_BYTES(Dropout) JITC_OPTIONS_AS_BYTES(Dropout2d)
  JITC_OPTIONS_AS_BYTES(Dropout3d) JITC_OPTIONS_AS_BYTES(ELU) JITC_OPTIONS_AS_BYTES(FeatureAlphaDropout) JITC_OPTIONS_AS_BYTES(Flatten)
  JITC_OPTIONS_AS_BYTES(Fold) JITC_OPTIONS_AS_BYTES(GLU) JITC_OPTIONS_AS_BYTES(GRU) JITC_OPTIONS_AS_BYTES(GRUCell) JITC_OPTIONS_AS_BYTES(GroupNorm)
  JITC_OPTIONS_AS_BYTES(Hardshrink) JITC_OPTIONS_AS_BYTES(Hardtanh) JITC_OPTIONS_AS_BYTES(InstanceNorm1d) JITC_OPTIONS_AS_BYTES(InstanceNorm2d)
  JITC_OPTIONS_AS_BYTES(InstanceNorm3d) JITC_OPTIONS_AS_BYTES(LPPool1d) JITC_OPTIONS_AS_BYTES(LPPool2d) JITC_OPTIONS_AS_BYTES(LPPool3d)
  JITC_OPTIONS_AS_BYTES(LSTM) JITC_OPTIONS_AS_BYTES(LSTMCell) JITC_OPTIONS_AS_BYTES(LeakyReLU) JITC_OPTIONS_AS_BYTES(Linear)
  JITC_OPTIONS_AS_BYTES(LocalResponseNorm) JITC_OPTIONS_AS_BYTES(LogSoftmax) JITC_OPTIONS_AS_BYTES(MaxPool1d) JITC_OPTIONS_AS_BYTES(MaxPool2d)
  JITC_OPTIONS_AS_BYTES(MaxPool3d) JITC_OPTIONS_AS_BYTES(MaxUnpool1d) JITC_OPTIONS_AS_BYTES(MaxUnpool2d) JITC_OPTIONS_AS_BYTES(MaxUnpool3d)
  JITC_OPTIONS_AS_BYTES(MultiheadAttention) JITC_OPTIONS_AS_BYTES(PReLU) JITC_OPTIONS_AS_BYTES(PairwiseDistance)
  JITC_OPTIONS_AS_BYTES(PixelShuffle) JITC_OPTIONS_AS_BYTES(PixelUnshuffle) JITC_OPTIONS_AS_BYTES(RNN) JITC_OPTIONS_AS_BYTES(RNNCell)
  JITC_OPTIONS_AS_BYTES(RReLU) JITC_OPTIONS_AS_BYTES(ReLU) JITC_OPTIONS_AS_BYTES(ReLU6) JITC_OPTIONS_AS_BYTES(ReflectionPad1d)
  JITC_OPTIONS_AS_BYTES(ReflectionPad2d) JITC_OPTIONS_AS_BYTES(ReflectionPad3d) JITC_OPTIONS_AS_BYTES(ReplicationPad1d)
  JITC_OPTIONS_AS_BYTES(ReplicationPad2d) JITC_OPTIONS_AS_BYTES(ReplicationPad3d) JITC_OPTIONS_AS_BYTES(SELU) JITC_OPTIONS_AS_BYTES(Softmax)
  JITC_OPTIONS_AS_BYTES(Softmin) JITC_OPTIONS_AS_BYTES(Softplus) JITC_OPTIONS_AS_BYTES(Softshrink) JITC_OPTIONS_AS_BYTES(Threshold)
  JITC_OPTIONS_AS_BYTES(Unfold) JITC_OPTIONS_AS_BYTES(ZeroPad1d) JITC_OPTIONS_AS_BYTES(ZeroPad2d) JITC_OPTIONS_AS_BYTES(ZeroPad3d)
  JITC_OPTIONS_AS_BYTES(L1Loss) JITC_OPTIONS_AS_BYTES(KLDivLoss) JITC_OPTIONS_AS_BYTES(MSELoss) JITC_OPTIONS_AS_BYTES(HingeEmbeddingLoss)
  JITC_OPTIONS_AS_BYTES(CosineEmbeddingLoss) JITC_OPTIONS_AS_BYTES(SmoothL1Loss) JITC_OPTIONS_AS_BYTES(HuberLoss)
  JITC_OPTIONS_AS_BYTES(MultiLabelMarginLoss) JITC_OPTIONS_AS_BYTES(SoftMarginLoss) JITC_OPTIONS_AS_BYTES(TripletMarginLoss)
  JITC_OPTIONS_AS_BYTES(CTCLoss) JITC_OPTIONS_AS_BYTES(PoissonNLLLoss) JITC_OPTIONS_AS_BYTES(MarginRankingLoss)
  // clang-format on
#undef JITC_OPTIONS_AS_BYTES
                                                                                                      using namespace torch::nn;
  table.emplace(typeid(EmbeddingImpl), &append_embedding);
  table.emplace(typeid(EmbeddingBagImpl), &append_embedding_bag);
  table.emplace(typeid(GELUImpl), &append_gelu);
  table.emplace(typeid(LayerNormImpl), &append_layer_norm);
  table.emplace(typeid(UnflattenImpl), &append_unflatten);
  table.emplace(typeid(UpsampleImpl), &append_upsample);
  table.emplace(typeid(AdaptiveLogSoftmaxWithLossImpl), &append_adaptive_log_softmax);
  table.emplace(typeid(FractionalMaxPool2dImpl), &append_fractional_max_pool<FractionalMaxPool2dImpl>);
  table.emplace(typeid(FractionalMaxPool3dImpl), &append_fractional_max_pool<FractionalMaxPool3dImpl>);
  table.emplace(typeid(TransformerEncoderLayerImpl), &append_transformer_layer<TransformerEncoderLayerImpl>);
  table.emplace(typeid(TransformerDecoderLayerImpl), &append_transformer_layer<TransformerDecoderLayerImpl>);
  table.emplace(typeid(TransformerEncoderImpl), &append_layer_stack<TransformerEncoderImpl>);
  table.emplace(typeid(TransformerDecoderImpl), &append_layer_stack<TransformerDecoderImpl>);
  table.emplace(typeid(TransformerImpl), &append_transformer);
  table.emplace(typeid(BCELossImpl), &append_bce);
  table.emplace(typeid(BCEWithLogitsLossImpl), &append_bce_with_logits);
  table.emplace(typeid(MultiMarginLossImpl), &append_multi_margin);
  table.emplace(typeid(MultiLabelSoftMarginLossImpl), &append_multilabel_soft_margin);
  table.emplace(typeid(NLLLossImpl), &append_nll);
  table.emplace(typeid(CrossEntropyLossImpl), &append_cross_entropy);
  table.emplace(typeid(TripletMarginWithDistanceLossImpl), &append_triplet_with_distance);
  return table;
}

Appender lookup(const std::type_info& type) {
  static const auto& table = *new std::unordered_map<std::type_index, Appender>(make_appenders());
  const auto it = table.find(type);
  return it == table.end() ? nullptr : it->second;
}

// A model has few module types: the hot path finds them by the type_info's address, in a short list per
// thread, before the table (whose hash reads the type's name).
Appender find_appender(const std::type_info& type) {
  thread_local c10::SmallVector<std::pair<const std::type_info*, Appender>, 16> seen;
  for (const auto& [t, appender] : seen)
    if (t == &type) return appender;
  const Appender appender = lookup(type);
  seen.emplace_back(&type, appender);
  return appender;
}

}  // namespace

void append_option_words(const torch::nn::Module& m, Words& out) {
  if (const Appender appender = find_appender(typeid(m))) appender(m, out);
}

}  // namespace jitc::runtime
