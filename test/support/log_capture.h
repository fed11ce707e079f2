// Captures jitc's log and warning lines for the duration of a test.
#pragma once
#include "runtime/log.h"

#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace jitc::testing {

class LogCapture {
 public:
  explicit LogCapture(const std::string& artifacts = "") {
    runtime::set_logs(artifacts);
    runtime::set_log_sink([this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex_);
      text_ += line;
    });
  }
  ~LogCapture() {
    runtime::set_log_sink({});
    runtime::set_logs("");
  }
  std::string text() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }
  bool contains(const std::string& s) const { return text().find(s) != std::string::npos; }
  std::vector<std::string> lines_with(const std::string& needle) const {
    std::vector<std::string> lines;
    std::istringstream in(text());
    for (std::string line; std::getline(in, line);)
      if (line.find(needle) != std::string::npos) lines.push_back(line);
    return lines;
  }

 private:
  mutable std::mutex mutex_;
  std::string text_;
};

}  // namespace jitc::testing
