#include "inductor/kernel_ir.h"

#include <fmt/format.h>

#include <bit>
#include <stdexcept>

namespace jitc::inductor {

namespace {

std::string float_literal(double v) {  // LLVM wants float constants as the hex of their double value
  return fmt::format("0x{:016X}", std::bit_cast<uint64_t>(static_cast<double>(static_cast<float>(v))));
}

class Printer {
 public:
  explicit Printer(const PointwiseKernel& k) : k_(k) {}

  std::string run() {
    if (k_.sizes.empty()) throw std::invalid_argument("emit_llvm_ir: a kernel needs at least one dim");
    for (int64_t size : k_.sizes)
      if (size == 0) return fmt::format("define void @{}(ptr %buffers) {{\n  ret void\n}}\n", k_.name);
    header();
    outer_loop_head();
    for (size_t i = 0; i < k_.loads.size(); ++i) row_base(fmt::format("l{}", i), k_.loads[i]);
    row_base("st", k_.store);
    inner_loop();
    footer();
    return out_;
  }

 private:
  void line(const std::string& s) { out_ += s + "\n"; }

  int64_t inner() const { return k_.sizes.back(); }
  int64_t rows() const {
    int64_t r = 1;
    for (size_t d = 0; d + 1 < k_.sizes.size(); ++d) r *= k_.sizes[d];
    return r;
  }

  void header() {
    line("declare float @llvm.exp.f32(float)");
    line(fmt::format("define void @{}(ptr noalias %buffers) {{", k_.name));
    line("entry:");
    for (int b = 0; b <= k_.num_inputs; ++b) {
      line(fmt::format("  %slot{} = getelementptr ptr, ptr %buffers, i64 {}", b, b));
      line(fmt::format("  %buf{} = load ptr, ptr %slot{}", b, b));
    }
    line("  br label %row");
  }

  void outer_loop_head() {
    line("row:");
    line("  %r = phi i64 [ 0, %entry ], [ %r.next, %row.end ]");
  }

  // Element offset of row r for an access: sum over outer dims of (coordinate * stride) + offset.
  void row_base(const std::string& tag, const Access& a) {
    std::string acc = std::to_string(a.offset);
    int64_t below = 1;  // product of the sizes of the outer dims after d
    for (size_t d = k_.sizes.size() - 1; d-- > 0;) {
      const std::string coord = fmt::format("%{}.c{}", tag, d);
      line(fmt::format("  %{}.q{} = udiv i64 %r, {}", tag, d, below));
      line(fmt::format("  {} = urem i64 %{}.q{}, {}", coord, tag, d, k_.sizes[d]));
      line(fmt::format("  %{}.t{} = mul i64 {}, {}", tag, d, coord, a.strides[d]));
      line(fmt::format("  %{}.s{} = add i64 {}, %{}.t{}", tag, d, acc, tag, d));
      acc = fmt::format("%{}.s{}", tag, d);
      below *= k_.sizes[d];
    }
    line(fmt::format("  %{}.base = add i64 {}, 0", tag, acc));
  }

  // Address of the element at (row, %j) for an access whose row base is %<base>.base.
  std::string element(const std::string& base, const std::string& tag, const Access& a) {
    line(fmt::format("  %{}.j = mul i64 %j, {}", tag, a.strides.back()));
    line(fmt::format("  %{}.i = add i64 %{}.base, %{}.j", tag, base, tag));
    line(fmt::format("  %{}.p = getelementptr float, ptr %buf{}, i64 %{}.i", tag, a.buffer, tag));
    return fmt::format("%{}.p", tag);
  }

