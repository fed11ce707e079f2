// A program whose compiled functions outlive main (a global and a function-local static) and returns
// while their programs build in the background: exit must neither crash nor hang. Run without an argument,
// it runs itself as a child 8 times (each exit races the builds at another point) and exits 0 when every
// child exited 0 with its results checked; a child (argument "child") exits 0 when eager and the compiled
// calls agreed, then returns from main at once (mid-build: background builds are the default).
#include <jitc/jitc.h>

#include <ATen/ATen.h>

#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <string>

extern char** environ;

namespace {

at::Tensor layers(const at::Tensor& x, const at::Tensor& w) {
  at::Tensor y = x;
  for (int k = 0; k < 8; ++k) y = at::softmax(at::mm(at::tanh(y * (k + 1)) + y.sin(), w), -1) + y.exp().sum(-1, true) * 1e-3;
  return y;
}

auto global_function = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w).cos(); });

auto& local_function() {
  static auto f = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w) * 2; });
  return f;
}

// Two calls each (the trace, then the hit that starts the build in the background), against eager.
int child() {
  const auto x = at::randn({64, 32}), w = at::randn({32, 32}) * 0.2;
  bool agree = true;
  for (int call = 0; call < 2; ++call) {
    agree = at::allclose(global_function(x, w), layers(x, w).cos(), 1e-4, 1e-5) && agree;
    agree = at::allclose(local_function()(x, w), layers(x, w) * 2, 1e-4, 1e-5) && agree;
  }
  if (!agree) std::fprintf(stderr, "exit_mid_build_app: a compiled result differs from eager's\n");
  // The last hit started its build a moment ago: main returns while it runs (else the test tests nothing).
  const bool building = local_function().stats().programs_compiled == 0;
  if (!building) std::fprintf(stderr, "exit_mid_build_app: the build was done before main returned\n");
  return !agree ? 1 : !building ? 3 : 0;
}

// Runs this program as a child; its exit status, or -1 when it did not exit normally (a signal).
int run_child(const char* self) {
  char arg[] = "child";
  char* argv[] = {const_cast<char*>(self), arg, nullptr};
  pid_t pid;
  if (posix_spawn(&pid, self, nullptr, nullptr, argv, environ) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  if (WIFSIGNALED(status)) std::fprintf(stderr, "exit_mid_build_app: a child died of signal %d\n", WTERMSIG(status));
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "child") == 0) return child();
  int failed = 0;
  for (int run = 0; run < 8; ++run) failed += run_child("/proc/self/exe") != 0;
  std::printf("exit_mid_build_app: %d of 8 children failed\n", failed);
  return failed == 0 ? 0 : 1;
}
