// The CUDA backend: kernels printed as CUDA C (codegen.h), the functions compiled by NVRTC as programs
// of one or a few each, all at the same time (jit.h), loaded through the driver and launched on the
// current stream.
#include "inductor/backend.h"
#include "inductor/cuda/autotune.h"
#include "inductor/cuda/codegen.h"
#include "inductor/cuda/combos.h"
#include "inductor/cuda/jit.h"
#include "inductor/kernel_serial.h"
#include "inductor/scheduler.h"
#include "runtime/env.h"
#include "runtime/log.h"
#include "runtime/profiling.h"

#include <jitc/errors.h>

#include <ATen/cuda/EmptyTensor.h>
#include <c10/util/SmallVector.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace jitc::inductor {

namespace {

// Per kernel: the configurations render printed (the heuristic's first; more under max-autotune), each
// as a function of its own name.
struct Candidates {
  std::vector<CudaConfig> configs;
  std::vector<std::string> names;
};

struct CudaSourceUnits final : Source {
  std::string prelude;
  std::vector<cuda::CudaSource> units;  // each function (or combo kernel), printed to follow the prelude
  std::vector<Candidates> candidates;   // per kernel
  std::vector<ComboKernel> combos;
};

void write_combos(Writer& w, const std::vector<ComboKernel>& combos) {
  w.number(static_cast<int64_t>(combos.size()));
  for (const ComboKernel& c : combos) {
    w.text(c.function);
    w.number(c.threads);
    w.number(static_cast<int64_t>(c.parts.size()));
    for (size_t i = 0; i < c.parts.size(); ++i) {
      w.number(static_cast<int64_t>(c.parts[i]));
      w.number(c.first_block[i + 1]);
    }
  }
}

std::vector<ComboKernel> read_combos(Reader& r) {
  std::vector<ComboKernel> combos;
  for (int64_t n = r.number(); n > 0; --n) {
    ComboKernel c;
    c.function = r.text();
    c.threads = static_cast<int>(r.number());
    c.first_block.push_back(0);
    for (int64_t parts = r.number(); parts > 0; --parts) {
      const int64_t part = r.number();
      if (part < 0) throw std::runtime_error("a combo kernel's part out of range");
      c.parts.push_back(static_cast<size_t>(part));
      c.first_block.push_back(r.number());
    }
    combos.push_back(std::move(c));
  }
  return combos;
}

struct CudaBinary final : Binary {
  std::vector<std::string> images;     // cubins or PTX, one per NVRTC program
  std::vector<Candidates> candidates;  // per kernel; the first is the one launched (a combo's part: its function's name)
  std::vector<ComboKernel> combos;

  std::string serialize() const override {
    Writer w;
    w.number(static_cast<int64_t>(images.size()));
    for (const auto& image : images) w.text(image);
    w.number(static_cast<int64_t>(candidates.size()));
    for (const auto& c : candidates) {  // the chosen candidate only: tuning is over
      w.number(c.configs.front().threads);
      w.number(c.configs.front().tile);
      w.number(c.configs.front().columns);
      w.number(c.configs.front().split);
      w.text(c.names.front());
    }
    write_combos(w, combos);
    return w.take();
  }
};

std::string describe(const CudaConfig& config) {
  std::string text = config.columns > 0 ? fmt::format("{} threads over {} rows", config.threads, config.columns)
                     : config.tile > 0  ? fmt::format("{} threads tile {}", config.threads, config.tile)
                                        : fmt::format("{} threads", config.threads);
  if (config.split > 0) text += fmt::format(", rows split over {} blocks", config.split);
  return text;
}

// The function name kernels are printed under before they are named: two kernels whose code under it is
// the same compute the same thing.
constexpr const char* kUnnamed = "jitc_unnamed_kernel";

// The functions of a source (jit.h deals them into NVRTC programs), each compiled body once.
class Programs {
 public:
  explicit Programs(CudaSourceUnits& source) : source_(source) {}

  // Adds the functions of `name` (printed under kUnnamed) and returns the function to launch: with
  // `share`, an earlier one whose code is the same.
  std::string add(const std::string& name, const std::vector<CudaFunctionSource>& unnamed, bool share) {
    std::string body;
    for (const auto& f : unnamed) body += f.source;
    const auto [first, added] = function_of_body_.emplace(share ? body : name, name);
    if (!added) {
      source_.text += fmt::format("// {} launches {}, the same code\n", name, first->second);
      return first->second;
    }
    for (const auto& f : unnamed) {
      const std::string text = replace_all(f.source, kUnnamed, name);
      source_.text += text;
      source_.units.push_back({replace_all(f.name, kUnnamed, name), text});
    }
    return name;
  }

