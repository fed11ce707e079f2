// Kernel IR as bytes, for the disk cache and packages: a payload of length-prefixed fields (any byte
// may appear in a text field: IR text, object code), and kernels written into and read back from one.
// Reading throws std::runtime_error on a truncated or malformed payload.
#pragma once
#include "inductor/kernel_ir.h"

#include <cstdint>
#include <string>

namespace jitc::inductor {

class Writer {
 public:
  void number(int64_t v) { out_ += std::to_string(v) + " "; }
  void text(const std::string& s) {
    number(static_cast<int64_t>(s.size()));
    out_ += s;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  int64_t number();
  std::string text();
  bool done() const { return at_ == in_.size(); }

 private:
  const std::string& in_;
  size_t at_ = 0;
};

void write_kernel(Writer& w, const Kernel& k);
Kernel read_kernel(Reader& r);

}  // namespace jitc::inductor
