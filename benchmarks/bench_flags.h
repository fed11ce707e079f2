// Command-line values the benchmark mains share.
#pragma once
#include <jitc/jitc.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace jitc::bench {

inline std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

// --mode: torch.compile's names.
inline jitc::Mode mode_named(const std::string& name) {
  if (name == "default") return jitc::Mode::kDefault;
  if (name == "reduce-overhead") return jitc::Mode::kReduceOverhead;
  if (name == "max-autotune") return jitc::Mode::kMaxAutotune;
  throw std::runtime_error("unknown --mode " + name + " (default, reduce-overhead or max-autotune)");
}

}  // namespace jitc::bench
