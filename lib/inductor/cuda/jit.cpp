#include "inductor/cuda/jit.h"

#include "cache/files.h"
#include "inductor/cuda/codegen.h"

#include "runtime/env.h"
#include "runtime/log.h"

#include <jitc/errors.h>

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/SmallVector.h>
#include <cuda.h>
#include <fmt/format.h>
#include <nvrtc.h>

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

namespace jitc::inductor::cuda {

namespace {

// The NVRTC and driver entry points jitc uses, resolved on first use.
struct Api {
  void* nvrtc = nullptr;
  void* driver = nullptr;
  decltype(&nvrtcCreateProgram) create = nullptr;
  decltype(&nvrtcCompileProgram) compile = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&nvrtcGetProgramLog) log = nullptr;
  decltype(&nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&nvrtcGetCUBIN) cubin = nullptr;
  decltype(&nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&nvrtcGetPTX) ptx = nullptr;
  decltype(&nvrtcDestroyProgram) destroy = nullptr;
  decltype(&nvrtcVersion) version = nullptr;
  decltype(&nvrtcGetNumSupportedArchs) num_archs = nullptr;  // NVRTC 11.2+
  decltype(&nvrtcGetSupportedArchs) archs = nullptr;
  decltype(&cuModuleLoadData) load = nullptr;
  decltype(&cuModuleUnload) unload = nullptr;
  decltype(&cuModuleGetFunction) get_function = nullptr;
  decltype(&cuLaunchKernel) launch = nullptr;
  decltype(&cuLaunchKernelEx) launch_ex = nullptr;  // CUDA 12+: launch attributes
  decltype(&cuGetErrorName) error_name = nullptr;
  decltype(&cuDeviceGetAttribute) attribute = nullptr;
  decltype(&cuDeviceGet) device = nullptr;

  static Api& get() {
    static Api& api = *new Api;
    static std::once_flag once;
    std::call_once(once, [] { api.open(); });
    return api;
  }

