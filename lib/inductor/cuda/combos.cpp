#include "inductor/cuda/combos.h"

#include "inductor/cuda/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace jitc::inductor {

int64_t values_moved(const Kernel& kernel) {
  int64_t points = 1;
  for (const LoopVar& v : kernel.vars) points *= evaluate_size(kernel, v.extent, nullptr);
  return points * static_cast<int64_t>(kernel.buffers.size());
}

bool combo_part_candidate(const Kernel& kernel, const CudaConfig& config) {
  if (config.split > 0) return false;
  for (const Expr& e : kernel.body)
    if (e.op == ScalarOp::kSym) return false;
  const int64_t tiles = tile_count(kernel, nullptr, config);
  return tiles > 0 && tiles <= kMaxGridBlocks && values_moved(kernel) <= kMaxComboPartValues;
}

namespace {

std::string combo_name(const ComboKernel& combo, const std::vector<const KernelLaunch*>& kernels) {
  std::vector<std::string> ops;
  for (size_t k : combo.parts) ops.insert(ops.end(), kernels[k]->ops.begin(), kernels[k]->ops.end());
  return fused_kernel_name(std::string(kKernelPrefix) + "_combo", ops, combo.parts.front());
}

// A part's code printed under kPartFunction, and the index constants it reads from `consts`.
struct PrintedPart {
  std::string text;
  std::vector<int64_t> constants;
};

constexpr const char* kPartFunction = "jitc_combo_part";

PrintedPart print_part(const KernelLaunch& part, const CudaConfig& config, bool index32) {
  cuda_printer::Printer printer(part.kernel, index32, config, kPartFunction, cuda_printer::Phase::kWhole, /*combo_part=*/true);
  PrintedPart printed;
  printed.text = printer.run();
  printed.constants = printer.hoisted_constants();
  return printed;
}

// A combo of `parts` (kernel positions of one block size), if there are at least two.
void close_combo(std::vector<size_t>& parts, const std::vector<const KernelLaunch*>& kernels, const std::vector<CudaConfig>& configs,
                 std::vector<ComboKernel>& out) {
  if (parts.size() >= 2) {
    ComboKernel c;
    c.parts = parts;
    std::sort(c.parts.begin(), c.parts.end());
    c.threads = configs[c.parts.front()].threads;
    c.first_block.push_back(0);
    for (size_t k : c.parts) c.first_block.push_back(c.first_block.back() + tile_count(kernels[k]->kernel, nullptr, configs[k]));
    out.push_back(std::move(c));
  }
  parts.clear();
}

// Combos of one run's candidates: parts of one block size, at most kMaxComboParts parts,
// kMaxComboBuffers buffers and kMaxComboBodies different bodies each; parts of the same body together.
void combos_of_run(const std::vector<size_t>& run, const std::vector<const KernelLaunch*>& kernels, const std::vector<CudaConfig>& configs,
                   bool index32, std::vector<ComboKernel>& out) {
  std::map<int, std::vector<std::vector<size_t>>> bodies_by_threads;  // the parts of each body, bodies in plan order
  std::map<std::pair<int, std::string>, size_t> body_of;
  for (size_t k : run) {
    if (!combo_part_candidate(kernels[k]->kernel, configs[k])) continue;
    const int threads = configs[k].threads;
    auto& bodies = bodies_by_threads[threads];
    const auto [it, added] = body_of.emplace(std::pair(threads, print_part(*kernels[k], configs[k], index32).text), bodies.size());
    if (added) bodies.emplace_back();
    bodies[it->second].push_back(k);
  }
  for (const auto& [threads, bodies] : bodies_by_threads) {
    std::vector<size_t> parts;
    size_t buffers = 0, combo_bodies = 0;
    for (const auto& body : bodies) {
      if (combo_bodies == kMaxComboBodies) close_combo(parts, kernels, configs, out);
      if (parts.empty()) buffers = combo_bodies = 0;
      ++combo_bodies;
      for (size_t k : body) {
        if (parts.size() == kMaxComboParts || buffers + kernels[k]->buffers.size() > kMaxComboBuffers) {
          close_combo(parts, kernels, configs, out);
          buffers = 0;
          combo_bodies = 1;
        }
        parts.push_back(k);
        buffers += kernels[k]->buffers.size();
      }
    }
    close_combo(parts, kernels, configs, out);
  }
}

// A part's code as the function `name`. A function that several parts share is out of line: inlined,
// NVRTC would compile it once per call, which is what sharing saves (one call per thread per block).
std::string function_text(const std::string& text, const std::string& name, bool shared) {
  std::string named = replace_all(text, kPartFunction, name);
  if (shared) named = replace_all(named, "__device__ __forceinline__ void " + name + "(", "__device__ __noinline__ void " + name + "(");
  return named;
}

}  // namespace

