// generalize: turns two traces of one callable, taken at different sizes of some dims, into one graph
// whose sizes, strides and integer arguments are SymExprs of those sizes.
//
// Why two traces: the callable is C++, so arithmetic on sizes (x.size(0) * 4 passed to view) happens
// outside the dispatcher and only its result is seen. Each integer that differs between the traces must
// be explained by exactly one form with one free parameter (k*s, s + c, k*s*t), fixed by the first trace
// and verified by the second; anything else (a different op sequence, an unexplained or ambiguous
// integer, a differing float) keeps the dims static. A view's storage offset is the one exception: it may
// be any line k*s + c in one symbol (a slice from the end of a dynamic dim starts at (s - c') * stride).
// Two traces cannot rule out an integer that only looks affine at those two sizes (x.size(0) / 2 is 1 at
// 2 and 3), so the engine trusts the result at a new size only once that size's own trace generalizes to
// the same graph (runtime::SizeLedger).
#pragma once
#include "graph/graph.h"

#include <optional>
#include <string>
#include <vector>

namespace jitc::graph {

struct SymbolValues {
  std::vector<int64_t> a;  // value of each symbol in the first trace
  std::vector<int64_t> b;  // ... and in the second
  // Per symbol (empty: none): the value of a double argument, held as its bits. Such a symbol is never
  // part of a fitted integer; a float constant that is exactly the argument's value in both traces
  // becomes that symbol (read at run time), any other differing float keeps the graph static.
  std::vector<char> real;
  bool is_real(size_t s) const { return s < real.size() && real[s]; }
};

// The unique SymExpr that gives `in_a` under a and `in_b` under b, or nullopt. Real symbols take no part.
std::optional<SymExpr> fit(int64_t in_a, int64_t in_b, const SymbolValues& symbols);

// As fit, and also a line k*s + c in one symbol: two free parameters, which the two traces fix without
// verifying. Used for storage offsets only, which no other integer is computed from; the size ledger's
// trace at every new size then checks the line.
std::optional<SymExpr> fit_line(int64_t in_a, int64_t in_b, const SymbolValues& symbols);

std::optional<Graph> generalize(const Graph& a, const Graph& b, const SymbolValues& symbols, std::string* why_not);

}  // namespace jitc::graph
