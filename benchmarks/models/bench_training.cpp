// Training steps (issue 26): forward + backward + AdamW for the model suite's trainable models, eager vs
// jitc (the loss function compiled: forward and backward graphs), in one run. The optimizer: with
// --optimizer torch (the default) torch::optim::AdamW runs eagerly on both sides, as in the torch.compile
// twin (benchmarks/models/peer_training.py); with --optimizer written, AdamW written with ATen ops over the
// parameter list, compiled on jitc's side (multi-tensor kernels), against the twin's --optimizer compiled
// (torch.compile of torch.optim.AdamW's step); with --optimizer jitc, jitc::optim::AdamW (torch::optim's
// AdamW with a compiled step) on jitc's side and torch::optim::AdamW on eager's, against the same twin.
//   eager / jitc ms   per step: two warm-up steps each, then rounds in which eager and jitc take turns on two
//                     copies of the model (the order reversed every other round), median over the rounds
//   first steps s     jitc's first two steps (the first traces and runs eagerly, the second generates the
//                     forward's and the backward's code) with a fresh JITC_CACHE_DIR
//   loss rel diff     the largest relative difference of the losses over the first 3 steps of the two copies
//                     trained side by side from the same weights and data; param max abs: after those steps
//   peak MiB          bytes allocated during one step beyond what was live before it (saved activations
//                     included): the CPU allocator, counted; on CUDA the caching allocator's peak statistic
// Usage, from the repository root (2 threads on the developer machine, as the peer's):
//   ~/.cache/jitc-setup/venv/bin/python benchmarks/models/peer_training.py benchmarks/models/peer_training_cpu.json
//   ./build/benchmarks/bench_training benchmarks/models/training_cpu.json --peer benchmarks/models/peer_training_cpu.json
// --device cuda --dtype bf16 --scale gpu: the GPU configuration (benchmarks/gpu_check.sh training ...).
// --profile DIR writes DIR/<model>_{eager,jitc}.trace of three steps each, with the GPU's kernels on CUDA
// (trace_summary.py sums them).
// --changing-batch: the second step one sample shorter, so the timed steps run symbolic programs.
// --phase-peaks prints, per side, the peak of each phase of one step (forward, backward, optimizer) beyond
// what was live when it began, and what the forward leaves live (the saved values): where a peak lies.
#include "bench_flags.h"
#include "counting_allocator.h"
#include "models/bench_timing.h"
#include "models/architectures.h"
#include "peer_results.h"

