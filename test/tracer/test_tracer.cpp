// Tests of the tracer through jitc::compile (backend eager replay): every result is checked against an
// eager run of the same callable. The first call is the trace (record-while-executing: bit-identical to
// eager), later calls replay the recorded graph.
#include "support/parity.h"
#include <catch2/catch.hpp>

#include "support/trace_of.h"

#include "graph/graph.h"
#include "graph/passes.h"
#include "tracer/trace.h"
#include "tracer/trace_session.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

// Same dtype, device, sizes and values (bitwise, NaN-free inputs).
bool same(const at::Tensor& a, const at::Tensor& b) {
  return a.defined() && b.defined() && a.scalar_type() == b.scalar_type() && a.device() == b.device() && a.sizes() == b.sizes() &&
         at::equal(a, b);
}

// Same as `same`, and the same view geometry.
// Replays run fused kernels: equal to eager up to float32 rounding (softmax's exp, reassociated sums).
bool close(const at::Tensor& got, const at::Tensor& want) { return jitc::testing::difference(got, want, {1e-5, 1e-5}).empty(); }

bool same_view(const at::Tensor& a, const at::Tensor& b) {
  return same(a, b) && a.strides() == b.strides() && a.storage_offset() == b.storage_offset();
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

using jitc::testing::trace_of;

const float kData[3] = {1.f, 2.f, 3.f};

jitc::Options eager_backend() {
  jitc::Options o;
  o.backend = jitc::Backend::kEager;
  return o;
}

}  // namespace

// ---- ops on arguments, first call vs replay -----------------------------------------------------------

TEST_CASE("ops on arguments: the trace is bit-identical to eager, replays on new inputs equal eager", "[tracer]") {
  auto fn = [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& y) {
    auto h = at::matmul(x, w.t()) + y.mean(0);
    return at::softmax(h, -1) * h.sigmoid() - x.sum(1, /*keepdim=*/true).tanh();
  };
  auto f = jitc::compile(fn);
  for (int call = 0; call < 4; ++call) {
    const auto x = at::randn({5, 7});
    const auto w = at::randn({3, 7});
    const auto y = at::randn({2, 3});
    const auto expected = fn(x, w, y);
    const auto got = f(x, w, y);
    INFO("call " << call);
    if (call == 0) CHECK(same(got, expected));                                 // the trace ran the ops themselves
    else CHECK(jitc::testing::difference(got, expected, {1e-5, 1e-5}) == "");  // fused kernels (libm's exp)
  }
  const auto s = f.stats();
  CHECK(s.calls == 4);
  CHECK(s.compiles == 1);
  CHECK(s.recompiles == 0);
  CHECK(s.hits == 3);
  CHECK(s.eager_fallbacks == 0);
  CHECK(s.entries == 1);
}

TEST_CASE("integer and boolean tensors are traced and replayed exactly", "[tracer]") {
  auto fn = [](const at::Tensor& i, const at::Tensor& mask) {
    auto j = (i * 3 + 7).remainder(5);
    return std::make_tuple(j.masked_fill(mask, -1), j.cumsum(0), (j > 2).logical_and(mask));
  };
  auto f = jitc::compile(fn);
  for (int call = 0; call < 3; ++call) {
    const auto i = at::randint(-50, 50, {6, 4}, at::kLong);
    const auto mask = at::rand({6, 4}) > 0.5;
    const auto [e0, e1, e2] = fn(i, mask);
    const auto [g0, g1, g2] = f(i, mask);
    INFO("call " << call);
    CHECK(same(g0, e0));
    CHECK(same(g1, e1));
    CHECK(same(g2, e2));
  }
  CHECK(f.stats().compiles == 1);
}

// ---- captured tensors ------------------------------------------------------------------------------------

