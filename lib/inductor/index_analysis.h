// Facts about a kernel's index expressions that the CUDA printer needs to choose a faster mapping:
// which expressions depend on a loop variable, which indices step by exactly one element per step of a
// variable (contiguous: 16-byte vector loads apply), and which loads in different loops of a row read
// the same element (persistent reductions keep it in registers instead of reading it again).
#pragma once
#include "inductor/kernel_ir.h"

#include <cstddef>
#include <optional>
#include <vector>

namespace jitc::inductor {

class IndexAnalysis {
 public:
  explicit IndexAnalysis(const Kernel& kernel);

  bool depends_on(int expr, int var) const;
  // index == (an expression independent of var) + var
  bool unit_stride(int index, int var) const;
  // index is a multiple of `factor` (a power of two) whenever var is, whatever the other variables and
  // the symbols: what lets a vector group's 16-byte access go without an alignment test.
  bool multiple_of(int index, int var, int64_t factor) const;
  // A number per expression, equal for two expressions that compute the same value when the d-th
  // variable of every reduction loop and of the element loop take the same value (loops of one shape).
  const std::vector<int>& positional_keys() const { return keys_; }

 private:
  void number_positionally();
  int64_t power_of_two_factor(int expr, int var, int64_t var_factor) const;

  const Kernel& k_;
  std::vector<std::vector<bool>> deps_;  // per expression, per variable
  std::vector<int> keys_;
};

// An expression as an affine function of the loop vars, for the passes that reorder or merge loops:
// sum over v of coefficient[v] * v, plus a part free of the vars, when opaque[v] is false for every v.
// opaque[v]: depends on v other than affinely (a comparison, a division, a cast, a product of vars or with
// a symbol). A loaded value is data, free of the vars of its address (those passes check every address
// themselves), but marks `loaded`. A store depends on the vars of the value it stores (opaque: reordering
// or merging would change a stored index), not on those of its address.
struct AffineForm {
  std::vector<int64_t> coefficient;  // per variable
  std::vector<bool> opaque;          // per variable
  bool loaded = false;

  bool affine() const;
};

std::vector<AffineForm> affine_forms(const Kernel& kernel);

// The value of expression `expr` when it is an integer (or bool) constant.
std::optional<int64_t> integer_constant(const Kernel& kernel, int expr);

// The elements of a row when every reduction loop and the element loop run over one constant shape
// (positional keys then name the same element in every loop); 0 otherwise. Persistent rows (CUDA) and
// kept row values (CPU) need it.
int64_t constant_row_elements(const Kernel& kernel);

// Reductions whose neighbouring rows are neighbours in memory and whose reduced elements are not (a
// reduction over an outer dim, x.sum(0)): the bytes of the narrowest element read or written
// contiguously across rows, which both backends size their blocks of rows side by side by; 0 for every
// other kernel.
size_t side_by_side_row_bytes(const Kernel& kernel);

}  // namespace jitc::inductor
