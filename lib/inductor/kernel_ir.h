// Kernel IR, shared by the CPU and CUDA code generators. A kernel runs over rows: the row space is the
// product of its outer dims; inside a row an element loop nest runs over its inner dims (empty for a
// kernel that only reduces). Reductions run their own loop nests inside the row, before the element
// loop, and yield one value per row. The body is a flat SSA list of scalar expressions; where each one
// is emitted (once per kernel, once per row, inside a reduction loop, inside the element loop) follows
// from the loop variables it depends on, so a code generator never needs a schedule beyond this.
//
// Indices are expressions too (int64 arithmetic over loop variables and symbol values), so views,
// broadcasts and permutes are index arithmetic, and sizes of dynamic dims are runtime arguments: one
// compiled kernel serves every size.
#pragma once
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

namespace jitc::inductor {

enum class ScalarOp : uint8_t {
  // leaves
  kVar,    // a loop variable (`var`)
  kSym,    // the value of symbol s<`var`>, an int64 kernel argument; dtype Double: a double argument
           // of the call whose bits the symbol holds; dtype Float (CPU only: a parameterized kernel's
           // constant, cpu/kernel_parameters.h): such a double, exactly a float
  kConst,  // `value` (or `ivalue` for integer types)
  // memory
  kLoad,   // buffer `buffer` at element index a (an int64 expr); yields the buffer's compute type
  kStore,  // buffer `buffer` at index a := b (converted to the buffer's dtype)
  // conversions and selection
  kCast,     // a converted to `dtype`
  kRoundTo,  // float a rounded to the precision of half or bfloat16 (`ivalue`), kept in float: eager
             // stores every op's result in its dtype, so fused chains round where eager does
  kWhere,    // a ? b : c
  // unary
  kNeg,
  kAbs,
  kExp,
  kExp2,
  kExpm1,
  kLog,
  kLog2,
  kLog10,
  kLog1p,
  kSqrt,
  kRsqrt,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kTanh,
  kAsinh,
  kAcosh,
  kAtanh,
  kErf,
  kErfc,
  kFloor,
  kCeil,
  kRound,
  kTrunc,
  kNot,
  kBitNot,
  kIsNan,
  kSign,
  // binary
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kRem,
  kPow,
  kAtan2,
  kMax,
  kMin,
  kAnd,
  kOr,
  kXor,
  kShl,
  kShr,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kFmod,  // C's fmod (the dividend's sign); kRem is Python's remainder (the divisor's sign)
  // ternary
  kFma,  // a * b + c rounded once (ATen's float addcmul and every lerp compute with FMA instructions)
  // a run-time check: bool a must hold, or the kernel reports a failure (CPU: a status word the runtime
  // reads after the launch, which then replays the graph eagerly so that eager raises its own error;
  // CUDA: a device-side assert, as eager's kernels do). Emitted wherever its operands are, like a store.
  kCheck,
  // reductions: a is the value reduced over loop `loop`; kArgMax/kArgMin also take b, the position
  kReduce,
};

enum class ReduceKind : uint8_t { kSum, kProd, kMax, kMin, kArgMax, kArgMin, kAny, kAll };

struct Expr {
  ScalarOp op = ScalarOp::kConst;
  c10::ScalarType dtype = c10::ScalarType::Float;  // the compute type of the result
  int a = -1, b = -1, c = -1;                      // operands (earlier expressions)
  int var = -1;                                    // kVar: variable id; kSym: symbol id
  int buffer = -1;                                 // kLoad / kStore
  int loop = -1;                                   // kReduce: the reduction loop it runs over
  ReduceKind reduce = ReduceKind::kSum;
  double value = 0;    // kConst for floating types
  int64_t ivalue = 0;  // kConst for integer and bool types
};

// A loop variable runs over [0, extent); extent is an int64 expression that depends on no loop variable.
struct LoopVar {
  enum class Kind : uint8_t { kOuter, kInner, kReduction };
  Kind kind = Kind::kOuter;
  int extent = -1;
  int loop = -1;  // kReduction: which reduction loop it belongs to
};

struct Buffer {
  std::string name;
  c10::ScalarType dtype = c10::ScalarType::Float;
  bool written = false;
};

struct Kernel {
  std::string name;
  std::vector<Buffer> buffers;  // argument order
  std::vector<LoopVar> vars;    // outer vars first, in dim order, then inner vars, then reduction vars
  std::vector<Expr> body;       // SSA: operands precede their users
  int num_reduction_loops = 0;
  // Pointwise kernels split the innermost element dim into tiles of this many elements, so that a
  // kernel with few rows still runs in parallel; 0 = one tile per row (kernels with reductions).
  int64_t tile = 0;

  std::vector<int> outer_vars() const { return vars_of(LoopVar::Kind::kOuter); }
  std::vector<int> inner_vars() const { return vars_of(LoopVar::Kind::kInner); }
  std::vector<int> loop_vars(int loop) const {  // the variables of one reduction loop
    std::vector<int> out;
    for (size_t v = 0; v < vars.size(); ++v)
      if (vars[v].kind == LoopVar::Kind::kReduction && vars[v].loop == loop) out.push_back(static_cast<int>(v));
    return out;
  }
  std::vector<int> vars_of(LoopVar::Kind kind) const {
    std::vector<int> out;
    for (size_t v = 0; v < vars.size(); ++v)
      if (vars[v].kind == kind) out.push_back(static_cast<int>(v));
    return out;
  }
};

// Whether a kernel holds run-time checks (kCheck): on the CPU it then takes a status word after its
// buffers, which it sets when a check fails.
inline bool has_checks(const Kernel& kernel) {
  for (const Expr& e : kernel.body)
    if (e.op == ScalarOp::kCheck) return true;
  return false;
}

// Drops the expressions nothing stored, checked, reduced or sized reads (kernel_cleanup.cpp).
void remove_dead_expressions(Kernel& kernel);
// Points every reader of an expression equal to an earlier one (same operation, operands and constants;
// stores excepted) at the earlier one, as the builder interns; the copies are left dead.
void share_equal_expressions(Kernel& kernel);

// Readable text of a kernel (JITC_LOGS=output_code, golden tests, cache keys).
std::string to_text(const Kernel& kernel);  // kernel_text.cpp

// Names for text and logs: "add", "reduce_sum"...
const char* op_name(ScalarOp op);
const char* reduce_name(ReduceKind kind);

}  // namespace jitc::inductor
