// The compile cache: disk entries (hit, miss, corruption, unwritable directory, eviction, format
// version), and separate processes sharing it (a warm process generates no code; concurrent writers).
#include "cache/disk_cache.h"
#include "cache/sha256.h"
#include "inductor/cpu/jit.h"
#include "support/scoped_env.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using jitc::cache::DiskCache;

namespace {

// A fresh directory per test, removed afterwards.
using jitc::testing::TempDir;

struct Reports {
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& m) { lines.push_back(m); };
  }
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

const std::string kKey = jitc::cache::sha256_hex("a graph");

// Runs the cache child with this cache directory (and JITC_LOGS=logs, the child's arguments); returns its
// output.
std::string run_child(const fs::path& dir, const std::string& out_file = "", const std::string& logs = "", const std::string& args = "") {
  const auto exe = fs::read_symlink("/proc/self/exe").parent_path() / "jitc_cache_child";
  const std::string out = out_file.empty() ? (dir / "child.out").string() : out_file;
  const std::string cmd = "JITC_LOGS=" + logs + " JITC_DISABLE_CACHE=0 JITC_CACHE_DIR=" + dir.string() + " " + exe.string() + " " + args +
                          " > " + out + " 2>&1";
  CHECK(std::system(cmd.c_str()) == 0);
  return read(out);
}

