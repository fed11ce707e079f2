// The CPU backend: kernels printed as LLVM IR (codegen.h), compiled at O3 for the host by ORC (jit.h),
// launched as tile ranges over the thread pool.
#include "inductor/backend.h"
#include "inductor/cpu/codegen.h"
#include "inductor/cpu/jit.h"
#include "inductor/injected_failure.h"
#include "runtime/profiling.h"
#include "runtime/thread_pool.h"

#include <jitc/errors.h>

#include <ATen/EmptyTensor.h>
#include <c10/util/SmallVector.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <set>
#include <sstream>

namespace jitc::inductor {

namespace {

constexpr const char* kOptimizedIr = "kernels.opt.ll";  // under JITC_DEBUG_DIR

using cpu::CpuModule;

constexpr int64_t kGrainElements = 32768;  // elements of work per parallel chunk (Inductor: 4096+ per thread)

struct CpuSource final : Source {
  std::vector<std::pair<std::string, std::string>> kernels;  // name, ops: for compile errors
};

struct CpuBinary final : Binary {
  std::string object;
  std::string serialize() const override { return object; }
};

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

// A kernel's LLVM IR and the printer's decisions. A failure names the kernel and its ops.
std::string kernel_ir(const KernelLaunch& launch, Schedule& schedule) {
  std::string ir;
  try {
    if (failure_injected("codegen", launch.ops)) throw CompileError(kInjectedFailure);
    ir = emit_llvm_ir(launch.kernel, &schedule);
  } catch (const std::exception& e) {
    throw CompileError(fmt::format("generating kernel {} ({}) failed: {}", launch.kernel.name, fmt::join(launch.ops, ", "), e.what()));
  }
  // An invalid line in the kernel's first function: LLVM's parser rejects it, as it would a printer bug.
  if (failure_injected("compile", launch.ops))
    if (const size_t body = ir.find("{\n", ir.find("define ")); body != std::string::npos) ir.insert(body + 2, "  injected failure\n");
  return ir;
}

// `message` (from LLVM, naming a function) after the kernels whose functions it names, with their ops.
std::string naming_kernels(const CpuSource& source, const std::string& message) {
  auto names = [&](const std::string& kernel) {  // @kernel or @kernel.body, not @kernel0
    const size_t at = message.find("@" + kernel);
    const size_t after = at + kernel.size() + 1;
    return at != std::string::npos && (after == message.size() || !std::isdigit(static_cast<unsigned char>(message[after])));
  };
  std::string named;
  for (const auto& [kernel, ops] : source.kernels)
    if (names(kernel)) named += fmt::format("kernel {} ({}): ", kernel, ops);
  return named + message;
}

class CpuKernels final : public LoadedKernels {
 public:
  struct Entry {
    using Run = void (*)(void* const* buffers, const int64_t* symbols, int64_t begin, int64_t end);
    using Tiles = int64_t (*)(const int64_t* symbols);
    std::string name;
    Run run = nullptr;
    Tiles tiles = nullptr;
    bool checks = false;  // the kernel takes a status word after its buffers
  };

  CpuKernels(std::unique_ptr<CpuModule> module, const std::vector<const KernelLaunch*>& kernels) : module_(std::move(module)) {
    for (const KernelLaunch* k : kernels)
      entries_.push_back({k->kernel.name, reinterpret_cast<Entry::Run>(module_->symbol(k->kernel.name)),
                          reinterpret_cast<Entry::Tiles>(module_->symbol(k->kernel.name + ".tiles")), has_checks(k->kernel)});
  }