TEST_CASE("captured tensors are read by reference: an in-place update between calls is seen", "[tracer]") {
  auto w = at::randn({4, 3});
  auto b = at::randn({3});
  auto fn = [w, b](const at::Tensor& x) { return at::relu(x.matmul(w) + b); };
  auto f = jitc::compile(fn);

  const auto x = at::randn({2, 4});
  CHECK(same(f(x), fn(x)));  // trace
  CHECK(same(f(x), fn(x)));  // replay

  w.add_(1);  // outside the function
  b.mul_(-2);
  const auto x2 = at::randn({2, 4});
  CHECK(same(f(x2), fn(x2)));

  w.zero_();
  CHECK(same(f(x2), at::relu(b.expand({2, 3}))));

  const auto s = f.stats();
  CHECK(s.compiles == 1);
  CHECK(s.hits == 3);
}

TEST_CASE("an in-place write to a captured buffer inside the callable happens on every call", "[tracer]") {
  auto buffer = at::zeros({3});
  auto reference = at::zeros({3});
  auto make = [](at::Tensor buf) {
    return [buf](const at::Tensor& x) {
      buf.add_(x);
      return buf * 2;
    };
  };
  auto eager = make(reference);
  auto f = jitc::compile(make(buffer));
  for (int call = 0; call < 3; ++call) {
    const auto x = at::randn({3});
    const auto expected = eager(x);
    const auto got = f(x);
    INFO("call " << call);
    CHECK(same(got, expected));
    CHECK(same(buffer, reference));
  }
  CHECK(f.stats().compiles == 1);
}

TEST_CASE("a tensor captured by reference and reassigned is picked up again", "[tracer]") {
  auto w = at::randn({3});
  auto fn = [&w](const at::Tensor& x) { return x * w; };
  auto f = jitc::compile(fn);
  const auto x = at::randn({3});
  CHECK(same(f(x), fn(x)));
  CHECK(same(f(x), fn(x)));
  w = at::randn({3});  // a new tensor, not an in-place update: the old one is freed
  CHECK(same(f(x), fn(x)));
  CHECK(same(f(x), fn(x)));
  CHECK(f.stats().compiles == 2);
}

TEST_CASE("returning a captured tensor returns that tensor", "[tracer]") {
  auto w = at::randn({2, 2});
  auto f = jitc::compile([w](const at::Tensor& x) { return std::make_tuple(w, x + w); });
  for (int call = 0; call < 2; ++call) {
    const auto x = at::randn({2, 2});
    const auto [a, b] = f(x);
    CHECK(a.is_same(w));
    CHECK(same(b, x + w));
  }
}

TEST_CASE("a captured tensor that requires grad compiles for training in grad mode and for inference under no_grad", "[tracer]") {
  auto w = at::randn({3}).requires_grad_();
  auto fn = [w](const at::Tensor& x) { return x * w; };
  auto f = jitc::compile(fn);
  const auto x = at::randn({3});
  {
    at::AutoGradMode grad(true);
    const auto got = f(x);
    CHECK(got.requires_grad());
    CHECK(same(got.detach(), fn(x).detach()));
    CHECK(f.stats().eager_fallbacks == 0);
    CHECK(f.stats().compiles == 1);
  }
  {
    at::NoGradGuard no_grad;
    CHECK(same(f(x), fn(x)));
    CHECK(same(f(x), fn(x)));
    CHECK(f.stats().compiles == 2);
    CHECK(f.stats().hits == 1);
  }
}

TEST_CASE("a generator passed to an op is used on every replay", "[tracer]") {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(42);
  auto ref = at::make_generator<at::CPUGeneratorImpl>(42);
  auto make = [](at::Generator g) { return [g](const at::Tensor& x) { return x + at::randn(x.sizes(), g, x.options()); }; };
  auto eager = make(ref);
  auto f = jitc::compile(make(gen));
  for (int call = 0; call < 3; ++call) {
    const auto x = at::randn({4});
    INFO("call " << call);
    CHECK(same(f(x), eager(x)));
  }
  CHECK(f.stats().compiles == 1);
}

