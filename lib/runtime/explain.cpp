// Engine::explain: torch._dynamo.explain for one set of arguments.
#include "runtime/engine.h"

#include "runtime/marks.h"

namespace jitc::detail {

ExplainOutput Engine::explain(c10::ArrayRef<Leaf> leaves) {
  call(leaves);  // compiles if needed
  ExplainOutput out;
  out.compile_seconds = stats().compile_seconds;
  c10::SmallVector<uint64_t, 16> marks(leaves.size(), 0);
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].kind == Leaf::Kind::kTensor) marks[i] = runtime::marks_of(leaves[i].tensor->unsafeGetTensorImpl()).dynamic;
  int64_t symbols[kMaxSymbols];
  size_t index = 0;
  runtime::CapturedTensors captured;
  EntryPtr entry = find_entry(leaves, marks.data(), symbols, 0, &index, nullptr, captured);
  if (!entry) {  // ran eagerly
    out.break_reasons.push_back({"<whole function>", "ran eagerly (see the warning jitc printed)"});
    return out;
  }
  out.ops_per_graph.emplace_back();
  for (const auto& node : entry->graph.nodes) {
    if (node.kind == graph::NodeKind::kBreak) {
      out.ops_per_graph.emplace_back();
      continue;
    }
    out.ops_per_graph.back().push_back(node.name());
    out.op_count++;
  }
  out.graph_count = static_cast<int64_t>(out.ops_per_graph.size());
  out.graph_break_count = out.graph_count - 1;
  for (const auto& b : entry->breaks) out.break_reasons.push_back({b.op, b.reason});
  out.guards = guards::describe(entry->guards);
  return out;
}

}  // namespace jitc::detail
