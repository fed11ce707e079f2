// Program: a scheduled graph with its kernels compiled, ready to run. Steps run in order: a kernel
// launch (outputs allocated with the traced strides, tiles spread over at::parallel_for), an extern ATen
// call (as the eager backend runs it), or the release of an intermediate, whose memory the next output
// of the same size reuses.
#pragma once
#include "graph/graph.h"
#include "inductor/scheduler.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace jitc::runtime {

class CpuModule;

class Program {
 public:
  // Compiles every kernel of `plan` into one module. Throws jitc::CompileError.
  Program(graph::Graph graph, inductor::Plan plan, const std::string& module_name, bool want_assembly = false);
  ~Program();

  // `values` has a slot per graph value, inputs filled. Returns false when a graph-break check fails
  // (`why` says which); ATen errors of extern calls propagate.
  bool run(std::vector<at::Tensor>& values, const int64_t* symbols, std::string* why) const;

  const graph::Graph& graph() const { return graph_; }
  const inductor::Plan& plan() const { return plan_; }
  size_t kernel_count() const { return plan_.kernels.size(); }
  // Kernel IR and LLVM IR (before and after optimization), for JITC_LOGS=output_code and debug dumps.
  std::string kernel_ir() const;
  const std::string& llvm_ir() const { return llvm_ir_; }
  std::string optimized_llvm_ir() const;
  std::string assembly() const;

 private:
  using KernelFn = void (*)(void* const* buffers, const int64_t* symbols, int64_t begin, int64_t end);
  using TilesFn = int64_t (*)(const int64_t* symbols);
  struct Compiled {
    KernelFn run = nullptr;
    TilesFn tiles = nullptr;
  };

  void launch(size_t k, std::vector<at::Tensor>& values, const int64_t* symbols, std::vector<at::Tensor>& pool) const;
  at::Tensor allocate(graph::ValueId v, const int64_t* symbols, std::vector<at::Tensor>& pool) const;

  graph::Graph graph_;
  inductor::Plan plan_;
  std::string llvm_ir_;
  std::unique_ptr<CpuModule> module_;
  std::vector<Compiled> compiled_;
};

}  // namespace jitc::runtime