 private:
  template <class F>
  void bind(void* lib, F& f, const char* symbol) {
    if (lib) f = reinterpret_cast<F>(dlsym(lib, symbol));
  }
  static void* open_first(std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
    return nullptr;
  }
  void open() {
    nvrtc = open_first({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"});
    driver = open_first({"libcuda.so.1", "libcuda.so"});
    bind(nvrtc, create, "nvrtcCreateProgram");
    bind(nvrtc, compile, "nvrtcCompileProgram");
    bind(nvrtc, log_size, "nvrtcGetProgramLogSize");
    bind(nvrtc, log, "nvrtcGetProgramLog");
    bind(nvrtc, cubin_size, "nvrtcGetCUBINSize");
    bind(nvrtc, cubin, "nvrtcGetCUBIN");
    bind(nvrtc, ptx_size, "nvrtcGetPTXSize");
    bind(nvrtc, ptx, "nvrtcGetPTX");
    bind(nvrtc, destroy, "nvrtcDestroyProgram");
    bind(nvrtc, version, "nvrtcVersion");
    bind(nvrtc, num_archs, "nvrtcGetNumSupportedArchs");
    bind(nvrtc, archs, "nvrtcGetSupportedArchs");
    bind(driver, load, "cuModuleLoadData");
    bind(driver, unload, "cuModuleUnload");
    bind(driver, get_function, "cuModuleGetFunction");
    bind(driver, launch, "cuLaunchKernel");
    bind(driver, launch_ex, "cuLaunchKernelEx");
    bind(driver, error_name, "cuGetErrorName");
    bind(driver, attribute, "cuDeviceGetAttribute");
    bind(driver, device, "cuDeviceGet");
  }
};

Api& nvrtc_api() {
  Api& api = Api::get();
  if (!api.create || !api.compile || !api.cubin || !api.ptx)
    throw UnsupportedError(
        "jitc: NVRTC could not be loaded (libnvrtc.so.13/.12 not found); CUDA graphs need the CUDA toolkit's "
        "libnvrtc on the library path");
  return api;
}

Api& driver_api() {
  Api& api = Api::get();
  if (!api.load || !api.launch || !api.get_function) throw RuntimeError("jitc: the CUDA driver (libcuda.so.1) could not be loaded");
  return api;
}

std::string driver_error(CUresult r) {
  const char* name = nullptr;
  if (Api::get().error_name) Api::get().error_name(r, &name);
  return name ? name : fmt::format("CUresult {}", static_cast<int>(r));
}

// One loaded module per image; a function is looked up in each until one has it.
class DriverModule final : public CudaModule {
 public:
  explicit DriverModule(std::vector<std::string> images) : images_(std::move(images)) {}
  ~DriverModule() override {
    if (Api::get().unload)
      for (CUmodule m : modules_) Api::get().unload(m);
  }
  void add(CUmodule module) { modules_.push_back(module); }
  void* function(const std::string& name) const override {
    CUresult r = CUDA_ERROR_NOT_FOUND;
    for (CUmodule m : modules_) {
      CUfunction f = nullptr;
      r = driver_api().get_function(&f, m, name.c_str());
      if (r == CUDA_SUCCESS) return reinterpret_cast<void*>(f);
    }
    throw RuntimeError(fmt::format("jitc: cuModuleGetFunction({}) failed: {}", name, driver_error(r)));
  }
  const std::vector<std::string>& images() const override { return images_; }

 private:
  std::vector<CUmodule> modules_;
  std::vector<std::string> images_;
};

}  // namespace

bool nvrtc_available() { return Api::get().create != nullptr; }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (Api::get().version) Api::get().version(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

std::string cuda_arch(int device) {
  Api& api = driver_api();
  CUdevice d;
  int major = 0, minor = 0;
  if (api.device(&d, device) != CUDA_SUCCESS || api.attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) != CUDA_SUCCESS ||
      api.attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d) != CUDA_SUCCESS)
    throw RuntimeError(fmt::format("jitc: cannot read the compute capability of CUDA device {}", device));
  return fmt::format("sm_{}{}", major, minor);
}

bool supports_programmatic_launch(int device) {
  // JITC_CUDA_PDL=0 launches every kernel plainly: a way out should a driver mishandle the overlap.
  static const bool allowed = runtime::env_cuda_pdl();
  // Per device: 0 unread, 1 no, 2 yes (compute capability 9.0+ and a driver with cuLaunchKernelEx).
  static std::array<std::atomic<int8_t>, 64> known{};
  if (!allowed || device < 0 || device >= static_cast<int>(known.size())) return false;
  int8_t k = known[device].load(std::memory_order_relaxed);
  if (k == 0) {
    Api& api = driver_api();
    CUdevice d;
    int major = 0;
    const bool yes = api.launch_ex && api.device(&d, device) == CUDA_SUCCESS &&
                     api.attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) == CUDA_SUCCESS && major >= 9;
    k = yes ? 2 : 1;
    known[device].store(k, std::memory_order_relaxed);
  }
  return k == 2;
}