TEST_CASE("advanced indexing: index with a None slot, masked and indexed writes", "[tracer]") {
  using at::indexing::Slice;
  auto fn = [](const at::Tensor& x, const at::Tensor& idx) {
    auto picked = x.index({Slice(), idx});  // aten::index with [None, idx]
    x.masked_fill_(x < 0, 0);
    x.index_put_({idx}, at::full({}, -1.0, x.options()));
    return picked * 2;
  };
  auto f = jitc::compile(fn);
  for (int call = 0; call < 3; ++call) {
    auto x = at::randn({4, 5});
    auto ref = x.clone();
    const auto idx = at::randint(0, 4, {3}, at::kLong);
    const auto expected = fn(ref, idx);
    INFO("call " << call);
    CHECK(same(f(x, idx), expected));
    CHECK(same(x, ref));
  }
  CHECK(f.stats().compiles == 1);
}

// ---- factories --------------------------------------------------------------------------------------------

TEST_CASE("factories inside the callable keep their dtype and device and are fresh on every call", "[tracer]") {
  auto fn = [](const at::Tensor& x) {
    auto z = at::zeros({2, 3}, at::kDouble);
    auto o = at::ones({2, 3}, x.options()) + x;
    auto r = at::arange(6, at::kLong).view({2, 3});
    auto full = at::full({2, 3}, 2.5, x.options()) * x;
    auto zl = at::zeros_like(x, at::kInt);
    auto ol = at::ones_like(x);
    return std::make_tuple(z, o, r, full, zl, ol);
  };
  auto f = jitc::compile(fn);
  std::vector<at::Tensor> previous;
  for (int call = 0; call < 3; ++call) {
    const auto x = at::randn({2, 3});
    const auto e = fn(x);
    const auto g = f(x);
    INFO("call " << call);
    CHECK(same(std::get<0>(g), std::get<0>(e)));
    CHECK(same(std::get<1>(g), std::get<1>(e)));
    CHECK(same(std::get<2>(g), std::get<2>(e)));
    CHECK(same(std::get<3>(g), std::get<3>(e)));
    CHECK(same(std::get<4>(g), std::get<4>(e)));
    CHECK(same(std::get<5>(g), std::get<5>(e)));
    CHECK(std::get<0>(g).scalar_type() == at::kDouble);
    CHECK(std::get<2>(g).scalar_type() == at::kLong);
    CHECK(std::get<4>(g).scalar_type() == at::kInt);
    CHECK(std::get<5>(g).scalar_type() == at::kFloat);
    CHECK(std::get<0>(g).device().is_cpu());
    std::vector<at::Tensor> now{std::get<0>(g), std::get<2>(g), std::get<4>(g), std::get<5>(g)};
    for (size_t k = 0; k < previous.size(); ++k) CHECK_FALSE(now[k].is_alias_of(previous[k]));
    previous = now;
  }
  CHECK(f.stats().compiles == 1);
}

TEST_CASE("a callable with no tensor arguments replays its factories", "[tracer]") {
  auto fn = [](int64_t n) { return at::arange(n, at::kFloat).pow(2).sum(); };
  auto f = jitc::compile(fn);
  CHECK(same(f(5), fn(5)));
  CHECK(same(f(5), fn(5)));
  CHECK(same(f(9), fn(9)));  // a different scalar: recompile
  CHECK(f.stats().compiles == 2);
}

// ---- views and in-place ops ---------------------------------------------------------------------------------

TEST_CASE("view results are real views of the input, on the trace and on replay", "[tracer]") {
  auto fn = [](const at::Tensor& x) {
    return std::make_tuple(x.view({12}), x.reshape({4, 3}), x.permute({1, 0}), x.transpose(0, 1), x.slice(1, 1, 3), x.narrow(0, 1, 2),
                           x.select(1, 2), x.unsqueeze(0), x[0].expand({5, 4}), x);
  };
  auto f = jitc::compile(fn);
  for (int call = 0; call < 3; ++call) {
    const auto x = at::randn({3, 4});
    const auto e = fn(x);
    const auto g = f(x);
    INFO("call " << call);
    const auto gs = std::apply([](const auto&... t) { return std::vector<at::Tensor>{t...}; }, g);
    const auto es = std::apply([](const auto&... t) { return std::vector<at::Tensor>{t...}; }, e);
    for (size_t k = 0; k < gs.size(); ++k) {
      INFO("result " << k);
      CHECK(same_view(gs[k], es[k]));
      CHECK(gs[k].is_alias_of(x));
    }
    CHECK(std::get<9>(g).is_same(x));  // returning the argument returns the caller's tensor
  }
  CHECK(f.stats().hits == 2);
}

