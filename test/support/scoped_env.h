// Scoped changes of the process environment for one test.
#pragma once
#include "runtime/env.h"

#include <cstdlib>
#include <optional>
#include <string>

namespace jitc::testing {

// Sets an environment variable for one test and re-reads jitc's environment switches.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
    jitc::runtime::reload_env();
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
    jitc::runtime::reload_env();
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace jitc::testing
