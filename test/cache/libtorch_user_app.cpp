// A program linked as LibTorch's docs show (target_link_libraries(app "${TORCH_LIBRARIES}" jitc)): the
// wheel's libtorch then comes before libstdc++ in the symbol search order, and its own copy of
// std::filesystem would win over libstdc++'s for any call jitc made to it. Stores cache entries and
// clears them, from one thread and from several at once; exits 0 when every entry is gone.
// Uses no std::filesystem itself, for the same reason.
#include <jitc/jitc.h>

#include <ATen/ATen.h>

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

// Regular files under `dir`, recursively.
int count_files(const std::string& dir) {
  int n = 0;
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name, path = dir + "/" + name;
    struct stat s;
    if (name == "." || name == ".." || lstat(path.c_str(), &s) != 0) continue;
    n += S_ISDIR(s.st_mode) ? count_files(path) : S_ISREG(s.st_mode);
  }
  closedir(d);
  return n;
}

// Compiles and runs a new graph (a new cache entry): `scale` makes each call's graph different. The
// first call traces, the second compiles (and stores).
bool store_entry(double scale) {
  auto f = jitc::compile([scale](const at::Tensor& x) { return at::relu(x * scale) + 1; });
  const auto x = at::randn({8, 16});
  bool ok = true;
  for (int call = 0; call < 2; ++call) ok = at::allclose(f(x), at::relu(x * scale) + 1) && ok;
  return ok;
}

}  // namespace

int main() {
  char dir[] = "/tmp/jitc_user_app_XXXXXX";
  if (!mkdtemp(dir)) return 2;
  setenv("JITC_CACHE_DIR", dir, 1);
  setenv("JITC_DISABLE_CACHE", "0", 1);
  c10::InferenceMode guard;
  bool ok = store_entry(2.0);
  const int stored = count_files(dir);
  jitc::clear_cache();
  const int after_clear = count_files(dir);
  for (int round = 0; round < 3; ++round) {
    ok = store_entry(3.0 + round) && ok;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) threads.emplace_back([] { jitc::clear_cache(); });
    for (auto& t : threads) t.join();
  }
  const int after_threads = count_files(dir);
  std::printf("stored=%d after_clear=%d after_threads=%d ok=%d\n", stored, after_clear, after_threads, ok ? 1 : 0);
  rmdir(dir);
  return ok && stored > 0 && after_clear == 0 && after_threads == 0 ? 0 : 1;
}
