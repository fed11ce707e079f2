#include "runtime/cuda_graphs.h"

#include "runtime/program.h"

#include <ATen/cuda/CUDAGraph.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <fmt/format.h>

#include <optional>

namespace jitc::runtime {

struct CudaGraphs::Recording {
  int calls = 0;  // 1: warmed up; 2 and later: captured
  c10::Device device{c10::DeviceType::CUDA, 0};
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  std::vector<at::Tensor> outputs;                                                   // in the graph's memory, per program output
  std::vector<std::optional<c10::weak_intrusive_ptr<c10::StorageImpl>>> handed_out;  // what the last call returned
  std::optional<c10::cuda::CUDAStream> last_stream;                                  // where the last replay ran
};

namespace {

using RecordingPtr = std::shared_ptr<void>;

// A handed-out output's storage keeps its recording (and so the graph's memory) alive.
void release_recording(void* keep) { delete static_cast<RecordingPtr*>(keep); }

c10::cuda::CUDAStream current_stream(c10::Device device) { return c10::cuda::getCurrentCUDAStream(device.index()); }

}  // namespace

CudaGraphs::CudaGraphs(const Program& program, Log log, CudaGraphCounters* counters)
    : program_(program), log_(std::move(log)), counters_(counters) {}

CudaGraphs::~CudaGraphs() = default;

void CudaGraphs::skip(const std::string& why) {
  skipped_ = why;
  log_(fmt::format("CUDA graphs skipped: {}; the program runs without them", why));
}

std::string CudaGraphs::why_not(const std::vector<at::Tensor>& values) const {
  const graph::Graph& g = program_.graph();
  for (const auto& k : program_.code().plan.kernels)
    if (!k.device.is_cuda()) return "the program has CPU kernels";
  bool cuda = !program_.code().plan.kernels.empty();
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const at::Tensor& t = values[g.inputs[i].value];
    if (!t.defined()) continue;
    if (!t.is_cuda()) return fmt::format("input {} is a {} tensor", i, t.device().str());
    cuda = true;
  }
  if (!cuda) return "the program touches no CUDA tensor";
  for (const auto& node : g.nodes)
    if (node.checked()) return fmt::format("{} is a graph-break check (it reads a value on the host)", node.name());
  return {};
}

CudaGraphs::Key CudaGraphs::key_of(const std::vector<at::Tensor>& values, const int64_t* symbols) const {
  const graph::Graph& g = program_.graph();
  Key key(symbols, symbols + g.num_symbols);
  for (const auto& in : g.inputs) {
    const at::Tensor& t = values[in.value];
    key.push_back(t.defined() ? reinterpret_cast<int64_t>(t.data_ptr()) : 0);
  }
  return key;
}

bool CudaGraphs::run(std::vector<at::Tensor>& values, const int64_t* symbols) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!checked_) {
    checked_ = true;
    if (std::string why = why_not(values); !why.empty()) skip(why);
  }
  if (!skipped_.empty()) return false;
  const Key key = key_of(values, symbols);
  auto it = recordings_.find(key);
  if (it == recordings_.end()) {
    if (recordings_.size() >= kMaxRecordings) {
      if (!warned_full_)
        log_(
            fmt::format("CUDA graphs: inputs came at more than {} sets of addresses; calls with new ones run "
                        "without a graph (reuse input buffers to replay)",
                        kMaxRecordings));
      warned_full_ = true;
      return false;
    }
    it = recordings_.emplace(key, std::make_shared<Recording>()).first;
  }
  const std::shared_ptr<Recording> r = it->second;
  if (++r->calls == 1) return false;  // the warm-up run
  if (!r->graph && !capture(*r, values, symbols)) {
    recordings_.erase(it);
    return false;
  }
  replay(r, values);
  return true;
}

