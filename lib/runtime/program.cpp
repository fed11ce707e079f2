#include "runtime/program.h"

#include "inductor/codegen_cpu.h"
#include "inductor/codegen_cuda.h"
#include "inductor/injected_failure.h"
#include "runtime/cuda_autotune.h"
#include "runtime/cuda_jit.h"

#include <jitc/errors.h>

#include <atomic>
#include "runtime/cpu_jit.h"
#include "runtime/compile_times.h"
#include "runtime/eager_replay.h"
#include "runtime/log.h"
#include "runtime/profiling.h"
#include "runtime/thread_pool.h"

#include <ATen/EmptyTensor.h>
#include <ATen/cuda/EmptyTensor.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>

namespace jitc::runtime {

namespace {

// One module for all kernels of a program: the declarations they share appear once.
std::string link_ir(const std::vector<std::string>& kernels) {
  std::set<std::string> declared;
  std::string declarations, bodies;
  for (const auto& ir : kernels) {
    std::istringstream lines(ir);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("declare ", 0) == 0) {
        if (declared.insert(line).second) declarations += line + "\n";
      } else {
        bodies += line + "\n";
      }
    }
  }
  return declarations + bodies;
}

c10::SmallVector<int64_t, 6> evaluate(const graph::SymShape& shape, const int64_t* symbols) {
  c10::SmallVector<int64_t, 6> out;
  for (const auto& e : shape) out.push_back(e.eval(symbols));
  return out;
}

std::string describe(const inductor::CudaConfig& config) {
  std::string text = config.columns > 0 ? fmt::format("{} threads over {} rows", config.threads, config.columns)
                     : config.tile > 0  ? fmt::format("{} threads tile {}", config.threads, config.tile)
                                        : fmt::format("{} threads", config.threads);
  if (config.split > 0) text += fmt::format(", rows split over {} blocks", config.split);
  return text;
}

constexpr int64_t kGrainElements = 32768;  // elements of work per parallel chunk (Inductor: 4096+ per thread)

}  // namespace

std::shared_ptr<const ProgramCode> ProgramCode::compile(inductor::Plan plan, const std::string& name, bool want_assembly,
                                                        bool index32, const TuningShapes* tuning, CompileTimes* times) {
  auto code = std::make_shared<ProgramCode>();
  code->plan = std::move(plan);
  Candidates candidates;
  std::vector<CudaSource> cuda_units;
  const auto gpu = timed(times, &CodegenStages::codegen, [&] { return code->emit(index32, tuning != nullptr, candidates, cuda_units); });
  if (!code->llvm_ir.empty())
    code->module = timed(times, &CodegenStages::llvm, [&] {
      try {
        return compile_cpu_module(code->llvm_ir, name, want_assembly);
      } catch (const CompileError& e) {
        log(Artifact::kOutputCode, fmt::format("LLVM IR of {} that failed to compile:\n{}", name, code->llvm_ir), "");
        throw CompileError(code->naming_kernels(e.what()));
      }
    });
  if (gpu) code->compile_cuda(cuda_units, name, gpu->index(), candidates, tuning, times);
  code->link();
  return code;
}

