#include "inductor/cuda/combos.h"

#include "inductor/cuda/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace jitc::inductor {

bool combo_part_candidate(const Kernel& kernel, const CudaConfig& config) {
  if (config.split > 0) return false;
  for (const Expr& e : kernel.body)
    if (e.op == ScalarOp::kSym) return false;
  const int64_t tiles = tile_count(kernel, nullptr, config);
  return tiles > 0 && tiles <= kMaxGridBlocks;
}

namespace {

// Combos of one run's candidates with `threads` threads per block, in plan order.
void combos_of_run(const std::vector<size_t>& run, const std::vector<const KernelLaunch*>& kernels, const std::vector<CudaConfig>& configs,
                   std::vector<ComboKernel>& out) {
  std::map<int, ComboKernel> open;  // by threads per block
  auto close = [&](ComboKernel& c) {
    if (c.parts.size() >= 2) out.push_back(c);
    c = ComboKernel{};
  };
  std::map<int, size_t> buffers;
  for (size_t k : run) {
    if (!combo_part_candidate(kernels[k]->kernel, configs[k])) continue;
    const int threads = configs[k].threads;
    ComboKernel& c = open[threads];
    if (c.parts.size() == kMaxComboParts || buffers[threads] + kernels[k]->buffers.size() > kMaxComboBuffers) {
      close(c);
      buffers[threads] = 0;
    }
    c.threads = threads;
    if (c.first_block.empty()) c.first_block.push_back(0);
    c.parts.push_back(k);
    c.first_block.push_back(c.first_block.back() + tile_count(kernels[k]->kernel, nullptr, configs[k]));
    buffers[threads] += kernels[k]->buffers.size();
  }
  for (auto& [threads, c] : open) close(c);
}

std::string combo_name(const ComboKernel& combo, const std::vector<const KernelLaunch*>& kernels) {
  std::vector<std::string> ops;
  for (size_t k : combo.parts) ops.insert(ops.end(), kernels[k]->ops.begin(), kernels[k]->ops.end());
  return fused_kernel_name(std::string(kKernelPrefix) + "_combo", ops, combo.parts.front());
}

// Parts are named after the combo, not after their kernels: combos whose code is the same but for their
// function's name are one NVRTC compile (backend.cpp).
std::string combo_part_name(const ComboKernel& combo, size_t part) { return fmt::format("{}_p{}", combo.function, part); }

}  // namespace

std::vector<ComboKernel> plan_combo_kernels(const std::vector<const KernelLaunch*>& kernels, const std::vector<CudaConfig>& configs,
                                            const std::vector<std::vector<size_t>>& independent_runs) {
  std::vector<ComboKernel> combos;
  for (const auto& run : independent_runs) combos_of_run(run, kernels, configs, combos);
  std::sort(combos.begin(), combos.end(), [](const ComboKernel& a, const ComboKernel& b) { return a.parts.front() < b.parts.front(); });
  for (ComboKernel& c : combos) c.function = combo_name(c, kernels);
  return combos;
}

// Each part's blocks call its device function with the block's index within the part. The test against
// each part's first block is uniform over a block, so the parts' barriers are reached by whole blocks.
std::string emit_cuda_combo(const ComboKernel& combo, const std::vector<const KernelLaunch*>& kernels,
                            const std::vector<CudaConfig>& configs, bool index32) {
  std::string out;
  size_t pointers = 0;
  for (size_t i = 0; i < combo.parts.size(); ++i) {
    const size_t k = combo.parts[i];
    out +=
        cuda_printer::Printer(kernels[k]->kernel, index32, configs[k], combo_part_name(combo, i), cuda_printer::Phase::kWhole, true).run();
    pointers += kernels[k]->buffers.size();
  }
  out += fmt::format("struct Buffers_{} {{ void* p[{}]; }};\n", combo.function, std::max<size_t>(1, pointers));
  out += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(Buffers_{} buffers, Symbols symbols, long long tiles) {{\n",
                     combo.threads, combo.function, combo.function);
  out += "  let_dependents_launch();\n  wait_for_previous_grid();\n  const long long block = blockIdx.x;\n";
  size_t offset = 0;
  for (size_t i = 0; i < combo.parts.size(); ++i) {
    const KernelLaunch& part = *kernels[combo.parts[i]];
    const std::string name = combo_part_name(combo, i);
    out += fmt::format("  if (block < {}LL) {{\n    Buffers_{} b;\n", combo.first_block[i + 1], name);
    for (size_t b = 0; b < part.buffers.size(); ++b) out += fmt::format("    b.p[{}] = buffers.p[{}];\n", b, offset + b);
    out += fmt::format("    {}(b, symbols, block - {}LL);\n    return;\n  }}\n", name, combo.first_block[i]);
    offset += part.buffers.size();
  }
  out += "}\n";
  return out;
}

}  // namespace jitc::inductor
