// Software prefetch of the next row in row kernels that are not pipelined (softmax, rms_norm: a row read
// by several loops; cpu/codegen_pipeline.cpp takes layer_norm). Each 4 KB row of a [4096, 1024] float
// tensor starts on a new page, where the hardware prefetchers stop, so each row's first loop waited on
// memory while the later, compute-heavy loops left it idle. The row's second loop now runs in chunks;
// before each chunk it prefetches the same positions of the next row's first-loop loads. (A hand-written
// softmax on the 2-core machine measured faster with the next row prefetched during the exp loop;
// benchmarks/RESULTS.md, Fused CPU kernels, session 7.) The prefetches sit outside the vectorized inner
// loop: LLVM 16 does not vectorize a loop that calls llvm.prefetch.
#include "inductor/cpu/printer.h"
#include "inductor/index_analysis.h"

#include <c10/core/ScalarType.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace jitc::inductor::llvm_ir {

namespace {

constexpr int64_t kChunk = 256;  // positions of the loop between two rounds of prefetches
constexpr int64_t kLineBytes = 64;
constexpr int64_t kMinRowBytes = 1024;  // shorter rows share pages, which the hardware prefetches

// The integer coefficient of variable v in index expression e when e is built of +, -, * over
// constants, symbols and variables and is affine in v with a constant coefficient; nullopt otherwise.
std::optional<int64_t> coefficient(const Kernel& k, int e, int v) {
  const Expr& x = k.body[e];
  switch (x.op) {
    case ScalarOp::kConst:
    case ScalarOp::kSym: return 0;
    case ScalarOp::kVar: return x.var == v ? 1 : 0;
    case ScalarOp::kAdd:
    case ScalarOp::kSub: {
      const auto a = coefficient(k, x.a, v), b = coefficient(k, x.b, v);
      if (!a || !b) return std::nullopt;
      return x.op == ScalarOp::kAdd ? *a + *b : *a - *b;
    }
    case ScalarOp::kMul: {
      const auto a = coefficient(k, x.a, v), b = coefficient(k, x.b, v);
      if (!a || !b) return std::nullopt;
      if (*a == 0 && *b == 0) return 0;
      if (*a != 0 && *b != 0) return std::nullopt;  // not affine in v
      const Expr& factor = k.body[*a != 0 ? x.b : x.a];
      if (factor.op != ScalarOp::kConst) return std::nullopt;
      return (*a != 0 ? *a : *b) * factor.ivalue;
    }
    default: return std::nullopt;
  }
}

}  // namespace

// Row kernels with at least two loops over one single-variable shape of constant length: the first
// reduction loop's loads that step by one element, move by a constant stride from row to row and span
// 1 KB or more per row get prefetched while the second loop (the second reduction loop, else the
// element loop) runs.
void Printer::plan_row_prefetch() {
  const auto outer = k_.outer_vars();
  // Pipelined rows read the next row in the element loop already (cpu/codegen_pipeline.cpp).
  if (k_.tile > 0 || lanes_ > 0 || k_.num_reduction_loops == 0 || outer.empty() || !pipelined_.empty()) return;
  const auto first = k_.loop_vars(0);
  if (first.size() != 1) return;
  const auto inner = k_.inner_vars();
  const bool element_loop = std::any_of(scope_.begin(), scope_.end(), [](Scope s) { return s == Scope::kElement; });
  const int pass = k_.num_reduction_loops >= 2 ? 1 : element_loop ? kElementLoop : -1;
  const std::vector<int> second = pass == 1 ? k_.loop_vars(1) : pass == kElementLoop ? inner : std::vector<int>{};
  if (second.size() != 1 || k_.vars[second[0]].extent != k_.vars[first[0]].extent) return;
  const Expr& extent = k_.body[k_.vars[first[0]].extent];
  if (extent.op != ScalarOp::kConst) return;
  prefetch_row_elements_ = extent.ivalue;
  const IndexAnalysis analysis(k_);
  for (size_t i = 0; i < k_.body.size(); ++i) {
    const Expr& e = k_.body[i];
    if (e.op != ScalarOp::kLoad || scope_[i] != Scope::kReduction || loop_of_[i] != 0) continue;
    if (extent.ivalue * static_cast<int64_t>(c10::elementSize(k_.buffers[e.buffer].dtype)) < kMinRowBytes) continue;
    if (!analysis.unit_stride(e.a, first[0])) continue;
    const auto step = coefficient(k_, e.a, outer.back());
    if (!step || *step == 0 || !coefficient(k_, e.a, first[0])) continue;
    const bool seen =
        std::any_of(prefetch_.begin(), prefetch_.end(), [&](const RowPrefetch& p) { return p.index == e.a && p.buffer == e.buffer; });
    if (!seen) prefetch_.push_back({e.buffer, e.a, *step});
  }
  prefetch_first_var_ = first[0];
  if (!prefetch_.empty()) prefetch_pass_loop_ = pass;
}

// The loop of a pass: chunked, with the next row's prefetches, when it is the planned pass.
void Printer::pass_loop(int loop, const std::vector<int>& vars, const std::function<void()>& body) {
  if (loop != prefetch_pass_loop_ || prefetch_.empty()) return loop_nest(vars, "", "", body);
  const std::string tag = fresh("chunk").substr(1), extent = name(k_.vars[vars[0]].extent);
  const std::string at = open_loop(tag, "0", extent);
  prefetch_next_row(at);
  line(fmt::format("%{}.next = add nsw i64 {}, {}", tag, at, kChunk));
  line(fmt::format("%{}.over = icmp slt i64 {}, %{}.next", tag, extent, tag));
  line(fmt::format("%{}.hi = select i1 %{}.over, i64 {}, i64 %{}.next", tag, tag, extent, tag));
  loop_nest(vars, at, "%" + tag + ".hi", body);
  close_loop(tag, "%" + tag + ".next");
}

// Prefetches of the next row's positions [position, position + kChunk) of each planned load: its index
// at this position (computed in a context of its own), moved by the row stride, one per cache line.
// Prefetches never fault, so the last row's (past the tensor) are harmless.
void Printer::prefetch_next_row(const std::string& position) {
  declare("void @llvm.prefetch.p0(ptr, i32, i32, i32)");
  std::vector<int> indices;
  for (const RowPrefetch& p : prefetch_) indices.push_back(p.index);
  const std::vector<std::string> at_position = emit_with(indices, prefetch_first_var_, position);
  for (size_t i = 0; i < prefetch_.size(); ++i) {
    const RowPrefetch& p = prefetch_[i];
    const char* type = storage_type(k_.buffers[p.buffer].dtype);
    const int64_t per_line = std::max<int64_t>(1, kLineBytes / static_cast<int64_t>(c10::elementSize(k_.buffers[p.buffer].dtype)));
    for (int64_t offset = 0; offset < std::min(kChunk, prefetch_row_elements_); offset += per_line) {
      const std::string at = fresh("pfi"), address = fresh("pfp");
      line(fmt::format("{} = add i64 {}, {}", at, at_position[i], p.row_step + offset));
      line(fmt::format("{} = getelementptr {}, ptr %buf{}, i64 {}", address, type, p.buffer, at));
      line(fmt::format("call void @llvm.prefetch.p0(ptr {}, i32 0, i32 3, i32 1)", address));
    }
  }
}

}  // namespace jitc::inductor::llvm_ir
