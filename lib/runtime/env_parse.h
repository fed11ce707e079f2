// Strict readers of environment values: a value is whole and valid, or it is not read at all (nullopt).
// std::stoi and friends accept "12abc" as 12, "-1" where only counts make sense, and "1G" as 1; these
// do not, so that a misspelt setting is reported (lib/runtime/env.cpp warns) instead of misread.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace jitc::runtime {

// A decimal integer in [min, max], nothing else (surrounding spaces allowed; no '+', no fraction).
std::optional<int64_t> parse_integer(std::string_view text, int64_t min, int64_t max);

// A byte count: a whole number with an optional unit, case-insensitive, spaces allowed between them.
// K, M, G, T and KiB, MiB, GiB, TiB are powers of 1024; KB, MB, GB, TB powers of 1000; B is bytes.
std::optional<uint64_t> parse_size(std::string_view text);

// 0, 1, true, false (case-insensitive).
std::optional<bool> parse_bool(std::string_view text);

}  // namespace jitc::runtime
