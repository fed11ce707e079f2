// CUDA kernels at run time: NVRTC compiles CUDA C for the current device's exact architecture (a cubin
// for sm_XY; PTX for an older architecture when NVRTC does not know the device's, which the driver then
// compiles), the driver API loads it and launches on a stream. NVRTC
// and the driver are loaded lazily with dlopen, so libjitc loads and CPU work runs on machines without a
// GPU or a CUDA driver. Errors are jitc::CompileError (with NVRTC's log) or jitc::RuntimeError (with the
// driver's error name).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace jitc::inductor::cuda {

// Loaded images (cubins or PTX), one driver module each; function() finds a function in any of them.
class CudaModule {
 public:
  virtual ~CudaModule() = default;
  virtual void* function(const std::string& name) const = 0;   // a CUfunction
  virtual const std::vector<std::string>& images() const = 0;  // what was loaded (the disk cache)
};

bool nvrtc_available();  // libnvrtc could be loaded

// The architecture of a CUDA device, e.g. "sm_90", and NVRTC's version, e.g. "13.0" (cache keys).
std::string cuda_arch(int device);
std::string nvrtc_version();

// Compiles `source` for `arch` ("sm_90"): cubin bytes if `cubin`, else PTX text. Needs NVRTC only.
// A failure throws a CompileError with NVRTC's log and the source; with JITC_DEBUG_DIR set the source is
// also written to <dir>/<name>/kernels.cu and the message names that file.
std::string nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch, bool cubin);

// What compile_cuda_module asks NVRTC for on a device of architecture `device` ("sm_90"), given the
// architectures NVRTC lists (nvrtcGetSupportedArchs, e.g. {75, 80, ..., 120}): a cubin for the device's
// own if listed, else PTX for the newest listed one below it (the driver compiles PTX for newer GPUs).
// nullopt: the device is older than every listed architecture.
struct CudaTarget {
  std::string arch;  // "sm_90"
  bool cubin = true;
};
std::optional<CudaTarget> choose_cuda_target(const std::string& device, const std::vector<int>& supported);

// A graph's functions as NVRTC programs. Each function is printed to follow `prelude`; a program is the
// prelude and one or more functions, each in a namespace of its own (its typedef and structs cannot meet
// another's; an extern "C" kernel keeps its unmangled name). Up to `count` functions each is a program of
// its own; more are dealt into `count` programs of about equal source length (the longest first, each to
// the shortest program so far). NVRTC's cost per program is largely fixed, and on the GPU host its
// threads stop scaling well below the core count: fewer, larger programs compile sooner
// (benchmarks/RESULTS.md, session 41).
struct CudaSource {
  std::string name, source;
};
std::vector<CudaSource> bundle_functions(const std::string& prelude, const std::vector<CudaSource>& functions, size_t count);

// Compiles the functions (bundle_functions, one program per core at most) for `device`'s architecture
// (choose_cuda_target), the programs at the same time. Returns the cubins (or PTX), one per program; the
// first failure throws its CompileError (the failing program kept as JITC_DEBUG_DIR/<name>/<program
// name>/kernels.cu when there are several).
std::vector<std::string> compile_cuda_images(const std::string& prelude, const std::vector<CudaSource>& functions, const std::string& name,
                                             int device);
// Loads images that compile_cuda_images made (in this process or an earlier one) into the current context.
std::unique_ptr<CudaModule> load_cuda_modules(const std::vector<std::string>& images, const std::string& name, int device);
// One source compiled and loaded.
std::unique_ptr<CudaModule> compile_cuda_module(const std::string& source, const std::string& name, int device);

// The current stream of a CUDA device (at::cuda::getCurrentCUDAStream), as a cudaStream_t.
void* current_cuda_stream(int device);

// Whether launches on `device` may overlap the stream's previous kernel (programmatic dependent launch:
// compute capability 9.0+ and a driver with cuLaunchKernelEx; not under JITC_CUDA_PDL=0). Read once per
// device.
bool supports_programmatic_launch(int device);

// Launches `function` with a 1-D grid on `stream` (a cudaStream_t); `args` as cuLaunchKernel takes them.
// overlap_previous (programmatic dependent launch, sm_90+): the launch may start while the stream's
// previous kernel still runs; the function must wait for it (griddepcontrol.wait) before reading what it
// wrote. Where the driver has no cuLaunchKernelEx, an ordinary launch.
void launch_cuda(void* function, int64_t grid, int block, void** args, void* stream, const std::string& name,
                 bool overlap_previous = false);

// Launches a kernel printed by inductor::emit_cuda: its parameters are the buffer pointers, the values of
// up to 16 symbols and the tile count (one block per tile, up to 2^20 blocks in a grid-stride loop).
// Not a grid sized to the device: capping it at 1, 2 or 4 times the blocks the H100 holds at once
// (cuOccupancyMaxActiveBlocksPerMultiprocessor x SMs, tiles looped over) measured slower for (sin+cos).relu
// and softmax, and no faster for x.sum(0) and (x*x).mean() (benchmarks/RESULTS.md, session 5). A block
// per tile keeps more independent loads in flight.
void launch_cuda_kernel(void* function, int threads, int64_t tiles, void* const* buffers, size_t num_buffers, const int64_t* symbols,
                        int num_symbols, void* stream, const std::string& name, bool overlap_previous = false);

}  // namespace jitc::inductor::cuda
