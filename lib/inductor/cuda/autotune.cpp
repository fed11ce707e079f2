#include "inductor/cuda/autotune.h"

#include "inductor/cuda/codegen.h"
#include "inductor/cuda/jit.h"

#include <c10/core/Event.h>
#include <c10/cuda/CUDAStream.h>

namespace jitc::inductor::cuda {

namespace {

constexpr int kTimedLaunches = 20;

}  // namespace

std::vector<double> time_candidates(const inductor::KernelLaunch& launch, const std::vector<void*>& functions,
                                    const std::vector<inductor::CudaConfig>& configs, const inductor::TuningShapes& shapes) {
  const int64_t* symbols = shapes.symbols.data();
  const std::vector<at::Tensor> buffers = inductor::tuning_buffers(launch, shapes);
  std::vector<void*> pointers;
  for (const auto& b : buffers) pointers.push_back(b.data_ptr());

  void* stream = c10::cuda::getCurrentCUDAStream(launch.device.index()).stream();
  const c10::Stream current = c10::cuda::getCurrentCUDAStream(launch.device.index());
  auto run = [&](size_t c) {
    const int64_t tiles = inductor::tile_count(launch.kernel, symbols, configs[c]);
    if (tiles > 0)
      launch_cuda_kernel(functions[c], configs[c].threads, tiles, pointers.data(), pointers.size(), symbols, shapes.graph->num_symbols,
                         stream, launch.kernel.name);
  };
  std::vector<double> ms;
  for (size_t c = 0; c < functions.size(); ++c) {
    run(c);  // warm-up: the first launch of a function loads it
    c10::Event start(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT), end(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
    start.record(current);
    for (int i = 0; i < kTimedLaunches; ++i) run(c);
    end.record(current);
    end.synchronize();
    ms.push_back(start.elapsedTime(end) / kTimedLaunches);
  }
  return ms;
}

}  // namespace jitc::inductor::cuda
