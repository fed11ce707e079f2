// The CPU backend: kernels printed as LLVM IR (codegen.h), compiled at O3 for the host by ORC (jit.h),
// launched as tile ranges over the thread pool.
#include "inductor/backend.h"
#include "inductor/cpu/autotune.h"
#include "inductor/cpu/codegen.h"
#include "inductor/cpu/jit.h"
#include "inductor/cpu/kernel_parameters.h"
#include "inductor/cpu/launch.h"
#include "inductor/cpu/schedule.h"
#include "inductor/injected_failure.h"
#include "inductor/kernel_serial.h"
#include "runtime/log.h"
#include "runtime/profiling.h"

#include <jitc/errors.h>

#include <ATen/EmptyTensor.h>
#include <c10/util/SmallVector.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace jitc::inductor {

namespace {

constexpr const char* kOptimizedIr = "kernels.opt.ll";  // under JITC_DEBUG_DIR

using cpu::CpuFunction;
using cpu::CpuModule;

// A candidate replaces the heuristic's schedule only when it is this much faster: closer timings on a
// shared CPU are noise as often as not.
constexpr double kMinTuningGain = 0.05;

// Per kernel: the schedules render printed (the heuristic's first; more under max-autotune), each as a
// function of its own name.
struct Candidates {
  std::vector<std::string> names;
  std::vector<Schedule> schedules;
  bool parameterized = false;  // printed as a function of its sizes (kernel_parameters.h): one candidate
};

struct CpuSource final : Source {
  std::vector<std::pair<std::string, std::string>> kernels;  // name, ops: for compile errors
  std::vector<Candidates> candidates;                        // per kernel
  std::vector<std::string> parts;                            // modules compiled at once (text: all of them)
};

struct CpuBinary final : Binary {
  std::vector<std::string> objects;    // one per part
  std::vector<Candidates> candidates;  // per kernel; the first is the one launched

  std::string serialize() const override {
    Writer w;
    w.number(static_cast<int64_t>(objects.size()));
    for (const auto& object : objects) w.text(object);
    w.number(static_cast<int64_t>(candidates.size()));
    for (const auto& c : candidates) {  // the chosen candidate only: tuning is over
      w.text(c.names.front());
      w.number(c.parameterized ? 1 : 0);
    }
    return w.take();
  }
};

// A module compiles on one thread, so a program's kernels are split into a module per thread the host
// has (at most kMaxCompileThreads), each of at least kMinKernelsPerPart kernels: LLVM's time is most of a
// cold compile.
constexpr size_t kMaxCompileThreads = 16, kMinKernelsPerPart = 4;

size_t compile_threads() { return std::clamp<size_t>(std::thread::hardware_concurrency(), 1, kMaxCompileThreads); }

// One module for all kernels of a program: the declarations and metadata they share appear once.
std::string link_ir(const std::vector<std::string>& kernels) {
  std::set<std::string> declared;
  std::string declarations, bodies;
  for (const auto& ir : kernels) {
    std::istringstream lines(ir);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("declare ", 0) == 0 || line.rfind("!", 0) == 0) {  // and metadata
        if (declared.insert(line).second) declarations += line + "\n";
      } else {
        bodies += line + "\n";
      }
    }
  }
  return declarations + bodies;
}

