#include "inductor/cpu/kernel_parameters.h"

#include <jitc/detail/internal_assert.h>

#include <algorithm>
#include <bit>
#include <cmath>

namespace jitc::inductor::cpu {

namespace {

bool is_parameter(const Expr& e) {
  if (e.op != ScalarOp::kConst) return false;
  if (e.dtype == c10::ScalarType::Long) return e.ivalue < -1 || e.ivalue > 1;
  if (e.dtype == c10::ScalarType::Float || e.dtype == c10::ScalarType::Double)
    return std::isfinite(e.value) && e.value != 0 && e.value != 1 && e.value != -1;
  return false;
}

// The symbol's bits: a float constant as the printer would round it, held exactly in a double.
int64_t bits_of(const Expr& constant) {
  if (constant.dtype == c10::ScalarType::Long) return constant.ivalue;
  const double exact = constant.dtype == c10::ScalarType::Float ? static_cast<float>(constant.value) : constant.value;
  return std::bit_cast<int64_t>(exact);
}

bool is_integer_division(const Expr& e) {
  const bool division = e.op == ScalarOp::kDiv || e.op == ScalarOp::kFloorDiv || e.op == ScalarOp::kRem || e.op == ScalarOp::kFmod ||
                        e.op == ScalarOp::kShl || e.op == ScalarOp::kShr;
  return division && c10::isIntegralType(e.dtype, /*includeBool=*/false);
}

// A pointwise kernel's constants that shape its vector code stay literals: the innermost loop's extent
// where outer loops repeat it (a runtime trip count costs each row a remainder loop), the strides of the
// innermost variable (loads at a runtime stride do not vectorize as interleaved groups), and divisors
// (a division by a runtime value is a division instruction per element, by a constant a multiply).
// A kernel with no outer loop has its whole size as the inner extent: that one is a parameter.
std::vector<bool> literal_constants(const Kernel& kernel) {
  std::vector<bool> literal(kernel.body.size(), false);
  if (kernel.num_reduction_loops > 0 || kernel.vars.empty()) return literal;
  const int innermost = static_cast<int>(kernel.vars.size()) - 1;
  std::vector<bool> reads_innermost(kernel.body.size(), false);
  auto reads = [&](int e) { return e >= 0 && reads_innermost[e]; };
  auto is_constant = [&](int e) { return e >= 0 && kernel.body[e].op == ScalarOp::kConst; };
  for (size_t i = 0; i < kernel.body.size(); ++i) {
    const Expr& e = kernel.body[i];
    reads_innermost[i] = (e.op == ScalarOp::kVar && e.var == innermost) || reads(e.a) || reads(e.b) || reads(e.c);
    if (is_integer_division(e)) {
      if (is_constant(e.a)) literal[e.a] = true;
      if (is_constant(e.b)) literal[e.b] = true;
    }
    if (e.op == ScalarOp::kMul && c10::isIntegralType(e.dtype, false)) {
      if (is_constant(e.a) && reads(e.b)) literal[e.a] = true;
      if (is_constant(e.b) && reads(e.a)) literal[e.b] = true;
    }
  }
  bool repeated = false;
  for (int v = 0; v < innermost; ++v) {
    const Expr& extent = kernel.body[kernel.vars[v].extent];
    repeated = repeated || !(extent.op == ScalarOp::kConst && extent.ivalue == 1);
  }
  if (repeated) literal[kernel.vars[innermost].extent] = true;
  return literal;
}

// One past the largest graph symbol the kernel reads.
int symbols_read(const Kernel& kernel) {
  int count = 0;
  for (const Expr& e : kernel.body)
    if (e.op == ScalarOp::kSym) count = std::max(count, e.var + 1);
  return count;
}

}  // namespace

ParameterizedKernel parameterize(const Kernel& kernel) {
  ParameterizedKernel out{kernel, symbols_read(kernel), {}, std::vector<int>(kernel.body.size(), -1)};
  std::vector<Expr>& body = out.kernel.body;
  body.clear();
  auto parameter = [&](int constant) {  // a symbol of its own for this use
    Expr symbol = kernel.body[constant];
    symbol.op = ScalarOp::kSym;
    symbol.var = out.first_symbol + static_cast<int>(out.values.size());
    out.values.push_back(bits_of(kernel.body[constant]));
    body.push_back(symbol);
    return static_cast<int>(body.size()) - 1;
  };
  const std::vector<bool> literal = literal_constants(kernel);
  auto parameterized = [&](int e) { return is_parameter(kernel.body[e]) && !literal[e]; };
  auto operand = [&](int e) { return e < 0 ? -1 : parameterized(e) ? parameter(e) : out.moved[e]; };
  for (LoopVar& v : out.kernel.vars)  // constant extents first, in variable order
    if (parameterized(v.extent)) v.extent = parameter(v.extent);
  for (size_t i = 0; i < kernel.body.size(); ++i) {
    if (parameterized(static_cast<int>(i))) continue;
    Expr e = kernel.body[i];
    e.a = operand(e.a);
    e.b = operand(e.b);
    e.c = operand(e.c);
    body.push_back(e);
    out.moved[i] = static_cast<int>(body.size()) - 1;
  }
  for (size_t v = 0; v < kernel.vars.size(); ++v)
    if (!parameterized(kernel.vars[v].extent)) out.kernel.vars[v].extent = out.moved[kernel.vars[v].extent];
  return out;
}

bool prints_parameterized(const llvm_ir::CpuSchedule& schedule) {
  return schedule.row_cache.empty() && schedule.pipelined.empty() && schedule.prefetch.empty() && schedule.staged.empty();
}

llvm_ir::CpuSchedule parameterized_schedule(const llvm_ir::CpuSchedule& schedule, const ParameterizedKernel& parameterized) {
  JITC_INTERNAL_ASSERT(prints_parameterized(schedule), "cpu codegen: a schedule that reads constant extents, parameterized");
  llvm_ir::CpuSchedule out = schedule;
  out.rolled_lanes = true;
  out.keys.clear();  // positional keys serve the row cache only
  if (!schedule.kept_row_values.empty()) {
    out.kept_row_values.assign(parameterized.kernel.body.size(), false);
    for (size_t i = 0; i < schedule.kept_row_values.size(); ++i)
      if (parameterized.moved[i] >= 0) out.kept_row_values[parameterized.moved[i]] = schedule.kept_row_values[i];
  }
  for (int& sum : out.chunked_sums) sum = parameterized.moved[sum];
  for (int& value : out.position_values) value = parameterized.moved[value];
  return out;
}

}  // namespace jitc::inductor::cpu