 private:
  CudaSourceUnits& source_;
  std::map<std::string, std::string> function_of_body_;  // code printed under kUnnamed (or a name) -> its function
};

std::string candidate_name(const Kernel& kernel, const CudaConfig& config, size_t candidates) {
  return candidates > 1 ? fmt::format("{}_t{}_{}_c{}", kernel.name, config.threads, config.tile, config.columns) : kernel.name;
}

class CudaKernels final : public LoadedKernels {
 public:
  struct Entry {
    const Kernel* kernel = nullptr;
    CudaConfig config;
    void* function = nullptr;        // a CUfunction
    void* final_function = nullptr;  // split reductions: the pass that combines a row's slices
    TileFormula tiles;               // of the launch (a split kernel's partial pass)
    TileFormula final_tiles;         // a split kernel's final pass: one tile per row
    std::string final_name;          // its name in launch errors
  };

  CudaKernels(std::unique_ptr<cuda::CudaModule> module, const CudaBinary& binary, const std::vector<const KernelLaunch*>& kernels)
      : module_(std::move(module)), combos_(binary.combos) {
    std::vector<bool> part(kernels.size(), false);
    for (const ComboKernel& c : combos_) {
      combo_functions_.push_back(module_->function(c.function));
      groups_.push_back(c.parts);
      for (size_t k : c.parts) part.at(k) = true;
    }
    for (size_t k = 0; k < kernels.size(); ++k) {
      Entry e{&kernels[k]->kernel, binary.candidates[k].configs.front(),
              part[k] ? nullptr : module_->function(binary.candidates[k].names.front())};
      e.tiles = tile_formula(*e.kernel, e.config);
      if (e.config.split > 0) {
        e.final_function = module_->function(binary.candidates[k].names.front() + "_final");
        CudaConfig rows_only = e.config;
        rows_only.split = 0;
        e.final_tiles = tile_formula(*e.kernel, rows_only);
        e.final_name = e.kernel->name + "_final";
      }
      entries_.push_back(std::move(e));
    }
  }

  void* function(const std::string& name) const { return module_->function(name); }

  const std::vector<std::vector<size_t>>& groups() const override { return groups_; }

  // A combo kernel: one block per tile of each part, the parts' buffers one after the other.
  void launch_group(size_t index, const LaunchArgs& args) const override {
    const ComboKernel& c = combos_[index];
    const runtime::NvtxRange range(c.function.c_str());
    const int device = args.device.index();
    cuda::launch_cuda_kernel(combo_functions_[index], c.threads, c.first_block.back(), args.buffers, args.num_buffers, args.symbols,
                             args.num_symbols, cuda::current_cuda_stream(device), c.function, cuda::supports_programmatic_launch(device));
  }

  // An NVTX range named after the kernel (CUPTI reports the kernel itself under that name).
  void launch(size_t index, const LaunchArgs& args) const override {
    const Entry& e = entries_[index];
    if (!e.function) throw InternalError(fmt::format("{} is launched alone but is a part of a combo kernel", e.kernel->name));
    const runtime::NvtxRange range(e.kernel->name.c_str());
    if (e.config.split > 0) return launch_split(e, args);
    const int64_t tiles = evaluate_tiles(*e.kernel, e.tiles, args.symbols);
    if (tiles <= 0) return;
    const int device = args.device.index();
    cuda::launch_cuda_kernel(e.function, e.config.threads, tiles, args.buffers, args.num_buffers, args.symbols, args.num_symbols,
                             cuda::current_cuda_stream(device), e.kernel->name, cuda::supports_programmatic_launch(device));
  }

