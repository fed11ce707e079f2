// mode=reduce-overhead on a GPU ([cuda]: skipped without one): programs captured into CUDA graphs give
// the results of mode=default (and of eager) on every call, including inputs rewritten in place at the
// same address, new addresses, dynamic sizes, outputs kept across calls, multi-kernel programs with
// extern matmuls, and the cases that must run without a graph.
#include "runtime/cuda_graphs.h"
#include "support/log_capture.h"
#include "support/parity.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

namespace {

using jitc::testing::difference;
using jitc::testing::reduction_tolerance;
using jitc::testing::tolerance_for;

bool have_gpu() { return at::hasCUDA() && c10::cuda::device_count() > 0; }

jitc::Options reduce_overhead() {
  jitc::Options o;
  o.mode = jitc::Mode::kReduceOverhead;
  return o;
}

at::Tensor block(const at::Tensor& x, const at::Tensor& w) {
  const auto h = at::gelu(at::layer_norm(x, {x.size(-1)}).matmul(w), "tanh");
  return at::softmax(h * 0.5, -1) + x.sum(-1, true);
}

}  // namespace

TEST_CASE("CUDA graphs: reduce-overhead gives default's results call after call", "[cuda][cudagraphs]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto graphed = jitc::compile(block, reduce_overhead());
  auto plain = jitc::compile(block);
  const auto x = at::randn({64, 256}, at::kCUDA), w = at::randn({256, 256}, at::kCUDA);
  for (int call = 0; call < 6; ++call) {
    x.copy_(at::randn({64, 256}, at::kCUDA));  // new values at the same address: the same recording replays
    INFO("call " << call);
    const auto want = block(x, w);
    CHECK(difference(graphed(x, w), want, reduction_tolerance(at::kFloat, 256)) == "");
    CHECK(difference(graphed(x, w), plain(x, w), reduction_tolerance(at::kFloat, 256)) == "");
  }
  const auto s = graphed.stats();
  CHECK(s.cudagraph_captures == 1);
  CHECK(s.cudagraph_replays >= 9);  // 12 calls: one warm-up, then captured once and replayed
  CHECK(plain.stats().cudagraph_replays == 0);
}

TEST_CASE("CUDA graphs: outputs the caller keeps are not overwritten by the next replay", "[cuda][cudagraphs]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto f = jitc::compile([](const at::Tensor& x) { return (x * 2 + 1).relu(); }, reduce_overhead());
  const auto x = at::randn({1000}, at::kCUDA);
  std::vector<at::Tensor> kept, want;
  for (int call = 0; call < 5; ++call) {
    x.copy_(at::randn({1000}, at::kCUDA));
    kept.push_back(f(x));
    want.push_back((x * 2 + 1).relu());
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    INFO("result of call " << i);
    CHECK(difference(kept[i], want[i], tolerance_for(at::kFloat)) == "");
  }
  CHECK(f.stats().cudagraph_replays >= 3);
}

TEST_CASE("CUDA graphs: new input addresses and dynamic sizes get recordings of their own", "[cuda][cudagraphs]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto fn = [](const at::Tensor& x) { return at::softmax(x, -1) * x.amax(-1, true); };
  auto check_calls = [&](auto& f, const at::Tensor& x) {
    for (int call = 0; call < 3; ++call) CHECK(difference(f(x), fn(x), reduction_tolerance(at::kFloat, 300)) == "");
  };
  SECTION("one shape, 12 inputs alive at once (12 addresses): 8 recordings, the rest run without a graph") {
    auto f = jitc::compile(fn, reduce_overhead());
    std::vector<at::Tensor> inputs;
    for (int i = 0; i < 12; ++i) {
      inputs.push_back(at::randn({8, 300}, at::kCUDA));
      INFO("input " << i);
      check_calls(f, inputs.back());
    }
    CHECK(f.stats().cudagraph_captures == static_cast<int64_t>(jitc::runtime::CudaGraphs::kMaxRecordings));
  }
  SECTION("sizes that change") {
    auto f = jitc::compile(fn, reduce_overhead());
    for (int64_t rows : {8, 16, 24, 16, 8}) {
      INFO(rows << " rows");
      check_calls(f, at::randn({rows, 300}, at::kCUDA));
    }
    CHECK(f.stats().cudagraph_replays > 0);
  }
}

