// Engine::explain: torch._dynamo.explain for one set of arguments.
#include "runtime/engine.h"

namespace jitc::detail {

ExplainOutput Engine::explain(c10::ArrayRef<Leaf> leaves) {
  call(leaves);  // compiles if needed
  ExplainOutput out;
  out.compile_seconds = stats().compile_seconds;
  LeafMarks marks;
  const uint64_t* mark_ptr = dynamic_marks(leaves, marks);
  int64_t symbols[kMaxSymbols];
  size_t index = 0;
  runtime::CapturedTensors captured;
  EntryPtr entry = find_entry(leaves, mark_ptr, symbols, 0, &index, nullptr, captured);
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
