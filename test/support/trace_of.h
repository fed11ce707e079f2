// Runs the tracer directly on fn(args...), exactly as CompiledFunction's invoker would call it.
#pragma once
#include "tracer/trace.h"

#include <jitc/detail/leaves.h>

#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace jitc::testing {

template <class F, class... Args>
tracer::TraceOutcome trace_of(F& fn, const Args&... args) {
  using R = std::decay_t<std::invoke_result_t<F&, const Args&...>>;
  detail::Leaves leaves;
  int position = 0;
  (detail::flatten_arg(leaves, position++, args), ...);
  detail::Invoker invoker = [&fn](c10::ArrayRef<detail::Leaf> ls) {
    size_t pos = 0;
    std::tuple<Args...> typed{detail::ArgReader<Args>::read(ls, pos)...};
    detail::ResultLeaves out;
    detail::ResultCodec<R>::flatten(out, std::apply(fn, typed));
    return out;
  };
  std::vector<std::string> names;
  for (size_t i = 0; i < leaves.size(); ++i) names.push_back("args[" + std::to_string(i) + "]");
  return tracer::trace(invoker, leaves, names, /*fullgraph=*/false);
}

}  // namespace jitc::testing