TEST_CASE("CUDA graphs: in-place writes into inputs land in the caller's tensors", "[cuda][cudagraphs]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto fn = [](const at::Tensor& x, const at::Tensor& acc) {
    acc.add_(x.exp());
    return acc * 2;
  };
  auto f = jitc::compile(fn, reduce_overhead());
  const auto x = at::randn({128}, at::kCUDA);
  auto acc = at::zeros({128}, at::kCUDA), acc_eager = at::zeros({128}, at::kCUDA);
  for (int call = 0; call < 5; ++call) {
    INFO("call " << call);
    const auto got = f(x, acc);
    const auto want = fn(x, acc_eager);
    CHECK(difference(got, want, tolerance_for(at::kFloat)) == "");
    CHECK(difference(acc, acc_eager, tolerance_for(at::kFloat)) == "");
  }
  CHECK(f.stats().cudagraph_replays >= 3);
}

TEST_CASE("CUDA graphs: programs that read values on the host run without graphs and say why", "[cuda][cudagraphs]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  jitc::testing::LogCapture logs("perf_hints");
  auto fn = [](const at::Tensor& x) {
    const auto y = x.sin();
    return y.sum().item<double>() > 0 ? y + 1 : y - 1;  // a graph break: the sum is read on the host
  };
  auto f = jitc::compile(fn, reduce_overhead());
  const auto x = at::rand({100}, at::kCUDA);  // positive sum: the traced branch holds on every call
  for (int call = 0; call < 4; ++call) CHECK(difference(f(x), fn(x), tolerance_for(at::kFloat)) == "");
  CHECK(f.stats().cudagraph_replays == 0);
  CHECK(logs.contains("CUDA graphs skipped: "));
  CHECK(logs.contains("is a graph-break check"));
}

TEST_CASE("CUDA graphs: replays follow the caller's stream", "[cuda][cudagraphs]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto fn = [](const at::Tensor& x) { return at::layer_norm(x, {x.size(-1)}) * 3; };
  auto f = jitc::compile(fn, reduce_overhead());
  const auto x = at::randn({256, 512}, at::kCUDA);
  const auto want = fn(x);
  for (int call = 0; call < 4; ++call) {
    auto stream = c10::cuda::getStreamFromPool();
    c10::cuda::CUDAStreamGuard guard(stream);
    const auto got = f(x);
    stream.synchronize();
    CHECK(difference(got, want, reduction_tolerance(at::kFloat, 512)) == "");
  }
}

namespace {

// Every result type the README lists, through one mode, on one device: each call's leaves equal eager's.
void check_result_types(jitc::Mode mode, c10::Device device) {
  jitc::Options o;
  o.mode = mode;
  const auto x = at::randn({8, 16}, device);
  auto tensor = jitc::compile([](const at::Tensor& x) { return (x * 2).relu(); }, o);
  auto tuple = jitc::compile([](const at::Tensor& x) { return std::make_tuple(x + 1, x.sum(-1)); }, o);
  auto with_scalar = jitc::compile([](const at::Tensor& x) { return std::make_tuple(x * 3, 2.5, x.size(0)); }, o);
  auto vector = jitc::compile([](const at::Tensor& x) { return std::vector<at::Tensor>{x - 1, x.exp()}; }, o);
  auto scalar = jitc::compile([](const at::Tensor& x) { return static_cast<double>(x.size(1)) * 0.5; }, o);
  auto nothing = jitc::compile([](const at::Tensor& x) { x.mul_(1.0); }, o);
  const auto tol = jitc::testing::reduction_tolerance(at::kFloat, 16);
  for (int call = 0; call < 5; ++call) {
    INFO("call " << call);
    CHECK(difference(tensor(x), (x * 2).relu(), tol) == "");
    const auto [a, b] = tuple(x);
    CHECK(difference(a, x + 1, tol) == "");
    CHECK(difference(b, x.sum(-1), tol) == "");
    const auto [c, d, e] = with_scalar(x);
    CHECK(difference(c, x * 3, tol) == "");
    CHECK(d == 2.5);
    CHECK(e == 8);
    const auto v = vector(x);
    REQUIRE(v.size() == 2);
    CHECK(difference(v[0], x - 1, tol) == "");
    CHECK(difference(v[1], x.exp(), tol) == "");
    CHECK(scalar(x) == 8.0);
    const auto before = x.clone();
    nothing(x);
    CHECK(at::equal(x, before));
  }
}

}  // namespace

TEST_CASE("every result type works in every mode: tensor, tuple, tuple with numbers, vector, number, void", "[cuda][cudagraphs]") {
  const jitc::Mode modes[] = {jitc::Mode::kDefault, jitc::Mode::kReduceOverhead, jitc::Mode::kMaxAutotune,
                              jitc::Mode::kMaxAutotuneNoCudagraphs};
  for (auto mode : modes) {
    INFO("mode " << static_cast<int>(mode));
    check_result_types(mode, at::kCPU);
    if (have_gpu()) check_result_types(mode, at::kCUDA);
  }
  if (!have_gpu()) WARN("no CUDA device: the CUDA half skipped");
}