  // A region named after the kernel in LibTorch's profiler (kineto sees nothing else of it).
  void launch(size_t index, const LaunchArgs& args) const override {
    const Entry& e = entries_[index];
    const runtime::ProfilerRegion region(at::RecordScope::FUNCTION, [&] { return std::string_view(e.name); });
    const int64_t tiles = e.tiles(args.symbols);
    if (tiles <= 0) return;
    const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, args.largest_buffer / tiles));
    std::atomic<int32_t> status{0};           // set by a failed check (an index out of range, a division by zero)
    c10::SmallVector<void*, 16> with_status;  // a kernel with checks takes the status word after its buffers
    if (e.checks) {
      with_status.assign(args.buffers, args.buffers + args.num_buffers);
      with_status.push_back(&status);
    }
    void* const* pointers = e.checks ? with_status.data() : args.buffers;
    const int64_t* symbols = args.symbols;
    runtime::parallel_for(tiles, grain, [&](int64_t begin, int64_t end) { e.run(pointers, symbols, begin, end); });
    if (status.load(std::memory_order_relaxed) != 0) throw ChecksFailed{e.name};
  }

 private:
  std::unique_ptr<CpuModule> module_;
  std::vector<Entry> entries_;
};

class CpuBackend final : public Backend {
 public:
  const Target& target() const override { return target_; }

  std::string unavailable() const override { return cpu::cpu_jit_available() ? "" : "jitc was built without LLVM (JITC_WITH_LLVM=OFF)"; }

  std::string identity(const c10::Device&) const override { return cpu::cpu_codegen_identity(); }

  std::unique_ptr<Source> render(const std::vector<const KernelLaunch*>& kernels, const RenderOptions&) const override {
    auto source = std::make_unique<CpuSource>();
    std::vector<std::string> irs;
    for (const KernelLaunch* k : kernels) {
      irs.push_back(kernel_ir(*k, source->schedules.emplace_back()));
      source->kernels.emplace_back(k->kernel.name, fmt::format("{}", fmt::join(k->ops, ", ")));
    }
    source->text = link_ir(irs);
    source->file = "kernels.ll";
    return source;
  }

  std::unique_ptr<Binary> compile(const Source& source, const CompileOptions& options) const override {
    cpu::CpuObject compiled;
    try {
      compiled = cpu::compile_cpu_object(source.text, options.name, options.want_assembly);
    } catch (const CompileError& e) {
      throw CompileError(naming_kernels(static_cast<const CpuSource&>(source), e.what()));
    }
    auto binary = std::make_unique<CpuBinary>();
    binary->object = std::move(compiled.object);
    binary->schedules = source.schedules;
    binary->artifacts = {{kOptimizedIr, std::move(compiled.optimized_ir)}, {"kernels.s", std::move(compiled.assembly)}};
    return binary;
  }

  std::unique_ptr<Binary> deserialize(const std::string& bytes) const override {
    auto binary = std::make_unique<CpuBinary>();
    binary->object = bytes;
    return binary;
  }

  std::unique_ptr<LoadedKernels> load(const Binary& binary, const std::vector<const KernelLaunch*>& kernels,
                                      const CompileOptions& options) const override {
    auto module = cpu::load_cpu_object(static_cast<const CpuBinary&>(binary).object, options.name);
    return std::make_unique<CpuKernels>(std::move(module), kernels);
  }

  // Straight from the allocator: the dispatcher's round trip is a good part of a small call's host cost.
  // The IR after O3 where compile kept it; a binary from the disk cache keeps the IR it was made from.
  std::string output_code(const std::string& source, const std::string&, const Binary& binary) const override {
    const auto& artifacts = binary.artifacts;
    auto optimized = std::find_if(artifacts.begin(), artifacts.end(), [](const auto& a) { return a.file == kOptimizedIr; });
    if (optimized != artifacts.end()) return "\n; LLVM IR after O3\n" + optimized->text;
    return "\n; LLVM IR (before O3: the object code came from the disk cache)\n" + source;
  }

  at::Tensor allocate(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype, c10::Device) const override {
    return at::Tensor(at::detail::empty_strided_cpu(sizes, strides, dtype));
  }

 private:
  Target target_{.name = "cpu",
                 .device = c10::DeviceType::CPU,
                 .buffer_alignment = 1,
                 .reuses_released_buffers = true,
                 .nvtx_ranges = false,
                 .orders_loops_as_stored = true,
                 .normalization_row_kernels = true,
                 .compile_stage = &CodegenStages::llvm};
};

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace jitc::inductor