 private:
  // A split reduction (split_count): the partial pass reduces slices of each row into a workspace, the
  // final pass combines them and finishes the rows. The workspace comes from the caching allocator on the
  // current stream, so calls on other streams (or recorded into CUDA graphs) get their own, and releasing
  // it here is ordered after both passes.
  void launch_split(const Entry& e, const LaunchArgs& args) const {
    const at::Tensor workspace = at::detail::empty_strided_cuda({split_workspace_slots(*e.kernel, e.config)}, {1}, at::kLong, args.device);
    c10::SmallVector<void*, 16> buffers(args.buffers, args.buffers + args.num_buffers);
    buffers.push_back(workspace.data_ptr());
    const int device = args.device.index();
    void* stream = cuda::current_cuda_stream(device);
    const bool overlap = cuda::supports_programmatic_launch(device);
    cuda::launch_cuda_kernel(e.function, e.config.threads, evaluate_tiles(*e.kernel, e.tiles, args.symbols), buffers.data(), buffers.size(),
                             args.symbols, args.num_symbols, stream, e.kernel->name, overlap);
    // The final pass launches while the partial pass runs and waits for it inside (griddepcontrol.wait):
    // its launch latency hides behind the partial pass's last blocks.
    cuda::launch_cuda_kernel(e.final_function, e.config.threads, evaluate_tiles(*e.kernel, e.final_tiles, args.symbols), buffers.data(),
                             buffers.size(), args.symbols, args.num_symbols, stream, e.final_name, overlap);
  }

  std::unique_ptr<cuda::CudaModule> module_;
  std::vector<Entry> entries_;
  std::vector<ComboKernel> combos_;
  std::vector<void*> combo_functions_;  // CUfunctions, per combo
  std::vector<std::vector<size_t>> groups_;
};

class CudaBackend final : public Backend {
 public:
  const Target& target() const override { return target_; }

  std::string unavailable() const override { return cuda::nvrtc_available() ? "" : "NVRTC (libnvrtc) cannot be loaded"; }

  std::string identity(const c10::Device& device) const override {
    // Code made with and without combo kernels is cached apart.
    return fmt::format("cuda {} nvrtc {}{}", cuda::cuda_arch(device.index()), cuda::nvrtc_version(),
                       runtime::env_combo_kernels() ? "" : " no-combos");
  }

  // Each kernel in the heuristic's configuration, or with `tuning` every candidate under its own name;
  // kernels that run at once as parts of combo kernels (heuristic configurations only). A kernel whose
  // code is an earlier one's but for the name (a network's repeated layers of one shape) launches the
  // earlier function: NVRTC compiles each body once. Tuned kernels keep their own candidates.
  std::unique_ptr<Source> render(const std::vector<const KernelLaunch*>& kernels, const RenderOptions& options) const override {
    auto source = std::make_unique<CudaSourceUnits>();
    source->prelude = cuda_prelude();
    source->text = source->prelude;
    source->file = "kernels.cu";
    std::vector<CudaConfig> heuristic;
    for (const KernelLaunch* launch : kernels) heuristic.push_back(default_cuda_config(launch->kernel));
    if (runtime::env_combo_kernels()) source->combos = plan_combo_kernels(kernels, heuristic, options.independent_runs, options.index32);
    Programs programs(*source);
    std::vector<bool> part(kernels.size(), false);
    for (ComboKernel& c : source->combos) {
      for (size_t k : c.parts) part[k] = true;
      ComboKernel unnamed = c;
      unnamed.function = kUnnamed;
      runtime::log(runtime::Artifact::kSchedule, fmt::format("combo kernel {}: {} parts, {} blocks of {} threads", c.function,
                                                             c.parts.size(), c.first_block.back(), c.threads));
      c.function = programs.add(c.function, {{kUnnamed, emit_cuda_combo(unnamed, kernels, heuristic, options.index32)}}, true);
    }
    for (size_t k = 0; k < kernels.size(); ++k) {
      Candidates c;
      c.configs = options.tuning && !part[k] ? cuda_config_candidates(kernels[k]->kernel) : std::vector{heuristic[k]};
      for (const auto& config : c.configs) {
        const std::string name = candidate_name(kernels[k]->kernel, config, c.configs.size());
        c.names.push_back(
            part[k] ? name
                    : programs.add(name, emit_cuda_functions(kernels[k]->kernel, options.index32, config, kUnnamed), !options.tuning));
      }
      source->schedules.push_back(cuda_schedule(c.configs.front()));
      source->candidates.push_back(std::move(c));
    }
    return source;
  }

  std::unique_ptr<Binary> compile(const Source& source, const CompileOptions& options) const override {
    const auto& units = static_cast<const CudaSourceUnits&>(source);
    auto binary = std::make_unique<CudaBinary>();
    binary->images = cuda::compile_cuda_images(units.prelude, units.units, options.name, options.device.index());
    binary->candidates = units.candidates;
    binary->combos = units.combos;
    binary->schedules = units.schedules;
    return binary;
  }

