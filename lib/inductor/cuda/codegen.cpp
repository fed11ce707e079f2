// Kernel IR -> CUDA C for NVRTC. One thread block per tile (a row, or a piece of a row for pointwise
// kernels), tiles in a grid-stride loop when they may outnumber a launch's blocks. Inside a row:
//   - a reduction loop is spread over the block's threads (thread t takes positions t, t + blockDim...),
//     then reduced through warp shuffles and shared memory; every thread gets the result;
//   - the element loop is spread the same way, so that neighbouring threads touch neighbouring elements
//     (coalesced loads and stores for contiguous tensors);
//   - a value stored once per row is written by thread 0.
// Reductions over an outer dim (x.sum(0): neighbouring rows are neighbours in memory) map rows across
// lanes instead: a block takes `columns` rows side by side, thread t works on row t % columns and takes
// every (threads / columns)-th position of it, so each step of a warp reads whole 32-byte sectors; the
// partial results of a row are combined through shared memory (2-D tiling, as Inductor does).
// Reductions of few long rows (x.sum()) print as two kernels: a partial pass where many blocks each
// reduce a slice of a row into a workspace, and a final pass that combines a row's slices and finishes it.
// Two mappings make memory-bound kernels run near the copy bandwidth:
//   - persistent rows: when every loop of a row has the same constant shape and few elements per thread,
//     the loops are unrolled over a thread's positions and a load that several loops make (softmax reads
//     its row three times) is read once into registers;
//   - vector groups: in pointwise kernels, each thread takes 16 bytes' worth of consecutive elements, and
//     contiguous loads and stores move them with one 16-byte (or narrower) access when aligned; the
//     partial pass of a split reduction reads its slice the same way.
// Signature: extern "C" __global__ void <name>(Buffers buffers, Symbols symbols, long long tiles).
#include "inductor/cuda/codegen.h"

#include <jitc/detail/internal_assert.h>

#include "inductor/cuda/printer.h"
#include "inductor/cuda/scalars.h"
#include "inductor/index_analysis.h"
#include "inductor/placement.h"

#include <c10/core/ScalarType.h>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace jitc::inductor {

