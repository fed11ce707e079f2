// Optimizer steps (issue 26): torch::optim's AdamW, Adam, SGD with momentum, RMSprop and Adagrad over
// ResNet-18's 62 parameter shapes (11.7M float32 values, gradients set once) against jitc::optim's (the
// same classes with compiled steps), in one run, with torch.compile's columns from peer_optimizers.py
// (torch.optim's step, foreach=False, eager and through torch.compile).
//   torch / jitc ms   per step: three warm-up steps each (the second traces, the third compiles), then
//                     rounds in which the two take turns, median over the rounds
//   roofline ms       the bytes the step must move (each parameter, gradient and state tensor read once,
//                     each parameter and state tensor written once) copied by at::copy_ in this run
//   max abs diff      between the two optimizers' parameters after the warm-up steps
// Usage, from the repository root:
//   python benchmarks/models/peer_optimizers.py OUT_PEER.json [--device cuda]
//   ./build/benchmarks/bench_optimizers [OUT.json] [--device cuda] [--rounds N] [--peer OUT_PEER.json] [--only adamw,adam]
#include "models/architectures.h"
#include "models/bench_timing.h"
#include "peer_results.h"

#include <jitc/optim.h>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>

namespace jitc::bench {
namespace {

using Tensors = std::vector<at::Tensor>;

struct Args {
  std::string out = "benchmarks/models/optimizers_cpu.json", peer;
  std::vector<std::string> only;
  at::Device device = at::kCPU;
  int rounds = 20;
};

struct Kind {
  std::string name;
  int arrays_moved;  // tensors per parameter read or written once by a step (the roofline's bytes)
  std::function<std::unique_ptr<torch::optim::Optimizer>(const Tensors&, bool compiled)> make;
};

template <class Torch, class Jitc, class Options>
std::function<std::unique_ptr<torch::optim::Optimizer>(const Tensors&, bool)> maker(Options options) {
  return [options](const Tensors& params, bool compiled) -> std::unique_ptr<torch::optim::Optimizer> {
    jitc::Options on_the_call;
    on_the_call.compile_in_background = false;
    if (compiled) return std::make_unique<Jitc>(params, options, on_the_call);
    return std::make_unique<Torch>(params, options);
  };
}

std::vector<Kind> kinds() {
  namespace to = torch::optim;
  return {
      {"adamw", 7, maker<to::AdamW, optim::AdamW>(to::AdamWOptions(1e-3).weight_decay(0.01))},
      {"adam", 7, maker<to::Adam, optim::Adam>(to::AdamOptions(1e-3))},
      {"sgd_momentum", 5, maker<to::SGD, optim::SGD>(to::SGDOptions(0.1).momentum(0.9).weight_decay(1e-4))},
      {"rmsprop", 5, maker<to::RMSprop, optim::RMSprop>(to::RMSpropOptions(1e-3))},
      {"adagrad", 5, maker<to::Adagrad, optim::Adagrad>(to::AdagradOptions(1e-2))},
  };
}

Tensors parameters(at::Device device) {
  at::manual_seed(0);
  Tensors params;
  for (const auto& shape : resnet18_parameter_shapes(64, 1000)) {
    at::Tensor p = (at::randn(shape, at::device(device)) * 0.05).requires_grad_(true);
    p.mutable_grad() = at::randn(shape, at::device(device)) * 1e-3;
    params.push_back(p);
  }
  return params;
}

struct Row {
  std::string name;
  double torch_ms = 0, jitc_ms = 0, roofline_ms = 0, max_abs_diff = 0;
};

// A copy moving `bytes` (half read, half written): the step's memory traffic at the copy's bandwidth.
double roofline_ms(int64_t bytes, at::Device device, int rounds) {
  const at::Tensor src = at::ones({bytes / 8}, at::device(device)), dst = at::empty_like(src);
  std::vector<double> times;
  for (int r = 0; r < rounds + 2; ++r) times.push_back(seconds_of([&] { dst.copy_(src); }));
  times.erase(times.begin(), times.begin() + 2);
  return median(times) * 1e3;
}

Row measure(const Kind& kind, const Args& args) {
  Row row{kind.name};
  const Tensors mine = parameters(args.device), theirs = parameters(args.device);
  auto eager = kind.make(theirs, false), compiled = kind.make(mine, true);
  for (int s = 0; s < 3; ++s) {
    eager->step();
    compiled->step();
  }
  for (size_t i = 0; i < mine.size(); ++i)
    row.max_abs_diff = std::max(row.max_abs_diff, (mine[i] - theirs[i]).abs().max().item<double>());
  std::vector<double> torch_s, jitc_s;
  for (int r = 0; r < args.rounds; ++r) {
    auto time_torch = [&] { torch_s.push_back(seconds_of([&] { eager->step(); })); };
    auto time_jitc = [&] { jitc_s.push_back(seconds_of([&] { compiled->step(); })); };
    if (r % 2 == 0) time_torch(), time_jitc();
    else time_jitc(), time_torch();
  }
  row.torch_ms = median(torch_s) * 1e3;
  row.jitc_ms = median(jitc_s) * 1e3;
  int64_t values = 0;
  for (const auto& p : mine) values += p.numel();
  row.roofline_ms = roofline_ms(values * 4 * kind.arrays_moved, args.device, args.rounds);
  return row;
}

void print_table(const std::vector<Row>& rows, const PeerRun* peer) {
  fmt::print("| optimizer | torch::optim ms | jitc::optim ms | jitc/torch | roofline ms (jitc at %) | torch.compile ms (its eager) | jitc vs "
             "torch.compile | max abs diff |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    std::string tc = "-", vs = "-";
    if (peer && peer->workloads.count(r.name) && peer->workloads.at(r.name).error.empty()) {
      const PeerResult& p = peer->workloads.at(r.name);
      tc = fmt::format("{:.2f} ({:.2f})", p.compiled_us / 1e3, p.eager_us / 1e3);
      vs = fmt::format("{:.2f}x", p.compiled_us / 1e3 / r.jitc_ms);
    }
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f}x | {:.2f} ({:.0f}%) | {} | {} | {:.1e} |\n", r.name, r.torch_ms, r.jitc_ms, r.torch_ms / r.jitc_ms,
               r.roofline_ms, 100 * r.roofline_ms / r.jitc_ms, tc, vs, r.max_abs_diff);
  }
}

