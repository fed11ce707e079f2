// Vector groups (see cuda/codegen.cpp's header comment): 16 bytes' worth of consecutive elements per
// thread in pointwise kernels' element loops and in the split partial pass's reduction loops.
#include "inductor/cuda/printer.h"
#include "inductor/cuda/scalars.h"

#include <c10/core/ScalarType.h>

#include <fmt/format.h>

#include <algorithm>

namespace jitc::inductor::cuda_printer {

using cuda::storage_type;
using cuda::vector_type;

// Vector groups: pointwise kernels (one inner variable, tiled) whose element loop loads or stores a
// buffer contiguously in that variable.
void Printer::plan_vector_groups() {
  if (tile_ <= 0) return;
  const int u = k_.inner_vars().at(0);
  size_t widest = 0;
  for (size_t i = 0; i < k_.body.size(); ++i) {
    const Expr& e = k_.body[i];
    if ((e.op != ScalarOp::kLoad && e.op != ScalarOp::kStore) || placement_.scope[i] != Scope::kElement) continue;
    if (!analysis_.unit_stride(e.a, u)) continue;
    vector_access_.push_back(static_cast<int>(i));
    widest = std::max(widest, c10::elementSize(k_.buffers[e.buffer].dtype));
  }
  if (vector_access_.empty()) return;
  element_exprs_ = std::count(placement_.scope.begin(), placement_.scope.end(), Scope::kElement);
  group_ = static_cast<int>(std::min<size_t>(8, 16 / widest));
  while (group_ > 2 && element_exprs_ * group_ > kMaxUnrolledGroupExprs) group_ /= 2;  // two: no 1-byte vector type
  group_var_ = u;
  if (tile_ % group_ != 0) vector_access_.clear();
  const Expr& extent = k_.body[k_.vars[u].extent];
  whole_groups_ = extent.op == ScalarOp::kConst && extent.ivalue % group_ == 0;
}

// Each thread takes groups of group_ consecutive elements, whose contiguous accesses go through
// register arrays: moved at once (one 16-byte access) when the whole group is in the tile and every
// such address is aligned, element by element otherwise (the tile's last group, views at odd offsets).
// Where the sizes prove both (whole_groups_, access_aligned), only the 16-byte path is printed.
// The body is printed once, unrolled over the group; past the tile's end a lane computes on the last
// element's indices and stores nothing. (One body, not a second scalar copy for the tail: NVRTC's
// time grows with the code, and the first call of a graph waits for it.) When every group is whole and
// a thread takes a fixed number of them, group_passes prints them instead (see groups_per_thread).
void Printer::vector_groups(int var, const std::string& lo, const std::string& hi) {
  if (const int count = groups_per_thread(); count > 1) {
    group_passes({var}, count, fmt::format("{} + threadIdx.x * {}", lo, group_), hi, false, [&] { element_body(); });
    return;
  }
  const std::string g = fresh("g");
  std::string whole = fresh("whole");
  line(fmt::format("for (idx_t {} = {} + threadIdx.x * {}; {} < {}; {} += blockDim.x * {}) {{", g, lo, group_, g, hi, g, group_));
  var_value_[var] = g;
  const std::vector<std::string> address = load_group(g, hi, whole, whole_groups_ ? "true" : fmt::format("{} + {} <= {}", g, group_, hi));
  group_lane_ = fresh("l");
  line("#pragma unroll");
  line(fmt::format("for (int {} = 0; {} < {}; ++{}) {{", group_lane_, group_lane_, group_, group_lane_));
  var_value_[var] = fresh("c");
  if (whole_groups_) {
    line(fmt::format("const idx_t {} = {} + {};", var_value_[var], g, group_lane_));
  } else {
    group_live_ = fresh("live");
    line(fmt::format("const bool {} = {} + {} < {};", group_live_, g, group_lane_, hi));
    line(fmt::format("const idx_t {} = {} ? {} + {} : {} - 1;", var_value_[var], group_live_, g, group_lane_, hi));
  }
  element_body();
  line("}");
  group_lane_.clear();
  group_live_.clear();
  move_group(g, hi, whole, address, ScalarOp::kStore);
  line("}");
}

// A thread's groups of a tile, when it takes a fixed number of them and each is whole: they go through
// group_passes, every group's loads issued before any group's arithmetic. The loop of vector_groups
// waits for each group's loads in turn. On the H100, jitc's kernels for [4096, 4096] floats edited by hand
// to do this (two groups per thread, 128 threads over 1024-element tiles) measured slightly faster for
// tanh-GELU, x + 1 and (sin+cos).relu (benchmarks/RESULTS.md, session 11).
int Printer::groups_per_thread() const {
  constexpr int kMaxGroupsPerThread = 4;  // register arrays per access: groups x group_ elements
  const int64_t per_pass = static_cast<int64_t>(config_.threads) * group_;
  if (!whole_groups_ || tile_ % per_pass != 0) return 1;
  const int64_t count = tile_ / per_pass;
  return count <= kMaxGroupsPerThread && element_exprs_ * group_ * count <= kMaxUnrolledGroupExprs ? static_cast<int>(count) : 1;
}

std::vector<std::string> Printer::load_group(const std::string& g, const std::string& hi, std::string& whole, const std::string& inside) {
  const auto before = emitted_;  // the addresses' index arithmetic is printed again for each lane
  const std::vector<std::string> address = group_addresses();
  const std::string condition = aligned(inside, address);
  if (condition == "true") whole = condition;
  else line(fmt::format("const bool {} = {};", whole, condition));
  declare_group_arrays("");
  move_group(g, hi, whole, address, ScalarOp::kLoad);
  emitted_ = before;
  return address;
}

// The first address of each vector access of the group being printed.
std::vector<std::string> Printer::group_addresses() {
  std::vector<std::string> address;
  for (int i : vector_access_) address.push_back(fmt::format("(buf{} + {})", k_.body[i].buffer, emit(k_.body[i].a)));
  return address;
}

// `inside` and every vector access at its address aligned for a group-wide access; "true" when that
// holds for every group.
std::string Printer::aligned(const std::string& inside, const std::vector<std::string>& address) const {
  std::string condition = inside;
  for (size_t j = 0; j < vector_access_.size(); ++j)
    if (!access_aligned(vector_access_[j]))
      condition += fmt::format(" && ((unsigned long long){} & {}) == 0", address[j], group_bytes(k_.body[vector_access_[j]]) - 1);
  return condition;
}

// Vector access i is aligned for a group-wide access at every group's start: its index is a multiple of
// the group whenever the grouped variable is (as it is at a group's start), and its buffer starts at a
// 16-byte boundary, which the runtime ensures (Program::launch copies an input view that starts
// elsewhere). The unaligned path then need not be printed: on the H100 host, NVRTC compiled `a + 1`
// markedly faster without it (benchmarks/RESULTS.md, sessions 9 and 10).
bool Printer::access_aligned(int i) const { return analysis_.multiple_of(k_.body[i].a, group_var_, group_); }

// The register arrays of the vector accesses: v<access>[group_], after `dims` (persistent rows: one per group).
void Printer::declare_group_arrays(const std::string& dims) {
  for (int i : vector_access_)
    line(fmt::format("__align__(16) {} v{}{}[{}];", storage_type(k_.buffers[k_.body[i].buffer].dtype), i, dims, group_));
}

// The group's loads into (op kLoad) or stores from its register arrays (v<access><group_slot_>). A
// persistent row's group lies inside its row: its element-by-element path needs no bounds (NVRTC compiled
// layer_norm over rows of 4096 floats faster without them, though not as fast as without groups;
// benchmarks/RESULTS.md, session 8).
void Printer::move_group(const std::string& g, const std::string& hi, const std::string& whole, const std::vector<std::string>& address,
                         ScalarOp op) {
  const bool inside = !group_slot_.empty();
  std::string at_once, one_by_one;
  for (size_t j = 0; j < vector_access_.size(); ++j) {
    const Expr& e = k_.body[vector_access_[j]];
    if (e.op != op) continue;
    const std::string type = storage_type(k_.buffers[e.buffer].dtype), v = fmt::format("v{}{}", vector_access_[j], group_slot_);
    const std::string vector = vector_type(group_bytes(e)), bound = fmt::format("{} + l < {}", g, hi);
    if (op == ScalarOp::kLoad) {
      at_once += fmt::format("*({0}*){1} = *(const {0}*){2}; ", vector, v, address[j]);
      one_by_one +=
          inside ? fmt::format("{}[l] = {}[l]; ", v, address[j]) : fmt::format("{}[l] = {} ? {}[l] : ({})0; ", v, bound, address[j], type);
    } else {
      at_once += fmt::format("*({0}*){1} = *(const {0}*){2}; ", vector, address[j], v);
      one_by_one += fmt::format("{}{}[l] = {}[l]; ", inside ? "" : "if (" + bound + ") ", address[j], v);
    }
  }
  if (at_once.empty()) return;
  if (whole == "true") {
    line(at_once);
    return;
  }
  line(fmt::format("if ({}) {{ {}}} else {{", whole, at_once));
  line("#pragma unroll");  // constant indices: the register arrays stay in registers
  line(fmt::format("  for (int l = 0; l < {}; ++l) {{ {}}}", group_, one_by_one));
  line("}");
}

// Where the group being printed keeps element `lane` of vector access i.
std::string Printer::group_element(int i) const { return fmt::format("v{}{}[{}]", i, group_slot_, group_lane_); }

size_t Printer::group_bytes(const Expr& access) const { return group_ * c10::elementSize(k_.buffers[access.buffer].dtype); }

bool Printer::in_vector_group(const Expr& e) const {
  if (group_lane_.empty()) return false;
  const int i = static_cast<int>(&e - k_.body.data());
  return std::find(vector_access_.begin(), vector_access_.end(), i) != vector_access_.end();
}

// Persistent rows in groups: when a row's loops read or write buffers contiguously along their innermost
// variable (constant, a multiple of the group), a thread's positions come in groups of group_ neighbours,
// (thread + k * threads) * group_ + l, so that each such access moves 16 bytes at once. On the H100,
// softmax and layer_norm over rows of 4096 floats measured slightly faster so (a standalone
// microbenchmark; benchmarks/RESULTS.md, session 8).
void Printer::plan_persistent_groups() {
  std::vector<std::pair<int, std::vector<int>>> loops;  // (loop, its variables)
  if (!k_.inner_vars().empty()) loops.emplace_back(kElementLoop, k_.inner_vars());
  for (int loop = 0; loop < k_.num_reduction_loops; ++loop) loops.emplace_back(loop, k_.loop_vars(loop));
  size_t widest = 0;
  for (const auto& [loop, vars] : loops)
    for (int i : persistent_group_accesses(loop, vars.back()))
      widest = std::max(widest, c10::elementSize(k_.buffers[k_.body[i].buffer].dtype));
  if (widest == 0) return;
  const int group = static_cast<int>(std::min<size_t>(8, 16 / widest));
  for (const auto& [loop, vars] : loops) {
    const Expr& extent = k_.body[k_.vars[vars.back()].extent];
    if (extent.op != ScalarOp::kConst || extent.ivalue % group != 0) return;
  }
  const int64_t groups = (row_elements_ + config_.threads * group - 1) / (config_.threads * group);
  if (groups * group > kMaxItemsPerThread) return;
  group_ = group;
  items_ = static_cast<int>(groups * group);
}

// Loop `loop`'s loads (and the element loop's stores) that step by one element along `innermost`; loads
// an earlier loop of the row keeps in registers are read from there instead.
std::vector<int> Printer::persistent_group_accesses(int loop, int innermost) const {
  std::vector<int> out;
  const auto& keys = analysis_.positional_keys();
  for (size_t i = 0; i < k_.body.size(); ++i) {
    const Expr& e = k_.body[i];
    const bool in_loop = loop == kElementLoop ? placement_.scope[i] == Scope::kElement
                                              : placement_.scope[i] == Scope::kReduction && placement_.loop[i] == loop;
    if (!in_loop || (e.op != ScalarOp::kLoad && e.op != ScalarOp::kStore) || !analysis_.unit_stride(e.a, innermost)) continue;
    if (auto array = register_array_.find(keys[i]);
        e.op == ScalarOp::kLoad && array != register_array_.end() && filled_.count(array->second))
      continue;
    out.push_back(static_cast<int>(i));
  }
  return out;
}

// A persistent loop over groups: a thread's groups of the row (a row's last groups may lie past its end).
void Printer::persistent_groups(int loop, const std::vector<int>& vars, const std::function<void()>& body) {
  vector_access_ = persistent_group_accesses(loop, vars.back());
  group_var_ = vars.back();
  const bool ragged = row_elements_ % (config_.threads * group_) != 0;
  group_passes(vars, items_ / group_, fmt::format("threadIdx.x * {}", group_), ragged ? std::to_string(row_elements_) : "", true, body);
  vector_access_.clear();
}

// A thread's groups origin + k * threads * group_ (k < count; those at or past `end`, when given, skipped)
// in two unrolled passes: every group's contiguous loads into its register arrays (at once
// when aligned, as in vector_groups), then each group's positions and its stores. (Loads, arithmetic,
// then the next group's loads: each group waits for its own loads, and (x*x).sum(1) of 8192x4096 floats
// measured slower on the H100; benchmarks/RESULTS.md, session 8.) `row_lanes`: a persistent row's
// positions, whose register arrays are indexed by k * group_ + l.
void Printer::group_passes(const std::vector<int>& vars, int count, const std::string& origin, const std::string& end, bool row_lanes,
                           const std::function<void()>& body) {
  const std::string whole = fresh("whole");
  const bool tested = !std::all_of(vector_access_.begin(), vector_access_.end(), [&](int i) { return access_aligned(i); });
  const auto whole_of = [&](const std::string& k) { return tested ? fmt::format("{}[{}]", whole, k) : std::string("true"); };
  declare_group_arrays(fmt::format("[{}]", count));
  if (tested) line(fmt::format("bool {}[{}];", whole, count));
  each_group(vars, count, origin, end, [&](const std::string& k, const std::string& g) {
    const auto address = group_addresses();
    if (tested) line(fmt::format("{} = {};", whole_of(k), aligned("true", address)));
    move_group(g, end, whole_of(k), address, ScalarOp::kLoad);
  });
  each_group(vars, count, origin, end, [&](const std::string& k, const std::string& g) {
    const auto before = emitted_;
    const auto address = group_addresses();
    emitted_ = before;  // printed again for each lane
    const std::string first = var_value_[vars.back()];
    group_lane_ = fresh("l");
    line("#pragma unroll");
    line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", group_lane_, group_));
    if (row_lanes) {
      lane_ = fresh("lane");
      line(fmt::format("const int {} = {} * {} + {};", lane_, k, group_, group_lane_));
    }
    var_value_[vars.back()] = fresh("c");
    line(fmt::format("const idx_t {} = {} + {};", var_value_[vars.back()], first, group_lane_));
    body();
    line("}");
    group_lane_.clear();
    lane_.clear();
    move_group(g, end, whole_of(k), address, ScalarOp::kStore);
  });
}

// An unrolled loop over groups origin + k * threads * group_ (k < count): `body` gets the group's number
// and first position, with the variables at that position; groups at or past `end` (when given) skipped.
void Printer::each_group(const std::vector<int>& vars, int count, const std::string& origin, const std::string& end,
                         const std::function<void(const std::string&, const std::string&)>& body) {
  const auto before = emitted_;
  const std::string k = fresh("k"), g = fresh("g");
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", k, count));
  line(fmt::format("const idx_t {} = {} + {} * {};", g, origin, k, config_.threads * group_));
  if (!end.empty()) line(fmt::format("if ({} < {}) {{", g, end));
  decompose(vars, g);
  group_slot_ = fmt::format("[{}]", k);
  body(k, g);
  group_slot_.clear();
  if (!end.empty()) line("}");
  line("}");
  emitted_ = before;
}

// The partial pass's groups: each thread takes group_ consecutive positions of its slice (slices and
// the innermost extent are multiples of group_, so a group is whole and inside one innermost run),
// kPartialUnroll groups per step, their loads issued together. On the H100, (x*x).sum() of 8192x4096 floats
// into 1024 slices measured faster with four groups per step than with one (a standalone microbenchmark;
// benchmarks/RESULTS.md, session 8).
void Printer::partial_groups(const std::vector<int>& vars, const std::string& lo, const std::string& hi,
                             const std::function<void()>& body) {
  constexpr int kPartialUnroll = 4;
  const std::string g = fresh("g");
  line(fmt::format("for (idx_t {0} = {1} + threadIdx.x * {2}; {0} < {3}; {0} += {4}) {{", g, lo, group_, hi,
                   config_.threads * group_ * kPartialUnroll));
  group_passes(vars, kPartialUnroll, g, hi, false, body);
  line("}");
}

// Plans partial_groups for reduction r's loop: its loads that step by one element along the loop's
// innermost variable. (On the H100, (x*x).mean() of 8192x4096 ran much closer to the copy roofline with
// groups of 4 floats than with one element per step and the loop unrolled 8 times; benchmarks/RESULTS.md,
// session 5.)
void Printer::plan_partial_groups(int r, const std::vector<int>& vars) {
  vector_access_.clear();
  const int u = vars.back();
  const Expr& extent = k_.body[k_.vars[u].extent];
  size_t widest = 0;
  for (int i = 0; i < r; ++i) {
    const Expr& e = k_.body[i];
    if (e.op != ScalarOp::kLoad || placement_.scope[i] != Scope::kReduction || placement_.loop[i] != k_.body[r].loop) continue;
    if (!analysis_.unit_stride(e.a, u)) continue;
    vector_access_.push_back(i);
    widest = std::max(widest, c10::elementSize(k_.buffers[e.buffer].dtype));
  }
  if (vector_access_.empty()) return;
  group_ = static_cast<int>(std::min<size_t>(8, 16 / widest));
  group_var_ = u;
  // Whole groups in every slice: a constant slice length that groups divide, or (at a symbolic size) one
  // that slice_bounds rounds up to whole groups.
  const int64_t elements = constant_elements(k_, vars);
  const int64_t chunk = elements < 0 ? 0 : (elements + config_.split - 1) / config_.split;
  if (extent.op != ScalarOp::kConst || extent.ivalue % group_ != 0 || chunk % group_ != 0) vector_access_.clear();
}

}  // namespace jitc::inductor::cuda_printer
