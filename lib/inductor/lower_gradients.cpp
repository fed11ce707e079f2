// Lowerings of the backward formulas autograd calls for activations (the ops a training trace's backward
// graph holds: threshold_backward for relu, tanh_backward, gelu_backward...), so that they fuse with the
// gradient arithmetic around them. Formulas and their order of operations follow ATen's CPU kernels
// (aten/src/ATen/native/cpu/Activation.cpp, BinaryOpsKernel.cpp, UnaryOpsKernel.cpp): computed in the
// output's compute type (float for half and bfloat16) and rounded once, as eager's kernels do.
#include "inductor/lowering.h"

#include <cmath>

namespace jitc::inductor {

namespace {

using c10::ScalarType;
using graph::Node;
using Values = std::vector<int>;

int k(KernelBuilder& kb, double v, ScalarType t) { return kb.constant(v, t); }
int mul(KernelBuilder& kb, int a, int b) { return kb.binary(ScalarOp::kMul, a, b); }
int add(KernelBuilder& kb, int a, int b) { return kb.binary(ScalarOp::kAdd, a, b); }
int sub(KernelBuilder& kb, int a, int b) { return kb.binary(ScalarOp::kSub, a, b); }

ScalarType out_dtype(LoweringContext& c, const Node& n) { return c.meta(n.outputs.at(0).values.at(0)).dtype; }

double number(LoweringContext& c, const Node& n, size_t i) {
  const Operand o = c.operand_of(n, i);
  if (o.is_tensor() || o.symbolic) throw Unsupported("a backward formula's scalar argument is not a constant");
  return o.scalar.toDouble();
}

// (grad_output, x) -> body(grad, x), in the output's type.
LowerFn gradient(std::function<int(KernelBuilder&, int grad, int x, ScalarType)> body) {
  return [body](LoweringContext& c, const Node& n) {
    return pointwise_loaders(c, n, {c.operand_of(n, 0), c.operand_of(n, 1)}, out_dtype(c, n),
                             [body](KernelBuilder& kb, const Values& v, ScalarType t) { return body(kb, v[0], v[1], t); });
  };
}

int gelu_backward(KernelBuilder& kb, int dy, int x, ScalarType t, bool tanh) {
  if (!tanh) {
    const int cdf = mul(kb, k(kb, 0.5, t), add(kb, k(kb, 1, t), kb.unary(ScalarOp::kErf, mul(kb, x, k(kb, M_SQRT1_2, t)))));
    const int pdf = mul(kb, k(kb, M_2_SQRTPI * M_SQRT1_2 * 0.5, t), kb.unary(ScalarOp::kExp, mul(kb, mul(kb, x, x), k(kb, -0.5, t))));
    return mul(kb, dy, add(kb, cdf, mul(kb, x, pdf)));
  }
  const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
  const int x_sq = mul(kb, x, x);
  const int x_cube = mul(kb, x_sq, x);
  const int inner = mul(kb, k(kb, beta, t), add(kb, x, mul(kb, k(kb, kappa, t), x_cube)));
  const int tanh_inner = kb.unary(ScalarOp::kTanh, inner);
  const int left = mul(kb, k(kb, 0.5, t), x);
  const int right = add(kb, k(kb, 1, t), tanh_inner);
  const int left_derivative = mul(kb, k(kb, 0.5, t), right);
  const int tanh_derivative = sub(kb, k(kb, 1, t), mul(kb, tanh_inner, tanh_inner));
  const int inner_derivative = mul(kb, k(kb, beta, t), add(kb, k(kb, 1, t), mul(kb, k(kb, 3 * kappa, t), x_sq)));
  const int right_derivative = mul(kb, mul(kb, left, tanh_derivative), inner_derivative);
  return mul(kb, dy, add(kb, left_derivative, right_derivative));
}

}  // namespace

void register_gradients(Registry& r) {
  r["aten::threshold_backward"] = [](LoweringContext& c, const Node& n) {  // x <= threshold ? 0 : grad
    const double threshold = number(c, n, 2);
    return gradient([threshold](KernelBuilder& kb, int grad, int x, ScalarType t) {
      return kb.where(kb.binary(ScalarOp::kLe, x, k(kb, threshold, t)), k(kb, 0, t), grad);
    })(c, n);
  };
  r["aten::hardtanh_backward"] = [](LoweringContext& c, const Node& n) {  // x <= min || x >= max ? 0 : grad
    const double lo = number(c, n, 2), hi = number(c, n, 3);
    return gradient([lo, hi](KernelBuilder& kb, int grad, int x, ScalarType t) {
      const int outside = kb.binary(ScalarOp::kOr, kb.binary(ScalarOp::kLe, x, k(kb, lo, t)), kb.binary(ScalarOp::kGe, x, k(kb, hi, t)));
      return kb.where(outside, k(kb, 0, t), grad);
    })(c, n);
  };
  r["aten::tanh_backward"] = gradient([](KernelBuilder& kb, int grad, int y, ScalarType t) {  // grad * (1 - y * y)
    return mul(kb, grad, sub(kb, k(kb, 1, t), mul(kb, y, y)));
  });
  r["aten::sigmoid_backward"] = gradient([](KernelBuilder& kb, int grad, int y, ScalarType t) {  // grad * (1 - y) * y
    return mul(kb, mul(kb, grad, sub(kb, k(kb, 1, t), y)), y);
  });
  r["aten::silu_backward"] = gradient([](KernelBuilder& kb, int grad, int x, ScalarType t) {
    const int sigmoid = kb.binary(ScalarOp::kDiv, k(kb, 1, t), add(kb, k(kb, 1, t), kb.unary(ScalarOp::kExp, kb.unary(ScalarOp::kNeg, x))));
    return mul(kb, mul(kb, grad, sigmoid), add(kb, k(kb, 1, t), mul(kb, x, sub(kb, k(kb, 1, t), sigmoid))));
  });
  r["aten::gelu_backward"] = [](LoweringContext& c, const Node& n) {
    const bool tanh = n.args.size() > 2 && n.args[2].constant.isString() && n.args[2].constant.toStringRef() == "tanh";
    return gradient([tanh](KernelBuilder& kb, int grad, int x, ScalarType t) { return gelu_backward(kb, grad, x, t, tanh); })(c, n);
  };
  r["aten::leaky_relu_backward"] = [](LoweringContext& c, const Node& n) {  // x > 0 ? grad : grad * slope
    const double slope = number(c, n, 2);
    return gradient([slope](KernelBuilder& kb, int grad, int x, ScalarType t) {
      return kb.where(kb.binary(ScalarOp::kGt, x, k(kb, 0, t)), grad, mul(kb, grad, k(kb, slope, t)));
    })(c, n);
  };
}

}  // namespace jitc::inductor
