// A random differential test: generated graphs of pointwise, reduction and view ops, compiled through
// the inductor backend and compared with eager, over a fixed seed budget that fits CI (DESIGN.md
// section 9). The generator, the interpreter and the comparison live in random_graphs.h, shared with the
// CUDA test. A failure prints the program, seed included, so it can be replayed
// (JITC_RANDOM_SEED=<seed>); JITC_RANDOM_SEEDS=<n> runs more seeds than CI does.
#include "inductor/edge_graphs.h"
#include "inductor/random_graphs.h"

namespace {

// 500 graphs take about 10 s on a 2-core machine in a RelWithDebInfo build (~20 ms each: trace, then
// one compile through LLVM).
constexpr uint32_t kSeeds = 500;

}  // namespace

TEST_CASE("random graphs of pointwise reduction and view ops match eager", "[inductor][random]") {
  using namespace jitc::testing::random_graphs;
  const auto [first, end] = seed_range(kSeeds);
  for (uint32_t seed = first; seed < end; ++seed) check_compiled_vs_eager(generate(seed, Normalizations::kAnyDims), at::kCPU);
}

TEST_CASE("random graphs with in-place writes into their own values match eager", "[inductor][random]") {
  using namespace jitc::testing::random_graphs;
  const auto [first, end] = seed_range(kSeeds / 2);
  for (uint32_t seed = first; seed < end; ++seed)
    check_compiled_vs_eager(generate(seed, Normalizations::kAnyDims, InPlace::kIntermediates), at::kCPU);
}

// The differential fuzzer at the edges (edge_graphs.h): every dtype, edge values, argument views and
// in-place ops on them. CI runs a short budget; the long runs (issue 23: 100,000 graphs and more) set
// JITC_FUZZ_SEEDS=<first>:<end> and select the [fuzz] tag.
TEST_CASE("fuzzed graphs over every dtype, edge values, argument views and in-place ops match eager", "[inductor][random][fuzz]") {
  using namespace jitc::testing::edge_graphs;
  const auto [first, end] = seed_range(300);
  int failed = 0, eager = 0;
  for (uint32_t seed = first; seed < end; ++seed) {
    const Program p = generate(seed);
    if (std::getenv("JITC_FUZZ_PRINT")) fmt::print(stderr, "{}\n", to_string(p));  // before it runs: a crash names it
    bool ran_eagerly = false;
    const std::string failures = check(p, &ran_eagerly);
    failed += !failures.empty();
    eager += ran_eagerly;
    INFO(to_string(p));
    CHECK(failures == "");
  }
  if (end - first > 1)
    WARN("fuzzed " << end - first << " graphs (seeds " << first << ".." << end - 1 << "): " << failed << " failed, " << eager
                   << " ran through the eager backend");
  if (end - first >= 100) CHECK(eager * 10 <= static_cast<int>(end - first));  // nearly every graph compiles
}