#include <cstdlib>
#include <jitc/jitc.h>
#include <jitc/optim.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/nn/module.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace jitc::bench {
namespace {

struct Args {
  std::string out = "benchmarks/models/training_cpu.json", peer;
  std::vector<std::string> only;
  int rounds = 5;
  bool gpu_scale = false;
  Placement place;
  std::string profile_dir;  // --profile: one eager and one jitc step per model, as chrome traces
  std::string optimizer = "torch";  // --optimizer torch|written|jitc (see the top of this file)
  bool phase_peaks = false;
  bool changing_batch = false;  // --changing-batch: the second step's batch one sample shorter
};

// One model to train: how to build it (twice, from the same seed), its inputs and targets.
struct Spec {
  std::string name, shapes;
  std::function<Trainable(const Placement&)> build;
  std::function<std::pair<at::Tensor, at::Tensor>(const Placement&)> batch;  // input, targets
};

std::function<std::pair<at::Tensor, at::Tensor>(const Placement&)> images(int64_t b, int64_t size, int64_t classes) {
  return [=](const Placement& p) {
    return std::pair{at::randn({b, 3, size, size}, at::device(p.device).dtype(p.dtype)),
                     at::randint(classes, {b}, at::device(p.device).dtype(at::kLong))};
  };
}
std::function<std::pair<at::Tensor, at::Tensor>(const Placement&)> tokens(int64_t b, int64_t t, int64_t vocab) {
  return [=](const Placement& p) {
    return std::pair{at::randint(vocab, {b, t}, at::device(p.device).dtype(at::kLong)),
                     at::randint(vocab, {b * t}, at::device(p.device).dtype(at::kLong))};
  };
}

// peer_training.py mirrors this list.
std::vector<Spec> specs(bool gpu) {
  if (gpu)
    return {
        {"resnet18_b32", "ResNet-18, [32, 3, 224, 224]", [](const Placement& p) { return train_resnet(p, 18, 64, 1000); },
         images(32, 224, 1000)},
        {"mobilenet_v2_b32", "MobileNetV2, [32, 3, 224, 224]", [](const Placement& p) { return train_mobilenet_v2(p, 1, 1000); },
         images(32, 224, 1000)},
        {"gpt2_b8", "GPT-2 small (12 x 768), [8, 256] tokens", [](const Placement& p) { return train_gpt(p, 12, 768, 12, 50257, 1024); },
         tokens(8, 256, 50257)},
        {"llama_b8", "LLaMA-style (4 x 512, SDPA), [8, 256] tokens", [](const Placement& p) { return train_llama(p, 4, 512, 8, 2, 32000); },
         tokens(8, 256, 32000)},
    };
  return {
      {"resnet18_b8", "ResNet-18, [8, 3, 64, 64]", [](const Placement& p) { return train_resnet(p, 18, 64, 10); }, images(8, 64, 10)},
      {"mobilenet_v2_b8", "MobileNetV2, [8, 3, 64, 64]", [](const Placement& p) { return train_mobilenet_v2(p, 1, 10); },
       images(8, 64, 10)},
      {"gpt_mini_b4", "GPT (4 x 256, 4 heads), [4, 128] tokens", [](const Placement& p) { return train_gpt(p, 4, 256, 4, 8192, 256); },
       tokens(4, 128, 8192)},
      {"llama_mini_b4", "LLaMA-style (2 x 256, SDPA), [4, 128] tokens",
       [](const Placement& p) { return train_llama(p, 2, 256, 4, 2, 8192); }, tokens(4, 128, 8192)},
  };
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--peer" && i + 1 < argc) args.peer = argv[++i];
    else if (arg == "--device" && i + 1 < argc) args.place.device = c10::Device(argv[++i]);
    else if (arg == "--dtype" && i + 1 < argc) args.place.dtype = std::string(argv[++i]) == "bf16" ? c10::kBFloat16 : c10::kFloat;
    else if (arg == "--scale" && i + 1 < argc) args.gpu_scale = std::string(argv[++i]) == "gpu";
    else if (arg == "--rounds" && i + 1 < argc) args.rounds = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--profile" && i + 1 < argc) args.profile_dir = argv[++i];
    else if (arg == "--phase-peaks") args.phase_peaks = true;
    else if (arg == "--changing-batch") args.changing_batch = true;
    else if (arg == "--optimizer" && i + 1 < argc) args.optimizer = argv[++i];
    else if (arg == "--only" && i + 1 < argc) {
      args.only = split_commas(argv[++i]);
    } else if (arg.rfind("--", 0) == 0) {
      throw std::runtime_error("unknown flag " + arg +
                               "; usage: bench_training [out.json] [--peer peer.json] [--only a,b] [--rounds N] [--device cuda] "
                               "[--dtype bf16] [--scale gpu] [--optimizer torch|written|jitc]");
    } else {
      args.out = arg;
    }
  }
  return args;
}

constexpr double kLearningRate = 1e-4, kWeightDecay = 0.01;  // torch::optim::AdamWOptions' weight decay

// --optimizer written: AdamW as an update written with ATen ops over the parameter list (adamw_update),
// the way the README tells a C++ team to compile one; the gradients and the bias corrections of the step
// are its arguments. Moments in the parameters' dtype, as torch.optim keeps them.
struct WrittenAdamW {
  using Update = std::function<void(const std::vector<at::Tensor>&, const at::Tensor&)>;
  std::vector<at::Tensor> params, first, second;
  int64_t steps = 0;
  Update update = [this](const std::vector<at::Tensor>& grads, const at::Tensor& corrections) {
    adamw_update(params, grads, first, second, corrections, kLearningRate, kWeightDecay);
  };

