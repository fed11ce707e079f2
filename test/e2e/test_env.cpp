// JITC_* environment variables: strict parsing, and one warning for a value that cannot be read.
#include "cache/disk_cache.h"
#include "runtime/env.h"
#include "runtime/env_parse.h"
#include "support/log_capture.h"
#include "support/scoped_env.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <climits>

using jitc::runtime::parse_bool;
using jitc::runtime::parse_integer;
using jitc::runtime::parse_size;
using jitc::testing::LogCapture;
using jitc::testing::ScopedEnv;

TEST_CASE("parse_integer takes whole decimal numbers in range, nothing else", "[env]") {
  CHECK(parse_integer("8", 0, INT_MAX) == 8);
  CHECK(parse_integer(" 12 ", 0, INT_MAX) == 12);
  CHECK(parse_integer("0", 0, INT_MAX) == 0);
  CHECK(parse_integer("-1", 0, INT_MAX) == std::nullopt);
  CHECK(parse_integer("2147483648", 0, INT_MAX) == std::nullopt);
  CHECK(parse_integer("99999999999999999999999", 0, INT_MAX) == std::nullopt);
  CHECK(parse_integer("12abc", 0, INT_MAX) == std::nullopt);
  CHECK(parse_integer("1.5", 0, INT_MAX) == std::nullopt);
  CHECK(parse_integer("+3", 0, INT_MAX) == std::nullopt);
  CHECK(parse_integer("", 0, INT_MAX) == std::nullopt);
  CHECK(parse_integer("-4", -10, 10) == -4);
}

TEST_CASE("parse_size takes bytes with 1024-based and 1000-based units", "[env]") {
  CHECK(parse_size("100") == 100u);
  CHECK(parse_size("100B") == 100u);
  CHECK(parse_size("1G") == uint64_t{1} << 30);
  CHECK(parse_size("1g") == uint64_t{1} << 30);
  CHECK(parse_size("1GiB") == uint64_t{1} << 30);
  CHECK(parse_size("1 GiB") == uint64_t{1} << 30);
  CHECK(parse_size("1GB") == 1000000000u);
  CHECK(parse_size("512K") == 512u * 1024);
  CHECK(parse_size("512KiB") == 512u * 1024);
  CHECK(parse_size("512kb") == 512000u);
  CHECK(parse_size("3M") == 3u << 20);
  CHECK(parse_size("3MB") == 3000000u);
  CHECK(parse_size("2T") == uint64_t{2} << 40);
  CHECK(parse_size("2TB") == 2000000000000u);
  CHECK(parse_size("1.5G") == std::nullopt);
  CHECK(parse_size("G") == std::nullopt);
  CHECK(parse_size("-1") == std::nullopt);
  CHECK(parse_size("1X") == std::nullopt);
  CHECK(parse_size("1 G B") == std::nullopt);
  CHECK(parse_size("99999999999T") == std::nullopt);  // overflows 64 bits
  CHECK(parse_size("") == std::nullopt);
}

TEST_CASE("parse_bool takes 0, 1, true and false", "[env]") {
  CHECK(parse_bool("1") == true);
  CHECK(parse_bool("true") == true);
  CHECK(parse_bool("TRUE") == true);
  CHECK(parse_bool("0") == false);
  CHECK(parse_bool("False") == false);
  CHECK(parse_bool("yes") == std::nullopt);
  CHECK(parse_bool("2") == std::nullopt);
  CHECK(parse_bool("") == std::nullopt);
}

TEST_CASE("JITC_RECOMPILE_LIMIT=-1 is reported once and the configured limit applies", "[env]") {
  LogCapture logs;
  ScopedEnv env("JITC_RECOMPILE_LIMIT", "-1");
  CHECK(jitc::runtime::env_recompile_limit(5) == 5);
  CHECK(jitc::runtime::env_recompile_limit(5) == 5);
  jitc::runtime::reload_env();
  CHECK(jitc::runtime::env_recompile_limit(3) == 3);
  const auto lines = logs.lines_with("JITC_RECOMPILE_LIMIT");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("'-1'") != std::string::npos);
  CHECK(lines[0].find("recompile_limit") != std::string::npos);
}