TEST_CASE("a write through a returned view is seen by the input", "[tracer]") {
  auto f = jitc::compile([](const at::Tensor& x) { return x.t().select(0, 1); });
  for (int call = 0; call < 2; ++call) {
    auto x = at::zeros({3, 2});
    auto v = f(x);
    v.fill_(7);
    auto expected = at::zeros({3, 2});
    expected.select(1, 1).fill_(7);
    INFO("call " << call);
    CHECK(same(x, expected));
  }
}

TEST_CASE("in-place ops on an argument and on a view of it change the caller's tensor as eager", "[tracer]") {
  auto fn = [](const at::Tensor& x) {
    x.add_(1);
    x.narrow(0, 0, 1).mul_(2);
    x.select(1, 0).sub_(x.select(1, 1));
    return x.sum(1);
  };
  auto f = jitc::compile(fn);
  for (int call = 0; call < 3; ++call) {
    auto x = at::randn({3, 4});
    auto ref = x.clone();
    const auto expected = fn(ref);
    const auto got = f(x);
    INFO("call " << call);
    CHECK(close(got, expected));  // a row sum: the compiled reduction may add in another order
    CHECK(same(x, ref));
  }
  CHECK(f.stats().compiles == 1);
  CHECK(f.stats().hits == 2);
}

TEST_CASE("an in-place op's result is the caller's own tensor", "[tracer]") {
  auto fn = [](const at::Tensor& x) { return x.mul_(2); };
  auto f = jitc::compile(fn);
  for (int call = 0; call < 2; ++call) {
    auto x = at::randn({4});
    auto ref = x.clone();
    fn(ref);
    auto out = f(x);
    INFO("call " << call);
    CHECK(out.is_same(x));
    CHECK(same(x, ref));
  }
}

TEST_CASE("the same tensor passed twice is one tensor inside the callable", "[tracer]") {
  auto fn = [](const at::Tensor& a, const at::Tensor& b) {
    a.add_(1);
    return b * 2;  // sees the write when b is a
  };
  auto f = jitc::compile(fn);
  for (int call = 0; call < 2; ++call) {
    auto x = at::randn({3});
    auto ref = x.clone();
    const auto expected = fn(ref, ref);
    INFO("call " << call);
    CHECK(same(f(x, x), expected));
    CHECK(same(x, ref));
  }
  // Distinct tensors: a different aliasing, so a different entry.
  auto y = at::randn({3});
  auto z = at::randn({3});
  auto ry = y.clone();
  auto rz = z.clone();
  const auto expected = fn(ry, rz);
  CHECK(same(f(y, z), expected));
  CHECK(same(y, ry));
  CHECK(same(z, rz));
  CHECK(f.stats().compiles == 2);
}

// ---- argument kinds ----------------------------------------------------------------------------------------

TEST_CASE("std::vector<at::Tensor> arguments and a different length recompiles", "[tracer]") {
  auto fn = [](const std::vector<at::Tensor>& xs) { return at::cat(xs, 0) * 2; };
  auto f = jitc::compile(fn);
  auto make = [](size_t n) {
    std::vector<at::Tensor> xs;
    for (size_t k = 0; k < n; ++k) xs.push_back(at::randn({2, 3}));
    return xs;
  };
  auto two = make(2);
  CHECK(same(f(two), fn(two)));
  two = make(2);
  CHECK(same(f(two), fn(two)));
  CHECK(f.stats().recompiles == 0);
  CHECK(f.stats().hits == 1);

  auto three = make(3);
  const auto got = f(three);
  CHECK(same(got, fn(three)));
  CHECK(got.size(0) == 6);
  auto s = f.stats();
  CHECK(s.recompiles == 1);
  CHECK(s.entries == 2);

  two = make(2);
  three = make(3);
  CHECK(same(f(two), fn(two)));
  CHECK(same(f(three), fn(three)));
  s = f.stats();
  CHECK(s.compiles == 2);
  CHECK(s.hits == 3);
}