  explicit WrittenAdamW(std::vector<at::Tensor> parameters) : params(std::move(parameters)) {
    for (const auto& p : params) {
      first.push_back(at::zeros_like(p));
      second.push_back(at::zeros_like(p));
    }
  }
  void zero_grad() {
    for (auto& p : params) p.mutable_grad().reset();
  }
  void step() {
    ++steps;
    const double t = static_cast<double>(steps);
    const at::Tensor corrections =
        at::tensor({-kLearningRate / (1 - std::pow(0.9, t)), std::sqrt(1 - std::pow(0.999, t))}, at::kFloat).to(params[0].device());
    std::vector<at::Tensor> grads;
    for (const auto& p : params) grads.push_back(p.grad());
    at::NoGradGuard no_grad;
    update(grads, corrections);
  }
};

// A model, its optimizer (torch::optim::AdamW or the written update) and its loss (eager or compiled).
struct Trainer {
  Trainable model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<WrittenAdamW> written;
  std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> loss;

  void zero_grad() {
    if (optimizer) optimizer->zero_grad();
    else written->zero_grad();
  }
  void update() {
    if (optimizer) optimizer->step();
    else written->step();
  }
  double step(const at::Tensor& x, const at::Tensor& y) {
    zero_grad();
    at::Tensor l = loss(x, y);
    l.backward();
    update();
    return l.item<double>();
  }
};

std::string phase_peaks(Trainer& t, const at::Tensor& x, const at::Tensor& y, CountingAllocator& allocator, Bytes bytes) {
  t.zero_grad();
  at::Tensor l;
  const double live = live_mib(allocator, bytes);
  const double forward = peak_mib_of(allocator, [&] { l = t.loss(x, y); }, bytes);
  const double saved = live_mib(allocator, bytes) - live;
  const double backward = peak_mib_of(allocator, [&] { l.backward(); }, bytes);
  const double optimizer = peak_mib_of(allocator, [&] { t.update(); }, bytes);
  const double step = peak_mib_of(allocator, [&] { t.step(x, y); }, bytes);
  return fmt::format("forward {:.1f} MiB (leaves {:.1f} live), backward {:.1f}, optimizer {:.1f}; a whole step {:.1f}", forward, saved,
                     backward, optimizer, step);
}

Trainer trainer(const Spec& spec, const Placement& place, const std::string& optimizer) {
  at::manual_seed(0);  // both copies start from the same weights
  Trainer t{spec.build(place), nullptr, nullptr, nullptr};
  const torch::optim::AdamWOptions options(kLearningRate);
  if (optimizer == "written") t.written = std::make_unique<WrittenAdamW>(t.model.module->parameters());
  else if (optimizer == "jitc") t.optimizer = std::make_unique<jitc::optim::AdamW>(t.model.module->parameters(), options);
  else t.optimizer = std::make_unique<torch::optim::AdamW>(t.model.module->parameters(), options);
  t.loss = [forward = t.model.forward](const at::Tensor& x, const at::Tensor& y) {
    const at::Tensor logits = forward(x);
    return at::cross_entropy_loss(logits.view({-1, logits.size(-1)}), y);
  };
  return t;
}

struct Row {
  std::string name, shapes;
  double eager_ms = 0, jitc_ms = 0, first_steps_s = 0, loss_rel_diff = 0, param_max_abs = 0, eager_peak_mib = 0, jitc_peak_mib = 0;
  int64_t kernels = 0, fallbacks = 0;
  std::string error;
};

double max_parameter_difference(torch::nn::Module& a, torch::nn::Module& b) {
  double worst = 0;
  auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i)
    worst = std::max(worst, (pa[i].to(at::kDouble) - pb[i].to(at::kDouble)).abs().max().item<double>());
  return worst;
}

