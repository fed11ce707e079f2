// Lowerings of ops that read a window of their input per output element: max_pool2d (a max over the
// window, as ATen's CPU kernel takes it) and upsample_nearest2d at power-of-two factors (an index shift).
// Both then fuse with their neighbours instead of running as extern calls that write their whole result.
#include "inductor/lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace jitc::inductor {

namespace {

using c10::ScalarType;
using graph::Node;
using graph::SymShape;
using graph::ValueId;

ValueId output(const Node& n) { return n.outputs.at(0).values.at(0); }

// A [h, w] argument: one value for both, or two; `otherwise` when absent or empty (stride = kernel).
std::array<int64_t, 2> pair_arg(const Node& n, size_t i, std::array<int64_t, 2> otherwise) {
  if (i >= n.args.size() || n.args[i].constant.isNone()) return otherwise;
  if (!n.args[i].symbolic.empty() || !n.args[i].constant.isIntList())
    throw Unsupported(fmt::format("argument {} of {} is not constant", i, n.name()));
  const auto v = n.args[i].constant.toIntVector();
  if (v.empty()) return otherwise;
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) throw Unsupported(fmt::format("argument {} of {} has {} values", i, n.name(), v.size()));
  return {v[0], v[1]};
}

bool static_shape(const SymShape& s) {
  return std::all_of(s.begin(), s.end(), [](const graph::SymExpr& e) { return e.is_constant(); });
}

struct Pool {
  std::array<int64_t, 2> kernel, stride, padding, dilation, extent;  // extent: the input's [H, W]
};

// x[h * stride - padding + i * dilation] of window position i, and whether it lies inside the input.
std::pair<int, int> window_position(KernelBuilder& kb, int out, int64_t stride, int64_t padding, int64_t offset, int64_t extent) {
  const int at = kb.add(kb.mul(out, kb.index_constant(stride)), kb.index_constant(offset - padding));
  const int inside = kb.binary(ScalarOp::kAnd, kb.binary(ScalarOp::kGe, at, kb.index_constant(0)),
                               kb.binary(ScalarOp::kLt, at, kb.index_constant(extent)));
  const int clamped = kb.binary(ScalarOp::kMax, kb.binary(ScalarOp::kMin, at, kb.index_constant(extent - 1)), kb.index_constant(0));
  return {clamped, inside};
}

// ATen's CPU max_pool2d: from -inf, an element inside the input replaces the maximum when greater or
// NaN, in window order (so the first of equal maxima, and the sign of a zero, are eager's).
Loader max_pool(LoweringContext& c, ValueId in, const Pool& p, ScalarType t) {
  return [&c, in, p, t](KernelBuilder& kb, const Index& index) {
    const size_t rank = index.size();
    int best = kb.constant(-std::numeric_limits<double>::infinity(), t);
    for (int64_t i = 0; i < p.kernel[0]; ++i)
      for (int64_t j = 0; j < p.kernel[1]; ++j) {
        const auto [h, h_inside] = window_position(kb, index[rank - 2], p.stride[0], p.padding[0], i * p.dilation[0], p.extent[0]);
        const auto [w, w_inside] = window_position(kb, index[rank - 1], p.stride[1], p.padding[1], j * p.dilation[1], p.extent[1]);
        Index at = index;
        at[rank - 2] = h;
        at[rank - 1] = w;
        const int x = kb.cast(c.at(kb, in, at), t);
        const int better = kb.binary(ScalarOp::kOr, kb.binary(ScalarOp::kGt, x, best), kb.binary(ScalarOp::kNe, x, x));
        best = kb.where(kb.binary(ScalarOp::kAnd, kb.binary(ScalarOp::kAnd, h_inside, w_inside), better), x, best);
      }
    return best;
  };
}

void register_max_pool(Registry& r) {
  // max_pool2d(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False): ceil_mode changes
  // only the output's size, which the traced metadata gives; windows past the input skip those elements.
  r["aten::max_pool2d"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0), out = output(n);
    const SymShape& sizes = c.sizes(in);
    if ((sizes.size() != 3 && sizes.size() != 4) || !static_shape(sizes)) throw Unsupported("max_pool2d of a non-static 3-d or 4-d input");
    if (!c10::isFloatingType(c.meta(in).dtype)) throw Unsupported("max_pool2d of an integer tensor");
    Pool p;
    p.kernel = pair_arg(n, 1, {0, 0});
    p.stride = pair_arg(n, 2, p.kernel);
    p.padding = pair_arg(n, 3, {0, 0});
    p.dilation = pair_arg(n, 4, {1, 1});
    p.extent = {sizes[sizes.size() - 2].offset, sizes[sizes.size() - 1].offset};
    if (p.kernel[0] < 1 || p.kernel[1] < 1 || p.kernel[0] * p.kernel[1] > 64)
      throw Unsupported("a max_pool2d window of more than 64 elements");
    if (p.stride[0] < 1 || p.stride[1] < 1 || p.dilation[0] < 1 || p.dilation[1] < 1)
      throw Unsupported("max_pool2d's stride or dilation below 1");
    return {max_pool(c, in, p, compute_type_of(c.meta(out).dtype))};
  };
}

// upsample_nearest2d where each output size is the input's times a power of two and no other scale is
// given: ATen's source index floor(dst * (in / out)) is then exact in float, dst >> log2(factor).
void register_upsample(Registry& r) {
  auto nearest = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0), out = output(n);
    const SymShape &from = c.sizes(in), &to = c.sizes(out);
    if (from.size() != 4 || !static_shape(from) || !static_shape(to)) throw Unsupported("upsample_nearest2d of a non-static 4-d input");
    std::array<int64_t, 2> shift{};
    for (size_t d = 0; d < 2; ++d) {
      const int64_t a = from[2 + d].offset, b = to[2 + d].offset;
      if (a == 0 || b % a != 0 || ((b / a) & (b / a - 1)) != 0)
        throw Unsupported("upsample_nearest2d by a factor that is not a power of two");
      shift[d] = static_cast<int64_t>(std::log2(static_cast<double>(b / a)));
    }
    // Scales given explicitly (scales_h, scales_w) must be the factors themselves.
    for (size_t d = 0; d < 2 && 2 + d < n.args.size(); ++d) {
      const c10::IValue& scale = n.args[2 + d].constant;
      if (n.args[2 + d].kind != graph::Arg::Kind::kConstant ||
          !(scale.isNone() || (scale.isDouble() && scale.toDouble() == double(int64_t{1} << shift[d]))))
        throw Unsupported("upsample_nearest2d with scales other than its sizes' factors");
    }
    return {[&c, in, shift](KernelBuilder& kb, const Index& index) {
      Index at = index;
      for (size_t d = 0; d < 2; ++d) at[2 + d] = kb.binary(ScalarOp::kDiv, index[2 + d], kb.index_constant(int64_t{1} << shift[d]));
      return c.at(kb, in, at);
    }};
  };
  r["aten::upsample_nearest2d"] = nearest;
}

}  // namespace

void register_windows(Registry& r) {
  register_max_pool(r);
  register_upsample(r);
}

}  // namespace jitc::inductor
