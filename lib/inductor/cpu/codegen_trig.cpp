// sin and cos of floats in the element loop through Emitter::sincos_float: one reduction for both, in
// plain arithmetic that vectorizes inline, where libmvec's calls reduce x once each (and spill the loop's
// registers around each call). sincos_float is right for |x| < 65536 only, and an element loop cannot
// branch per lane, so the loop ORs each lane's "outside that range" (NaN and infinities included) into a
// flag; a tile that raised it runs its element loop again, and that pass's stores overwrite the first
// one's. Every float sin and cos outside that first pass (the second pass, reduction loops, other
// kernels) is guarded_trig: sincos_float's result where it is right, libm's elsewhere. An element's bits
// then depend on its value alone, never on the loop computing it or on a neighbour out of range in its
// tile (`y == y.amax()` finds each row's maximum).
#include "inductor/cpu/printer.h"

#include <fmt/format.h>

#include <algorithm>

namespace jitc::inductor::llvm_ir {

// Whether this element loop takes the fast path: float sin or cos in it, and no buffer that the kernel
// both reads and writes (a second pass would read the first one's stores). Opens the tile's flag.
bool Printer::begin_fast_trig() {
  if (!schedule_.fast_sin_cos) return false;
  trig_flag_ = fresh("trigflag");
  fast_sincos_.clear();
  line(fmt::format("{} = alloca i1", trig_flag_));
  line(fmt::format("store i1 false, ptr {}", trig_flag_));
  return true;
}

// After the first pass: if a lane raised the flag, the element loop again over [lo, hi), guarded.
void Printer::redo_tile_guarded(const std::string& lo, const std::string& hi) {
  const std::string raised = fresh("raised"), redo = fresh("redo").substr(1), done = fresh("redone").substr(1);
  line(fmt::format("{} = load i1, ptr {}", raised, trig_flag_));
  line(fmt::format("br i1 {}, label %{}, label %{}", raised, redo, done));
  label(redo);
  trig_flag_.clear();
  element_suffix_ = "." + redo;
  fast_sincos_.clear();
  guarded_pass_ = true;
  element_pass(lo, hi);
  guarded_pass_ = false;
  fast_sincos_.clear();
  element_suffix_.clear();
  line(fmt::format("br label %{}", done));
  label(done);
}

bool Printer::fast_trig_applies(const Expr& e) const {
  return !trig_flag_.empty() && pass_ == kElementPass && e.dtype == ScalarType::Float;
}

// sin or cos of e's operand: sincos_float once per operand, its range test ORed into the flag.
void Printer::fast_trig(const std::string& v, const Expr& e) {
  const std::string x = name(e.a);
  auto found = fast_sincos_.find(x);
  if (found == fast_sincos_.end()) {
    const SinCos sc = sincos_float(v + ".sc", x);
    const std::string before = fresh("flag"), outside = fresh("outside"), after = fresh("flag");
    line(fmt::format("{} = load i1, ptr {}", before, trig_flag_));
    line(fmt::format("{} = xor i1 {}, true", outside, sc.ok));
    line(fmt::format("{} = or i1 {}, {}", after, before, outside));
    line(fmt::format("store i1 {}, ptr {}", after, trig_flag_));
    found = fast_sincos_.emplace(x, sc).first;
  }
  line(fmt::format("{} = bitcast float {} to float", v, e.op == ScalarOp::kSin ? found->second.sin : found->second.cos));
}

// sin or cos of a float wherever the fast path's flag is not kept: per element, sincos_float's result
// inside its range and libm's outside it, so that the value equals the fast path's.
void Printer::guarded_trig(const std::string& v, const Expr& e) {
  const std::string x = name(e.a), outside = fresh("libm");
  const SinCos sc = guarded_pass_ ? shared_sincos(v, x) : sincos_float(v + ".sc", x);
  const bool sin = e.op == ScalarOp::kSin;
  line(fmt::format("{} = {}", outside, intrinsic(sin ? "sin" : "cos", ScalarType::Float, x)));
  line(fmt::format("{} = select i1 {}, float {}, float {}", v, sc.ok, sin ? sc.sin : sc.cos, outside));
}

// The element loop's second pass: sin and cos of one operand share its sincos_float as in the first.
Emitter::SinCos Printer::shared_sincos(const std::string& stem, const std::string& x) {
  auto found = fast_sincos_.find(x);
  if (found == fast_sincos_.end()) found = fast_sincos_.emplace(x, sincos_float(stem + ".sc", x)).first;
  return found->second;
}

}  // namespace jitc::inductor::llvm_ir