Row measure(const Spec& spec, const Args& args, CountingAllocator& allocator) {
  Row row{spec.name, spec.shapes};
  // --optimizer jitc: eager's side keeps torch::optim::AdamW, the optimizer jitc::optim's replaces.
  Trainer eager = trainer(spec, args.place, args.optimizer == "jitc" ? "torch" : args.optimizer),
          jitc = trainer(spec, args.place, args.optimizer);
  auto compiled = jitc::compile(jitc.loss);
  jitc.loss = [&](const at::Tensor& x, const at::Tensor& y) { return compiled(x, y); };
  std::optional<CompiledFunction<void(const std::vector<at::Tensor>&, const at::Tensor&)>> update;
  if (jitc.written) {
    update = jitc::compile(jitc.written->update);
    jitc.written->update = [&](const std::vector<at::Tensor>& grads, const at::Tensor& corrections) { (*update)(grads, corrections); };
  }
  at::manual_seed(1);
  const auto [x, y] = spec.batch(args.place);
  for (int s = 0; s < 3; ++s) {
    // --changing-batch: a shorter second batch makes the batch dim symbolic; every later step (the full
    // batch) runs the symbolic programs.
    const bool shorter = args.changing_batch && s == 1;
    if (shorter && y.size(0) != x.size(0)) throw std::runtime_error("--changing-batch needs one target per sample");
    const at::Tensor xs = shorter ? x.narrow(0, 0, x.size(0) - 1) : x, ys = shorter ? y.narrow(0, 0, y.size(0) - 1) : y;
    double want = eager.step(xs, ys), got = 0;
    const double seconds = seconds_of([&] { got = jitc.step(xs, ys); });
    if (s < 2) row.first_steps_s += seconds;
    row.loss_rel_diff = std::max(row.loss_rel_diff, std::abs(got - want) / std::max(std::abs(want), 1e-30));
  }
  row.param_max_abs = max_parameter_difference(*eager.model.module, *jitc.model.module);
  std::vector<double> eager_s, jitc_s;
  for (int r = 0; r < args.rounds; ++r) {
    auto time_eager = [&] { eager_s.push_back(seconds_of([&] { eager.step(x, y); })); };
    auto time_jitc = [&] { jitc_s.push_back(seconds_of([&] { jitc.step(x, y); })); };
    if (r % 2 == 0) time_eager(), time_jitc();
    else time_jitc(), time_eager();
  }
  row.eager_ms = median(eager_s) * 1e3;
  row.jitc_ms = median(jitc_s) * 1e3;
  row.eager_peak_mib = peak_mib_of(allocator, [&] { eager.step(x, y); });
  row.jitc_peak_mib = peak_mib_of(allocator, [&] { jitc.step(x, y); });
  if (args.phase_peaks)
    for (const Bytes bytes : {Bytes::kBlocks, Bytes::kRequested}) {
      const char* counted = bytes == Bytes::kBlocks ? "allocator blocks" : "bytes requested";
      fmt::print("phase peaks of {} ({}), eager: {}\n", spec.name, counted, phase_peaks(eager, x, y, allocator, bytes));
      fmt::print("phase peaks of {} ({}), jitc: {}\n", spec.name, counted, phase_peaks(jitc, x, y, allocator, bytes));
    }
  if (!args.profile_dir.empty()) {
    std::filesystem::create_directories(args.profile_dir);
    profile_calls(args.profile_dir + "/" + spec.name + "_eager.trace", [&] { eager.step(x, y); });
    profile_calls(args.profile_dir + "/" + spec.name + "_jitc.trace", [&] { jitc.step(x, y); });
  }
  Stats optimizer;
  if (update) optimizer = update->stats();
  if (auto* compiled_adamw = dynamic_cast<jitc::optim::AdamW*>(jitc.optimizer.get())) optimizer = compiled_adamw->stats();
  row.kernels = compiled.stats().kernels_compiled + optimizer.kernels_compiled;
  row.fallbacks = compiled.stats().eager_fallbacks + optimizer.eager_fallbacks;
  return row;
}

