#include "workloads.h"

#include <ATen/ATen.h>

#include <cmath>
#include <utility>

namespace jitc::bench {
namespace {

constexpr int64_t kRows = 4096, kCols = 1024;  // the [4096,1024] workloads: 16 MiB of float32
constexpr int64_t kFloat = 4;
// Inputs and weights use separate seeds so that adding an input never changes a workload's weights.
constexpr uint64_t kInputSeed = 0, kWeightSeed = 1;

int64_t bytes_of(std::initializer_list<int64_t> numels) {
  int64_t total = 0;
  for (int64_t n : numels) total += n * kFloat;
  return total;
}

std::function<std::vector<at::Tensor>()> randn_inputs(std::vector<std::vector<int64_t>> shapes) {
  return [shapes = std::move(shapes)] {
    at::manual_seed(kInputSeed);
    std::vector<at::Tensor> inputs;
    for (const auto& shape : shapes) inputs.push_back(at::randn(shape));
    return inputs;
  };
}

Workload pointwise_chain() {
  constexpr int64_t n = 4 << 20;
  return {"pointwise_chain", "(sin(x)+cos(x)).relu(), x [4M]", randn_inputs({{n}}),
          Fn1([](const at::Tensor& x) { return (at::sin(x) + at::cos(x)).relu(); }), bytes_of({n, n})};
}

Workload bias_gelu() {
  return {"bias_gelu", "gelu(x+b) (erf), x [4096,1024], b [1024]", randn_inputs({{kRows, kCols}, {kCols}}),
          Fn2([](const at::Tensor& x, const at::Tensor& b) { return at::gelu(x + b); }),
          bytes_of({kRows * kCols, kCols, kRows * kCols})};
}

Workload softmax() {
  return {"softmax", "softmax(x, -1), x [4096,1024]", randn_inputs({{kRows, kCols}}),
          Fn1([](const at::Tensor& x) { return at::softmax(x, -1); }), bytes_of({kRows * kCols, kRows * kCols})};
}

// Over the outer dim: each column's statistics run down 4096 rows (jitc: blocks of columns side by side).
Workload softmax_dim0() {
  return {"softmax_dim0", "softmax(x, 0), x [4096,1024]", randn_inputs({{kRows, kCols}}),
          Fn1([](const at::Tensor& x) { return at::softmax(x, 0); }), bytes_of({kRows * kCols, kRows * kCols})};
}

Workload layer_norm() {
  return {"layer_norm", "layer_norm(x, [1024], w, b), x [4096,1024]",
          randn_inputs({{kRows, kCols}, {kCols}, {kCols}}),
          Fn3([](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
            return at::layer_norm(x, {kCols}, w, b, 1e-5);
          }),
          bytes_of({kRows * kCols, kCols, kCols, kRows * kCols})};
}

Workload rms_norm_residual() {
  return {"rms_norm_residual", "x + y*rsqrt(mean(y*y,-1)+eps)*w, x,y [4096,1024], w [1024]",
          randn_inputs({{kRows, kCols}, {kRows, kCols}, {kCols}}),
          Fn3([](const at::Tensor& x, const at::Tensor& y, const at::Tensor& w) {
            return x + (y * at::rsqrt((y * y).mean(-1, /*keepdim=*/true) + 1e-6)) * w;
          }),
          bytes_of({kRows * kCols, kRows * kCols, kCols, kRows * kCols})};
}

Workload row_sum_squares() {
  return {"row_sum_squares", "(x*x).sum(-1), x [4096,1024]", randn_inputs({{kRows, kCols}}),
          Fn1([](const at::Tensor& x) { return (x * x).sum(-1); }), bytes_of({kRows * kCols, kRows})};
}

Workload mlp_block() {
  constexpr int64_t tokens = 256, hidden = 4096;
  at::manual_seed(kWeightSeed);
  const double scale_in = 1.0 / std::sqrt(double(kCols)), scale_hidden = 1.0 / std::sqrt(double(hidden));
  at::Tensor w1 = at::randn({hidden, kCols}) * scale_in, b1 = at::randn({hidden}) * scale_in;
  at::Tensor w2 = at::randn({kCols, hidden}) * scale_hidden, b2 = at::randn({kCols}) * scale_hidden;
  return {"mlp_block", "linear(1024->4096), gelu, linear(4096->1024) + x, x [256,1024]",
          randn_inputs({{tokens, kCols}}),
          Fn1([w1, b1, w2, b2](const at::Tensor& x) { return at::linear(at::gelu(at::linear(x, w1, b1)), w2, b2) + x; }),
          bytes_of({tokens * kCols, hidden * kCols, hidden, kCols * hidden, kCols, tokens * kCols}),
          /*compute_bound=*/true};
}

Workload attention() {
  constexpr int64_t heads = 8, seq = 256, dim = 64;
  const double scale = 1.0 / std::sqrt(double(dim));
  return {"attention", "softmax(q k^T/sqrt(d)) v via bmm, q,k,v [8,256,64]",
          randn_inputs({{heads, seq, dim}, {heads, seq, dim}, {heads, seq, dim}}),
          Fn3([scale](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
            return at::bmm(at::softmax(at::bmm(q, k.transpose(1, 2)) * scale, -1), v);
          }),
          bytes_of({4 * heads * seq * dim}), /*compute_bound=*/true};
}

// Ten ops on 16 floats: the time is all per-call overhead (dispatch, guards, kernel launches).
Workload tiny_chain() {
  return {"tiny_chain", "10 pointwise ops, x [16]", randn_inputs({{16}}), Fn1([](const at::Tensor& x) {
            return at::sigmoid(at::tanh((((x * 2 + 1).sin() - 0.5).abs().sqrt() * x)) + x);
          }),
          bytes_of({16, 16})};
}

Workload resnet_block() {
  constexpr int64_t batch = 8, channels = 64, side = 56;
  at::manual_seed(kWeightSeed);
  const double conv_scale = std::sqrt(2.0 / double(channels * 9));
  at::Tensor conv1 = at::randn({channels, channels, 3, 3}) * conv_scale;
  at::Tensor conv2 = at::randn({channels, channels, 3, 3}) * conv_scale;
  // Per batch norm: weight, bias, running mean, running variance (kept away from zero).
  std::vector<at::Tensor> bn;
  for (int i = 0; i < 2; ++i) {
    bn.push_back(at::rand({channels}) + 0.5);
    bn.push_back(at::randn({channels}) * 0.1);
    bn.push_back(at::randn({channels}) * 0.1);
    bn.push_back(at::rand({channels}) + 0.5);
  }
  auto fn = [conv1, conv2, bn](const at::Tensor& x) {
    auto batch_norm = [&](const at::Tensor& t, int i) {
      return at::batch_norm(t, bn[4 * i], bn[4 * i + 1], bn[4 * i + 2], bn[4 * i + 3], /*training=*/false,
                            /*momentum=*/0.1, /*eps=*/1e-5, /*cudnn_enabled=*/true);
    };
    at::Tensor y = at::relu(batch_norm(at::conv2d(x, conv1, {}, 1, 1), 0));
    return at::relu(batch_norm(at::conv2d(y, conv2, {}, 1, 1), 1) + x);
  };
  const int64_t activation = batch * channels * side * side;
  return {"resnet_block", "conv3x3-bn-relu-conv3x3-bn + x, relu (eval), x [8,64,56,56]",
          randn_inputs({{batch, channels, side, side}}), Fn1(fn),
          bytes_of({activation, 2 * channels * channels * 9, 8 * channels, activation}), /*compute_bound=*/true};
}

}  // namespace

std::vector<Workload> make_workloads() {
  return {pointwise_chain(), bias_gelu(), softmax(),   softmax_dim0(), layer_norm(),  rms_norm_residual(),
          row_sum_squares(), mlp_block(), attention(), tiny_chain(),   resnet_block()};
}

}  // namespace jitc::bench
