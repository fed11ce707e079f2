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

std::shared_ptr<const ProgramCode> ProgramCode::compile(inductor::Plan plan, const std::string& name, bool want_assembly) {
  auto code = std::make_shared<ProgramCode>();
  code->plan = std::move(plan);
  std::vector<std::string> irs;
  for (const auto& k : code->plan.kernels) {
    irs.push_back(inductor::emit_llvm_ir(k.kernel));
    code->kernel_ir += inductor::to_text(k.kernel);
  }
  code->llvm_ir = link_ir(irs);
  if (!code->plan.kernels.empty()) code->module = compile_cpu_module(code->llvm_ir, name, want_assembly);
  code->link(name);
  return code;
}

void ProgramCode::link(const std::string& name) {
  (void)name;
  for (const auto& k : plan.kernels) {
    Entry e;
    e.run = reinterpret_cast<KernelFn>(module->symbol(k.kernel.name));
    e.tiles = reinterpret_cast<TilesFn>(module->symbol(k.kernel.name + ".tiles"));
    kernels.push_back(e);
  }
}

namespace {

// The payload: length-prefixed fields, so that any byte may appear in IR text or object code.
class Writer {
 public:
  void number(int64_t v) { out_ += std::to_string(v) + " "; }
  void text(const std::string& s) {
    number(static_cast<int64_t>(s.size()));
    out_ += s;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  int64_t number() {
    const size_t space = in_.find(' ', at_);
    if (space == std::string::npos) throw std::runtime_error("truncated");
    const int64_t v = std::stoll(in_.substr(at_, space - at_));
    at_ = space + 1;
    return v;
  }
  std::string text() {
    const int64_t n = number();
    if (n < 0 || at_ + static_cast<size_t>(n) > in_.size()) throw std::runtime_error("truncated");
    std::string s = in_.substr(at_, static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return s;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  const std::string& in_;
  size_t at_ = 0;
};

}  // namespace

std::string ProgramCode::serialize() const {
  Writer w;
  w.number(static_cast<int64_t>(plan.kernels.size()));
  for (const auto& k : plan.kernels) {
    w.text(k.kernel.name);
    for (const auto* values : {&k.buffers, &k.outputs}) {
      w.number(static_cast<int64_t>(values->size()));
      for (auto v : *values) w.number(v);
    }
  }
  w.number(static_cast<int64_t>(plan.steps.size()));
  for (const auto& s : plan.steps) {
    w.number(static_cast<int64_t>(s.kind));
    w.number(s.index);
  }
  w.number(static_cast<int64_t>(plan.extern_reasons.size()));
  for (const auto& r : plan.extern_reasons) w.text(r);
  w.text(kernel_ir);
  w.text(llvm_ir);
  w.text(module ? module->object() : std::string());
  return w.take();
}

std::shared_ptr<const ProgramCode> ProgramCode::deserialize(const std::string& payload, const std::string& name) {
  auto code = std::make_shared<ProgramCode>();
  std::string object;
  try {
    Reader r(payload);
    const int64_t kernels = r.number();
    for (int64_t i = 0; i < kernels; ++i) {
      inductor::KernelLaunch k;
      k.kernel.name = r.text();
      for (auto* values : {&k.buffers, &k.outputs}) {
        const int64_t n = r.number();
        for (int64_t j = 0; j < n; ++j) values->push_back(static_cast<graph::ValueId>(r.number()));
      }
      code->plan.kernels.push_back(std::move(k));
    }
    const int64_t steps = r.number();
    for (int64_t i = 0; i < steps; ++i) {
      inductor::Step s;
      s.kind = static_cast<inductor::Step::Kind>(r.number());
      s.index = static_cast<int>(r.number());
      code->plan.steps.push_back(s);
    }
    const int64_t reasons = r.number();
    for (int64_t i = 0; i < reasons; ++i) code->plan.extern_reasons.push_back(r.text());
    code->kernel_ir = r.text();
    code->llvm_ir = r.text();
    object = r.text();
    if (!r.done()) return nullptr;
  } catch (const std::exception&) {
    return nullptr;
  }
  if (!code->plan.kernels.empty()) code->module = load_cpu_object(object, name);
  code->link(name);
  return code;
}

std::string Program::optimized_llvm_ir() const { return code_->module ? code_->module->optimized_ir() : std::string(); }
std::string Program::assembly() const { return code_->module ? code_->module->assembly() : std::string(); }

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
  const auto& launch = code_->plan.kernels[k];
  for (graph::ValueId v : launch.outputs) values[v] = allocate(v, symbols, pool);
  c10::SmallVector<void*, 16> pointers;
  int64_t largest = 1;
  for (graph::ValueId v : launch.buffers) {
    pointers.push_back(values[v].data_ptr());
    largest = std::max<int64_t>(largest, values[v].numel());
  }
  static const int64_t no_symbols = 0;
  const int64_t* syms = symbols ? symbols : &no_symbols;
  const ProgramCode::Entry& c = code_->kernels[k];
  const int64_t tiles = c.tiles(syms);
  if (tiles <= 0) return;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, largest / tiles));
  void* const* buffers = pointers.data();
  parallel_for(tiles, grain, [&](int64_t begin, int64_t end) { c.run(buffers, syms, begin, end); });
}

bool Program::run(std::vector<at::Tensor>& values, const int64_t* symbols, std::string* why) const {
  ExcludeBelowAutograd below;
  std::vector<at::Tensor> pool;
  for (const auto& step : code_->plan.steps) {
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