namespace cuda_printer {

using c10::ScalarType;
using cuda::c_type;
using cuda::combiner;
using cuda::identity;
using cuda::is_float;
using cuda::literal;
using cuda::storage_type;

Printer::Printer(const Kernel& k, bool index32, CudaConfig config, std::string function, Phase phase, bool combo_part)
    : k_(k),
      index32_(index32),
      config_(config),
      tile_(k.tile > 0 && config.tile > 0 ? config.tile : k.tile),
      function_(std::move(function)),
      placement_(place(k)),
      analysis_(k),
      emitted_(k.body.size()),
      phase_(phase),
      combo_part_(combo_part) {
  index_ = cuda::index_expressions(k_);
  relaxed_ = cuda::relaxed_math(k_);
  pair_sin_and_cos();
  plan_persistent_rows();
  plan_vector_groups();
  if (phase_ != Phase::kWhole) welford_squares_ = welford_pairs(k_);
}

std::string Printer::run() {
  // Indices in 32 bits when every buffer the kernel touches has fewer than 2^31 elements: 64-bit integer
  // arithmetic costs GPUs several instructions per operation.
  out_ += fmt::format("typedef {} idx_t;\n", index32_ ? "int" : "long long");
  const size_t pointers = k_.buffers.size() + (phase_ == Phase::kWhole ? 0 : 1);  // + the workspace
  out_ += fmt::format("struct Buffers_{} {{ void* p[{}]; }};\n", function_, std::max<size_t>(1, pointers));
  if (combo_part_) {
    // A part of a combo kernel (cuda/combos.h): the combo's function waits for the previous grid and
    // hands each part its own range of blocks.
    out_ += fmt::format(
        "__device__ __forceinline__ void {}(Buffers_{} buffers, const Symbols& symbols, long long block, const long long* __restrict__ "
        "consts) {{\n",
        function_, function_);
  } else {
    out_ += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(Buffers_{} buffers, Symbols symbols, long long tiles) {{\n",
                        config_.threads, function_, function_);
  }
  for (size_t b = 0; b < k_.buffers.size(); ++b)
    line(fmt::format("{}* __restrict__ buf{} = ({}*)buffers.p[{}];", storage_type(k_.buffers[b].dtype), b,
                     storage_type(k_.buffers[b].dtype), b));
  if (phase_ != Phase::kWhole) line(fmt::format("long long* __restrict__ workspace = (long long*)buffers.p[{}];", k_.buffers.size()));
  if (!combo_part_) {
    // Programmatic dependent launch: every kernel is launched to overlap the stream's previous one, so
    // it lets the next launch while it starts, then waits for the previous kernel before any memory access.
    line("let_dependents_launch();");
    line("wait_for_previous_grid();");
  }
  for (size_t i = 0; i < k_.body.size(); ++i)
    if (placement_.scope[i] == Scope::kEntry) emit(static_cast<int>(i));
  tiles_per_row_ = tiles_per_row();
  tile_loop();
  out_ += "}\n";
  return out_;
}

// One tile per block when the launch covers every tile (constant sizes, at most kMaxGridBlocks tiles),
// else a grid-stride loop over tiles. The loop costs NVRTC time even when it never repeats, most around
// a row's barriers: on the H100 host, NVRTC compiled layer_norm, softmax and x.var() of 8192x4096 floats
// faster without it (benchmarks/RESULTS.md, session 10).
void Printer::tile_loop() {
  const auto tiles = constant_tile_count();
  if (combo_part_) {
    JITC_INTERNAL_ASSERT(tiles && *tiles <= kMaxGridBlocks, "a combo kernel's part needs a tile per block");
    line("{ const idx_t t = (idx_t)block;");
    row();
    line("}");
    return;
  }
  if (tiles && *tiles <= kMaxGridBlocks) {
    line("{ const idx_t t = blockIdx.x;");
    row();
    line("}");
    return;
  }
  line("for (idx_t t = blockIdx.x; t < (idx_t)tiles; t += gridDim.x) {");
  row();
  line("__syncthreads();");  // the next tile's row reuses the reductions' shared memory
  line("}");
}

// The tiles this function is launched over when no size is a symbol.
std::optional<int64_t> Printer::constant_tile_count() const {
  for (const Expr& e : k_.body)
    if (e.op == ScalarOp::kSym) return std::nullopt;
  CudaConfig launched = config_;
  if (phase_ == Phase::kFinal) launched.split = 0;  // the final pass runs over rows (Program::launch_split)
  return tile_count(k_, nullptr, launched);
}

// sin(x) and cos(x) of the same x are computed together.
void Printer::pair_sin_and_cos() {
  std::map<std::pair<int, ScalarType>, int> sin_of, cos_of;
  for (size_t i = 0; i < k_.body.size(); ++i) {
    const Expr& e = k_.body[i];
    if (e.op == ScalarOp::kSin) sin_of.emplace(std::make_pair(e.a, e.dtype), static_cast<int>(i));
    if (e.op == ScalarOp::kCos) cos_of.emplace(std::make_pair(e.a, e.dtype), static_cast<int>(i));
  }
  for (const auto& [operand, sin] : sin_of)
    if (auto cos = cos_of.find(operand); cos != cos_of.end()) {
      sincos_partner_[sin] = cos->second;
      sincos_partner_[cos->second] = sin;
    }
}

// Persistent rows: every reduction loop and the element loop run over one constant shape with at most
// kMaxItemsPerThread positions per thread. A load made by more than one loop gets a register array
// (indexed by the unrolled position, so it stays in registers) filled by the first loop that reads it.
void Printer::plan_persistent_rows() {
  const int64_t elements = constant_row_elements(k_);
  if (elements <= 0 || config_.columns > 0 || config_.split > 0) return;
  const int64_t items = (elements + config_.threads - 1) / config_.threads;
  if (items > kMaxItemsPerThread) return;
  row_elements_ = elements;
  items_ = static_cast<int>(items);
  plan_persistent_groups();
  const auto& keys = analysis_.positional_keys();
  std::map<int, std::set<int>> loops_reading;  // positional key of a load -> loops (-1: element loop)
  for (size_t i = 0; i < k_.body.size(); ++i)
    if (k_.body[i].op == ScalarOp::kLoad && placement_.scope[i] != Scope::kRow && placement_.scope[i] != Scope::kEntry)
      loops_reading[keys[i]].insert(placement_.scope[i] == Scope::kElement ? -1 : placement_.loop[i]);
  for (const auto& [key, loops] : loops_reading)
    if (loops.size() > 1) register_array_.emplace(key, static_cast<int>(register_array_.size()));
}

std::string Printer::tiles_per_row() {
  if (tile_ == 0) return "1ll";
  const auto inner = k_.inner_vars();
  JITC_INTERNAL_ASSERT(inner.size() == 1, "cuda codegen: a tiled kernel needs exactly one inner dim");
  const std::string v = fresh("tpr");
  line(fmt::format("const idx_t {} = ({} + {}) / {};", v, name(k_.vars[inner[0]].extent), tile_ - 1, tile_));
  return v;
}

void Printer::row() {
  std::string rest = "t", column_tile = "0ll";
  if (phase_ != Phase::kWhole) rest = split_row();
  else if (config_.columns > 0) rest = column_row("t");
  if (tile_ > 0) {
    rest = fresh("row");
    column_tile = fresh("ctile");
    line(fmt::format("const idx_t {} = t / {}, {} = t % {};", rest, tiles_per_row_, column_tile, tiles_per_row_));
  }
  const auto outer = k_.outer_vars();
  for (size_t d = outer.size(); d-- > 0;) {
    const std::string extent = name(k_.vars[outer[d]].extent);
    var_value_[outer[d]] = fresh("o");
    const std::string next = fresh("q");
    line(fmt::format("const idx_t {} = {} % {}, {} = {} / {};", var_value_[outer[d]], rest, extent, next, rest, extent));
    rest = next;
  }
  declare_register_arrays();
  for (size_t i = 0; i < k_.body.size(); ++i) {
    // The partial pass stops at the reductions: what follows them in the row is the final pass's.
    if (placement_.scope[i] == Scope::kRow && phase_ != Phase::kPartial) emit(static_cast<int>(i));
    else if (k_.body[i].op == ScalarOp::kReduce) reduction(static_cast<int>(i));
  }
  element_loop(column_tile);
}

// Side-by-side rows: this thread's row in the group of rows `group`, clamped to the last one so that
// threads past the end compute (and never store) a valid row and still take part in the block's reductions.
std::string Printer::column_row(const std::string& group) {
  std::string rows = "((idx_t)1)";
  for (int v : k_.outer_vars()) rows = fmt::format("({} * {})", rows, name(k_.vars[v].extent));
  const std::string wanted = fresh("wanted"), row = fresh("row");
  live_ = fresh("live");
  line(fmt::format("const idx_t {} = {} * {} + threadIdx.x % {};", wanted, group, config_.columns, config_.columns));
  line(fmt::format("const bool {} = {} < {};", live_, wanted, rows));
  line(fmt::format("const idx_t {} = {} ? {} : {} - 1;", row, live_, wanted, rows));
  return row;
}

// A loop over the product of `vars`' extents (or [lo, hi) of one var), spread over the block (over the
// threads of a row when rows lie side by side).
void Printer::block_loop(int loop, const std::vector<int>& vars, const std::string& lo, const std::string& hi,
                         const std::function<void()>& body) {
  if (items_ > 0 && lo.empty()) return group_ > 1 ? persistent_groups(loop, vars, body) : persistent_loop(vars, body);
  std::string total = "((idx_t)1)";
  for (int v : vars) total = fmt::format("({} * {})", total, name(k_.vars[v].extent));
  const std::string i = fresh("i");
  if (config_.columns > 0) {
    // Unrolled so that several strided loads are in flight per thread.
    const std::string first = fmt::format("{}threadIdx.x / {}", lo.empty() ? "" : lo + " + ", config_.columns);
    line("#pragma unroll 4");
    line(fmt::format("for (idx_t {0} = {1}; {0} < {2}; {0} += {3}) {{", i, first, lo.empty() ? total : hi,
                     config_.threads / config_.columns));
    decompose(vars, i);
  } else if (!lo.empty() && !vector_access_.empty()) {
    return partial_groups(vars, lo, hi, body);
  } else if (!lo.empty()) {
    if (phase_ == Phase::kPartial) line("#pragma unroll 8");  // several loads in flight per thread
    line(fmt::format("for (idx_t {} = {} + threadIdx.x; {} < {}; {} += blockDim.x) {{", i, lo, i, hi, i));
    decompose(vars, i);
  } else {
    line(fmt::format("for (idx_t {} = threadIdx.x; {} < {}; {} += blockDim.x) {{", i, i, total, i));
    decompose(vars, i);
  }
  body();
  line("}");
}

// The variables' values at flat position `flat` of their loop nest (row-major).
void Printer::decompose(const std::vector<int>& vars, std::string flat) {
  for (size_t d = vars.size(); d-- > 0;) {
    if (d == 0) {
      var_value_[vars[d]] = flat;
      continue;
    }
    const std::string extent = name(k_.vars[vars[d]].extent);
    var_value_[vars[d]] = fresh("c");
    const std::string next = fresh("r");
    line(fmt::format("const idx_t {} = {} % {}, {} = {} / {};", var_value_[vars[d]], flat, extent, next, flat, extent));
    flat = next;
  }
}

// A thread's positions of a persistent row, unrolled: position = thread + lane * threads.
void Printer::persistent_loop(const std::vector<int>& vars, const std::function<void()>& body) {
  lane_ = fresh("lane");
  const std::string i = fresh("i");
  line("#pragma unroll");
  line(fmt::format("for (int {} = 0; {} < {}; ++{}) {{", lane_, lane_, items_, lane_));
  line(fmt::format("const idx_t {} = threadIdx.x + {} * {};", i, lane_, config_.threads));
  const bool ragged = row_elements_ % config_.threads != 0;
  if (ragged) line(fmt::format("if ({} < {}) {{", i, row_elements_));
  decompose(vars, i);
  body();
  if (ragged) line("}");
  line("}");
  lane_.clear();
}

void Printer::declare_register_arrays() {
  const auto& keys = analysis_.positional_keys();
  std::set<int> declared;
  for (size_t i = 0; i < k_.body.size(); ++i) {
    auto it = register_array_.find(keys[i]);
    if (k_.body[i].op != ScalarOp::kLoad || it == register_array_.end() || !declared.insert(it->second).second) continue;
    line(fmt::format("{} row{}[{}];", c_type(k_.body[i].dtype), it->second, items_));
  }
}

void Printer::element_loop(const std::string& column_tile) {
  bool any = false;
  for (size_t i = 0; i < k_.body.size(); ++i) any |= placement_.scope[i] == Scope::kElement;
  if (!any) return;
  std::string lo, hi;
  const auto inner = k_.inner_vars();
  if (tile_ > 0) {
    lo = fresh("lo"), hi = fresh("hi");
    const std::string extent = name(k_.vars[inner[0]].extent);
    line(fmt::format("const idx_t {} = {} * {}, {} = min({}, ({})({} + {}));", lo, column_tile, tile_, hi, extent, "idx_t", lo, tile_));
  }
  auto saved = emitted_;
  if (!live_.empty()) line(fmt::format("if ({}) {{", live_));  // no reduction inside: no barrier skipped
  if (!vector_access_.empty()) vector_groups(inner[0], lo, hi);
  else block_loop(kElementLoop, inner, lo, hi, [&] { element_body(); });
  if (!live_.empty()) line("}");
  emitted_ = std::move(saved);
}

void Printer::element_body() {
  for (size_t i = 0; i < k_.body.size(); ++i)
    if (placement_.scope[i] == Scope::kElement) emit(static_cast<int>(i));
}

// A reduction loop, with every reduction that runs over it (merge_reduction_loops.h) folded in one pass:
// each has its accumulator, and each then combines the block's (or writes the slice's) result.
void Printer::reduction(int r) {
  if (emitted_[r] || welford_squares_.count(r)) return;  // printed with its loop, or with its sum (welford_reduction)
  for (const auto& [squares, sum] : welford_squares_)
    if (sum == r) return welford_reduction(sum, squares);
  std::vector<Accumulator> accumulators;
  for (int x : reductions_of_loop(r)) accumulators.push_back(open_accumulator(x));
  auto saved = emitted_;
  if (phase_ == Phase::kFinal) {
    combine_partials(r, accumulators[0].type, [&](const std::string& v, const std::string& at) { fold(accumulators[0], v, at); });
  } else {
    const int last = accumulators.back().r;
    const auto vars = k_.loop_vars(k_.body[r].loop);
    std::string lo, hi;
    if (phase_ == Phase::kPartial) plan_partial_groups(last, vars);
    if (phase_ == Phase::kPartial) std::tie(lo, hi) = slice_bounds(vars);
    block_loop(k_.body[r].loop, vars, lo, hi, [&] {
      emit_reduction_operand(last);
      for (const Accumulator& a : accumulators) fold(a, operand(k_.body[a.r].a), a.arg ? operand(k_.body[a.r].b) : "");
    });
  }
  emitted_ = std::move(saved);
  for (const Accumulator& a : accumulators) close_accumulator(a);
}

// A reduction's operand inside its loop: a row value that a later reduction of the loop folds (its loop
// reads no loop variable) is not printed yet where the loop starts; a reduction's result is.
std::string Printer::operand(int e) { return k_.body[e].op == ScalarOp::kReduce ? name(e) : emit(e); }

// Reduction r and the later ones of its loop that are not printed yet, but for a variance's sums (the final
// pass: r alone, each combines its own partial results).
std::vector<int> Printer::reductions_of_loop(int r) const {
  std::vector<int> out{r};
  if (phase_ == Phase::kFinal) return out;
  std::set<int> welford;
  for (const auto& [squares, sum] : welford_squares_) welford.insert({squares, sum});
  for (size_t i = r + 1; i < k_.body.size(); ++i)
    if (k_.body[i].op == ScalarOp::kReduce && k_.body[i].loop == k_.body[r].loop && !emitted_[i] && !welford.count(static_cast<int>(i)))
      out.push_back(static_cast<int>(i));
  return out;
}

Printer::Accumulator Printer::open_accumulator(int r) {
  const Expr& e = k_.body[r];
  const ScalarType vt = k_.body[e.a].dtype;
  // bools reduce as ints: shuffles move 32-bit words
  Accumulator a{r, vt == ScalarType::Bool ? "int" : c_type(vt), fresh("acc"), fresh("pos"),
                e.reduce == ReduceKind::kArgMax || e.reduce == ReduceKind::kArgMin};
  line(fmt::format("{} {} = {};", a.type, a.acc, identity(e.reduce, vt)));
  if (a.arg) line(fmt::format("long long {} = (long long)1 << 62;", a.pos));
  return a;
}

// a's accumulator (and position) := itself combined with v (at position `at`).
void Printer::fold(const Accumulator& a, const std::string& v, const std::string& at) {
  const Expr& e = k_.body[a.r];
  if (a.arg)
    line(fmt::format("if (arg_better<{}>({}, {}, {}, {}, {})) {{ {} = {}; {} = {}; }}", a.type, e.reduce == ReduceKind::kArgMax, v, at,
                     a.acc, a.pos, a.acc, v, a.pos, at));
  else line(fmt::format("{{ const {} a = {}, b = {}; {} = {}; }}", a.type, a.acc, v, a.acc, combiner(e.reduce)));
}

// The block's (or a row's threads') result of a's accumulator; the partial pass writes it to the workspace.
void Printer::close_accumulator(const Accumulator& a) {
  const Expr& e = k_.body[a.r];
  const ScalarType vt = k_.body[e.a].dtype;
  // Side by side, a row's threads are every columns-th thread: combined through shared memory only.
  const std::string scope = config_.columns > 0 ? "column" : "block";
  const std::string types = config_.columns > 0 ? fmt::format("{}, {}", config_.columns, a.type) : a.type;
  const std::string slot = phase_ == Phase::kWhole ? "" : partial_slot(a.r);
  if (a.arg) {
    const std::string winner = phase_ == Phase::kPartial ? fresh("winner") : "";
    if (!winner.empty()) line(fmt::format("{} {};", a.type, winner));
    line(fmt::format("const long long {} = {}_arg_reduce<{}>({}, {}, {}{});", name(a.r), scope, types, e.reduce == ReduceKind::kArgMax,
                     a.acc, a.pos, winner.empty() ? "" : ", &" + winner));
    if (!winner.empty())
      line(fmt::format("if (threadIdx.x == 0) {{ *({}*)(workspace + {}) = {}; workspace[{} + {}] = {}; }}", a.type, slot, winner,
                       positions_offset(), slot, name(a.r)));
  } else {
    const std::string combined = fresh("combined");
    line(fmt::format("const {} {} = {}_reduce<{}>({}, [](const {} a, const {} b) {{ return {}; }}, {});", a.type, combined, scope, types,
                     a.acc, a.type, a.type, combiner(e.reduce), identity(e.reduce, vt)));
    line(fmt::format("const {} {} = ({}){};", c_type(e.dtype), name(a.r), c_type(e.dtype), combined));
    if (phase_ == Phase::kPartial) line(fmt::format("{}*({}*)(workspace + {}) = {};", row_writer(), a.type, slot, combined));
  }
  emitted_[a.r] = true;
}

// What reduction r's loop computes per position before folding it in: its operand and what that needs
// (with the operands of the loop's earlier reductions).
void Printer::emit_reduction_operand(int r) {
  for (int i = 0; i < r; ++i)
    if (placement_.scope[i] == Scope::kReduction && placement_.loop[i] == k_.body[r].loop && k_.body[i].op != ScalarOp::kReduce) emit(i);
}

std::string Printer::emit(int i) {
  if (emitted_[i]) return name(i);
  const Expr& e = k_.body[i];
  for (int operand : {e.a, e.b, e.c})
    if (operand >= 0 && !emitted_[operand] && k_.body[operand].op != ScalarOp::kReduce) emit(operand);
  emitted_[i] = true;
  expr(i, e);
  return name(i);
}

void Printer::expr(int i, const Expr& e) {
  const ScalarType t = e.dtype;
  const std::string ty = index_[i] ? "idx_t" : c_type(t);
  const bool f = is_float(t);
  const std::string a = e.a >= 0 ? name(e.a) : "", b = e.b >= 0 ? name(e.b) : "", c = e.c >= 0 ? name(e.c) : "";
  auto define = [&](const std::string& value) { line(fmt::format("const {} {} = {};", ty, name(i), value)); };
  if (f && (e.op == ScalarOp::kSin || e.op == ScalarOp::kCos)) {
    if (auto partner = sincos_partner_.find(i); partner != sincos_partner_.end()) {
      // sin and cos of one value: sincos shares the argument reduction (the expensive part); out of line
      // (see the prelude).
      const int sin = e.op == ScalarOp::kSin ? i : partner->second, cos = e.op == ScalarOp::kSin ? partner->second : i;
      const std::string pair = fresh("sincos");
      line(fmt::format("const auto {} = sincos_out_of_line({});", pair, a));
      line(fmt::format("const {} {} = {}.s, {} = {}.c;", ty, name(sin), pair, name(cos), pair));
      emitted_[partner->second] = true;
      return;
    }
  }
  if (relaxed_[i] && e.op == ScalarOp::kExp) return define(fmt::format("__expf({})", a));
  if (relaxed_[i] && e.op == ScalarOp::kDiv) return define(fmt::format("fast_div({}, {})", a, b));
  switch (e.op) {
    case ScalarOp::kVar: define(var_value_.at(e.var)); break;
    case ScalarOp::kSym:
      define(t == ScalarType::Double ? fmt::format("__longlong_as_double(symbols.v[{}])", e.var)
                                     : fmt::format("(idx_t)symbols.v[{}]", e.var));
      break;
    case ScalarOp::kConst:
      if (combo_part_ && index_[i]) {
        define(fmt::format("(idx_t)consts[{}]", hoisted_.size()));
        hoisted_.push_back(e.ivalue);
        break;
      }
      define(f ? literal(e.value, t) : t == ScalarType::Bool ? (e.ivalue ? "true" : "false") : fmt::format("({}){}ll", ty, e.ivalue));
      break;
    case ScalarOp::kLoad: load(i, e); break;
    case ScalarOp::kStore: store(e); break;
    case ScalarOp::kCheck: line(fmt::format("if (!{}) check_failed();", a)); break;  // a device-side assert, as eager's
    default: define(cuda::value_of(e, ty, a, b, c));
  }
}

void Printer::load(int i, const Expr& e) {
  // In a persistent row, a load that another loop made already comes from registers.
  const int array = register_array_of(i);
  if (array >= 0 && filled_.count(array)) {
    line(fmt::format("const {} {} = row{}[{}];", c_type(e.dtype), name(i), array, lane_));
    return;
  }
  const ScalarType dtype = k_.buffers[e.buffer].dtype;
  const std::string raw = in_vector_group(e) ? group_element(i) : fmt::format("buf{}[{}]", e.buffer, name(e.a));
  std::string value = raw;
  if (dtype == ScalarType::Half) value = fmt::format("half_to_float({})", raw);
  if (dtype == ScalarType::BFloat16) value = fmt::format("bf16_to_float({})", raw);
  if (dtype == ScalarType::Bool) value = fmt::format("({} != 0)", raw);
  line(fmt::format("const {} {} = {};", c_type(e.dtype), name(i), value));
  if (array >= 0) {
    line(fmt::format("row{}[{}] = {};", array, lane_, name(i)));
    filled_.insert(array);
  }
}

// The condition under which a thread writes its row's value: the first thread of the row (of a live row,
// when rows lie side by side).
std::string Printer::row_writer() const {
  return live_.empty() ? "if (threadIdx.x == 0) " : fmt::format("if (threadIdx.x < {} && {}) ", config_.columns, live_);
}

int Printer::register_array_of(int i) const {
  if (lane_.empty()) return -1;
  auto it = register_array_.find(analysis_.positional_keys()[i]);
  return it == register_array_.end() ? -1 : it->second;
}

void Printer::store(const Expr& e) {
  const ScalarType dtype = k_.buffers[e.buffer].dtype;
  // A value rounded to the buffer's precision just before is stored from its unrounded operand (the
  // store rounds the same way): one conversion, not three.
  const Expr& stored = k_.body[e.b];
  const bool rounded = stored.op == ScalarOp::kRoundTo && static_cast<ScalarType>(stored.ivalue) == dtype;
  std::string value = name(rounded ? stored.a : e.b);
  if (dtype == ScalarType::Half) value = fmt::format("float_to_half({})", value);
  if (dtype == ScalarType::BFloat16) value = fmt::format("float_to_bf16({})", value);
  if (dtype == ScalarType::Bool) value = fmt::format("(unsigned char){}", value);
  if (in_vector_group(e)) {
    line(fmt::format("{} = {};", group_element(static_cast<int>(&e - k_.body.data())), value));
    return;
  }
  // A value stored once per row is written by one thread (the first of its row's).
  const bool per_row = placement_.scope[&e - k_.body.data()] == Scope::kRow;
  std::string writer = per_row ? row_writer() : "";
  if (!group_live_.empty()) writer = fmt::format("if ({}) ", group_live_);  // a lane past the tile's end
  line(fmt::format("{}buf{}[{}] = {};", writer, e.buffer, name(e.a), value));
}

}  // namespace cuda_printer

using cuda_printer::Phase;
using cuda_printer::Printer;

std::vector<CudaFunctionSource> emit_cuda_functions(const Kernel& kernel, bool index32, CudaConfig config, const std::string& function) {
  if (config.split == 0) return {{function, Printer(kernel, index32, config, function).run()}};
  const std::string final_pass = function + "_final";
  return {{function, Printer(kernel, index32, config, function, Phase::kPartial).run()},
          {final_pass, Printer(kernel, index32, config, final_pass, Phase::kFinal).run()}};
}

std::string emit_cuda(const Kernel& kernel, bool index32, CudaConfig config, const std::string& function) {
  std::string out;
  for (const auto& f : emit_cuda_functions(kernel, index32, config, function)) out += f.source;
  return out;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  return text;
}

std::string emit_cuda(const Kernel& kernel, bool index32) { return emit_cuda(kernel, index32, default_cuda_config(kernel), kernel.name); }

}  // namespace jitc::inductor
