// sin and cos of floats in the element loop through Emitter::sincos_float: one reduction for both, in
// plain arithmetic that vectorizes inline, where libmvec's calls reduce x once each (and spill the loop's
// registers around each call). sincos_float is right for |x| < 65536 only, and an element loop cannot
// branch per lane, so the loop ORs each lane's "outside that range" (NaN and infinities included) into a
// flag; a tile that raised it runs its element loop again with libm's sin and cos, which are right for
// every float, and that pass's stores overwrite the first one's.
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

// After the first pass: if a lane raised the flag, the element loop again over [lo, hi) through libm.
void Printer::redo_tile_with_libm(const std::string& lo, const std::string& hi) {
  const std::string raised = fresh("raised"), redo = fresh("redo").substr(1), done = fresh("redone").substr(1);
  line(fmt::format("{} = load i1, ptr {}", raised, trig_flag_));
  line(fmt::format("br i1 {}, label %{}, label %{}", raised, redo, done));
  label(redo);
  trig_flag_.clear();
  element_suffix_ = "." + redo;
  element_pass(lo, hi);
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

}  // namespace jitc::inductor::llvm_ir
