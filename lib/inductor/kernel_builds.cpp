#include "inductor/kernel_builds.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace jitc::inductor {

namespace {

// What a build reads of a value (LoweringContext::is_buffer and buffer): whether it is computed by a
// loader, stored, and stored by no kernel yet or by the kernel being built.
uint8_t state_of(const LoweringContext& ctx, graph::ValueId v, int group) {
  return static_cast<uint8_t>((ctx.loader[v] ? 1 : 0) | (ctx.stored[v] ? 2 : 0) | (ctx.group[v] < 0 ? 4 : 0) |
                              (ctx.group[v] == group ? 8 : 0));
}

}  // namespace

std::string KernelBuilds::key(const std::vector<graph::ValueId>& members, const Space& space) {
  return fmt::format("{} | {} | {}", fmt::join(members, ","), space.text(), fmt::join(space.dims, ","));
}

const BuildResult* KernelBuilds::find(const std::string& key, const LoweringContext& ctx, int group) const {
  const auto it = kept_.find(key);
  if (it == kept_.end()) return nullptr;
  for (const Kept& k : it->second) {
    bool same = true;
    for (size_t i = 0; i < k.read.size() && same; ++i) same = state_of(ctx, k.read[i], group) == k.states[i];
    if (same) return &k.result;
  }
  return nullptr;
}

void KernelBuilds::keep(const std::string& key, const LoweringContext& ctx, int group, BuildResult result) {
  Kept k{ctx.values_read, {}, std::move(result)};
  std::sort(k.read.begin(), k.read.end());
  k.read.erase(std::unique(k.read.begin(), k.read.end()), k.read.end());
  for (graph::ValueId v : k.read) k.states.push_back(state_of(ctx, v, group));
  kept_[key].push_back(std::move(k));
}

Index member_index(KernelBuilder& kb, const graph::SymShape& sizes, const Space& space, const std::vector<int>& outer,
                   const std::vector<int>& inner) {
  Index index;
  if (sizes == space.value_sizes()) {
    std::vector<int> vars = outer;
    vars.insert(vars.end(), inner.begin(), inner.end());
    index.resize(sizes.size());
    for (size_t l = 0; l < vars.size(); ++l) {
      const size_t d = space.dim_of_loop(l);
      index[d] = sizes[d].is_one() ? kb.index_constant(0) : kb.var(vars[l]);
    }
    return index;
  }
  std::vector<int> rows;
  for (size_t d = 0; d < space.outer.size(); ++d)
    if (!space.outer[d].is_one()) rows.push_back(outer[d]);
  size_t next = 0;
  for (const auto& e : sizes) index.push_back(e.is_one() ? kb.index_constant(0) : kb.var(rows[next++]));
  return index;
}

bool same_build(const BuildResult& a, const BuildResult& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<BuildFailure>(&a)) {
    const auto& y = std::get<BuildFailure>(b);
    return x->kind == y.kind && x->value == y.value && x->why == y.why;
  }
  const auto& x = std::get<Built>(a);
  const auto& y = std::get<Built>(b);
  return to_text(x.kernel) == to_text(y.kernel) && x.buffers == y.buffers && x.inlined == y.inlined;
}

}  // namespace jitc::inductor