TEST_CASE("JITC_RECOMPILE_LIMIT takes a valid number and rejects trailing garbage", "[env]") {
  LogCapture logs;
  {
    ScopedEnv env("JITC_RECOMPILE_LIMIT", "2");
    CHECK(jitc::runtime::env_recompile_limit(8) == 2);
  }
  {
    ScopedEnv env("JITC_RECOMPILE_LIMIT", "3x");
    CHECK(jitc::runtime::env_recompile_limit(8) == 8);
  }
  CHECK(logs.lines_with("JITC_RECOMPILE_LIMIT='3x'").size() == 1);
  CHECK(logs.lines_with("JITC_RECOMPILE_LIMIT='2'").empty());
}

TEST_CASE("JITC_CACHE_MAX_BYTES=1G caps the disk cache at a GiB, and an unreadable size keeps the default", "[env]") {
  LogCapture logs;
  {
    ScopedEnv env("JITC_CACHE_MAX_BYTES", "1G");
    CHECK(jitc::runtime::env_disk_cache().max_bytes == uint64_t{1} << 30);
  }
  {
    ScopedEnv env("JITC_CACHE_MAX_BYTES", "250MB");
    CHECK(jitc::runtime::env_disk_cache().max_bytes == 250000000u);
  }
  CHECK(logs.text().empty());
  {
    ScopedEnv env("JITC_CACHE_MAX_BYTES", "lots");
    CHECK(jitc::runtime::env_disk_cache().max_bytes == uint64_t{1} << 30);
    CHECK(jitc::runtime::env_disk_cache().max_bytes == uint64_t{1} << 30);
  }
  const auto lines = logs.lines_with("JITC_CACHE_MAX_BYTES");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("'lots'") != std::string::npos);
  CHECK(lines[0].find("1073741824 bytes") != std::string::npos);
}

TEST_CASE("JITC_DISABLE_CACHE takes booleans and reports other values", "[env]") {
  LogCapture logs;
  ScopedEnv dir("JITC_CACHE_DIR", "/tmp/jitc_env_test_cache");
  {
    ScopedEnv env("JITC_DISABLE_CACHE", "true");
    CHECK_FALSE(jitc::runtime::env_disk_cache().enabled);
  }
  {
    ScopedEnv env("JITC_DISABLE_CACHE", "0");
    CHECK(jitc::runtime::env_disk_cache().enabled);
  }
  CHECK(logs.text().empty());
  {
    ScopedEnv env("JITC_DISABLE_CACHE", "sometimes");
    CHECK(jitc::runtime::env_disk_cache().enabled);
  }
  CHECK(logs.lines_with("JITC_DISABLE_CACHE='sometimes'").size() == 1);
}

TEST_CASE("JITC_DISABLE takes booleans, and an unreadable value is reported and compiles as usual", "[env]") {
  LogCapture logs;
  const auto x = at::randn({3});
  {
    ScopedEnv env("JITC_DISABLE", "true");
    auto f = jitc::compile([](const at::Tensor& t) { return t.sin(); });
    CHECK(at::equal(f(x), x.sin()));
    CHECK(f.stats().compiles == 0);
  }
  {
    ScopedEnv env("JITC_DISABLE", "on");
    auto f = jitc::compile([](const at::Tensor& t) { return t.cos(); });
    f(x);
    f(x);
    CHECK(f.stats().compiles == 1);
  }
  const auto lines = logs.lines_with("JITC_DISABLE='on'");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("using 0 instead") != std::string::npos);
}

TEST_CASE("JITC_CUDA_PDL takes booleans and reports other values", "[env]") {
  LogCapture logs;
  {
    ScopedEnv env("JITC_CUDA_PDL", "false");
    CHECK_FALSE(jitc::runtime::env_cuda_pdl());
  }
  {
    ScopedEnv env("JITC_CUDA_PDL", "no");
    CHECK(jitc::runtime::env_cuda_pdl());
  }
  CHECK(logs.lines_with("JITC_CUDA_PDL='no'").size() == 1);
}