std::string json_of(const std::vector<Row>& rows, const Args& args) {
  std::string s = fmt::format("{{\n \"device\": \"{}\",\n \"optimizers\": [\n", args.device.str());
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    s += fmt::format("  {{\"name\": \"{}\", \"torch_ms\": {}, \"jitc_ms\": {}, \"roofline_ms\": {}, \"max_abs_diff\": {}}}{}\n", r.name,
                     r.torch_ms, r.jitc_ms, r.roofline_ms, r.max_abs_diff, i + 1 < rows.size() ? "," : "");
  }
  return s + " ]\n}\n";
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--peer" && i + 1 < argc) args.peer = argv[++i];
    else if (arg == "--device" && i + 1 < argc) args.device = at::Device(argv[++i]);
    else if (arg == "--rounds" && i + 1 < argc) args.rounds = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--only" && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string name; std::getline(list, name, ',');) args.only.push_back(name);
    } else if (arg.rfind("--", 0) == 0) {
      throw std::runtime_error("unknown flag " + arg + "; usage: bench_optimizers [out.json] [--device cuda] [--rounds N] [--peer peer.json] [--only a,b]");
    } else {
      args.out = arg;
    }
  }
  return args;
}

}  // namespace
}  // namespace jitc::bench

int main(int argc, char** argv) {
  using namespace jitc::bench;
  try {
    const Args args = parse_args(argc, argv);
    set_timing_on_gpu(args.device.is_cuda());
    std::vector<Row> rows;
    for (const Kind& kind : kinds()) {
      if (!args.only.empty() && std::find(args.only.begin(), args.only.end(), kind.name) == args.only.end()) continue;
      rows.push_back(measure(kind, args));
      fmt::print("{}: torch::optim {:.2f} ms, jitc::optim {:.2f} ms\n", kind.name, rows.back().torch_ms, rows.back().jitc_ms);
    }
    std::optional<PeerRun> peer;
    if (!args.peer.empty()) peer = read_peer_results(args.peer);
    print_table(rows, peer ? &*peer : nullptr);
    std::ofstream(args.out) << json_of(rows, args);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_optimizers: {}\n", e.what());
    return 1;
  }
}