TEST_CASE("std::optional<at::Tensor>: None and a tensor get different entries, both right", "[tracer]") {
  auto fn = [](const at::Tensor& x, const std::optional<at::Tensor>& bias) { return bias ? x * 3 + *bias : x * 2; };
  auto f = jitc::compile(fn);
  for (int round = 0; round < 2; ++round) {
    const auto x = at::randn({2, 3});
    const auto b = at::randn({3});
    INFO("round " << round);
    CHECK(same(f(x, std::nullopt), fn(x, std::nullopt)));
    CHECK(same(f(x, b), fn(x, b)));
  }
  const auto s = f.stats();
  CHECK(s.entries == 2);
  CHECK(s.compiles == 2);
  CHECK(s.recompiles == 1);
  CHECK(s.hits == 2);
}

TEST_CASE("scalar arguments: a different double, int64_t or bool recompiles and is right", "[tracer]") {
  auto fn = [](const at::Tensor& x, double a, int64_t n, bool flag) {
    auto y = x * a + n;
    return flag ? y.relu() : y.view({n, -1});
  };
  auto f = jitc::compile(fn);
  const auto x = at::randn({4, 6});
  auto check = [&](double a, int64_t n, bool flag) {
    const auto got = f(x, a, n, flag);
    INFO("a=" << a << " n=" << n << " flag=" << flag);
    CHECK(same(got, fn(x, a, n, flag)));
  };
  check(2.0, 3, true);
  check(2.0, 3, true);
  CHECK(f.stats().compiles == 1);
  check(-1.5, 3, true);  // double changed
  CHECK(f.stats().recompiles == 1);
  check(-1.5, 2, true);  // int changed
  CHECK(f.stats().recompiles == 2);
  check(-1.5, 2, false);  // bool changed: a different branch
  CHECK(f.stats().recompiles == 3);
  check(2.0, 3, true);  // the first entry is still there
  check(-1.5, 8, false);
  const auto s = f.stats();
  CHECK(s.compiles == 5);
  CHECK(s.hits == 2);
}

// ---- result kinds ----------------------------------------------------------------------------------------------

TEST_CASE("tuple results mixing tensors and scalars", "[tracer]") {
  auto fn = [](const at::Tensor& x) {
    auto [values, indices] = x.max(1);
    return std::make_tuple(values, indices, x.size(0) * x.size(1), 0.25 * static_cast<double>(x.dim()), x.size(1) > 2);
  };
  auto f = jitc::compile(fn);
  for (int call = 0; call < 2; ++call) {
    const auto x = at::randn({3, 5});
    const auto e = fn(x);
    const auto g = f(x);
    INFO("call " << call);
    CHECK(same(std::get<0>(g), std::get<0>(e)));
    CHECK(same(std::get<1>(g), std::get<1>(e)));
    CHECK(std::get<2>(g) == 15);
    CHECK(std::get<3>(g) == 0.5);
    CHECK(std::get<4>(g) == true);
  }
  CHECK(f.stats().hits == 1);
}

