#include "runtime/env_parse.h"

#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <string>

namespace jitc::runtime {

namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The multiplier a unit stands for; nullopt for an unknown one.
std::optional<uint64_t> unit_multiplier(std::string_view unit) {
  struct Unit {
    const char* name;
    uint64_t multiplier;
  };
  constexpr uint64_t kKi = 1024, kK = 1000;
  static constexpr std::array<Unit, 14> kUnits = {{{"", 1},
                                                   {"b", 1},
                                                   {"k", kKi},
                                                   {"kib", kKi},
                                                   {"kb", kK},
                                                   {"m", kKi * kKi},
                                                   {"mib", kKi * kKi},
                                                   {"mb", kK * kK},
                                                   {"g", kKi * kKi * kKi},
                                                   {"gib", kKi * kKi * kKi},
                                                   {"gb", kK * kK * kK},
                                                   {"t", kKi * kKi * kKi * kKi},
                                                   {"tib", kKi * kKi * kKi * kKi},
                                                   {"tb", kK * kK * kK * kK}}};
  const std::string u = lowercase(unit);
  for (const auto& known : kUnits)
    if (u == known.name) return known.multiplier;
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> parse_integer(std::string_view text, int64_t min, int64_t max) {
  const std::string_view s = trimmed(text);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || error != std::errc() || end != s.data() + s.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_size(std::string_view text) {
  const std::string_view s = trimmed(text);
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (digits == 0) return std::nullopt;
  uint64_t number = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + digits, number);
  if (error != std::errc() || end != s.data() + digits) return std::nullopt;
  const auto multiplier = unit_multiplier(trimmed(s.substr(digits)));
  if (!multiplier || number > std::numeric_limits<uint64_t>::max() / *multiplier) return std::nullopt;
  return number * *multiplier;
}

std::optional<bool> parse_bool(std::string_view text) {
  const std::string s = lowercase(trimmed(text));
  if (s == "1" || s == "true") return true;
  if (s == "0" || s == "false") return false;
  return std::nullopt;
}

}  // namespace jitc::runtime