  std::unique_ptr<Binary> deserialize(const std::string& bytes) const override {
    auto binary = std::make_unique<CudaBinary>();
    try {
      Reader r(bytes);
      for (int64_t n = r.number(); n > 0; --n) binary->images.push_back(r.text());
      for (int64_t n = r.number(); n > 0; --n) {
        CudaConfig config;
        config.threads = static_cast<int>(r.number());
        config.tile = r.number();
        config.columns = static_cast<int>(r.number());
        config.split = static_cast<int>(r.number());
        binary->candidates.push_back({{config}, {r.text()}});
      }
      binary->combos = read_combos(r);
      if (!r.done()) return nullptr;
    } catch (const std::exception&) {  // Reader: truncated or malformed
      return nullptr;
    }
    return binary;
  }

  std::unique_ptr<LoadedKernels> load(const Binary& binary, const std::vector<const KernelLaunch*>& kernels,
                                      const CompileOptions& options) const override {
    const auto& b = static_cast<const CudaBinary&>(binary);
    if (b.candidates.size() != kernels.size()) return nullptr;
    for (const ComboKernel& c : b.combos)
      if (std::any_of(c.parts.begin(), c.parts.end(), [&](size_t k) { return k >= kernels.size(); })) return nullptr;
    return std::make_unique<CudaKernels>(cuda::load_cuda_modules(b.images, options.name, options.device.index()), b, kernels);
  }

  void tune(Binary& binary, const LoadedKernels& loaded, const std::vector<const KernelLaunch*>& kernels,
            const TuningShapes& shapes) const override {
    auto& b = static_cast<CudaBinary&>(binary);
    for (size_t k = 0; k < kernels.size(); ++k) {
      keep_fastest(b.candidates[k], static_cast<const CudaKernels&>(loaded), *kernels[k], shapes);
      b.schedules[k] = cuda_schedule(b.candidates[k].configs.front());
    }
  }

  at::Tensor allocate(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype, c10::Device device) const override {
    return at::Tensor(at::detail::empty_strided_cuda(sizes, strides, dtype, device));
  }

 private:
  // Moves the fastest of a kernel's candidates first.
  static void keep_fastest(Candidates& c, const CudaKernels& loaded, const KernelLaunch& launch, const TuningShapes& shapes) {
    if (c.configs.size() < 2) return;
    std::vector<void*> functions;
    for (const auto& name : c.names) functions.push_back(loaded.function(name));
    std::vector<double> ms;
    try {
      ms = cuda::time_candidates(launch, functions, c.configs, shapes);
    } catch (const std::exception& e) {  // out of memory, for instance: the heuristic's choice stays
      runtime::warn(fmt::format("jitc: max-autotune could not time {}: {}", launch.kernel.name, e.what()));
      return;
    }
    const size_t best = std::min_element(ms.begin(), ms.end()) - ms.begin();
    std::string timings;
    for (size_t i = 0; i < ms.size(); ++i) timings += fmt::format("{}{} {:.4f} ms", i ? ", " : "", describe(c.configs[i]), ms[i]);
    runtime::log(runtime::Artifact::kPerfHints,
                 fmt::format("AUTOTUNE {}: {} (kept {})", launch.kernel.name, timings, describe(c.configs[best])));
    std::swap(c.configs[0], c.configs[best]);
    std::swap(c.names[0], c.names[best]);
  }

  // Kernels take every buffer to start at a 16-byte boundary: their vector groups move 16 bytes at once
  // without testing the addresses that the sizes prove aligned (cuda/printer.h, access_aligned). Inductor
  // copies misaligned inputs for the same reason.
  Target target_{.name = "cuda",
                 .device = c10::DeviceType::CUDA,
                 .buffer_alignment = 16,
                 .reuses_released_buffers = false,
                 .nvtx_ranges = true,
                 .orders_loops_as_stored = true,
                 .divides_inner_dims_below = kTile,
                 .merges_reduction_loops = true,
                 .normalization_row_kernels = false,
                 .symbolic_backward_decomposes_batch_norms = true,
                 .compile_stage = &CodegenStages::nvrtc};
};

}  // namespace

const Backend& cuda_backend() {
  static const auto& backend = *new CudaBackend;
  return backend;
}

}  // namespace jitc::inductor