namespace {

// NVRTC's options for `arch` ("sm_90"): a cubin for it, or PTX for its virtual architecture.
// --minimal (NVRTC 12.4+) leaves texture, cudadevrt, device-launch and runtime-API declarations out of
// NVRTC's builtin header. Generated code uses none of them: the cubins are byte-identical with and
// without it (softmax, layer_norm, sin+cos+relu, bias+GELU and their max-autotune variants, NVRTC 13.0),
// and it only shortens compiles. On the H200 host, the driver initialized as under PyTorch, fresh compiles
// of the prelude alone, softmax, layer_norm, bias+GELU and sin+cos+relu were faster with it, in medians
// and in most per-process pairs (benchmarks/RESULTS.md).
// Not used: --no-cache (NVRTC 13's cache is the driver's ~/.nv/ComputeCache; once PyTorch has run cuInit
// a miss costs the same with or without it), -Xptxas -O<n> and --Ofast-compile (they change the code).
std::vector<std::string> nvrtc_options(const std::string& arch, bool cubin) {
  const std::string target = cubin ? "--gpu-architecture=" + arch : "--gpu-architecture=compute_" + arch.substr(3);
  // 177: unused variables (generated code defines every size it might need).
  std::vector<std::string> options = {target, "-std=c++17", "--device-as-default-execution-space", "--diag-suppress=177"};
  int major = 0, minor = 0;
  if (Api::get().version) Api::get().version(&major, &minor);
  if (major > 12 || (major == 12 && minor >= 4)) options.push_back("--minimal");
  return options;
}

// NVRTC's log without the terminating NUL its size counts (what() would stop there).
std::string program_log(Api& api, nvrtcProgram program) {
  size_t size = 0;
  api.log_size(program, &size);
  std::string log(size, '\0');
  if (size) api.log(program, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// The cubin or PTX of a compiled program; empty if NVRTC produced none.
std::string program_image(Api& api, nvrtcProgram program, bool cubin) {
  size_t size = 0;
  if (cubin ? api.cubin_size(program, &size) : api.ptx_size(program, &size)) size = 0;
  std::string out(size, '\0');
  if (size) (cubin ? api.cubin(program, out.data()) : api.ptx(program, out.data()));
  return out;
}

// A source NVRTC rejected, as JITC_DEBUG_DIR/<name>/kernels.cu (beside what codegen.cpp dumps for
// compiled graphs), so that the file(line) in NVRTC's log can be opened. "" when JITC_DEBUG_DIR is unset
// or the file cannot be written: the error message carries the source either way.
std::string keep_source(const std::string& source, const std::string& name) {
  const std::string dir = runtime::env_debug_dir();
  if (dir.empty()) return "";
  const std::string folder = cache::files::join(dir, name), path = cache::files::join(folder, "kernels.cu");
  if (!cache::files::make_directories(folder).empty() || !cache::files::write(path, source).empty()) return "";
  return path;
}

// The architectures NVRTC compiles for (e.g. 75 ... 120); nullopt where it cannot say.
std::optional<std::vector<int>> supported_archs() {
  Api& api = nvrtc_api();
  int count = 0;
  if (!api.num_archs || !api.archs || api.num_archs(&count) != NVRTC_SUCCESS || count <= 0) return std::nullopt;
  std::vector<int> archs(static_cast<size_t>(count));
  if (api.archs(archs.data()) != NVRTC_SUCCESS) return std::nullopt;
  return archs;
}

// An NVRTC that cannot list its architectures: a cubin, and PTX for the same architecture if that fails.
std::string compile_unlisted(const std::string& source, const std::string& name, const std::string& arch) {
  try {
    return nvrtc_compile(source, name, arch, /*cubin=*/true);
  } catch (const CompileError&) {
    return nvrtc_compile(source, name, arch, /*cubin=*/false);
  }
}

// JITC_LOGS=compile_times: the programs' NVRTC times, the slowest named (what bounds a compile's wall time).
void log_program_times(const std::vector<CudaSource>& programs, size_t functions, const std::vector<double>& seconds,
                       const std::string& name, size_t threads) {
  const size_t slowest = std::max_element(seconds.begin(), seconds.end()) - seconds.begin();
  runtime::log(runtime::Artifact::kCompileTimes,
               fmt::format("nvrtc {}: {} functions in {} programs on {} threads, {:.1f} ms in all; the slowest {} {:.1f} ms ({} bytes of "
                           "source)",
                           name, functions, programs.size(), threads, std::accumulate(seconds.begin(), seconds.end(), 0.0) * 1e3,
                           programs[slowest].name, seconds[slowest] * 1e3, programs[slowest].source.size()));
}

// `function` in a namespace of its own (bundle_functions).
std::string enclosed(const CudaSource& function, size_t index) {
  return fmt::format("namespace jitc_program_part_{} {{\n{}}}  // namespace jitc_program_part_{}\n", index, function.source, index);
}

// The functions of bundle `b` as one program named after its first function.
CudaSource bundle_program(const std::string& prelude, const std::vector<CudaSource>& functions, const std::vector<size_t>& members) {
  CudaSource program{functions[members.front()].name, prelude};
  if (members.size() > 1) program.name += fmt::format("+{}", members.size() - 1);
  for (size_t i : members) program.source += enclosed(functions[i], i);
  return program;
}

}  // namespace

std::optional<CudaTarget> choose_cuda_target(const std::string& device, const std::vector<int>& supported) {
  const int wanted = std::stoi(device.substr(3));  // "sm_90" -> 90
  int below = -1;
  for (int a : supported) {
    if (a == wanted) return CudaTarget{device, true};
    if (a < wanted) below = std::max(below, a);
  }
  if (below < 0) return std::nullopt;
  return CudaTarget{fmt::format("sm_{}", below), false};
}

std::vector<CudaSource> bundle_functions(const std::string& prelude, const std::vector<CudaSource>& functions, size_t count) {
  count = std::max<size_t>(1, count);
  if (functions.size() <= count) {
    std::vector<CudaSource> programs;
    for (const CudaSource& f : functions) programs.push_back({f.name, prelude + f.source});
    return programs;
  }
  std::vector<size_t> longest_first(functions.size());
  std::iota(longest_first.begin(), longest_first.end(), 0);
  std::stable_sort(longest_first.begin(), longest_first.end(),
                   [&](size_t a, size_t b) { return functions[a].source.size() > functions[b].source.size(); });
  std::vector<std::vector<size_t>> members(count);
  std::vector<size_t> length(count, 0);
  for (size_t i : longest_first) {
    const size_t shortest = std::min_element(length.begin(), length.end()) - length.begin();
    members[shortest].push_back(i);
    length[shortest] += functions[i].source.size();
  }
  std::vector<CudaSource> programs;
  for (auto& m : members) {
    std::sort(m.begin(), m.end());  // in the graph's order: the program reads as the graph's source does
    programs.push_back(bundle_program(prelude, functions, m));
  }
  return programs;
}

std::string nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch, bool cubin) {
  Api& api = nvrtc_api();
  nvrtcProgram program;
  if (api.create(&program, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    throw CompileError("jitc: nvrtcCreateProgram failed for " + name);
  const std::vector<std::string> options = nvrtc_options(arch, cubin);
  std::vector<const char*> pointers;
  for (const auto& o : options) pointers.push_back(o.c_str());
  const nvrtcResult compiled = api.compile(program, static_cast<int>(pointers.size()), pointers.data());
  const std::string log = program_log(api, program);
  const std::string out = compiled == NVRTC_SUCCESS ? program_image(api, program, cubin) : std::string();
  api.destroy(&program);
  if (out.empty()) {
    const std::string kept = keep_source(source, name);
    throw CompileError(fmt::format("jitc: NVRTC could not compile {} for {}:\n{}{}\n--- source ---\n{}", name, arch, log,
                                   kept.empty() ? "" : "\n(source saved as " + kept + ")", source));
  }
  return out;
}

std::unique_ptr<CudaModule> load_cuda_modules(const std::vector<std::string>& images, const std::string& name, int device) {
  Api& api = driver_api();
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  // Forced: the guard skips cudaSetDevice where the device is already current, and a thread that has
  // not used CUDA yet (a training entry's backward builds on one) has no current context until it runs.
  if (c10::cuda::SetDevice(static_cast<c10::DeviceIndex>(device), /*force=*/true) != cudaSuccess)
    throw RuntimeError(fmt::format("jitc: cudaSetDevice({}) failed while loading {}", device, name));
  auto loaded = std::make_unique<DriverModule>(images);
  for (const std::string& image : images) {
    CUmodule module = nullptr;
    const CUresult r = api.load(&module, image.data());
    if (r != CUDA_SUCCESS) throw RuntimeError(fmt::format("jitc: cuModuleLoadData({}) failed: {}", name, driver_error(r)));
    loaded->add(module);
  }
  return loaded;
}

// The target is chosen before compiling, so that a source NVRTC rejects is compiled (and kept) once.
std::vector<std::string> compile_cuda_images(const std::string& prelude, const std::vector<CudaSource>& functions, const std::string& name,
                                             int device) {
  const std::string arch = cuda_arch(device);
  const auto supported = supported_archs();
  std::optional<CudaTarget> target;
  if (supported && !(target = choose_cuda_target(arch, *supported)))
    throw CompileError(fmt::format("jitc: NVRTC {} cannot compile for {}: the oldest architecture it supports is sm_{}", nvrtc_version(),
                                   arch, *std::min_element(supported->begin(), supported->end())));
  const std::vector<CudaSource> sources = bundle_functions(prelude, functions, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> images(sources.size());
  std::vector<std::exception_ptr> errors(sources.size());
  std::vector<double> seconds(sources.size());
  // The longest sources first (NVRTC's time grows with the source): the last program a thread takes is
  // a short one, not the slowest.
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sources[a].source.size() > sources[b].source.size(); });
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t n; (n = next++) < sources.size();) {
      const size_t i = order[n];
      const std::string unit = sources.size() > 1 ? name + "/" + sources[i].name : name;
      const auto started = std::chrono::steady_clock::now();
      try {
        images[i] =
            target ? nvrtc_compile(sources[i].source, unit, target->arch, target->cubin) : compile_unlisted(sources[i].source, unit, arch);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    }
  };
  // NVRTC's programs are independent (its API is thread-safe): the programs compile at the same time.
  const size_t helpers = std::min<size_t>(sources.size(), std::max(1u, std::thread::hardware_concurrency())) - 1;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < helpers; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  if (runtime::log_enabled(runtime::Artifact::kCompileTimes) && !sources.empty())
    log_program_times(sources, functions.size(), seconds, name, helpers + 1);
  return images;
}

std::unique_ptr<CudaModule> compile_cuda_module(const std::string& source, const std::string& name, int device) {
  return load_cuda_modules(compile_cuda_images("", {{name, source}}, name, device), name, device);
}

void* current_cuda_stream(int device) { return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream(); }

void launch_cuda_kernel(void* function, int threads, int64_t tiles, void* const* buffers, size_t num_buffers, const int64_t* symbols,
                        int num_symbols, void* stream, const std::string& name, bool overlap_previous) {
  // Parameters by value: the Buffers struct (pointers), the Symbols struct (16 values), the tile count.
  c10::SmallVector<void*, 32> pointers(buffers, buffers + num_buffers);
  if (pointers.empty()) pointers.push_back(nullptr);
  std::array<int64_t, 16> values{};
  std::copy(symbols, symbols + std::min(num_symbols, 16), values.begin());
  int64_t count = tiles;
  void* args[] = {pointers.data(), values.data(), &count};
  launch_cuda(function, tiles, threads, args, stream, name, overlap_previous);
}

void launch_cuda(void* function, int64_t grid, int block, void** args, void* stream, const std::string& name, bool overlap_previous) {
  Api& api = driver_api();
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(grid, inductor::kMaxGridBlocks));
  CUresult r;
  if (overlap_previous && api.launch_ex) {
    CUlaunchAttribute programmatic{};
    programmatic.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    programmatic.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = blocks;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = static_cast<unsigned>(block);
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = reinterpret_cast<CUstream>(stream);
    config.attrs = &programmatic;
    config.numAttrs = 1;
    r = api.launch_ex(&config, reinterpret_cast<CUfunction>(function), args, nullptr);
  } else {
    r = api.launch(reinterpret_cast<CUfunction>(function), blocks, 1, 1, static_cast<unsigned>(block), 1, 1, 0,
                   reinterpret_cast<CUstream>(stream), args, nullptr);
  }
  if (r != CUDA_SUCCESS) throw RuntimeError(fmt::format("jitc: launching {} failed: {}", name, driver_error(r)));
}

}  // namespace jitc::inductor::cuda