// The cache entries (.jitc files) under `dir`, in a stable order.
std::vector<fs::path> entries_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& f : fs::recursive_directory_iterator(dir))
    if (f.path().extension() == ".jitc") out.push_back(f.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The key and the payload of an intact entry file (entry.h's layout).
std::pair<std::string, std::string> key_and_payload(const fs::path& entry) {
  const std::string bytes = read(entry);
  std::istringstream header(bytes.substr(0, bytes.find('\n')));
  std::string magic, checksum;
  int format = 0;
  size_t key_size = 0, payload_size = 0;
  header >> magic >> format >> key_size >> payload_size >> checksum;
  const size_t begin = bytes.find('\n') + 1;
  return {bytes.substr(begin, key_size), bytes.substr(begin + key_size)};
}

size_t count_lines_with(const std::string& text, const std::string& needle) {
  size_t n = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) n += line.find(needle) != std::string::npos;
  return n;
}

size_t temporaries_in(const fs::path& dir) {
  size_t n = 0;
  for (const auto& f : fs::recursive_directory_iterator(dir)) n += f.path().string().find(".tmp.") != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("sha256 of known inputs", "[cache]") {
  CHECK(jitc::cache::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(jitc::cache::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(jitc::cache::sha256_hex(std::string(1000, 'a')) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST_CASE("an entry stored is loaded back and a missing key is a miss", "[cache]") {
  TempDir dir;
  DiskCache cache({dir.path.string(), true, 1 << 20});
  CHECK_FALSE(cache.load(kKey));
  const std::string payload = std::string("object code \0 with any byte\n", 29) + std::string(5000, 'x');
  cache.store(kKey, payload);
  REQUIRE(cache.load(kKey));
  CHECK(*cache.load(kKey) == payload);
  CHECK(fs::exists(cache.path_of(kKey)));
  CHECK(fs::path(cache.path_of(kKey)).parent_path().filename() == DiskCache::name_of(kKey).substr(0, 2));  // sharded
  cache.clear();
  CHECK_FALSE(cache.load(kKey));
}

TEST_CASE("a flipped byte, a truncated entry or an empty file is a miss with one report", "[cache]") {
  TempDir dir;
  Reports reports;
  DiskCache cache({dir.path.string(), true, 1 << 20});
  cache.set_reporter(reports.sink());
  const std::string payload(3000, 'p');
  for (int damage = 0; damage < 4; ++damage) {
    cache.store(kKey, payload);
    const fs::path path = cache.path_of(kKey);
    std::string bytes = read(path);
    if (damage == 0) bytes[bytes.size() / 2] ^= 0x20;   // flipped payload byte
    if (damage == 1) bytes.resize(bytes.size() - 100);  // truncated payload
    if (damage == 2) bytes.clear();                     // empty file
    if (damage == 3) bytes = "jitc-cache 1 12";         // truncated header
    write(path, bytes);
    reports.lines.clear();
    INFO("damage " << damage);
    CHECK_FALSE(cache.load(kKey));
    CHECK(reports.lines.size() == 1);
    CHECK_FALSE(fs::exists(path));  // removed: the next store replaces it
  }
}

TEST_CASE("an entry of another format version is a miss", "[cache]") {
  TempDir dir;
  Reports reports;
  DiskCache cache({dir.path.string(), true, 1 << 20});
  cache.set_reporter(reports.sink());
  cache.store(kKey, "payload");
  const fs::path path = cache.path_of(kKey);
  std::string bytes = read(path);
  bytes.replace(0, std::string("jitc-cache 1").size(), "jitc-cache " + std::to_string(jitc::cache::kFormatVersion + 1));
  write(path, bytes);
  CHECK_FALSE(cache.load(kKey));
  REQUIRE(reports.lines.size() == 1);
  CHECK(reports.lines[0].find("format") != std::string::npos);
}

TEST_CASE("an unwritable cache directory turns the disk cache off with one report", "[cache]") {
  TempDir dir;
  write(dir.path / "a-file", "not a directory");
  Reports reports;
  DiskCache cache({(dir.path / "a-file" / "cache").string(), true, 1 << 20});
  cache.set_reporter(reports.sink());
  cache.store(kKey, "payload");
  cache.store(jitc::cache::sha256_hex("another"), "payload");
  CHECK(reports.lines.size() == 1);
  CHECK(reports.lines[0].find("JITC_CACHE_DIR") != std::string::npos);
  CHECK_FALSE(cache.enabled());
  CHECK_FALSE(cache.load(kKey));
}

TEST_CASE("beyond its size cap the cache evicts the least recently used entries", "[cache]") {
  TempDir dir;
  DiskCache cache({dir.path.string(), true, 10000});
  std::vector<std::string> keys;
  for (int i = 0; i < 4; ++i) keys.push_back(jitc::cache::sha256_hex("graph " + std::to_string(i)));
  cache.store(keys[0], std::string(3000, 'a'));
  cache.store(keys[1], std::string(3000, 'b'));
  cache.store(keys[2], std::string(3000, 'c'));
  // Make the ages unambiguous, then use entry 0: entry 1 is now the least recently used.
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(cache.path_of(keys[0]), now - std::chrono::seconds(30));
  fs::last_write_time(cache.path_of(keys[1]), now - std::chrono::seconds(20));
  fs::last_write_time(cache.path_of(keys[2]), now - std::chrono::seconds(10));
  CHECK(cache.load(keys[0]));
  cache.store(keys[3], std::string(3000, 'd'));
  CHECK(cache.load(keys[0]));
  CHECK_FALSE(cache.load(keys[1]));
  CHECK(cache.load(keys[2]));
  CHECK(cache.load(keys[3]));
}

// Notes (one per graph compiled, to explain misses) were never removed: 23,000 files in a developer's
// cache. Past max_notes the oldest go.
TEST_CASE("notes beyond max_notes are removed, oldest first", "[cache]") {
  TempDir dir;
  DiskCache cache({dir.path.string(), true, 1 << 20, 3});
  const auto now = fs::file_time_type::clock::now();
  for (int i = 0; i < 5; ++i) {
    cache.store_note("note" + std::to_string(i), "parts");
    fs::last_write_time(dir.path / "notes" / ("note" + std::to_string(i)), now - std::chrono::seconds(60 - i));
  }
  cache.store(kKey, "payload");
  for (int i = 0; i < 5; ++i) CHECK(cache.load_note("note" + std::to_string(i)).has_value() == (i >= 2));
}

// Scanning the whole directory on every store cost a stat per file per compile: a process scans at its
// first store, then after each sixteenth of the cap it writes.
TEST_CASE("a store scans the cache directory at a process's first store and after each sixteenth of the cap", "[cache]") {
  TempDir dir;
  DiskCache cache({dir.path.string(), true, 1 << 20, 1});
  auto notes = [&] { return std::distance(fs::directory_iterator(dir.path / "notes"), fs::directory_iterator{}); };
  cache.store_note("first", "parts");
  cache.store_note("second", "parts");
  cache.store(jitc::cache::sha256_hex("graph 1"), "payload");  // the first store scans
  CHECK(notes() == 1);
  cache.store_note("third", "parts");
  cache.store(jitc::cache::sha256_hex("graph 2"), "payload");  // a few bytes later: no scan
  CHECK(notes() == 2);
  cache.store(jitc::cache::sha256_hex("graph 3"), std::string((1 << 20) / 16 + 1, 'x'));  // a sixteenth of the cap
  CHECK(notes() == 1);
}

TEST_CASE("a second process loads its programs from the disk cache and generates no code", "[cache][process]") {
  TempDir dir;
  const std::string cold = run_child(dir.path);
  INFO(cold);
  CHECK(cold.find("kernels_compiled=4 programs_from_cache=0") != std::string::npos);
  CHECK(cold.find("ok=1") != std::string::npos);
  const std::string warm = run_child(dir.path);
  INFO(warm);
  CHECK(warm.find("kernels_compiled=0 programs_from_cache=2") != std::string::npos);
  CHECK(warm.find("ok=1") != std::string::npos);
  CHECK(warm.find("jitc:") == std::string::npos);  // no warning
}

// The lines of `text` holding `needle`, in order.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find(needle) != std::string::npos) found.push_back(line.substr(line.find(needle)));
  return found;
}

// CPU max-autotune: the cold process times its kernels' candidate schedules and keeps the fastest; the
// warm one loads the winners from the disk cache, times nothing and runs the same schedules.
TEST_CASE("max-autotune's chosen CPU schedules are stored in the disk cache and loaded back without timing", "[cache][process]") {
  TempDir dir;
  const std::string cold = run_child(dir.path, "", "perf_hints,schedule", "max-autotune");
  INFO(cold);
  CHECK(cold.find("kernels_compiled=4 programs_from_cache=0") != std::string::npos);
  CHECK(cold.find("ok=1") != std::string::npos);
  CHECK(count_lines_with(cold, "AUTOTUNE ") >= 2);  // the softmax's and the layer norm's rows have variants
  CHECK(count_lines_with(cold, "(kept [") == count_lines_with(cold, "AUTOTUNE "));
  const std::string warm = run_child(dir.path, "", "perf_hints,schedule", "max-autotune");
  INFO(warm);
  CHECK(warm.find("kernels_compiled=0 programs_from_cache=2") != std::string::npos);
  CHECK(warm.find("ok=1") != std::string::npos);
  CHECK(count_lines_with(warm, "AUTOTUNE ") == 0);
  const auto schedules = lines_with(cold, "(cpu schedule): ");
  CHECK(schedules.size() == 4);
  CHECK(lines_with(warm, "(cpu schedule): ") == schedules);
}

TEST_CASE("several processes compiling the same graphs at once leave a valid cache", "[cache][process]") {
  TempDir dir;
  const auto exe = fs::read_symlink("/proc/self/exe").parent_path() / "jitc_cache_child";
  std::string cmd = "(";
  for (int i = 0; i < 4; ++i)
    cmd += "JITC_DISABLE_CACHE=0 JITC_CACHE_DIR=" + dir.path.string() + " " + exe.string() + " > " +
           (dir.path / ("out" + std::to_string(i))).string() + " 2>&1 & ";
  cmd += "wait)";
  CHECK(std::system(cmd.c_str()) == 0);
  for (int i = 0; i < 4; ++i) {
    const std::string out = read(dir.path / ("out" + std::to_string(i)));
    INFO(out);
    CHECK(out.find("ok=1") != std::string::npos);
    CHECK(out.find("jitc:") == std::string::npos);
  }
  const std::string warm = run_child(dir.path);
  INFO(warm);
  CHECK(warm.find("kernels_compiled=0 programs_from_cache=2") != std::string::npos);
  CHECK(warm.find("jitc:") == std::string::npos);
  size_t temporaries = 0;
  for (const auto& f : fs::recursive_directory_iterator(dir.path)) temporaries += f.path().string().find(".tmp.") != std::string::npos;
  CHECK(temporaries == 0);
}

TEST_CASE("JITC_LOGS=cache logs hits and explains a miss by the part of the key that differed", "[cache][process]") {
  TempDir dir;
  run_child(dir.path);
  // Pretend the entries were made by another LibTorch: drop them, keep the notes, change what they say.
  size_t notes = 0;
  for (const auto& f : std::vector<fs::directory_entry>(fs::recursive_directory_iterator(dir.path), {})) {
    if (f.path().extension() == ".jitc") fs::remove(f.path());
    if (f.path().parent_path().filename() == "notes") {
      std::string text = read(f.path());
      const size_t at = text.find("libtorch: ");
      REQUIRE(at != std::string::npos);
      text.insert(at + 10, "0.0-other ");
      write(f.path(), text);
      ++notes;
    }
  }
  CHECK(notes == 2);
  const auto exe = fs::read_symlink("/proc/self/exe").parent_path() / "jitc_cache_child";
  const auto out = dir.path / "logged.out";
  const std::string cmd =
      "JITC_LOGS=cache JITC_DISABLE_CACHE=0 JITC_CACHE_DIR=" + dir.path.string() + " " + exe.string() + " > " + out.string() + " 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string missed = read(out);
  INFO(missed);
  CHECK(missed.find("cache miss") != std::string::npos);
  CHECK(missed.find("made with another libtorch") != std::string::npos);
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string hit = read(out);
  INFO(hit);
  CHECK(hit.find("cache hit (disk)") != std::string::npos);
}

TEST_CASE("after a disk cache hit JITC_LOGS=output_code prints the cached code and fusion says where it came from", "[cache][process]") {
  TempDir dir;
  run_child(dir.path);
  const std::string warm = run_child(dir.path, "", "output_code,fusion");
  INFO(warm);
  CHECK(warm.find("programs_from_cache=2") != std::string::npos);
  CHECK(warm.find("kernel jitc_fused_") != std::string::npos);  // kernel IR
  CHECK(warm.find("; LLVM IR (before O3: the object code came from the disk cache)") != std::string::npos);
  CHECK(warm.find("define void @jitc_fused_") != std::string::npos);
  CHECK(warm.find("code from the compile cache, fused when it was compiled") != std::string::npos);
}

TEST_CASE("an intact entry of another key placed under a key's name is a miss with one report", "[cache]") {
  TempDir dir;
  Reports reports;
  DiskCache cache({dir.path.string(), true, 1 << 20});
  cache.set_reporter(reports.sink());
  const std::string other = jitc::cache::sha256_hex("another graph");
  cache.store(kKey, "the payload of a graph");
  cache.store(other, "the payload of another graph");
  fs::copy_file(cache.path_of(other), cache.path_of(kKey), fs::copy_options::overwrite_existing);
  CHECK_FALSE(cache.load(kKey));
  REQUIRE(reports.lines.size() == 1);
  CHECK(reports.lines[0].find("another key") != std::string::npos);
  CHECK_FALSE(fs::exists(cache.path_of(kKey)));
  REQUIRE(cache.load(other));  // the entry itself is fine where it belongs
  CHECK(*cache.load(other) == "the payload of another graph");
  CHECK(reports.lines.size() == 1);
}

TEST_CASE("a graph whose entry file holds another graph's entry compiles again and matches eager", "[cache][process]") {
  TempDir dir;
  run_child(dir.path);
  const auto entries = entries_in(dir.path);
  REQUIRE(entries.size() == 2);
  fs::copy_file(entries[0], entries[1], fs::copy_options::overwrite_existing);  // a misplaced or swapped file
  const std::string swapped = run_child(dir.path);
  INFO(swapped);
  CHECK(swapped.find("ok=1") != std::string::npos);
  CHECK(swapped.find("programs_from_cache=1") != std::string::npos);
  CHECK(count_lines_with(swapped, "jitc:") == 1);
  CHECK(swapped.find("another key") != std::string::npos);
  const std::string warm = run_child(dir.path);  // the recompiled entry replaced the foreign one
  INFO(warm);
  CHECK(warm.find("kernels_compiled=0 programs_from_cache=2") != std::string::npos);
  CHECK(warm.find("jitc:") == std::string::npos);
}

TEST_CASE("an entry stored under a graph's key but holding another graph's plan is a miss with one warning", "[cache][process]") {
  // A poisoned shared cache: the entry's key is right, its payload was compiled for another graph.
  TempDir dir;
  run_child(dir.path);
  const auto entries = entries_in(dir.path);
  REQUIRE(entries.size() == 2);
  const auto [key, payload] = key_and_payload(entries[1]);
  const auto [other_key, other_payload] = key_and_payload(entries[0]);
  REQUIRE(key != other_key);
  DiskCache poisoner({dir.path.string(), true, 1 << 20});
  poisoner.store(key, other_payload);
  REQUIRE(fs::exists(poisoner.path_of(key)));
  const std::string poisoned = run_child(dir.path);
  INFO(poisoned);
  CHECK(poisoned.find("ok=1") != std::string::npos);
  CHECK(poisoned.find("programs_from_cache=1") != std::string::npos);
  CHECK(count_lines_with(poisoned, "jitc:") == 1);
  CHECK(poisoned.find("ignoring the cache entry") != std::string::npos);
  const std::string warm = run_child(dir.path);
  INFO(warm);
  CHECK(warm.find("kernels_compiled=0 programs_from_cache=2") != std::string::npos);
  CHECK(warm.find("jitc:") == std::string::npos);
}

TEST_CASE("temporaries of writers that died or stalled are removed by the next store while live ones stay", "[cache]") {
  TempDir dir;
  DiskCache cache({dir.path.string(), true, 1 << 20});
  const pid_t dead = fork();  // a pid whose process is gone
  if (dead == 0) _exit(0);
  REQUIRE(dead > 0);
  REQUIRE(waitpid(dead, nullptr, 0) == dead);
  const std::string live = std::to_string(getpid());
  fs::create_directories(dir.path / "ab");
  fs::create_directories(dir.path / "notes");
  const fs::path of_dead = dir.path / "ab" / ("ab12.jitc.tmp." + std::to_string(dead) + ".0");
  const fs::path stalled = dir.path / "notes" / ("n1.tmp." + live + ".3");
  const fs::path writing = dir.path / "ab" / ("ab34.jitc.tmp." + live + ".4");
  const fs::path not_ours = dir.path / "ab" / "ab56.jitc.tmp.notes";  // not a writer's name: left alone
  for (const auto* p : {&of_dead, &stalled, &writing, &not_ours}) write(*p, "partial entry");
  fs::last_write_time(stalled, fs::file_time_type::clock::now() - std::chrono::hours(1));
  cache.store(kKey, "payload");
  CHECK_FALSE(fs::exists(of_dead));
  CHECK_FALSE(fs::exists(stalled));
  CHECK(fs::exists(writing));
  CHECK(fs::exists(not_ours));
  CHECK(cache.load(kKey));
}

TEST_CASE("writers killed at random points leave no temporaries after the next store and a valid cache", "[cache][process]") {
  TempDir dir;
  const auto exe = fs::read_symlink("/proc/self/exe").parent_path() / "jitc_cache_child";
  for (const double delay : {0.05, 0.15, 0.3, 0.5, 0.8, 1.2}) {
    // Each child is killed at another point of its run: while compiling, writing or renaming.
    const std::string cmd = "JITC_DISABLE_CACHE=0 JITC_CACHE_DIR=" + dir.path.string() + " " + exe.string() + " > /dev/null 2>&1 & sleep " +
                            std::to_string(delay) + "; kill -9 $! 2>/dev/null; wait";
    CHECK(std::system(cmd.c_str()) != -1);
  }
  DiskCache cache({dir.path.string(), true, 1 << 20});
  cache.store(kKey, "payload");  // the scan after a store removes what dead writers left
  CHECK(temporaries_in(dir.path) == 0);
  const std::string after = run_child(dir.path);
  INFO(after);
  CHECK(after.find("ok=1") != std::string::npos);
  CHECK(after.find("jitc:") == std::string::npos);
}

// Each test case runs in a process of its own, so the JIT is set up here, by whichever thread asks first.
// The other used to see libmvec not loaded yet and key its entries apart ("vector library none"): two
// functions building at once in one process missed each other's cache entries in the next process.
TEST_CASE("threads asking for the CPU code generator's identity while the JIT sets up get the same one", "[cache]") {
  std::string identities[2];
  std::atomic<int> ready{0};
  auto ask = [&](int i) {
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    identities[i] = jitc::inductor::cpu::cpu_codegen_identity();
  };
  std::thread first(ask, 0), second(ask, 1);
  first.join();
  second.join();
  CHECK(identities[0] == identities[1]);
  CHECK(identities[0] == jitc::inductor::cpu::cpu_codegen_identity());
}