// The LLVM IR of `printed` (the launch's kernel, under a candidate's name when tuning) as `schedule`
// says. A failure names the kernel and its ops.
std::string kernel_ir(const KernelLaunch& launch, const Kernel& printed, const llvm_ir::CpuSchedule& schedule) {
  std::string ir;
  try {
    if (failure_injected("codegen", launch.ops)) throw CompileError(kInjectedFailure);
    ir = emit_llvm_ir(printed, schedule);
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
  // Each kernel's chosen function (the first of its candidates).
  CpuKernels(std::unique_ptr<CpuModule> module, const CpuBinary& binary, const std::vector<const KernelLaunch*>& kernels)
      : module_(std::move(module)) {
    for (size_t k = 0; k < kernels.size(); ++k) {
      const Kernel& kernel = kernels[k]->kernel;
      Entry& e = entries_.emplace_back(Entry{kernel.name, function(binary.candidates[k].names.front(), kernel), 0, {}});
      if (!binary.candidates[k].parameterized) continue;
      cpu::ParameterizedKernel parameterized = cpu::parameterize(kernel);
      e.first_parameter = parameterized.first_symbol;
      e.parameters = std::move(parameterized.values);
    }
  }

  // A region named after the kernel in LibTorch's profiler (kineto sees nothing else of it).
  void launch(size_t index, const LaunchArgs& args) const override {
    const Entry& e = entries_[index];
    const runtime::ProfilerRegion region(at::RecordScope::FUNCTION, [&] { return std::string_view(e.name); });
    if (!e.parameters.empty()) return launch_parameterized(e, args);
    if (!cpu::run_cpu_function(e.function, args)) throw ChecksFailed{e.name};
  }

  // The function called `name` in the module, printed from `kernel`.
  CpuFunction function(const std::string& name, const Kernel& kernel) const {
    return {reinterpret_cast<CpuFunction::Run>(module_->symbol(name)),
            reinterpret_cast<CpuFunction::Tiles>(module_->symbol(name + ".tiles")), has_checks(kernel)};
  }

 private:
  struct Entry {
    std::string name;
    CpuFunction function;
    int first_parameter = 0;          // a parameterized kernel's: where its values follow the graph's symbols
    std::vector<int64_t> parameters;  // its sizes and constants (kernel_parameters.h)
  };

  // With the graph's symbols the kernel reads, then its parameters, as its symbols.
  static void launch_parameterized(const Entry& e, LaunchArgs args) {
    c10::SmallVector<int64_t, 32> symbols(args.symbols, args.symbols + e.first_parameter);
    symbols.append(e.parameters.begin(), e.parameters.end());
    args.symbols = symbols.data();
    args.num_symbols = static_cast<int>(symbols.size());
    if (!cpu::run_cpu_function(e.function, args)) throw ChecksFailed{e.name};
  }
  std::unique_ptr<CpuModule> module_;
  std::vector<Entry> entries_;
};

// The kernels' IR (render's, in order) as modules compiled at once: contiguous runs of about equal
// length, each linked as link_ir does.
std::vector<std::string> split_into_parts(const std::vector<std::string>& irs) {
  const size_t count = std::max<size_t>(1, std::min(compile_threads(), irs.size() / kMinKernelsPerPart));
  size_t total = 0;
  for (const auto& ir : irs) total += ir.size();
  std::vector<std::string> parts;
  std::vector<std::string> part;
  size_t length = 0;
  for (const auto& ir : irs) {
    part.push_back(ir);
    length += ir.size();
    if (parts.size() + 1 < count && length * count >= total * (parts.size() + 1)) {
      parts.push_back(link_ir(part));
      part.clear();
    }
  }
  if (!part.empty() || parts.empty()) parts.push_back(link_ir(part));
  return parts;
}

// "; part 2 of 3" between the parts' texts in JITC_LOGS=output_code and the debug files.
std::string part_header(size_t i, size_t count) { return count == 1 ? "" : fmt::format("\n; part {} of {}\n", i + 1, count); }

// `ir` with every reference to the function `name` (@name, @name.body, @name.tiles) made anonymous: two
// kernels whose IR is the same but for their names compute the same thing.
std::string without_name(const std::string& ir, const std::string& name) {
  const std::string ref = "@" + name;
  std::string out;
  size_t from = 0;
  for (size_t at = ir.find(ref); at != std::string::npos; at = ir.find(ref, at + 1)) {
    const size_t after = at + ref.size();
    const char next = after < ir.size() ? ir[after] : '\0';
    if (std::isalnum(static_cast<unsigned char>(next)) || next == '_') continue;  // @k_1 inside @k_12
    out.append(ir, from, at - from).append("@?");
    from = after;
  }
  return out.append(ir, from, std::string::npos);
}

// A kernel's schedules (the heuristic's, or with `tuning` every candidate), and where it may print as a
// function of its sizes (kernel_parameters.h), that kernel, its IR and its IR with constants (render
// compares them without the name and emits one of them). It does where another kernel of the program, of other constants, prints the same
// IR: LLVM compiles one function for a network's layers. A kernel of its own (or of a layer repeated at one shape) keeps its constants in
// an inference program, whose code is up to 15% faster for them (a column reduction, RESULTS.md, session 31); in a training step's
// programs it prints with symbols too: its constant form is the costlier compile (unrolled lanes), and the step waits for it
// (MobileNetV2's training programs: a fifth less LLVM time, steps as fast; RESULTS.md, session 42).
struct Planned {
  std::vector<llvm_ir::CpuSchedule> schedules;
  std::optional<cpu::ParameterizedKernel> generic;
  std::string generic_ir, constant_ir;
  std::string ir(bool parameterized) const { return parameterized ? generic_ir : constant_ir; }
};

Planned plan(const KernelLaunch& launch, bool tuning) {
  const Placement placement = place(launch.kernel);
  Planned p{tuning ? llvm_ir::cpu_schedule_candidates(launch.kernel, placement)
                   : std::vector{llvm_ir::schedule_cpu_kernel(launch.kernel, placement)},
            std::nullopt, "", ""};
  if (tuning || !cpu::prints_parameterized(p.schedules.front())) return p;
  p.generic = cpu::parameterize(launch.kernel);
  p.generic_ir = kernel_ir(launch, p.generic->kernel, cpu::parameterized_schedule(p.schedules.front(), *p.generic));
  p.constant_ir = kernel_ir(launch, launch.kernel, p.schedules.front());
  return p;
}

// The name of candidate `i` of `count`: the kernel's own when it has one.
std::string candidate_name(const Kernel& kernel, size_t i, size_t count) {
  return count > 1 ? fmt::format("{}_c{}", kernel.name, i) : kernel.name;
}

class CpuBackend final : public Backend {
 public:
  const Target& target() const override { return target_; }

  std::string unavailable() const override { return cpu::cpu_jit_available() ? "" : "jitc was built without LLVM (JITC_WITH_LLVM=OFF)"; }

  std::string identity(const c10::Device&) const override { return cpu::cpu_codegen_identity(); }

  // Each kernel in the heuristic's schedule, or with `tuning` every candidate schedule under its own name.
  // A kernel whose IR is an earlier one's but for the name (a network's repeated layers of one shape)
  // calls the earlier function: LLVM compiles each body once; so do kernels printed as functions of their
  // sizes whose sizes differ (plan). Tuned kernels keep their own candidates.
  std::unique_ptr<Source> render(const std::vector<const KernelLaunch*>& kernels, const RenderOptions& options) const override {
    auto source = std::make_unique<CpuSource>();
    std::vector<std::string> irs;
    std::map<std::string, std::string> function_of_body;  // IR without its name -> the function compiled for it
    std::vector<Planned> planned;
    std::map<std::string, std::set<std::string>> constants_of_generic_ir;  // IRs without the kernel's name
    for (const KernelLaunch* k : kernels) {
      const Planned& p = planned.emplace_back(plan(*k, options.tuning));
      if (p.generic)
        constants_of_generic_ir[without_name(p.generic_ir, k->kernel.name)].insert(without_name(p.constant_ir, k->kernel.name));
    }
    for (size_t n = 0; n < kernels.size(); ++n) {
      const KernelLaunch* k = kernels[n];
      const Planned& p = planned[n];
      const auto& schedules = p.schedules;
      Candidates c;
      // Layers of other constants print alike.
      c.parameterized = p.generic && (options.training || constants_of_generic_ir[without_name(p.generic_ir, k->kernel.name)].size() > 1);
      for (size_t i = 0; i < schedules.size(); ++i) {
        Kernel printed = k->kernel;
        printed.name = candidate_name(k->kernel, i, schedules.size());
        std::string ir = p.generic ? p.ir(c.parameterized) : kernel_ir(*k, printed, schedules[i]);  // planned: one candidate
        const auto [first, added] = function_of_body.emplace(options.tuning ? ir : without_name(ir, printed.name), printed.name);
        irs.push_back(added ? std::move(ir) : fmt::format("; {} calls {}, the same code\n", printed.name, first->second));
        c.names.push_back(first->second);
        c.schedules.push_back(schedules[i].decisions(k->kernel));
        if (c.parameterized) c.schedules.back().set("size_parameters", static_cast<int64_t>(p.generic->values.size()));
      }
      source->schedules.push_back(c.schedules.front());
      source->candidates.push_back(std::move(c));
      source->kernels.emplace_back(k->kernel.name, fmt::format("{}", fmt::join(k->ops, ", ")));
    }
    source->text = link_ir(irs);
    source->parts = split_into_parts(irs);
    source->file = "kernels.ll";
    return source;
  }

  // The parts at once, a thread each.
  std::unique_ptr<Binary> compile(const Source& source, const CompileOptions& options) const override {
    const auto& cpu_source = static_cast<const CpuSource&>(source);
    std::vector<std::future<cpu::CpuObject>> parts;
    for (const auto& part : cpu_source.parts)
      parts.push_back(
          std::async(std::launch::async, [&part, &options] { return cpu::compile_cpu_object(part, options.name, options.want_assembly); }));
    auto binary = std::make_unique<CpuBinary>();
    std::string optimized, assembly, failure;
    for (size_t i = 0; i < parts.size(); ++i) {
      try {
        cpu::CpuObject compiled = parts[i].get();
        binary->objects.push_back(std::move(compiled.object));
        optimized += part_header(i, parts.size()) + compiled.optimized_ir;
        assembly += part_header(i, parts.size()) + compiled.assembly;
      } catch (const CompileError& e) {  // the first failure, once every thread is done
        if (failure.empty()) failure = naming_kernels(cpu_source, e.what());
      }
    }
    if (!failure.empty()) throw CompileError(failure);
    binary->candidates = cpu_source.candidates;
    binary->schedules = source.schedules;
    binary->artifacts = {{kOptimizedIr, std::move(optimized)}, {"kernels.s", std::move(assembly)}};
    return binary;
  }

  std::unique_ptr<Binary> deserialize(const std::string& bytes) const override {
    auto binary = std::make_unique<CpuBinary>();
    try {
      Reader r(bytes);
      for (int64_t n = r.number(); n > 0; --n) binary->objects.push_back(r.text());
      for (int64_t n = r.number(); n > 0; --n) {
        Candidates& c = binary->candidates.emplace_back();
        c.names.push_back(r.text());
        c.parameterized = r.number() != 0;
      }
      if (!r.done()) return nullptr;
    } catch (const std::exception&) {  // Reader: truncated or malformed
      return nullptr;
    }
    return binary;
  }

  std::unique_ptr<LoadedKernels> load(const Binary& binary, const std::vector<const KernelLaunch*>& kernels,
                                      const CompileOptions& options) const override {
    const auto& b = static_cast<const CpuBinary&>(binary);
    if (b.candidates.size() != kernels.size()) return nullptr;
    return std::make_unique<CpuKernels>(cpu::load_cpu_objects(b.objects, options.name), b, kernels);
  }

  void tune(Binary& binary, const LoadedKernels& loaded, const std::vector<const KernelLaunch*>& kernels,
            const TuningShapes& shapes) const override {
    auto& b = static_cast<CpuBinary&>(binary);
    for (size_t k = 0; k < kernels.size(); ++k) {
      keep_fastest(b.candidates[k], static_cast<const CpuKernels&>(loaded), *kernels[k], shapes);
      b.schedules[k] = b.candidates[k].schedules.front();
    }
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
  // Moves the fastest of a kernel's candidates first.
  static void keep_fastest(Candidates& c, const CpuKernels& loaded, const KernelLaunch& launch, const TuningShapes& shapes) {
    if (c.names.size() < 2) return;
    std::vector<CpuFunction> functions;
    for (const auto& name : c.names) functions.push_back(loaded.function(name, launch.kernel));
    std::vector<double> ms;
    try {
      ms = cpu::time_cpu_candidates(launch, functions, shapes);
    } catch (const std::exception& e) {  // out of memory, for instance: the heuristic's choice stays
      runtime::warn(fmt::format("jitc: max-autotune could not time {}: {}", launch.kernel.name, e.what()));
      return;
    }
    size_t best = std::min_element(ms.begin(), ms.end()) - ms.begin();
    if (ms[best] > ms[0] * (1 - kMinTuningGain)) best = 0;
    std::string timings;
    for (size_t i = 0; i < ms.size(); ++i) timings += fmt::format("{}[{}] {:.3g} ms", i ? ", " : "", c.schedules[i].text(), ms[i]);
    runtime::log(runtime::Artifact::kPerfHints,
                 fmt::format("AUTOTUNE {}: {} (kept [{}])", launch.kernel.name, timings, c.schedules[best].text()));
    std::swap(c.names[0], c.names[best]);
    std::swap(c.schedules[0], c.schedules[best]);
  }

  Target target_{.name = "cpu",
                 .device = c10::DeviceType::CPU,
                 .buffer_alignment = 1,
                 .reuses_released_buffers = true,
                 .nvtx_ranges = false,
                 .orders_loops_as_stored = true,
                 .normalization_row_kernels = true,
                 .symbolic_backward_decomposes_batch_norms = false,
                 .compile_stage = &CodegenStages::llvm};
};

}  // namespace

const Backend& cpu_backend() {
  static const auto& backend = *new CpuBackend;
  return backend;
}

}  // namespace jitc::inductor
