// Temporary files of the cache's writers: "<final path>.tmp.<pid>.<n>", renamed into place when whole.
// A writer killed before the rename leaves its temporary behind; scans remove the stale ones.
#pragma once
#include "cache/files.h"

#include <cstdint>
#include <string>

namespace jitc::cache {

// A fresh temporary name for `path`, unique among this process's writers.
std::string temporary_for(const std::string& path);

bool is_temporary(const std::string& path);

// A temporary no writer will rename any more: its process is gone from this machine, or it is older
// than kStaleTemporaryNs (a writer on another machine sharing the directory, or a reused pid). Removing
// one a slow writer still owns is harmless: its rename fails and it drops that entry.
constexpr int64_t kStaleTemporaryNs = int64_t{10} * 60 * 1000000000;  // ten minutes
bool is_stale_temporary(const files::File& file, int64_t now_ns);

}  // namespace jitc::cache
