#include "inductor/kernel_serial.h"

#include <bit>
#include <stdexcept>

namespace jitc::inductor {

int64_t Reader::number() {
  const size_t space = in_.find(' ', at_);
  if (space == std::string::npos) throw std::runtime_error("truncated");
  const int64_t v = std::stoll(in_.substr(at_, space - at_));
  at_ = space + 1;
  return v;
}

std::string Reader::text() {
  const int64_t n = number();
  if (n < 0 || at_ + static_cast<size_t>(n) > in_.size()) throw std::runtime_error("truncated");
  std::string s = in_.substr(at_, static_cast<size_t>(n));
  at_ += static_cast<size_t>(n);
  return s;
}

void write_kernel(Writer& w, const Kernel& k) {
  w.text(k.name);
  w.number(k.tile);
  w.number(k.num_reduction_loops);
  w.number(static_cast<int64_t>(k.buffers.size()));
  for (const auto& b : k.buffers) {
    w.text(b.name);
    w.number(static_cast<int64_t>(b.dtype));
    w.number(b.written);
  }
  w.number(static_cast<int64_t>(k.vars.size()));
  for (const auto& v : k.vars) {
    w.number(static_cast<int64_t>(v.kind));
    w.number(v.extent);
    w.number(v.loop);
  }
  w.number(static_cast<int64_t>(k.body.size()));
  for (const auto& e : k.body) {
    for (int64_t field : {int64_t(e.op), int64_t(e.dtype), int64_t(e.a), int64_t(e.b), int64_t(e.c), int64_t(e.var), int64_t(e.buffer),
                          int64_t(e.loop), int64_t(e.reduce), std::bit_cast<int64_t>(e.value), e.ivalue})
      w.number(field);
  }
}

Kernel read_kernel(Reader& r) {
  Kernel k;
  k.name = r.text();
  k.tile = r.number();
  k.num_reduction_loops = static_cast<int>(r.number());
  for (int64_t n = r.number(); n > 0; --n) {
    Buffer b;
    b.name = r.text();
    b.dtype = static_cast<c10::ScalarType>(r.number());
    b.written = r.number() != 0;
    k.buffers.push_back(b);
  }
  for (int64_t n = r.number(); n > 0; --n) {
    LoopVar v;
    v.kind = static_cast<LoopVar::Kind>(r.number());
    v.extent = static_cast<int>(r.number());
    v.loop = static_cast<int>(r.number());
    k.vars.push_back(v);
  }
  for (int64_t n = r.number(); n > 0; --n) {
    Expr e;
    e.op = static_cast<ScalarOp>(r.number());
    e.dtype = static_cast<c10::ScalarType>(r.number());
    e.a = static_cast<int>(r.number());
    e.b = static_cast<int>(r.number());
    e.c = static_cast<int>(r.number());
    e.var = static_cast<int>(r.number());
    e.buffer = static_cast<int>(r.number());
    e.loop = static_cast<int>(r.number());
    e.reduce = static_cast<ReduceKind>(r.number());
    e.value = std::bit_cast<double>(r.number());
    e.ivalue = r.number();
    k.body.push_back(e);
  }
  return k;
}

}  // namespace jitc::inductor
