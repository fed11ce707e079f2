// GuardSet: the conditions under which one compiled entry is valid, as plain data. `check` is the hot
// path (flat compares, no allocation); `explain` walks the same guards and returns the first failure in
// Dynamo's words (tensor 'x' size mismatch at index 0. expected 8, actual 16); `describe` lists them.
#pragma once
#include "graph/sym_expr.h"

#include <jitc/detail/leaves.h>

#include <c10/core/DispatchKeySet.h>
#include <c10/core/ScalarType.h>
#include <c10/core/TensorImpl.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace jitc::guards {

constexpr int64_t kSymbolic = std::numeric_limits<int64_t>::min();  // size/stride bound by a symbol

struct TensorGuard {
  std::string name;
  int leaf = -1;  // argument leaf; -1 for a captured tensor
  uint64_t dispatch_keys = 0;
  c10::ScalarType dtype = c10::ScalarType::Float;
  c10::Device device{c10::kCPU};
  bool requires_grad = false;
  std::vector<int64_t> sizes;    // kSymbolic where a SymbolGuard or ShapeGuard decides
  std::vector<int64_t> strides;  // kSymbolic likewise
  uint64_t dynamic_dims = 0;     // dims this entry may treat as dynamic (mark_dynamic is honoured)
};

// Binds symbol `symbol` to tensors[tensor].size(dim), within [min, max].
struct SymbolGuard {
  int symbol = 0;
  int tensor = 0;
  int dim = 0;
  int64_t min = 2;
  int64_t max = std::numeric_limits<int64_t>::max();
};

// tensors[tensor].size(dim) (or stride) must equal expr once the symbols are bound.
struct ShapeGuard {
  int tensor = 0;
  int dim = 0;
  bool stride = false;
  graph::SymExpr expr;
};

// Binds symbol `symbol` to scalar argument `leaf` (automatic dynamic scalars): an int64_t's value, or a
// double's bits (kernels and extern ops read it at run time). `bind` false: the symbol was bound first
// (by a size or another argument with the same values in both traces, duck sizing) and must be equal.
// Ints 0 and 1 always specialize, as sizes do (and torch's unspecialized ints).
struct ScalarSymbolGuard {
  int symbol = 0;
  int leaf = 0;
  detail::Leaf::Kind kind = detail::Leaf::Kind::kInt;
  bool bind = true;
};

struct ScalarGuard {
  std::string name;
  int leaf = 0;
  detail::Leaf::Kind kind = detail::Leaf::Kind::kInt;
  double d = 0;
  int64_t i = 0;
};

// Thread-local state that changes what the traced ops do (Dynamo's GLOBAL_STATE). Plain data: the
// runtime reads it (runtime/global_state.h), once per call.
struct GlobalState {
  bool grad_mode = false;
  bool autocast_cpu = false;
  bool autocast_cuda = false;
  c10::ScalarType autocast_cpu_dtype = c10::ScalarType::BFloat16;  // the casts autocast records
  c10::ScalarType autocast_cuda_dtype = c10::ScalarType::Half;
  c10::ScalarType default_dtype = c10::ScalarType::Float;
  bool operator==(const GlobalState&) const = default;
};

// The state of a compiled torch::nn module beyond its tensors' metadata, as flat words read from the
// module tree in a fixed order (runtime/module_state.h): per module its training flag (dropout and batch
// norm trace differently), the counts of its registered parameters, buffers and submodules, then their
// identities (Dynamo's ___check_obj_id on module attributes). A C++ module reads its tensors through
// fields that LibTorch does not track (`module->weight = t` leaves the registration on the old tensor), so
// each registered tensor also carries whether anything besides its registration holds it (kHeld): a field
// re-assigned away from it drops that to 0. Empty for callables that are not modules.
struct ModuleGuard {
  // kOptions: a word of a LibTorch module's options (runtime/module_options.h), which its forward reads as
  // C++ values.
  enum class Slot : uint8_t { kTraining, kParameters, kBuffers, kChildren, kParameter, kBuffer, kChild, kHeld, kOptions };
  std::vector<uintptr_t> words;                        // as traced
  std::vector<Slot> slots;                             // per word: what it holds
  std::vector<std::string> names;                      // per word: the module's path ("self.fc1") or the tensor's ("self.fc1.weight")
  std::map<std::string, std::string> options_printed;  // module path -> the module as it printed when traced
  bool operator==(const ModuleGuard& o) const { return words == o.words; }
};

struct GuardSet {
  std::vector<std::string> leaf_names;     // args[0], args[1][2], ... (or the names given in Options)
  std::vector<detail::Leaf::Kind> layout;  // argument structure: None vs tensor, list lengths below
  std::vector<TensorGuard> tensors;        // arguments first, then captured tensors
  int num_argument_tensors = 0;
  std::vector<int16_t> same_object;   // per tensor (arguments, then captured): first tensor that is the same object
  std::vector<int16_t> same_storage;  // per tensor: first tensor sharing its storage
  std::vector<ScalarGuard> scalars;
  std::vector<SymbolGuard> symbols;
  std::vector<ShapeGuard> shapes;
  std::vector<ScalarSymbolGuard> scalar_symbols;  // checked after `symbols`, before `shapes`
  GlobalState global;
  ModuleGuard module;
  int num_symbols = 0;
  std::vector<std::string> symbol_sources;  // "args[0].size()[0]" per symbol
};

// What a call presents to the guards. `marks` is per leaf (bit d = dim d marked dynamic), or nullptr
// when no tensor is marked anywhere.
struct CallView {
  c10::ArrayRef<detail::Leaf> leaves;
  const c10::TensorImpl* const* captured = nullptr;  // nullptr entries: the captured tensor was freed
  size_t num_captured = 0;
  const uint64_t* marks = nullptr;
  const GlobalState* global = nullptr;  // the caller's state, read once per call (required)
  c10::ArrayRef<uintptr_t> module;      // the compiled module's state, read once per call (modules only)
};

// Hot path. On success, symbols[0..num_symbols) hold the bound sizes.
bool check(const GuardSet& guards, const CallView& call, int64_t* symbols);

// The first failing guard in Dynamo's text, or "" if every guard passes.
std::string explain(const GuardSet& guards, const CallView& call);

// True if two guard sets differ at most in sizes, strides and the values of int and double arguments:
// only then may two traces be generalized into one symbolic entry (everything else the callable could
// branch on must be the same; the caller decides which differing values may become symbols).
bool same_except_shapes(const GuardSet& a, const GuardSet& b);

// One line per guard, for JITC_LOGS=guards and jitc::explain.
std::vector<std::string> describe(const GuardSet& guards);

}  // namespace jitc::guards
