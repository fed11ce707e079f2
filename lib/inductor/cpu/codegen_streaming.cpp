// Streaming (non-temporal) stores of large outputs. An ordinary store first reads the line it writes
// (read for ownership), so a kernel moves its output twice; a non-temporal store writes whole lines
// straight to memory. For outputs far larger than what the next op could find in cache that is a third of
// a row kernel's memory traffic saved. (The 2-core machine, bench_workloads in processes of their own, the
// same binary with and without: layer_norm and softmax over [4096, 1024] floats clearly faster with them;
// benchmarks/RESULTS.md, Fused CPU kernels, session 9.)
//
// LLVM 16's loop vectorizer keeps a `!nontemporal` store scalar unless it knows the vector store is
// aligned to its size, which a kernel's scalar store never says, so the printer does not mark the element
// loop's stores. It stages them instead: the element loop stores a row (or a tile) of each contiguous
// output into an aligned array on the stack, which stays in L1, and @<kernel>.stream copies the array to the
// output in 64-byte non-temporal stores when the output row is 64-byte aligned and the kernel stores at
// least kStreamingBytes in all; otherwise by memcpy (no cost measured for rows of 4 KB in cache). A fence
// at the end of each tile range orders the streaming stores before the thread reports its work done.
#include "inductor/cpu/printer.h"

#include <c10/core/ScalarType.h>
#include <fmt/format.h>

#include <algorithm>

namespace jitc::inductor::llvm_ir {

namespace {

int64_t element_bytes(ScalarType t) { return static_cast<int64_t>(c10::elementSize(t)); }

// The copy of a staged row: 64-byte non-temporal stores while a whole line remains, memcpy for the rest;
// memcpy for all of it when not streaming or when the output row is not 64-byte aligned.
constexpr const char* kStreamBody = R"(entry:
  %addr = ptrtoint ptr %dst to i64
  %offset = and i64 %addr, 63
  %aligned = icmp eq i64 %offset, 0
  %lines = lshr i64 %bytes, 6
  %nt = and i1 %streaming, %aligned
  %whole = select i1 %nt, i64 %lines, i64 0
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %more = icmp ult i64 %i, %whole
  br i1 %more, label %body, label %rest
body:
  %at = shl i64 %i, 6
  %from = getelementptr i8, ptr %src, i64 %at
  %to = getelementptr i8, ptr %dst, i64 %at
  %line = load <16 x float>, ptr %from, align 64
  store <16 x float> %line, ptr %to, align 64, !nontemporal !{i32 1}
  %next = add i64 %i, 1
  br label %head
rest:
  %done = shl i64 %whole, 6
  %left = sub i64 %bytes, %done
  %rest.from = getelementptr i8, ptr %src, i64 %done
  %rest.to = getelementptr i8, ptr %dst, i64 %done
  call void @llvm.memcpy.p0.p0.i64(ptr %rest.to, ptr %rest.from, i64 %left, i1 false)
  ret void
}
)";

}  // namespace

// One copy function per kernel: a module holds all kernels of a graph.
void Printer::declare_stream_copy() {
  declare("void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)");
  declarations_ +=
      fmt::format("define internal void @{}.stream(ptr noalias %dst, ptr noalias %src, i64 %bytes, i1 %streaming) {{\n", k_.name);
  declarations_ += kStreamBody;
}

// In the body's entry: the stage arrays, and whether this call stores enough to stream.
void Printer::stage_allocas() {
  if (schedule_.staged.empty()) return;
  int64_t row_bytes = 0;
  for (const StagedStore& s : schedule_.staged) {
    const ScalarType dtype = k_.buffers[s.buffer].dtype;
    line(fmt::format("%stage{} = alloca {}, i64 {}, align 64", s.array, storage_type(dtype), s.elements));
    row_bytes += element_bytes(dtype);
  }
  const std::string rows = row_count(), per_row = fresh("srow"), total = fresh("sbytes");
  line(fmt::format("{} = mul i64 {}, {}", per_row, name(k_.vars[k_.inner_vars()[0]].extent), row_bytes));
  line(fmt::format("{} = mul i64 {}, {}", total, rows, per_row));
  line(fmt::format("%streaming = icmp sge i64 {}, {}", total, kStreamingBytes));
}

// store() asks: the stage array's element for this store, or empty when it goes straight to its buffer.
std::string Printer::stage_address(const Expr& e) {
  if (pass_ != kElementPass) return "";
  for (const StagedStore& s : schedule_.staged) {
    if (s.buffer != e.buffer) continue;
    const std::string position = fresh("spos"), slot = fresh("sp");
    line(fmt::format("{} = sub nsw i64 {}, {}", position, var_value_.at(k_.inner_vars()[0]), stage_lo_));
    line(fmt::format("{} = getelementptr {}, ptr %stage{}, i64 {}", slot, storage_type(k_.buffers[e.buffer].dtype), s.array, position));
    return slot;
  }
  return "";
}

// After the element loop over [lo, hi): each stage array goes to its buffer from the index of position lo.
void Printer::flush_staged(const std::string& lo, const std::string& hi) {
  if (schedule_.staged.empty()) return;
  std::vector<int> indices;
  for (const StagedStore& s : schedule_.staged) indices.push_back(s.index);
  const std::vector<std::string> starts = emit_with(indices, k_.inner_vars()[0], lo);
  const std::string count = fresh("scount");
  line(fmt::format("{} = sub nsw i64 {}, {}", count, hi, lo));
  for (size_t i = 0; i < schedule_.staged.size(); ++i) {
    const StagedStore& s = schedule_.staged[i];
    const ScalarType dtype = k_.buffers[s.buffer].dtype;
    const std::string dst = fresh("sdst"), bytes = fresh("sbytes");
    line(fmt::format("{} = getelementptr {}, ptr %buf{}, i64 {}", dst, storage_type(dtype), s.buffer, starts[i]));
    line(fmt::format("{} = mul nsw i64 {}, {}", bytes, count, element_bytes(dtype)));
    line(fmt::format("call void @{}.stream(ptr {}, ptr %stage{}, i64 {}, i1 %streaming)", k_.name, dst, s.array, bytes));
  }
}

// At the end of a tile range: the streaming stores reach memory before the thread reports its work done.
void Printer::fence_streaming_stores() {
  if (!schedule_.staged.empty()) line("fence seq_cst");
}

}  // namespace jitc::inductor::llvm_ir
