#include "inductor/merge_reduction_loops.h"

#include <algorithm>
#include <vector>

namespace jitc::inductor {

namespace {

bool is_arg_reduction(const Expr& e) { return e.reduce == ReduceKind::kArgMax || e.reduce == ReduceKind::kArgMin; }

// Per expression, the last reduction it reads through its operands (-1: none).
std::vector<int> last_reduction_read(const Kernel& k) {
  std::vector<int> last(k.body.size(), -1);
  for (size_t i = 0; i < k.body.size(); ++i)
    for (int operand : {k.body[i].a, k.body[i].b, k.body[i].c})
      if (operand >= 0) last[i] = std::max({last[i], last[operand], k.body[operand].op == ScalarOp::kReduce ? operand : -1});
  return last;
}

uint64_t loop_mask(const Kernel& k, int loop) {
  uint64_t mask = 0;
  for (int v : k.loop_vars(loop)) mask |= uint64_t{1} << v;
  return mask;
}

// Per expression, the bit set of loop variables it reads (at most 64 variables: KernelBuilder::add_var); a
// reduction's result reads none of its loop's.
std::vector<uint64_t> variables_read(const Kernel& k) {
  std::vector<uint64_t> vars(k.body.size(), 0);
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    if (e.op == ScalarOp::kVar) vars[i] = uint64_t{1} << e.var;
    for (int operand : {e.a, e.b, e.c})
      if (operand >= 0) vars[i] |= vars[operand];
    if (e.op == ScalarOp::kReduce) vars[i] &= ~loop_mask(k, e.loop);
  }
  return vars;
}

bool same_extents(const Kernel& k, int loop, int other) {
  const auto a = k.loop_vars(loop), b = k.loop_vars(other);
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (k.vars[a[d]].extent != k.vars[b[d]].extent) return false;
  return true;
}

int reductions_over(const Kernel& k, int loop) {
  return static_cast<int>(
      std::count_if(k.body.begin(), k.body.end(), [&](const Expr& e) { return e.op == ScalarOp::kReduce && e.loop == loop; }));
}

// Whether reduction `later`'s loop can join reduction `first`'s: `first` is its loop's first reduction and
// `later` its loop's only one (a moved reduction stays where it went: its operands were tested against
// the loop it joined), the loops have the same extents, and nothing computed in `later`'s loop (nor
// `later` itself) reads a reduction printed at or after `first`.
bool can_join(const Kernel& k, int first, int later, const std::vector<int>& last, const std::vector<uint64_t>& vars) {
  const Expr &f = k.body[first], &l = k.body[later];
  if (is_arg_reduction(f) || is_arg_reduction(l) || f.loop == l.loop || !same_extents(k, f.loop, l.loop)) return false;
  for (int i = 0; i < first; ++i)
    if (k.body[i].op == ScalarOp::kReduce && k.body[i].loop == f.loop) return false;
  if (reductions_over(k, l.loop) != 1) return false;
  if (last[later] >= first) return false;
  const uint64_t mask = loop_mask(k, l.loop);
  for (size_t i = 0; i < k.body.size(); ++i)
    if ((vars[i] & mask) != 0 && last[i] >= first) return false;
  return true;
}

// Reduction `later`'s loop variables read as `first`'s (position by position); `later` runs over that loop.
void move_into_loop(Kernel& k, int first, int later) {
  const auto from = k.loop_vars(k.body[later].loop), to = k.loop_vars(k.body[first].loop);
  for (Expr& e : k.body)
    if (e.op == ScalarOp::kVar)
      if (auto it = std::find(from.begin(), from.end(), e.var); it != from.end()) e.var = to[it - from.begin()];
  k.body[later].loop = k.body[first].loop;
}

// Removes the loops no reduction runs over, with their variables; later loops and variables move down.
void remove_empty_loops(Kernel& k) {
  std::vector<int> loop_index(k.num_reduction_loops, -1);
  int loops = 0;
  for (int loop = 0; loop < k.num_reduction_loops; ++loop)
    if (std::any_of(k.body.begin(), k.body.end(), [&](const Expr& e) { return e.op == ScalarOp::kReduce && e.loop == loop; }))
      loop_index[loop] = loops++;
  std::vector<int> var_index(k.vars.size(), -1);
  std::vector<LoopVar> kept;
  for (size_t v = 0; v < k.vars.size(); ++v) {
    LoopVar var = k.vars[v];
    if (var.kind == LoopVar::Kind::kReduction && (var.loop = loop_index[var.loop]) < 0) continue;
    var_index[v] = static_cast<int>(kept.size());
    kept.push_back(var);
  }
  for (Expr& e : k.body) {
    if (e.op == ScalarOp::kVar) e.var = var_index[e.var];
    if (e.op == ScalarOp::kReduce) e.loop = loop_index[e.loop];
  }
  k.vars = std::move(kept);
  k.num_reduction_loops = loops;
}

}  // namespace

void merge_reduction_loops(Kernel& k) {
  // Neither changes for what can_join reads as loops move: a loop that moved is never tested again.
  const std::vector<int> last = last_reduction_read(k);
  const std::vector<uint64_t> vars = variables_read(k);
  bool merged = false;
  for (size_t first = 0; first < k.body.size(); ++first) {
    if (k.body[first].op != ScalarOp::kReduce) continue;
    for (size_t later = first + 1; later < k.body.size(); ++later) {
      if (k.body[later].op != ScalarOp::kReduce || !can_join(k, static_cast<int>(first), static_cast<int>(later), last, vars)) continue;
      move_into_loop(k, static_cast<int>(first), static_cast<int>(later));
      merged = true;
    }
  }
  if (!merged) return;
  share_equal_expressions(k);
  remove_dead_expressions(k);
  remove_empty_loops(k);
}

}  // namespace jitc::inductor