TEST_CASE("std::vector<at::Tensor> results: list-returning ops and built lists", "[tracer]") {
  auto chunks = [](const at::Tensor& x) { return x.chunk(3, 0); };
  auto built = [](const at::Tensor& x) { return std::vector<at::Tensor>{x + 1, x.t(), x.unbind(1)[2]}; };
  auto f = jitc::compile(chunks);
  auto g = jitc::compile(built);
  for (int call = 0; call < 2; ++call) {
    const auto x = at::randn({6, 4});
    INFO("call " << call);
    const auto fe = chunks(x);
    const auto fg = f(x);
    REQUIRE(fg.size() == 3);
    for (size_t k = 0; k < fg.size(); ++k) {
      CHECK(same_view(fg[k], fe[k]));
      CHECK(fg[k].is_alias_of(x));
    }
    const auto ge = built(x);
    const auto gg = g(x);
    REQUIRE(gg.size() == 3);
    for (size_t k = 0; k < gg.size(); ++k) CHECK(same_view(gg[k], ge[k]));
    CHECK(gg[1].is_alias_of(x));
    CHECK(gg[2].is_alias_of(x));
    CHECK_FALSE(gg[0].is_alias_of(x));
  }
}

TEST_CASE("scalar results computed from sizes are right at every size", "[tracer]") {
  auto numel = jitc::compile([](const at::Tensor& x) -> int64_t { return x.size(0) * x.size(1); });
  auto half = jitc::compile([](const at::Tensor& x) -> double { return static_cast<double>(x.size(0)) / 2; });
  for (int64_t n : {2, 2, 4, 5, 7, 3}) {
    const auto x = at::randn({n, 3});
    INFO("n=" << n);
    CHECK(numel(x) == n * 3);
    CHECK(half(x) == static_cast<double>(n) / 2);
  }
}

TEST_CASE("a size-dependent view traced at two batch sizes replays right at a third", "[tracer]") {
  auto fn = [](const at::Tensor& x) { return x.view({x.size(0) * 4, -1}).softmax(-1); };
  auto f = jitc::compile(fn);
  for (int64_t n : {4, 6, 10, 3}) {
    const auto x = at::randn({n, 8});
    INFO("n=" << n);
    CHECK(close(f(x), fn(x)));
  }
  const auto s = f.stats();
  CHECK(s.compiles == 2);  // 4, then 6 generalizes to one symbolic entry that serves 10 and 3
  CHECK(s.entries == 1);
  CHECK(s.size_checks == 2);  // 10 and 3 were each confirmed by one trace...
  const auto x = at::randn({10, 8});
  CHECK(close(f(x), fn(x)));
  CHECK(f.stats().hits == 1);  // ... and hit from then on
}

TEST_CASE("identical pure results are distinct tensors, as in eager", "[tracer]") {
  // Eager returns two tensors; a write into one must not show in the other.
  auto fn = [](const at::Tensor& x) { return std::make_tuple(x.sin(), x.sin()); };
  auto f = jitc::compile(fn);
  for (int call = 0; call < 2; ++call) {
    const auto x = at::randn({4});
    auto [a, b] = f(x);
    INFO("call " << call);
    CHECK_FALSE(a.is_alias_of(b));
    a.add_(1);
    CHECK(close(b, x.sin()));
  }
}

// ---- modules -------------------------------------------------------------------------------------------------

namespace {
// The conventional torch::nn module: a non-const forward.
struct NetImpl : torch::nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(6, 8));
    fc2 = register_module("fc2", torch::nn::Linear(8, 3));
  }
  at::Tensor forward(const at::Tensor& x) { return fc2(at::relu(fc1(x))).log_softmax(-1); }
  torch::nn::Linear fc1{nullptr};
  torch::nn::Linear fc2{nullptr};
};
TORCH_MODULE(Net);

// The same network with a const forward.
struct ConstNetImpl : torch::nn::Module {
  ConstNetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(6, 8));
    fc2 = register_module("fc2", torch::nn::Linear(8, 3));
  }
  at::Tensor forward(const at::Tensor& x) const { return fc2.ptr()->forward(at::relu(fc1.ptr()->forward(x))).log_softmax(-1); }
  torch::nn::Linear fc1{nullptr};
  torch::nn::Linear fc2{nullptr};
};
TORCH_MODULE(ConstNet);

