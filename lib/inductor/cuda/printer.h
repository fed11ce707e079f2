// The CUDA code generator's printer, shared by its three files: cuda/codegen.cpp (rows, block loops,
// persistent rows, reductions, expressions, loads and stores), cuda/codegen_groups.cpp (vector groups of
// pointwise kernels and of the split partial pass) and cuda/codegen_split.cpp (split reductions' rows,
// slices and workspace). Internal to this folder: emit_cuda (codegen.h) is the interface.
#pragma once
#include "inductor/cuda/codegen.h"
#include "inductor/index_analysis.h"
#include "inductor/kernel_ir.h"
#include "inductor/placement.h"

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace jitc::inductor::cuda_printer {

// A split kernel prints twice: the partial pass (slices of rows into the workspace) and the final one
// (each row's partial results combined, then the rest of the row).
enum class Phase { kWhole, kPartial, kFinal };

constexpr int kElementLoop = -1;  // block_loop's loop: the element loop (else a reduction loop's index)

class Printer {
 public:
  // combo_part: print a __device__ function taking its block index and its index constants
  // (hoisted_constants), for a combo kernel (cuda/combos.h).
  Printer(const Kernel& k, bool index32, CudaConfig config, std::string function, Phase phase = Phase::kWhole, bool combo_part = false);
  std::string run();
  // A combo part's index constants (sizes, strides, offsets) in the order its code reads them from
  // `consts`: parts whose code is the same but for them share one function.
  const std::vector<int64_t>& hoisted_constants() const { return hoisted_; }

 private:
  void line(const std::string& s) { out_ += "  " + s + "\n"; }
  std::string name(int e) const { return fmt::format("e{}", e); }
  std::string fresh(const char* stem) { return fmt::format("{}{}", stem, counter_++); }

  // ---- rows, loops, reductions, expressions (cuda/codegen.cpp) ----------------------------------
  void pair_sin_and_cos();
  void plan_persistent_rows();
  std::string tiles_per_row();
  void tile_loop();
  std::optional<int64_t> constant_tile_count() const;
  void row();
  std::string column_row(const std::string& group);
  // A loop over `vars` spread over the block: reduction loop `loop`'s, or the element loop's (kElementLoop).
  void block_loop(int loop, const std::vector<int>& vars, const std::string& lo, const std::string& hi, const std::function<void()>& body);
  void decompose(const std::vector<int>& vars, std::string flat);
  void persistent_loop(const std::vector<int>& vars, const std::function<void()>& body);
  void declare_register_arrays();
  void element_loop(const std::string& column_tile);
  void element_body();
  // One reduction's accumulator (and an arg reduction's position) while its loop is printed.
  struct Accumulator {
    int r;
    std::string type, acc, pos;
    bool arg;
  };
  void reduction(int r);
  std::vector<int> reductions_of_loop(int r) const;
  std::string operand(int e);
  Accumulator open_accumulator(int r);
  void fold(const Accumulator& a, const std::string& v, const std::string& at);
  void close_accumulator(const Accumulator& a);
  void emit_reduction_operand(int r);
  std::string emit(int i);
  void expr(int i, const Expr& e);
  void load(int i, const Expr& e);
  int register_array_of(int i) const;
  void store(const Expr& e);
  std::string row_writer() const;

  // ---- vector groups (cuda/codegen_groups.cpp) --------------------------------------------------
  void plan_vector_groups();
  void vector_groups(int var, const std::string& lo, const std::string& hi);
  int groups_per_thread() const;
  void move_group(const std::string& g, const std::string& hi, const std::string& whole, const std::vector<std::string>& address,
                  ScalarOp op);
  // The group's first address per vector access, `whole` (`inside` and every address aligned for a
  // group-wide access) and the group's loads into its register arrays; returns the addresses.
  // `whole` becomes "true" when every group is known to be whole and aligned.
  std::vector<std::string> load_group(const std::string& g, const std::string& hi, std::string& whole, const std::string& inside);
  std::vector<std::string> group_addresses();
  std::string aligned(const std::string& inside, const std::vector<std::string>& address) const;
  bool access_aligned(int i) const;
  void declare_group_arrays(const std::string& dims);
  std::string group_element(int i) const;
  void group_passes(const std::vector<int>& vars, int count, const std::string& origin, const std::string& end, bool row_lanes,
                    const std::function<void()>& body);
  void each_group(const std::vector<int>& vars, int count, const std::string& origin, const std::string& end,
                  const std::function<void(const std::string&, const std::string&)>& body);
  size_t group_bytes(const Expr& access) const;
  bool in_vector_group(const Expr& e) const;
  void plan_persistent_groups();
  void persistent_groups(int loop, const std::vector<int>& vars, const std::function<void()>& body);
  std::vector<int> persistent_group_accesses(int loop, int innermost) const;
  void partial_groups(const std::vector<int>& vars, const std::string& lo, const std::string& hi, const std::function<void()>& body);
  void plan_partial_groups(int r, const std::vector<int>& vars);

  // ---- split reductions (cuda/codegen_split.cpp) ------------------------------------------------
  std::string split_row();
  void combine_partials(int r, const std::string& ty, const std::function<void(const std::string&, const std::string&)>& fold);
  // A variance's two sums (welford_pairs) in one pass: slices into (count, mean, M2) in the partial pass,
  // combined in slice order in the final one, where `sum` reads mean * count and `squares` M2.
  void welford_reduction(int sum, int squares);
  std::string first_value(int r, const std::string& lo, const std::string& hi);
  std::pair<std::string, std::string> slice_bounds(const std::vector<int>& vars);
  std::string loop_elements(const std::vector<int>& vars);
  std::string partial_slot(int r) const;
  int64_t rows() const;
  int64_t positions_offset() const;

  const Kernel& k_;
  bool index32_;
  CudaConfig config_;
  int64_t tile_;  // elements per tile of a tiled (pointwise) kernel: the configuration's, else the kernel's
  std::string function_;
  std::vector<bool> index_;
  std::vector<bool> relaxed_;  // float32 values only ever rounded to 16 bits: approximate exp and division
  Placement placement_;
  IndexAnalysis analysis_;
  std::vector<bool> emitted_;
  std::map<int, int> sincos_partner_;  // sin <-> cos of the same value
  // persistent rows
  int64_t row_elements_ = 0;
  int items_ = 0;                      // positions per thread; 0: rows are looped over
  std::map<int, int> register_array_;  // positional key of a load -> its register array
  std::set<int> filled_;               // register arrays a loop printed so far fills
  std::string lane_;                   // the unrolled position inside a persistent loop
  // split reductions
  Phase phase_;
  bool combo_part_;
  std::vector<int64_t> hoisted_;        // a combo part's index constants
  std::string split_row_, slice_;       // the row's flat index; the partial pass's slice of it
  std::map<int, int> welford_squares_;  // a variance's sum of squared deviations -> its sum (split only)
  // rows side by side
  std::string live_;  // this thread's row exists (empty: one row per block)
  // vector groups
  std::vector<int> vector_access_;  // contiguous loads and stores of the element loop (of the partial
                                    // pass's reduction loop being printed, in a split kernel)
  int group_ = 1;                   // elements per group
  int64_t element_exprs_ = 0;       // pointwise: expressions of the element body, unrolled per element
  int group_var_ = -1;              // the variable whose consecutive values a group holds
  bool whole_groups_ = false;       // pointwise: the element loop's extent is a multiple of the group
  std::string group_lane_;          // the element inside a group while its body is printed
  std::string group_slot_;          // persistent rows: the group's register arrays ("[k]")
  std::string group_live_;          // that element is inside the tile
  std::unordered_map<int, std::string> var_value_;
  std::string out_, tiles_per_row_;
  int counter_ = 0;
};

}  // namespace jitc::inductor::cuda_printer