bool CudaGraphs::capture(Recording& r, const std::vector<at::Tensor>& values, const int64_t* symbols) {
  const graph::Graph& g = program_.graph();
  for (const auto& in : g.inputs)
    if (values[in.value].defined()) r.device = values[in.value].device();
  if (!program_.code().plan.kernels.empty()) r.device = program_.code().plan.kernels.front().device;
  // Capture on a side stream (the legacy default stream cannot capture), ordered after the caller's work.
  const c10::cuda::CUDAStream caller = current_stream(r.device);
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, r.device.index());
  c10::Event ready(c10::DeviceType::CUDA);
  ready.record(caller);
  ready.block(side);
  auto graph = std::make_unique<at::cuda::CUDAGraph>();
  std::vector<at::Tensor> captured = values;
  std::string why;
  bool ok = false;
  {
    c10::StreamGuard on_side(side);
    try {
      graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
      try {
        ok = program_.run(captured, symbols, &why);
      } catch (const std::exception& e) {
        why = e.what();
      }
      try {
        graph->capture_end();
      } catch (const std::exception& e) {
        if (ok) why = e.what();
        ok = false;
        // capture_end stops routing the stream's allocations into the graph's pool only when the capture
        // ended cleanly; make sure they are not routed there any more.
        try {
          c10::cuda::CUDACachingAllocator::endAllocateToPool(r.device.index(), graph->pool());
        } catch (const std::exception&) {
        }
      }
    } catch (const std::exception& e) {
      why = e.what();
      ok = false;
    }
  }
  c10::Event done(c10::DeviceType::CUDA);
  done.record(side);
  done.block(caller);
  if (!ok) {
    skip(fmt::format("capturing the program failed: {}", why.substr(0, why.find('\n'))));
    return false;
  }
  for (graph::ValueId out : g.outputs) {
    if (out == graph::kNoValue) {  // a result leaf that is no tensor (a number, an undefined tensor)
      r.outputs.emplace_back();
      continue;
    }
    const at::Tensor& t = captured[out];
    for (const auto& in : g.inputs)
      if (t.defined() && values[in.value].defined() && t.storage().is_alias_of(values[in.value].storage())) {
        skip("an output aliases an input");
        return false;
      }
    r.outputs.push_back(t);
  }
  r.handed_out.resize(r.outputs.size());
  r.graph = std::move(graph);
  counters_->captures += 1;
  return true;
}

void CudaGraphs::replay(const std::shared_ptr<Recording>& r, std::vector<at::Tensor>& values) {
  const c10::cuda::CUDAStream stream = current_stream(r->device);
  if (r->last_stream && *r->last_stream != stream) {  // the last replay's work (and its outputs) come first
    c10::Event last(c10::DeviceType::CUDA);
    last.record(*r->last_stream);
    last.block(stream);
  }
  r->last_stream = stream;
  // Outputs of the last call that the caller still holds move to memory of their own first.
  for (size_t k = 0; k < r->outputs.size(); ++k) {
    auto held = r->handed_out[k] ? r->handed_out[k]->lock() : c10::intrusive_ptr<c10::StorageImpl>();
    r->handed_out[k].reset();
    if (!held) continue;
    const at::Tensor& output = r->outputs[k];
    const int64_t bytes = static_cast<int64_t>(output.storage().nbytes());
    const auto byte_options = at::TensorOptions().dtype(at::kByte).device(r->device);
    at::Tensor copy = at::empty({bytes}, byte_options);
    copy.copy_(at::from_blob(output.storage().mutable_data(), {bytes}, byte_options));
    held->set_data_ptr_noswap(copy.storage().unsafeGetStorageImpl()->set_data_ptr(c10::DataPtr(nullptr, r->device)));
  }
  r->graph->replay();
  counters_->replays += 1;
  const auto& outputs = program_.graph().outputs;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k] == graph::kNoValue) continue;  // not a tensor
    const at::Tensor& output = r->outputs[k];
    if (!output.defined()) {
      values[outputs[k]] = at::Tensor();
      continue;
    }
    // A storage of its own over the graph's memory, keeping the recording alive while it is held.
    c10::DataPtr data(output.storage().mutable_data(), new RecordingPtr(r), &release_recording, r->device);
    auto storage = c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), output.storage().nbytes(), std::move(data),
                                                         nullptr, /*resizable=*/false);
    r->handed_out[k].emplace(storage);
    auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(std::move(storage)), output.key_set(), output.dtype());
    impl->set_sizes_and_strides(output.sizes(), output.strides(), output.storage_offset());
    values[outputs[k]] = at::Tensor(std::move(impl));
  }
}

}  // namespace jitc::runtime