// Prints every kernel: kernel IR, LLVM IR (CPU kernels, linked into llvm_ir), CUDA C (each function with
// the prelude into `cuda_units`, all of them after one prelude into cuda_source). A CUDA kernel gets the
// heuristic's configuration, or with `tuning` every candidate under its own name. Returns the CUDA device,
// if any kernel runs on one.
std::optional<c10::Device> ProgramCode::emit(bool index32, bool tuning, Candidates& candidates, std::vector<CudaSource>& cuda_units) {
  std::vector<std::string> irs;
  const std::string prelude = inductor::cuda_prelude();
  std::string cuda = prelude;
  std::optional<c10::Device> gpu;
  candidates.assign(plan.kernels.size(), {});
  cuda_configs.assign(plan.kernels.size(), inductor::CudaConfig{0, 0, 0});
  cuda_names.assign(plan.kernels.size(), "");
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const auto& launch = plan.kernels[k];
    kernel_ir += inductor::to_text(launch.kernel);
    if (launch.device.is_cpu()) {
      irs.push_back(cpu_kernel_ir(launch));
      continue;
    }
    if (gpu && *gpu != launch.device) throw UnsupportedError("a graph whose kernels run on two CUDA devices");
    gpu = launch.device;
    candidates[k] = tuning ? inductor::cuda_config_candidates(launch.kernel) : std::vector{inductor::default_cuda_config(launch.kernel)};
    for (const auto& config : candidates[k])
      for (auto& f : inductor::emit_cuda_functions(launch.kernel, index32, config, candidate_name(launch.kernel, config, candidates[k].size()))) {
        cuda += f.source;
        cuda_units.push_back({f.name, prelude + f.source});
      }
    cuda_configs[k] = candidates[k].front();
    cuda_names[k] = candidate_name(launch.kernel, candidates[k].front(), candidates[k].size());
  }
  llvm_ir = link_ir(irs);
  if (gpu) cuda_source = std::move(cuda);
  return gpu;
}

// A CPU kernel's LLVM IR. A failure names the kernel and its ops.
std::string ProgramCode::cpu_kernel_ir(const inductor::KernelLaunch& launch) const {
  std::string ir;
  try {
    if (inductor::failure_injected("codegen", launch.ops)) throw CompileError(inductor::kInjectedFailure);
    ir = inductor::emit_llvm_ir(launch.kernel);
  } catch (const std::exception& e) {
    throw CompileError(fmt::format("generating kernel {} ({}) failed: {}", launch.kernel.name, fmt::join(launch.ops, ", "), e.what()));
  }
  // An invalid line in the kernel's first function: LLVM's parser rejects it, as it would a printer bug.
  if (inductor::failure_injected("compile", launch.ops))
    if (const size_t body = ir.find("{\n", ir.find("define ")); body != std::string::npos) ir.insert(body + 2, "  injected failure\n");
  return ir;
}

// `message` (from LLVM, naming a function) after the kernels whose functions it names, with their ops.
std::string ProgramCode::naming_kernels(const std::string& message) const {
  auto names = [&](const std::string& kernel) {  // @kernel or @kernel.body, not @kernel0
    const size_t at = message.find("@" + kernel);
    const size_t after = at + kernel.size() + 1;
    return at != std::string::npos && (after == message.size() || !std::isdigit(static_cast<unsigned char>(message[after])));
  };
  std::string named;
  for (const auto& launch : plan.kernels)
    if (names(launch.kernel.name)) named += fmt::format("kernel {} ({}): ", launch.kernel.name, fmt::join(launch.ops, ", "));
  return named + message;
}

// NVRTC, then the driver's load, timed apart: the first is most of a cold CUDA compile. Each function is
// its own NVRTC program, compiled at the same time as the others (H100 host, in-process, fresh caches:
// x.var()'s partial and final passes 172 ms as one program, 155 ms as two).
void ProgramCode::compile_cuda(const std::vector<CudaSource>& units, const std::string& name, int device, const Candidates& candidates,
                               const TuningShapes* tuning, CompileTimes* times) {
  const auto images = timed(times, &CodegenStages::nvrtc, [&] { return compile_cuda_images(units, name, device); });
  cuda_module = timed(times, &CodegenStages::load, [&] { return load_cuda_modules(images, name, device); });
  if (tuning) timed(times, &CodegenStages::autotune, [&] { keep_fastest(candidates, *tuning); });
}

std::string ProgramCode::candidate_name(const inductor::Kernel& kernel, const inductor::CudaConfig& config, size_t candidates) {
  return candidates > 1 ? fmt::format("{}_t{}_{}_c{}", kernel.name, config.threads, config.tile, config.columns) : kernel.name;
}

