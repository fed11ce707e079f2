// The bytes of one cache entry: a header line "jitc-cache <format> <key size> <payload size> <sha256 of
// key and payload>", the full key, then the payload. The key is the whole text that the entry's file name
// hashes (what the program was compiled from), so an entry read under a name proves which key it was
// written for: a file copied, swapped or planted under another name is recognized, not run.
#pragma once
#include <optional>
#include <string>

namespace jitc::cache {

constexpr int kFormatVersion = 11;  // bump when the entry or payload layout or what it depends on changes

std::string encode_entry(const std::string& key, const std::string& payload);

// Why an entry is not the one asked for: damaged (truncated, corrupted, another format) or whole but
// written for another key.
enum class EntryProblem { kNone, kDamaged, kOtherKey };

// The payload of an intact entry written for `key`; nullopt otherwise, with the problem and why.
std::optional<std::string> decode_entry(const std::string& bytes, const std::string& key, EntryProblem* problem, std::string* why);

}  // namespace jitc::cache
