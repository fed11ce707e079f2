#include "contention_meter.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace jitc::bench {
namespace {

// /proc/stat's first line: cpu user nice system idle iowait irq softirq steal ... (clock ticks).
int64_t total_busy_ticks() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  return user + nice + system + irq + softirq + steal;
}

// /proc/self/stat fields 14 and 15 (utime, stime); field 2, the command, is parenthesised and may hold spaces.
int64_t own_ticks() {
  std::ifstream stat("/proc/self/stat");
  std::string line;
  std::getline(stat, line);
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string skip;
  for (int field = 3; field < 14; ++field) fields >> skip;
  int64_t utime = 0, stime = 0;
  fields >> utime >> stime;
  return utime + stime;
}

}  // namespace

ContentionMeter::ContentionMeter()
    : total_busy_ticks_(total_busy_ticks()), own_ticks_(own_ticks()), start_(std::chrono::steady_clock::now()) {}

double ContentionMeter::other_cores() const {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int64_t others = (total_busy_ticks() - total_busy_ticks_) - (own_ticks() - own_ticks_);
  // Ticks are 10 ms: a short, quiet interval can come out slightly negative.
  return seconds > 0 ? std::max(0.0, static_cast<double>(others) / static_cast<double>(sysconf(_SC_CLK_TCK)) / seconds)
                     : 0;
}

}  // namespace jitc::bench
