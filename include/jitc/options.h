// Options of jitc::compile, mirroring torch.compile's keyword arguments.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace jitc {

enum class Mode { kDefault, kReduceOverhead, kMaxAutotune, kMaxAutotuneNoCudagraphs };
enum class Backend { kInductor, kEager };

// A dynamic-shape mark on one argument's dimension, given through Options instead of on the tensor.
struct DimMark {
  enum class Kind { kDynamic, kMaybeDynamic, kStatic };
  // `dim` of a mark on a double or int64_t argument's value (a tensor argument ignores it).
  static constexpr int64_t kValue = std::numeric_limits<int64_t>::min();
  int argument = 0;  // position of the argument in the callable's signature
  int64_t dim = 0;
  Kind kind = Kind::kDynamic;
  int64_t min = 2;
  int64_t max = std::numeric_limits<int64_t>::max();
};

struct Options {
  Mode mode = Mode::kDefault;  // accepted now; honoured by the code-generating backends
  Backend backend = Backend::kInductor;
  // torch.compile's dynamic=None/True/False: nullopt = static first, then dims that change become symbolic.
  std::optional<bool> dynamic;
  bool fullgraph = false;              // graph breaks and the recompile limit become errors
  int recompile_limit = 8;             // JITC_RECOMPILE_LIMIT overrides it
  std::string name;                    // used in logs; default "compiled_fn_<n>"
  std::vector<std::string> arg_names;  // names of the arguments in guards and logs; default args[i]
  std::vector<DimMark> dim_marks;
  // A graph's kernels compile on a thread of their own while its calls run through eager replay (the
  // trace starts the build; a later call switches to the program once it is ready): no call waits for
  // code generation. Off: the first hit waits for the program and runs it (benchmarks timing that call).
  // JITC_COMPILE_IN_BACKGROUND=1/0 overrides it. Modes kDefault and kReduceOverhead (the max-autotune
  // modes time kernels while they build: they build on the call). exit() waits for the builds running.
  bool compile_in_background = true;

  Options& mark_dynamic(int argument, int64_t dim, int64_t min = 2, int64_t max = std::numeric_limits<int64_t>::max()) {
    dim_marks.push_back({argument, dim, DimMark::Kind::kDynamic, min, max});
    return *this;
  }
  Options& maybe_mark_dynamic(int argument, int64_t dim) {
    dim_marks.push_back({argument, dim, DimMark::Kind::kMaybeDynamic});
    return *this;
  }
  Options& mark_static(int argument, int64_t dim) {
    dim_marks.push_back({argument, dim, DimMark::Kind::kStatic});
    return *this;
  }
  // A double or int64_t argument: by default a value that changes becomes a run-time value on the
  // recompile (automatic dynamic, as a size). mark_static(argument) keeps every value a constant of its
  // own entry; mark_dynamic(argument) makes it eligible even with dynamic=false.
  Options& mark_static(int argument) { return mark_static(argument, DimMark::kValue); }
  Options& mark_dynamic(int argument) {
    dim_marks.push_back({argument, DimMark::kValue, DimMark::Kind::kDynamic});
    return *this;
  }
};

const char* to_string(Mode mode);
const char* to_string(Backend backend);

}  // namespace jitc