void ProgramCode::keep_fastest(const std::vector<std::vector<inductor::CudaConfig>>& candidates, const TuningShapes& tuning) {
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    if (candidates[k].size() < 2) continue;
    std::vector<void*> functions;
    for (const auto& config : candidates[k])
      functions.push_back(cuda_module->function(candidate_name(plan.kernels[k].kernel, config, candidates[k].size())));
    std::vector<double> ms;
    try {
      ms = time_candidates(plan.kernels[k], functions, candidates[k], tuning);
    } catch (const std::exception& e) {  // out of memory, for instance: the heuristic's choice stays
      warn(fmt::format("jitc: max-autotune could not time {}: {}", plan.kernels[k].kernel.name, e.what()));
      continue;
    }
    const size_t best = std::min_element(ms.begin(), ms.end()) - ms.begin();
    std::string timings;
    for (size_t c = 0; c < ms.size(); ++c) timings += fmt::format("{}{} {:.4f} ms", c ? ", " : "", describe(candidates[k][c]), ms[c]);
    log(Artifact::kPerfHints,
        fmt::format("AUTOTUNE {}: {} (kept {})", plan.kernels[k].kernel.name, timings, describe(candidates[k][best])));
    cuda_configs[k] = candidates[k][best];
    cuda_names[k] = candidate_name(plan.kernels[k].kernel, candidates[k][best], candidates[k].size());
  }
}

void ProgramCode::link() {
  for (const auto& k : plan.kernels) {
    Entry e;
    if (k.device.is_cpu()) {
      e.run = reinterpret_cast<KernelFn>(module->symbol(k.kernel.name));
      e.tiles = reinterpret_cast<TilesFn>(module->symbol(k.kernel.name + ".tiles"));
      e.checks = inductor::has_checks(k.kernel);
    } else {
      e.cuda_function = cuda_module->function(cuda_names.at(&k - plan.kernels.data()));
      e.cuda_config = cuda_configs.at(&k - plan.kernels.data());
      if (e.cuda_config.split > 0) e.cuda_final_function = cuda_module->function(cuda_names.at(&k - plan.kernels.data()) + "_final");
    }
    kernels.push_back(e);
  }
}

std::string Program::optimized_llvm_ir() const { return code_->module ? code_->module->optimized_ir() : std::string(); }
std::string Program::assembly() const { return code_->module ? code_->module->assembly() : std::string(); }

namespace {

// CUDA kernels take every buffer to start at a 16-byte boundary: their vector groups move 16 bytes at
// once without testing the addresses that the sizes prove aligned (cuda_printer::Printer::access_aligned).
// What jitc allocates always does; an input view that starts elsewhere (x[:, 1:] of floats) is read from
// a copy of the memory it spans, with the same strides, made on the current stream before the kernel
// (Inductor copies misaligned inputs for the same reason).
constexpr uintptr_t kCudaBufferAlignment = 16;

// Where element 0 of t lies, also when t has no elements (data_ptr() is null then, but its memory may
// still be read: see allocate).
void* element_zero(const at::Tensor& t) {
  if (t.numel() > 0) return t.data_ptr();
  char* base = static_cast<char*>(t.storage().mutable_data());
  return base ? base + t.storage_offset() * static_cast<int64_t>(t.element_size()) : nullptr;
}

at::Tensor aligned_copy(const at::Tensor& t) {
  int64_t span = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return t;  // no element is read
    span += (t.size(d) - 1) * t.stride(d);
  }
  return t.as_strided({span}, {1}).clone().as_strided(t.sizes(), t.strides(), 0);
}

}  // namespace

