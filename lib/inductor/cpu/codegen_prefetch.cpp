// Software prefetch of the next row in row kernels that are not pipelined (softmax, rms_norm: a row read
// by several loops; cpu/codegen_pipeline.cpp takes layer_norm). Each 4 KB row of a [4096, 1024] float
// tensor starts on a new page, where the hardware prefetchers stop, so each row's first loop waited on
// memory while the later, compute-heavy loops left it idle. The row's second loop now runs in chunks;
// before each chunk it prefetches the same positions of the next row's first-loop loads (which loads:
// cpu/schedule.cpp). The prefetches sit outside the vectorized inner loop: LLVM 16 does not vectorize a
// loop that calls llvm.prefetch.
#include "inductor/cpu/printer.h"

#include <c10/core/ScalarType.h>
#include <fmt/format.h>

#include <algorithm>

namespace jitc::inductor::llvm_ir {

namespace {

constexpr int64_t kChunk = 256;  // positions of the loop between two rounds of prefetches
constexpr int64_t kLineBytes = 64;
}  // namespace

// The loop of a pass: chunked, with the next row's prefetches, when it is the planned pass.
void Printer::pass_loop(int loop, const std::vector<int>& vars, const std::function<void()>& body) {
  if (loop != schedule_.prefetch_loop || schedule_.prefetch.empty()) return loop_nest(vars, "", "", body);
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
  for (const RowPrefetch& p : schedule_.prefetch) indices.push_back(p.index);
  const std::vector<std::string> at_position = emit_with(indices, schedule_.prefetch_first_var, position);
  for (size_t i = 0; i < schedule_.prefetch.size(); ++i) {
    const RowPrefetch& p = schedule_.prefetch[i];
    const char* type = storage_type(k_.buffers[p.buffer].dtype);
    const int64_t per_line = std::max<int64_t>(1, kLineBytes / static_cast<int64_t>(c10::elementSize(k_.buffers[p.buffer].dtype)));
    for (int64_t offset = 0; offset < std::min(kChunk, schedule_.prefetch_row_elements); offset += per_line) {
      const std::string at = fresh("pfi"), address = fresh("pfp");
      line(fmt::format("{} = add i64 {}, {}", at, at_position[i], p.row_step + offset));
      line(fmt::format("{} = getelementptr {}, ptr %buf{}, i64 {}", address, type, p.buffer, at));
      line(fmt::format("call void @llvm.prefetch.p0(ptr {}, i32 0, i32 3, i32 1)", address));
    }
  }
}

}  // namespace jitc::inductor::llvm_ir
