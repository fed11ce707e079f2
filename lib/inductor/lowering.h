// Lowering (first slice): a functional graph whose ops are all float32 pointwise ops, views and
// broadcasts of its inputs becomes one fused PointwiseKernel over the result's sizes. Views and
// broadcasts turn into the loads' strides. Everything else is refused with the op that stopped it
// (the engine will run such graphs through extern ATen calls; not wired yet).
#pragma once
#include "graph/graph.h"
#include "inductor/kernel_ir.h"

#include <optional>
#include <string>
#include <vector>

namespace jitc::inductor {

struct FusedGraph {
  PointwiseKernel kernel;
  std::vector<size_t> inputs;  // graph input positions, in kernel argument order (buffer i+1)
  graph::ValueId output = graph::kNoValue;
};

std::optional<FusedGraph> lower_to_one_kernel(const graph::Graph& graph, const std::string& name, std::string* why_not);

}  // namespace jitc::inductor