template <class M, class Forward>
void check_module(M module, Forward forward) {
  auto f = jitc::compile(module);
  for (int call = 0; call < 3; ++call) {
    const auto x = at::randn({5, 6});
    INFO("call " << call);
    CHECK(close(f(x), forward(x)));
  }
  for (auto& p : module->parameters()) p.mul_(0.5).add_(0.25);  // in-place parameter update
  const auto x = at::randn({5, 6});
  CHECK(close(f(x), forward(x)));
  const auto s = f.stats();
  CHECK(s.compiles == 1);
  CHECK(s.hits == 3);
  CHECK(s.eager_fallbacks == 0);
}
}  // namespace

TEST_CASE("a module held by std::shared_ptr compiles and sees parameter updates", "[tracer]") {
  at::NoGradGuard no_grad;
  Net net;
  check_module(net.ptr(), [&](const at::Tensor& x) { return net->forward(x); });
}

TEST_CASE("a TORCH_MODULE holder with a const forward compiles with jitc::compile(net)", "[tracer]") {
  at::NoGradGuard no_grad;
  ConstNet net;
  check_module(net, [&](const at::Tensor& x) { return net->forward(x); });
}

TEST_CASE("a TORCH_MODULE holder with a non-const forward compiles with jitc::compile(net)", "[tracer]") {
  at::NoGradGuard no_grad;
  Net net;
  check_module(net, [&](const at::Tensor& x) { return net->forward(x); });
}

TEST_CASE("a module under c10::InferenceMode", "[tracer]") {
  Net net;  // parameters made outside inference mode
  c10::InferenceMode guard;
  auto f = jitc::compile(net.ptr(), eager_backend());
  for (int call = 0; call < 2; ++call) {
    const auto x = at::randn({2, 6});
    CHECK(same(f(x), net->forward(x)));
  }
  CHECK(f.stats().hits == 1);
}

// ---- RNG --------------------------------------------------------------------------------------------------------

TEST_CASE("randn_like stays an ATen call: the generator advances and seeds reproduce eager", "[tracer]") {
  auto fn = [](const at::Tensor& x) { return x + at::randn_like(x); };
  auto f = jitc::compile(fn);
  const auto x = at::randn({4, 5});

  at::manual_seed(123);
  const auto e1 = fn(x);
  at::manual_seed(123);
  const auto c1 = f(x);  // trace
  CHECK(same(c1, e1));

  at::manual_seed(456);
  const auto e2 = fn(x);
  at::manual_seed(456);
  const auto c2 = f(x);  // replay
  CHECK(same(c2, e2));

  const auto c3 = f(x);
  const auto c4 = f(x);
  CHECK(c3.sizes() == x.sizes());
  CHECK_FALSE(at::equal(c3, c4));
  CHECK(f.stats().compiles == 1);
}

TEST_CASE("dropout in training mode: fresh masks per call, two dropouts are not merged", "[tracer]") {
  auto fn = [](const at::Tensor& x) { return std::make_tuple(at::dropout(x, 0.5, /*train=*/true), at::dropout(x, 0.5, /*train=*/true)); };
  auto f = jitc::compile(fn);
  const auto x = at::ones({64});
  for (uint64_t seed : {1u, 2u, 3u}) {
    at::manual_seed(seed);
    const auto [e0, e1] = fn(x);
    at::manual_seed(seed);
    const auto [g0, g1] = f(x);
    INFO("seed " << seed);
    CHECK(same(g0, e0));
    CHECK(same(g1, e1));
    CHECK_FALSE(at::equal(g0, g1));
  }
  const auto [a, b] = f(x);
  const auto [c, d] = f(x);
  CHECK(a.sizes() == x.sizes());
  CHECK_FALSE(at::equal(a, c));
  CHECK(f.stats().compiles == 1);
}

// ---- tracer internals ------------------------------------------------------------------------------------------

