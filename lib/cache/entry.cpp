#include "cache/entry.h"

#include "cache/sha256.h"

#include <fmt/format.h>

#include <sstream>

namespace jitc::cache {

namespace {

std::string checksum(const std::string& key, const std::string& payload) { return sha256_hex(key + payload); }

struct Header {
  int format = 0;
  size_t key_size = 0, payload_size = 0;
  std::string checksum;
};

// The header line's fields; nullopt (and why) if it is not a header.
std::optional<Header> parse_header(const std::string& bytes, size_t* end, std::string* why) {
  const size_t eol = bytes.find('\n');
  if (eol == std::string::npos) {
    *why = bytes.empty() ? "the file is empty" : "the header is truncated";
    return std::nullopt;
  }
  *end = eol + 1;
  std::istringstream line(bytes.substr(0, eol));
  std::string magic;
  Header h;
  if (!(line >> magic >> h.format) || magic != "jitc-cache") {
    *why = "the header is not a jitc cache header";
    return std::nullopt;
  }
  if (h.format != kFormatVersion) {
    *why = fmt::format("format {} (this jitc reads {})", h.format, kFormatVersion);
    return std::nullopt;
  }
  if (!(line >> h.key_size >> h.payload_size >> h.checksum)) {
    *why = "the header is not a jitc cache header";
    return std::nullopt;
  }
  return h;
}

}  // namespace

std::string encode_entry(const std::string& key, const std::string& payload) {
  return fmt::format("jitc-cache {} {} {} {}\n", kFormatVersion, key.size(), payload.size(), checksum(key, payload)) + key + payload;
}

std::optional<std::string> decode_entry(const std::string& bytes, const std::string& key, EntryProblem* problem, std::string* why) {
  *problem = EntryProblem::kDamaged;
  size_t begin = 0;
  const auto header = parse_header(bytes, &begin, why);
  if (!header) return std::nullopt;
  const size_t body = bytes.size() - begin;
  if (header->key_size > body || body - header->key_size != header->payload_size) {
    *why = fmt::format("{} bytes of key and payload, the header says {} and {} (truncated?)", body, header->key_size, header->payload_size);
    return std::nullopt;
  }
  const std::string stored_key = bytes.substr(begin, header->key_size);
  std::string payload = bytes.substr(begin + header->key_size);
  if (checksum(stored_key, payload) != header->checksum) {
    *why = "the checksum does not match the key and payload (corrupted)";
    return std::nullopt;
  }
  if (stored_key != key) {
    *problem = EntryProblem::kOtherKey;
    *why = "it was written for another key (a misplaced, swapped or foreign file)";
    return std::nullopt;
  }
  *problem = EntryProblem::kNone;
  return payload;
}

}  // namespace jitc::cache
