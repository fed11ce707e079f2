#include "runtime/program.h"

#include "runtime/eager_replay.h"

#include <jitc/detail/internal_assert.h>

#include <ATen/EmptyTensor.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <array>

namespace jitc::runtime {

namespace {

c10::SmallVector<int64_t, 6> evaluate(const graph::SymShape& shape, const int64_t* symbols) {
  c10::SmallVector<int64_t, 6> out;
  for (const auto& e : shape) out.push_back(e.eval(symbols));
  return out;
}

// Where element 0 of t lies, also when t has no elements (data_ptr() is null then, but its memory may
// still be read: see allocate).
void* element_zero(const at::Tensor& t) {
  if (t.numel() > 0) return t.data_ptr();
  char* base = static_cast<char*>(t.storage().mutable_data());
  return base ? base + t.storage_offset() * static_cast<int64_t>(t.element_size()) : nullptr;
}

// A copy of the memory `t` spans, with the same strides, starting where the allocator's blocks start
// (aligned for every backend).
at::Tensor aligned_copy(const at::Tensor& t) {
  int64_t span = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return t;  // no element is read
    span += (t.size(d) - 1) * t.stride(d);
  }
  return t.as_strided({span}, {1}).clone().as_strided(t.sizes(), t.strides(), 0);
}

// Whether a released tensor on `device` may serve a later output (the backend's Target says), read from
// a table made once: every release step asks.
bool reuses_memory(c10::DeviceType device) {
  using PerDevice = std::array<bool, static_cast<size_t>(c10::DeviceType::COMPILE_TIME_MAX_DEVICE_TYPES)>;
  static const PerDevice& table = *new PerDevice([] {
    PerDevice reuses{};
    for (const inductor::Backend* b : inductor::backends())
      reuses[static_cast<size_t>(b->target().device)] = b->target().reuses_released_buffers;
    return reuses;
  }());
  return table[static_cast<size_t>(device)];
}

}  // namespace

std::vector<const inductor::KernelLaunch*> ProgramCode::launches(const Unit& unit) const {
  std::vector<const inductor::KernelLaunch*> out;
  for (size_t k : unit.kernels) out.push_back(&plan.kernels[k]);
  return out;
}

void ProgramCode::link() {
  kernels.assign(plan.kernels.size(), {});
  for (const auto& unit : units)
    for (size_t i = 0; i < unit.kernels.size(); ++i)
      kernels.at(unit.kernels[i]) = {unit.loaded.get(), i, unit.backend, unit.backend->target().buffer_alignment};
  for (const auto& k : kernels) JITC_INTERNAL_ASSERT(k.loaded != nullptr, "a kernel of the plan belongs to no loaded unit");
  groups.clear();
  for (const auto& unit : units)
    for (size_t g = 0; g < unit.loaded->groups().size(); ++g) {
      Group group{unit.loaded.get(), g, {}};
      for (size_t i : unit.loaded->groups()[g]) {
        JITC_INTERNAL_ASSERT(i < unit.kernels.size() && kernels[unit.kernels[i]].group < 0, "a combo kernel's parts are not the unit's");
        group.members.push_back(unit.kernels[i]);
        kernels[unit.kernels[i]].group = static_cast<int>(groups.size());
      }
      groups.push_back(std::move(group));
    }
}

at::Tensor Program::allocate(const inductor::Backend& backend, graph::ValueId v, const int64_t* symbols,
                             std::vector<at::Tensor>& pool) const {
  const auto& m = graph_.values[v].meta;
  const auto sizes = evaluate(m.sizes, symbols), strides = evaluate(m.strides, symbols);
  // A value with no elements gets the memory it would span if its empty dims had one element: a kernel
  // may read it at an index of the loops that do run (a load hoisted out of a reduction over its empty
  // dim, whose result is never used), which must not fault.
  auto spanned = sizes;
  for (auto& s : spanned) s = std::max<int64_t>(s, 1);
  const size_t bytes = at::detail::computeStorageNbytes(spanned, strides, c10::elementSize(m.dtype));
  for (auto it = pool.begin(); it != pool.end(); ++it)
    if (it->scalar_type() == m.dtype && it->device() == m.device && it->storage().nbytes() == bytes) {
      at::Tensor reused = it->as_strided(sizes, strides, 0);
      pool.erase(it);
      return reused;
    }
  at::Tensor t = backend.allocate(spanned, strides, m.dtype, m.device);
  return spanned == sizes ? t : t.as_strided(sizes, strides, 0);
}

Program::Program(graph::Graph graph, std::shared_ptr<const ProgramCode> code, std::string region)
    : graph_(std::move(graph)), code_(std::move(code)) {
  const auto& units = code_->units;
  if (std::any_of(units.begin(), units.end(), [](const auto& u) { return u.backend->target().nvtx_ranges; }))
    nvtx_range_ = std::move(region);
  const auto& kernels = code_->plan.kernels;
  const bool checks = std::any_of(kernels.begin(), kernels.end(), [](const auto& k) { return inductor::has_checks(k.kernel); });
  const auto& nodes = graph_.nodes;
  draws_and_checks_ =
      checks && std::any_of(nodes.begin(), nodes.end(), [](const graph::Node& n) { return n.op.hasTag(at::Tag::nondeterministic_seeded); });
  derived_ = DerivedValues::of(graph_);
}