std::string json_of(const std::vector<Row>& rows, int threads) {
  std::string s = fmt::format("{{\n \"threads\": {},\n \"models\": [\n", threads);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    s += fmt::format(
        "  {{\"name\": \"{}\", \"eager_ms\": {}, \"jitc_ms\": {}, \"first_steps_s\": {}, \"loss_rel_diff\": {}, \"param_max_abs\": {}, "
        "\"eager_peak_mib\": {}, \"jitc_peak_mib\": {}, \"kernels\": {}, \"eager_fallbacks\": {}, \"error\": \"{}\"}}{}\n",
        r.name, r.eager_ms, r.jitc_ms, r.first_steps_s, r.loss_rel_diff, r.param_max_abs, r.eager_peak_mib, r.jitc_peak_mib, r.kernels,
        r.fallbacks, r.error, i + 1 < rows.size() ? "," : "");
  }
  return s + " ]\n}\n";
}

void print_table(const std::vector<Row>& rows, const PeerRun* peer) {
  fmt::print(
      "| model | eager ms | jitc ms | jitc/eager | torch.compile ms (its eager) | jitc vs torch.compile | first steps s | loss rel diff | "
      "param max abs | peak MiB (eager / jitc / tc) | kernels |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      fmt::print("| {} | error: {} |\n", r.name, r.error);
      continue;
    }
    std::string tc = "-", vs = "-", tc_peak = "-";
    if (peer && peer->workloads.count(r.name) && peer->workloads.at(r.name).error.empty()) {
      const PeerResult& p = peer->workloads.at(r.name);
      tc = fmt::format("{:.1f} (eager {:.1f})", p.compiled_us / 1e3, p.eager_us / 1e3);
      vs = fmt::format("{:.2f}x", p.compiled_us / 1e3 / r.jitc_ms);
    }
    fmt::print("| {} | {:.1f} | {:.1f} | {:.2f}x | {} | {} | {:.1f} | {:.1e} | {:.1e} | {:.0f} / {:.0f} | {} |\n", r.name, r.eager_ms,
               r.jitc_ms, r.eager_ms / r.jitc_ms, tc, vs, r.first_steps_s, r.loss_rel_diff, r.param_max_abs, r.eager_peak_mib,
               r.jitc_peak_mib, r.kernels);
  }
}

}  // namespace
}  // namespace jitc::bench

int main(int argc, char** argv) {
  // First calls are timed with their code generation (the background builds are off: issue 25 asks for
  // the opt-out where benchmarks time compiles); JITC_COMPILE_IN_BACKGROUND=1 in the environment wins.
  setenv("JITC_COMPILE_IN_BACKGROUND", "0", /*overwrite=*/0);
  using namespace jitc::bench;
  try {
    const Args args = parse_args(argc, argv);
    const std::string cache = (std::filesystem::temp_directory_path() / fmt::format("jitc_training_{}", getpid())).string();
    if (!std::getenv("JITC_CACHE_DIR")) setenv("JITC_CACHE_DIR", cache.c_str(), 1);  // cold compiles
    CountingAllocator& allocator = CountingAllocator::install();
    set_timing_on_gpu(args.place.device.is_cuda());
    std::vector<Row> rows;
    for (const Spec& spec : specs(args.gpu_scale)) {
      if (!args.only.empty() && std::find(args.only.begin(), args.only.end(), spec.name) == args.only.end()) continue;
      fmt::print(stderr, "{} ...\n", spec.name);
      try {
        rows.push_back(measure(spec, args, allocator));
      } catch (const std::exception& e) {
        rows.push_back({spec.name, spec.shapes});
        rows.back().error = e.what();
      }
    }
    std::optional<PeerRun> peer;
    if (!args.peer.empty()) peer = read_peer_results(args.peer);
    print_table(rows, peer ? &*peer : nullptr);
    std::ofstream(args.out) << json_of(rows, at::get_num_threads());
    std::filesystem::remove_all(cache);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_training: {}\n", e.what());
    return 2;
  }
}