TEST_CASE("explain lists the traced ops of (x+1).relu()", "[tracer]") {
  auto f = jitc::compile([](const at::Tensor& x) { return (x + 1).relu(); });
  const auto x = at::randn({3});
  const auto out = jitc::explain(f, x);
  REQUIRE(out.ops_per_graph.size() == 1);
  CHECK(out.ops_per_graph[0] == std::vector<std::string>{"aten::add.Scalar", "aten::relu"});
  CHECK(out.graph_count == 1);
  CHECK(out.graph_break_count == 0);
  CHECK(out.op_count == 2);
}

TEST_CASE("trace: arguments, captured tensors and tensors made without an op become typed inputs", "[tracer]") {
  const auto w = at::randn({3});
  auto fn = [w](const at::Tensor& x) {
    auto c = at::from_blob(const_cast<float*>(kData), {3}, at::kFloat);  // made without an ATen op
    return x * w + c;
  };
  const auto x = at::randn({3});
  auto outcome = trace_of(fn, x);
  const auto& g = outcome.graph;
  INFO(jitc::graph::to_text(g));
  REQUIRE(g.inputs.size() == 3);
  CHECK(g.inputs[0].kind == jitc::graph::InputKind::kArgument);
  CHECK(g.inputs[0].leaf == 0);
  CHECK(g.inputs[1].kind == jitc::graph::InputKind::kCaptured);
  CHECK(g.inputs[1].captured._unsafe_get_target() == w.unsafeGetTensorImpl());
  CHECK(g.inputs[2].kind == jitc::graph::InputKind::kConstant);
  CHECK(outcome.unreplayable.empty());
  REQUIRE(outcome.result.size() == 1);
  CHECK(same(outcome.result[0].tensor, fn(x)));
  CHECK_FALSE(jitc::tracer::is_tracing());
}

TEST_CASE("trace: a callable that throws after writing an argument leaves the argument untouched", "[tracer]") {
  auto fn = [](const at::Tensor& x) -> at::Tensor {
    x.add_(1);
    x.select(0, 0).mul_(10);
    throw std::runtime_error("user error");
  };
  auto x = at::randn({3});
  const auto before = x.clone();
  CHECK_THROWS_AS(trace_of(fn, x), jitc::tracer::TraceFailure);
  CHECK(same(x, before));
}

TEST_CASE("compiled: an exception of the callable propagates and the argument is written once", "[tracer]") {
  auto f = jitc::compile([](const at::Tensor& x) -> at::Tensor {
    x.add_(1);
    throw std::runtime_error("user error");
  });
  auto x = at::zeros({3});
  CHECK_THROWS_WITH(f(x), Catch::Contains("user error"));
  CHECK(same(x, at::ones({3})));
}

TEST_CASE("host side effects run only while tracing and is_tracing is true inside the trace", "[tracer]") {
  int runs = 0;
  bool traced_inside = false;
  auto f = jitc::compile([&](const at::Tensor& x) {
    ++runs;
    traced_inside = jitc::tracer::is_tracing();
    return x.exp();
  });
  const auto x = at::randn({2});
  for (int call = 0; call < 3; ++call) CHECK(close(f(x), x.exp()));
  CHECK(runs == 1);
  CHECK(traced_inside);
  CHECK_FALSE(jitc::tracer::is_tracing());
}

TEST_CASE("a tensor made with from_blob inside the callable is a constant of the trace", "[tracer]") {
  // The host buffer is rewritten after its tensor was used; eager always adds {1, 2, 3}. The graph keeps
  // a tensor over the buffer instead of its traced values, so replays read whatever the buffer holds now
  // (and dangling memory when the buffer is a local of the callable).
  static float data[3];
  auto fn = [](const at::Tensor& x) {
    data[0] = 1, data[1] = 2, data[2] = 3;
    auto y = x + at::from_blob(data, {3}, at::kFloat);
    data[0] = 100;  // host code, not an ATen op
    return y;
  };
  auto f = jitc::compile(fn);
  for (int call = 0; call < 2; ++call) {
    const auto x = at::zeros({3});
    INFO("call " << call);
    CHECK(same(f(x), at::tensor({1.f, 2.f, 3.f})));
  }
}