// The pointers a launch passes, in argument order, and the aligned copies of misaligned inputs that they
// point into (alive until launched).
struct Program::Buffers {
  c10::SmallVector<void*, 16> pointers;
  c10::SmallVector<at::Tensor, 2> copies;
  int64_t largest = 1;
};

void Program::allocate_outputs(size_t k, std::vector<at::Tensor>& values, const int64_t* symbols, std::vector<at::Tensor>& pool) const {
  const auto& launch = code_->plan.kernels[k];
  const ProgramCode::KernelRef& ref = code_->kernels[k];
  for (size_t j = 0; j < launch.outputs.size(); ++j) {
    const graph::ValueId memory = j < launch.output_memory.size() ? launch.output_memory[j] : graph::kNoValue;
    values[launch.outputs[j]] = memory != graph::kNoValue ? values[memory] : allocate(*ref.backend, launch.outputs[j], symbols, pool);
  }
}

void Program::add_buffers(size_t k, const std::vector<at::Tensor>& values, Buffers& buffers) const {
  const auto& launch = code_->plan.kernels[k];
  const size_t alignment = code_->kernels[k].alignment;
  for (size_t b = 0; b < launch.buffers.size(); ++b) {
    const at::Tensor& t = values[launch.buffers[b]];
    void* pointer = element_zero(t);
    if (reinterpret_cast<uintptr_t>(pointer) % alignment != 0) {
      JITC_INTERNAL_ASSERT(!launch.kernel.buffers[b].written, "an output buffer of a kernel is not aligned as its backend requires");
      pointer = buffers.copies.emplace_back(aligned_copy(t)).data_ptr();
    }
    buffers.pointers.push_back(pointer);
    buffers.largest = std::max<int64_t>(buffers.largest, t.numel());
  }
}

void Program::launch(const ProgramCode::KernelRef& ref, const Buffers& buffers, const int64_t* symbols, c10::Device device,
                     const ProgramCode::Group* group) const {
  static const int64_t no_symbols = 0;
  inductor::LaunchArgs args;
  args.buffers = buffers.pointers.data();
  args.num_buffers = buffers.pointers.size();
  args.symbols = symbols ? symbols : &no_symbols;
  args.num_symbols = graph_.num_symbols;
  args.largest_buffer = buffers.largest;
  args.device = device;
  if (group) group->loaded->launch_group(group->index, args);
  else ref.loaded->launch(ref.index, args);
}

void Program::run_kernel(size_t k, std::vector<at::Tensor>& values, const int64_t* symbols, std::vector<at::Tensor>& pool) const {
  allocate_outputs(k, values, symbols, pool);
  Buffers buffers;
  add_buffers(k, values, buffers);
  launch(code_->kernels[k], buffers, symbols, code_->plan.kernels[k].device, nullptr);
}

// Every part's outputs first: the group runs at its first part's step, before the steps between its parts.
void Program::run_group(const ProgramCode::Group& group, std::vector<at::Tensor>& values, const int64_t* symbols,
                        std::vector<at::Tensor>& pool) const {
  for (size_t k : group.members) allocate_outputs(k, values, symbols, pool);
  Buffers buffers;
  for (size_t k : group.members) add_buffers(k, values, buffers);
  const size_t first = group.members.front();
  launch(code_->kernels[first], buffers, symbols, code_->plan.kernels[first].device, &group);
}

void Program::derive(std::vector<at::Tensor>& values) const {
  if (!derived_) return;
  ExcludeBelowAutograd below;
  derived_->fill(graph_, values, nullptr);
}

bool Program::run(std::vector<at::Tensor>& values, const int64_t* symbols, std::string* why) const {
  ExcludeBelowAutograd below;
  std::vector<at::Tensor> pool;
  if (derived_) derived_->fill(graph_, values, symbols);
  for (const auto& step : code_->plan.steps) {
    switch (step.kind) {
      case inductor::Step::Kind::kKernel: {
        const int group = code_->kernels[step.index].group;
        if (group < 0) run_kernel(static_cast<size_t>(step.index), values, symbols, pool);
        else if (code_->groups[group].members.front() == static_cast<size_t>(step.index))
          run_group(code_->groups[group], values, symbols, pool);
        break;
      }
      case inductor::Step::Kind::kExtern:
        if (graph_.nodes[step.index].kind == graph::NodeKind::kDerived) break;  // filled above
        // An extern op allocates from the allocator, not from the pool: dropped buffers go back first,
        // or they would stay live beside its outputs and raise the call's peak.
        pool.clear();
        if (!replay_node(graph_, graph_.nodes[step.index], {&values, symbols}, why)) return false;
        restride_outputs(graph_, graph_.nodes[step.index], values, symbols);
        break;
      case inductor::Step::Kind::kRelease: {
        at::Tensor t = std::move(values[step.index]);
        if (t.defined() && t.use_count() == 1 && t.storage().use_count() == 1 && reuses_memory(t.device().type()))
          pool.push_back(std::move(t));
        break;
      }
    }
  }
  return true;
}

}  // namespace jitc::runtime
