// Split reductions (see split_count): the partial pass's row and slice, the final pass's combining of a
// row's partial results, and where they lie in the workspace.
#include "inductor/cuda/codegen.h"
#include "inductor/cuda/printer.h"
#include "inductor/cuda/scalars.h"

#include <fmt/format.h>

#include <algorithm>

namespace jitc::inductor::cuda_printer {

// A split kernel's row (and, in the partial pass, which of its slices this block reduces). Column
// kernels take a group of rows side by side: neighbouring blocks read neighbouring groups' slices (the
// same rows of the input), others neighbouring slices of a row.
std::string Printer::split_row() {
  std::string tile = "t";
  if (phase_ == Phase::kPartial) {
    tile = fresh("tile");
    slice_ = fresh("slice");
    if (config_.columns > 0) {
      const int64_t groups = (rows() + config_.columns - 1) / config_.columns;
      line(fmt::format("const idx_t {} = t % {}, {} = t / {};", tile, groups, slice_, groups));
    } else {
      line(fmt::format("const idx_t {} = t / {}, {} = t % {};", tile, config_.split, slice_, config_.split));
    }
  }
  split_row_ = config_.columns > 0 ? column_row(tile) : tile;
  return split_row_;
}

// The final pass: a row's partial results, in slice order, folded like the elements they stand for.
void Printer::combine_partials(int r, const std::string& ty, const std::function<void(const std::string&, const std::string&)>& fold) {
  const std::string slot = partial_slot(r), s = fresh("s"), v = fresh("part");
  // Unrolled as many times as a thread has slices: its loads of them are in flight at once.
  const int threads_per_row = config_.columns > 0 ? config_.threads / config_.columns : config_.threads;
  line(fmt::format("#pragma unroll {}", std::min(8, (config_.split + threads_per_row - 1) / threads_per_row)));
  if (config_.columns > 0)  // the threads of a row: every columns-th
    line(fmt::format("for (int {0} = threadIdx.x / {1}; {0} < {2}; {0} += {3}) {{", s, config_.columns, config_.split, threads_per_row));
  else line(fmt::format("for (int {0} = threadIdx.x; {0} < {1}; {0} += {2}) {{", s, config_.split, config_.threads));
  line(fmt::format("const {} {} = *(const {}*)(workspace + {} + {});", ty, v, ty, slot, s));
  const bool arg = k_.body[r].reduce == ReduceKind::kArgMax || k_.body[r].reduce == ReduceKind::kArgMin;
  fold(v, arg ? fmt::format("workspace[{} + {} + {}]", positions_offset(), slot, s) : "");
  line("}");
}

void Printer::welford_reduction(int sum, int squares) {
  const Expr& e = k_.body[sum];
  const std::string ty = cuda::c_type(k_.body[e.a].dtype), total = fresh("wtotal");
  const std::string sum_slot = partial_slot(sum), squares_slot = partial_slot(squares);
  auto saved = emitted_;
  if (phase_ == Phase::kPartial) {  // this thread's values as shifted sums, then the block's (count, mean, M2)
    const auto vars = k_.loop_vars(e.loop);
    plan_partial_groups(sum, vars);
    const auto [lo, hi] = slice_bounds(vars);
    const std::string sums = fresh("sums");
    const std::string shift = first_value(sum, lo, hi);
    line(fmt::format("ShiftedSums<{}> {}{{{}, 0, 0, 0}};", ty, sums, shift));
    block_loop(e.loop, vars, lo, hi, [&] {
      emit_reduction_operand(sum);
      line(fmt::format("shifted_add<{}>({}, {});", ty, sums, name(e.a)));
    });
    line(fmt::format("const Welford<{}> {} = block_variance<{}>({}, ({})({} - {}));", ty, total, ty, sums, ty, hi, lo));
  } else {  // the final pass: this row's slices (count in the sum's position slot), over all its elements
    const std::string elements = loop_elements(k_.loop_vars(e.loop));
    line(fmt::format(
        "const Welford<{0}> {1} = combine_slices<{0}, {5}, {6}>(workspace + {2}, workspace + {3} + {2}, workspace + {4}, ({0}){7});", ty,
        total, sum_slot, positions_offset(), squares_slot, config_.split, config_.threads, elements));
  }
  emitted_ = std::move(saved);
  if (phase_ == Phase::kPartial)
    line(
        fmt::format("if (threadIdx.x == 0) {{ *({0}*)(workspace + {1}) = {2}.mean; *({0}*)(workspace + {3} + {1}) = {2}.n; "
                    "*({0}*)(workspace + {4}) = {2}.m2; }}",
                    ty, sum_slot, total, positions_offset(), squares_slot));
  if (phase_ == Phase::kFinal) {  // the partial pass prints nothing that reads the row's results
    line(fmt::format("const {} {} = ({})({}.mean * {}.n);", cuda::c_type(e.dtype), name(sum), cuda::c_type(e.dtype), total, total));
    line(fmt::format("const {} {} = ({}){}.m2;", cuda::c_type(k_.body[squares].dtype), name(squares), cuda::c_type(k_.body[squares].dtype),
                     total));
  }
  emitted_[sum] = emitted_[squares] = true;
}

// Reduction r's operand at this thread's first position of the slice [lo, hi) (the last one for a thread
// past its end), computed in a scope of its own before the loop: the shift of its shifted sums.
std::string Printer::first_value(int r, const std::string& lo, const std::string& hi) {
  const Expr& e = k_.body[r];
  const std::string value = fresh("shift"), at = fresh("first");
  line(fmt::format("{} {};", cuda::c_type(k_.body[e.a].dtype), value));
  line("{");
  const int step = vector_access_.empty() ? 1 : group_;  // the loop's first position: see partial_groups
  line(fmt::format("const idx_t {} = min({} + (idx_t)threadIdx.x * {}, {} - 1);", at, lo, step, hi));
  const auto saved = emitted_;
  decompose(k_.loop_vars(e.loop), at);
  emit_reduction_operand(r);
  line(fmt::format("{} = {};", value, name(e.a)));
  emitted_ = saved;
  line("}");
  return value;
}

// This block's slice [lo, hi) of the row's flattened reduction space. At a symbolic size the slices'
// length is computed at run time, in whole vector groups where plan_partial_groups chose them (called
// first); a slice past the end is empty.
std::pair<std::string, std::string> Printer::slice_bounds(const std::vector<int>& vars) {
  const std::string lo = fresh("lo"), hi = fresh("hi");
  if (const int64_t elements = constant_elements(k_, vars); elements >= 0) {
    const int64_t chunk = (elements + config_.split - 1) / config_.split;
    line(fmt::format("const idx_t {} = {} * {}, {} = min(({}){}, {} + {});", lo, slice_, chunk, hi, "idx_t", elements, lo, chunk));
    return {lo, hi};
  }
  const std::string total = loop_elements(vars), chunk = fresh("chunk");
  const int step = vector_access_.empty() ? 1 : group_;
  line(fmt::format("const idx_t {0} = (({1} + {2}) / {3} + {4}) / {5} * {5};", chunk, total, config_.split - 1, config_.split, step - 1,
                   step));
  line(fmt::format("const idx_t {} = {} * {}, {} = min({}, {} + {});", lo, slice_, chunk, hi, total, lo, chunk));
  return {lo, hi};
}

// The number of elements of vars' loop as a C expression: the constant, or the product of the extents'
// values.
std::string Printer::loop_elements(const std::vector<int>& vars) {
  if (const int64_t n = constant_elements(k_, vars); n >= 0) return std::to_string(n);
  std::string total = "((idx_t)1)";
  for (int v : vars) total = fmt::format("({} * {})", total, name(k_.vars[v].extent));
  return total;
}

// Where reduction r's partial results of this row start in the workspace: values, then positions.
std::string Printer::partial_slot(int r) const {
  int ordinal = 0;
  for (int i = 0; i < r; ++i) ordinal += k_.body[i].op == ScalarOp::kReduce;
  const std::string first = fmt::format("(({}ll * {} + {}) * {})", ordinal, rows(), split_row_, config_.split);
  return phase_ == Phase::kPartial ? fmt::format("{} + {}", first, slice_) : first;
}

int64_t Printer::rows() const {
  int64_t n = 1;
  for (int v : k_.outer_vars()) n *= k_.body[k_.vars[v].extent].ivalue;
  return n;
}

// The workspace holds every partial value, then every position (split_workspace_slots owns the size).
int64_t Printer::positions_offset() const { return split_workspace_slots(k_, config_) / 2; }

}  // namespace jitc::inductor::cuda_printer
