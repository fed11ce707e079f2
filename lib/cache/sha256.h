// SHA-256 (FIPS 180-4), for cache keys and entry checksums. Small and dependency-free.
#pragma once
#include <string>
#include <string_view>

namespace jitc::cache {

std::string sha256_hex(std::string_view data);  // 64 lowercase hex digits

}  // namespace jitc::cache