std::vector<ComboKernel> plan_combo_kernels(const std::vector<const KernelLaunch*>& kernels, const std::vector<CudaConfig>& configs,
                                            const std::vector<std::vector<size_t>>& independent_runs, bool index32) {
  std::vector<ComboKernel> combos;
  for (const auto& run : independent_runs) combos_of_run(run, kernels, configs, index32, combos);
  std::sort(combos.begin(), combos.end(), [](const ComboKernel& a, const ComboKernel& b) { return a.parts.front() < b.parts.front(); });
  for (ComboKernel& c : combos) c.function = combo_name(c, kernels);
  return combos;
}

// Each part's blocks call its device function with the block's index within the part and its constants.
// Parts whose code is the same but for their index constants (an optimizer's update of tensors of
// different shapes) share one device function, <function>_f<i>: NVRTC compiles each body once. The test
// against each part's first block is uniform over a block, so the parts' barriers are reached by whole
// blocks.
std::string emit_cuda_combo(const ComboKernel& combo, const std::vector<const KernelLaunch*>& kernels,
                            const std::vector<CudaConfig>& configs, bool index32) {
  std::vector<PrintedPart> printed;
  std::map<std::string, size_t> function_of_text;  // a part's code -> its function's number
  std::vector<size_t> function_of_part, uses;
  for (size_t k : combo.parts) {
    printed.push_back(print_part(*kernels[k], configs[k], index32));
    const auto [it, added] = function_of_text.emplace(printed.back().text, uses.size());
    if (added) uses.push_back(0);
    function_of_part.push_back(it->second);
    ++uses[it->second];
  }
  std::string out, table;
  std::vector<size_t> first_constant;
  size_t pointers = 0, constants = 0;
  for (size_t i = 0; i < printed.size(); ++i) {
    const size_t f = function_of_part[i];
    if (uses[f] > 0) {  // its first part: the function's code
      out += function_text(printed[i].text, fmt::format("{}_f{}", combo.function, f), uses[f] > 1);
      uses[f] = 0;
    }
    first_constant.push_back(constants);
    for (int64_t c : printed[i].constants) table += fmt::format("{}{}ll", constants++ ? ", " : "", c);
    pointers += kernels[combo.parts[i]]->buffers.size();
  }
  // In constant memory: every thread of a block reads the same entries.
  out += fmt::format("__constant__ long long {}_consts[{}] = {{{}}};\n", combo.function, std::max<size_t>(1, constants),
                     table.empty() ? "0" : table);
  out += fmt::format("struct Buffers_{} {{ void* p[{}]; }};\n", combo.function, std::max<size_t>(1, pointers));
  out += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(Buffers_{} buffers, Symbols symbols, long long tiles) {{\n",
                     combo.threads, combo.function, combo.function);
  out += "  let_dependents_launch();\n  wait_for_previous_grid();\n  const long long block = blockIdx.x;\n";
  size_t offset = 0;
  for (size_t i = 0; i < combo.parts.size(); ++i) {
    const KernelLaunch& part = *kernels[combo.parts[i]];
    out += fmt::format("  if (block < {}LL) {{\n    Buffers_{}_f{} b;\n", combo.first_block[i + 1], combo.function, function_of_part[i]);
    for (size_t b = 0; b < part.buffers.size(); ++b) out += fmt::format("    b.p[{}] = buffers.p[{}];\n", b, offset + b);
    out += fmt::format("    {}_f{}(b, symbols, block - {}LL, {}_consts + {});\n    return;\n  }}\n", combo.function, function_of_part[i],
                       combo.first_block[i], combo.function, first_constant[i]);
    offset += part.buffers.size();
  }
  out += "}\n";
  return out;
}

}  // namespace jitc::inductor