  std::string expr(size_t i) {
    const Expr& e = k_.body[i];
    const std::string v = fmt::format("%e{}", i);
    const std::string a = e.a >= 0 ? fmt::format("%e{}", e.a) : "";
    const std::string b = e.b >= 0 ? fmt::format("%e{}", e.b) : "";
    switch (e.op) {
      case ScalarOp::kLoad: {
        const std::string p = element(fmt::format("l{}", e.load), fmt::format("x{}", i), k_.loads[e.load]);
        line(fmt::format("  {} = load float, ptr {}", v, p));
        break;
      }
      case ScalarOp::kConstant: line(fmt::format("  {} = fadd float {}, 0.0", v, float_literal(e.value))); break;
      case ScalarOp::kAdd: line(fmt::format("  {} = fadd float {}, {}", v, a, b)); break;
      case ScalarOp::kSub: line(fmt::format("  {} = fsub float {}, {}", v, a, b)); break;
      case ScalarOp::kMul: line(fmt::format("  {} = fmul float {}, {}", v, a, b)); break;
      case ScalarOp::kDiv: line(fmt::format("  {} = fdiv float {}, {}", v, a, b)); break;
      case ScalarOp::kNeg: line(fmt::format("  {} = fneg float {}", v, a)); break;
      // llvm.maximum/minimum would propagate NaN too, but LLVM 16's x86 back end cannot select them
      // (it aborts the process): compare and select, NaN-propagating like ATen's kernels.
      case ScalarOp::kMaximum: extremum(v, a, b, "ogt"); break;
      case ScalarOp::kMinimum: extremum(v, a, b, "olt"); break;
      case ScalarOp::kExp: line(fmt::format("  {} = call float @llvm.exp.f32(float {})", v, a)); break;
      case ScalarOp::kRelu:  // NaN stays NaN, as in ATen
        line(fmt::format("  {}.lt = fcmp olt float {}, 0.0", v, a));
        line(fmt::format("  {} = select i1 {}.lt, float 0.0, float {}", v, v, a));
        break;
      case ScalarOp::kSigmoid:
        line(fmt::format("  {}.n = fneg float {}", v, a));
        line(fmt::format("  {}.e = call float @llvm.exp.f32(float {}.n)", v, v));
        line(fmt::format("  {}.d = fadd float {}.e, 1.0", v, v));
        line(fmt::format("  {} = fdiv float 1.0, {}.d", v, v));
        break;
    }
    return v;
  }

  void extremum(const std::string& v, const std::string& a, const std::string& b, const char* compare) {
    line(fmt::format("  {}.c = fcmp {} float {}, {}", v, compare, a, b));
    line(fmt::format("  {}.s = select i1 {}.c, float {}, float {}", v, v, a, b));
    line(fmt::format("  {}.u = fcmp uno float {}, {}", v, a, b));
    line(fmt::format("  {}.n = fadd float {}, {}", v, a, b));  // NaN when either is
    line(fmt::format("  {} = select i1 {}.u, float {}.n, float {}.s", v, v, v, v));
  }

  void inner_loop() {
    line("  br label %col");
    line("col:");
    line("  %j = phi i64 [ 0, %row ], [ %j.next, %col ]");
    for (size_t i = 0; i < k_.body.size(); ++i) expr(i);
    const int stored = k_.result >= 0 ? k_.result : static_cast<int>(k_.body.size()) - 1;
    const std::string result = fmt::format("%e{}", stored);
    const std::string p = element("st", "sx", k_.store);
    line(fmt::format("  store float {}, ptr {}", result, p));
    line("  %j.next = add nuw nsw i64 %j, 1");
    line(fmt::format("  %j.done = icmp eq i64 %j.next, {}", inner()));
    line("  br i1 %j.done, label %row.end, label %col");
  }

  void footer() {
    line("row.end:");
    line("  %r.next = add nuw nsw i64 %r, 1");
    line(fmt::format("  %r.done = icmp eq i64 %r.next, {}", rows()));
    line("  br i1 %r.done, label %exit, label %row");
    line("exit:");
    line("  ret void");
    line("}");
  }

  const PointwiseKernel& k_;
  std::string out_;
};

}  // namespace

std::string emit_llvm_ir(const PointwiseKernel& kernel) { return Printer(kernel).run(); }

}  // namespace jitc::inductor