at::Tensor Program::allocate(graph::ValueId v, const int64_t* symbols, std::vector<at::Tensor>& pool) const {
  const auto& m = graph_.values[v].meta;
  const auto sizes = evaluate(m.sizes, symbols), strides = evaluate(m.strides, symbols);
  // A value with no elements gets the memory it would span if its empty dims had one element: a kernel
  // may read it at an index of the loops that do run (a load hoisted out of a reduction over its empty
  // dim, whose result is never used), which must not fault.
  auto spanned = sizes;
  for (auto& s : spanned) s = std::max<int64_t>(s, 1);
  const size_t bytes = at::detail::computeStorageNbytes(spanned, strides, c10::elementSize(m.dtype));
  for (auto it = pool.begin(); it != pool.end(); ++it)
    if (it->scalar_type() == m.dtype && it->storage().nbytes() == bytes) {
      at::Tensor reused = it->as_strided(sizes, strides, 0);
      pool.erase(it);
      return reused;
    }
  // Outputs straight from the device's allocator: the dispatcher's round trip is a good part of a small
  // call's host cost (about a third of a 16-element CPU call's instructions).
  at::Tensor t;
  if (m.device.is_cuda()) t = at::Tensor(at::detail::empty_strided_cuda(spanned, strides, m.dtype, m.device));
  else if (m.device.is_cpu()) t = at::Tensor(at::detail::empty_strided_cpu(spanned, strides, m.dtype));
  else t = at::empty_strided(spanned, strides, at::TensorOptions().dtype(m.dtype).device(m.device));
  return spanned == sizes ? t : t.as_strided(sizes, strides, 0);
}

Program::Program(graph::Graph graph, std::shared_ptr<const ProgramCode> code, std::string region)
    : graph_(std::move(graph)), code_(std::move(code)) {
  const auto& kernels = code_->plan.kernels;
  if (std::any_of(kernels.begin(), kernels.end(), [](const auto& k) { return k.device.is_cuda(); })) nvtx_range_ = std::move(region);
}

// Each launch is a region named after its kernel: a CPU kernel's in LibTorch's profiler (kineto sees
// nothing else of it), a CUDA kernel's an NVTX range (CUPTI reports the kernel itself under that name).
void Program::launch(size_t k, std::vector<at::Tensor>& values, const int64_t* symbols, std::vector<at::Tensor>& pool) const {
  const auto& launch = code_->plan.kernels[k];
  if (launch.device.is_cuda()) {
    const NvtxRange range(launch.kernel.name.c_str());
    return run_kernel(k, values, symbols, pool);
  }
  const ProfilerRegion region(at::RecordScope::FUNCTION, [&] { return std::string_view(launch.kernel.name); });
  run_kernel(k, values, symbols, pool);
}

void Program::run_kernel(size_t k, std::vector<at::Tensor>& values, const int64_t* symbols, std::vector<at::Tensor>& pool) const {
  const auto& launch = code_->plan.kernels[k];
  for (graph::ValueId v : launch.outputs) values[v] = allocate(v, symbols, pool);
  c10::SmallVector<void*, 16> pointers;
  c10::SmallVector<at::Tensor, 2> copies;  // aligned copies of misaligned CUDA inputs, alive until launched
  int64_t largest = 1;
  for (size_t b = 0; b < launch.buffers.size(); ++b) {
    const at::Tensor& t = values[launch.buffers[b]];
    void* pointer = element_zero(t);
    if (launch.device.is_cuda() && reinterpret_cast<uintptr_t>(pointer) % kCudaBufferAlignment != 0) {
      if (launch.kernel.buffers[b].written) throw InternalError("a CUDA kernel's output buffer is not 16-byte aligned");
      pointer = copies.emplace_back(aligned_copy(t)).data_ptr();
    }
    pointers.push_back(pointer);
    largest = std::max<int64_t>(largest, t.numel());
  }
  static const int64_t no_symbols = 0;
  const int64_t* syms = symbols ? symbols : &no_symbols;
  if (launch.device.is_cuda()) return launch_on_gpu(k, pointers, syms);
  const ProgramCode::Entry& c = code_->kernels[k];
  const int64_t tiles = c.tiles(syms);
  if (tiles <= 0) return;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, largest / tiles));
  std::atomic<int32_t> status{0};  // set by a failed check (an index out of range, a division by zero)
  if (c.checks) pointers.push_back(&status);
  void* const* buffers = pointers.data();
  parallel_for(tiles, grain, [&](int64_t begin, int64_t end) { c.run(buffers, syms, begin, end); });
  if (status.load(std::memory_order_relaxed) != 0) throw ChecksFailed{launch.kernel.name};
}

