// The random choices the differential fuzzers' program generators make (random_graphs.h, edge_graphs.h):
// one Mersenne Twister per program, seeded by the program's seed, so that a seed names its program.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace jitc::testing {

class RandomChoices {
 protected:
  explicit RandomChoices(uint32_t seed) : rng_(seed) {}

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[uniform(0, static_cast<int>(v.size()) - 1)];
  }

  std::mt19937 rng_;
};

}  // namespace jitc::testing
