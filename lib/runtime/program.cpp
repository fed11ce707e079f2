#include "runtime/program.h"

#include "inductor/codegen_cpu.h"
#include "runtime/cpu_jit.h"
#include "runtime/eager_replay.h"
#include "runtime/thread_pool.h"

#include <ATen/ops/empty_strided.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <fmt/format.h>

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

std::vector<int64_t> evaluate(const graph::SymShape& shape, const int64_t* symbols) {
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (const auto& e : shape) out.push_back(e.eval(symbols));
  return out;
}

constexpr int64_t kGrainElements = 32768;  // elements of work per parallel chunk (Inductor: 4096+ per thread)

}  // namespace

Program::Program(graph::Graph graph, inductor::Plan plan, const std::string& module_name, bool want_assembly)
    : graph_(std::move(graph)), plan_(std::move(plan)) {
  std::vector<std::string> irs;
  for (const auto& k : plan_.kernels) irs.push_back(inductor::emit_llvm_ir(k.kernel));
  llvm_ir_ = link_ir(irs);
  if (plan_.kernels.empty()) return;
  module_ = compile_cpu_module(llvm_ir_, module_name, want_assembly);
  for (const auto& k : plan_.kernels) {
    Compiled c;
    c.run = reinterpret_cast<KernelFn>(module_->symbol(k.kernel.name));
    c.tiles = reinterpret_cast<TilesFn>(module_->symbol(k.kernel.name + ".tiles"));
    compiled_.push_back(c);
  }
}

Program::~Program() = default;

std::string Program::kernel_ir() const {
  std::string s;
  for (const auto& k : plan_.kernels) s += inductor::to_text(k.kernel);
  return s;
}

std::string Program::optimized_llvm_ir() const { return module_ ? module_->optimized_ir() : std::string(); }
std::string Program::assembly() const { return module_ ? module_->assembly() : std::string(); }

at::Tensor Program::allocate(graph::ValueId v, const int64_t* symbols, std::vector<at::Tensor>& pool) const {
  const auto& m = graph_.values[v].meta;
  const auto sizes = evaluate(m.sizes, symbols), strides = evaluate(m.strides, symbols);
  const size_t bytes = at::detail::computeStorageNbytes(sizes, strides, c10::elementSize(m.dtype));
  for (auto it = pool.begin(); it != pool.end(); ++it)
    if (it->scalar_type() == m.dtype && it->storage().nbytes() == bytes) {
      at::Tensor reused = it->as_strided(sizes, strides, 0);
      pool.erase(it);
      return reused;
    }
  return at::empty_strided(sizes, strides, at::TensorOptions().dtype(m.dtype).device(m.device));
}

void Program::launch(size_t k, std::vector<at::Tensor>& values, const int64_t* symbols, std::vector<at::Tensor>& pool) const {
  const auto& launch = plan_.kernels[k];
  for (graph::ValueId v : launch.outputs) values[v] = allocate(v, symbols, pool);
  c10::SmallVector<void*, 16> pointers;
  int64_t largest = 1;
  for (graph::ValueId v : launch.buffers) {
    pointers.push_back(values[v].data_ptr());
    largest = std::max<int64_t>(largest, values[v].numel());
  }
  static const int64_t no_symbols = 0;
  const int64_t* syms = symbols ? symbols : &no_symbols;
  const Compiled& c = compiled_[k];
  const int64_t tiles = c.tiles(syms);
  if (tiles <= 0) return;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, largest / tiles));
  void* const* buffers = pointers.data();
  parallel_for(tiles, grain, [&](int64_t begin, int64_t end) { c.run(buffers, syms, begin, end); });
}

bool Program::run(std::vector<at::Tensor>& values, const int64_t* symbols, std::string* why) const {
  ExcludeBelowAutograd below;
  std::vector<at::Tensor> pool;
  for (const auto& step : plan_.steps) {
    switch (step.kind) {
      case inductor::Step::Kind::kKernel: launch(static_cast<size_t>(step.index), values, symbols, pool); break;
      case inductor::Step::Kind::kExtern:
        if (!replay_node(graph_, graph_.nodes[step.index], {&values, symbols}, why)) return false;
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