void Program::launch_on_gpu(size_t k, const c10::SmallVector<void*, 16>& pointers, const int64_t* symbols) const {
  const auto& launch = code_->plan.kernels[k];
  const ProgramCode::Entry& entry = code_->kernels[k];
  if (entry.cuda_config.split > 0) return launch_split(k, pointers, symbols);
  const int64_t tiles = inductor::tile_count(launch.kernel, symbols, entry.cuda_config);
  if (tiles <= 0) return;
  const int device = launch.device.index();
  launch_cuda_kernel(entry.cuda_function, entry.cuda_config.threads, tiles, pointers.data(), pointers.size(), symbols,
                     graph_.num_symbols, current_cuda_stream(device), launch.kernel.name, supports_programmatic_launch(device));
}

// A split reduction (inductor::split_count): the partial pass reduces slices of each row into a workspace,
// the final pass combines them and finishes the rows. The workspace comes from the caching allocator on
// the current stream, so calls on other streams (or recorded into CUDA graphs) get their own, and
// releasing it here is ordered after both passes.
void Program::launch_split(size_t k, const c10::SmallVector<void*, 16>& pointers, const int64_t* symbols) const {
  const auto& launch = code_->plan.kernels[k];
  const ProgramCode::Entry& entry = code_->kernels[k];
  const int64_t slots = inductor::split_workspace_slots(launch.kernel, entry.cuda_config);
  const at::Tensor workspace = at::detail::empty_strided_cuda({slots}, {1}, at::kLong, launch.device);
  c10::SmallVector<void*, 16> buffers(pointers);
  buffers.push_back(workspace.data_ptr());
  inductor::CudaConfig rows_only = entry.cuda_config;
  rows_only.split = 0;
  const int device = launch.device.index();
  void* stream = current_cuda_stream(device);
  const int num_symbols = graph_.num_symbols;
  const bool overlap = supports_programmatic_launch(device);
  launch_cuda_kernel(entry.cuda_function, entry.cuda_config.threads, inductor::tile_count(launch.kernel, symbols, entry.cuda_config),
                     buffers.data(), buffers.size(), symbols, num_symbols, stream, launch.kernel.name, overlap);
  // The final pass launches while the partial pass runs and waits for it inside (griddepcontrol.wait):
  // its launch latency hides behind the partial pass's last blocks.
  launch_cuda_kernel(entry.cuda_final_function, entry.cuda_config.threads, inductor::tile_count(launch.kernel, symbols, rows_only),
                     buffers.data(), buffers.size(), symbols, num_symbols, stream, launch.kernel.name + "_final", overlap);
}

bool Program::run(std::vector<at::Tensor>& values, const int64_t* symbols, std::string* why) const {
  ExcludeBelowAutograd below;
  std::vector<at::Tensor> pool;
  for (const auto& step : code_->plan.steps) {
    switch (step.kind) {
      case inductor::Step::Kind::kKernel: launch(static_cast<size_t>(step.index), values, symbols, pool); break;
      case inductor::Step::Kind::kExtern:
        // An extern op allocates from the allocator, not from the pool: dropped buffers go back first,
        // or they would stay live beside its outputs and raise the call's peak.
        pool.clear();
        if (!replay_node(graph_, graph_.nodes[step.index], {&values, symbols}, why)) return false;
        restride_outputs(graph_, graph_.nodes[step.index], values, symbols);
        break;
      case inductor::Step::Kind::kRelease: {
        at::Tensor t = std::move(values[step.index]);
        if (t.defined() && t.use_count() == 1 && t.storage().use_count() == 1 && t.device().is_cpu()) pool.push_back(std::move(t));
        break;
      }
    }
  }
  return true;
}

}  // namespace jitc::runtime
