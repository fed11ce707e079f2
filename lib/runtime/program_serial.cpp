// ProgramCode as a cache payload: its plan (kernels as inductor/kernel_serial.h writes them, steps), its
// kernel IR, and per backend unit the backend's name, device, kernels, source, binary bytes and each
// kernel's schedule.
// deserialize() loads each binary through its backend without generating or compiling anything.
#include "runtime/program.h"

#include "inductor/kernel_serial.h"

#include <fmt/format.h>

namespace jitc::runtime {

using inductor::Reader;
using inductor::Writer;

namespace {

void write_plan(Writer& w, const inductor::Plan& plan) {
  w.number(static_cast<int64_t>(plan.kernels.size()));
  for (const auto& k : plan.kernels) {
    inductor::write_kernel(w, k.kernel);
    w.number(static_cast<int64_t>(k.device.type()));
    w.number(k.device.index());
    for (const auto* values : {&k.buffers, &k.outputs, &k.output_memory}) {
      w.number(static_cast<int64_t>(values->size()));
      for (auto v : *values) w.number(v);
    }
  }
  w.number(static_cast<int64_t>(plan.steps.size()));
  for (const auto& s : plan.steps) {
    w.number(static_cast<int64_t>(s.kind));
    w.number(s.index);
  }
  w.number(static_cast<int64_t>(plan.extern_reasons.size()));
  for (const auto& r : plan.extern_reasons) w.text(r);
}

c10::Device read_device(Reader& r) {
  const auto type = static_cast<c10::DeviceType>(r.number());
  return c10::Device(type, static_cast<c10::DeviceIndex>(r.number()));
}

inductor::Plan read_plan(Reader& r) {
  inductor::Plan plan;
  for (int64_t n = r.number(); n > 0; --n) {
    inductor::KernelLaunch k;
    k.kernel = inductor::read_kernel(r);
    k.device = read_device(r);
    for (auto* values : {&k.buffers, &k.outputs, &k.output_memory})
      for (int64_t j = r.number(); j > 0; --j) values->push_back(static_cast<graph::ValueId>(r.number()));
    plan.kernels.push_back(std::move(k));
  }
  for (int64_t n = r.number(); n > 0; --n) {
    inductor::Step s;
    s.kind = static_cast<inductor::Step::Kind>(r.number());
    s.index = static_cast<int>(r.number());
    plan.steps.push_back(s);
  }
  for (int64_t n = r.number(); n > 0; --n) plan.extern_reasons.push_back(r.text());
  return plan;
}

void write_schedules(Writer& w, const std::vector<inductor::Schedule>& schedules) {
  w.number(static_cast<int64_t>(schedules.size()));
  for (const auto& s : schedules) {
    w.number(static_cast<int64_t>(s.decisions.size()));
    for (const auto& [name, value] : s.decisions) {
      w.text(name);
      w.number(value);
    }
  }
}

std::vector<inductor::Schedule> read_schedules(Reader& r) {
  std::vector<inductor::Schedule> schedules;
  for (int64_t n = r.number(); n > 0; --n) {
    inductor::Schedule& s = schedules.emplace_back();
    for (int64_t d = r.number(); d > 0; --d) {
      std::string name = r.text();
      s.set(name, r.number());
    }
  }
  return schedules;
}

// A unit as read, before its backend loads it.
struct StoredUnit {
  std::string backend;
  c10::Device device{c10::kCPU};
  std::vector<size_t> kernels;
  std::string source, source_file, binary;
  std::vector<inductor::Schedule> schedules;
};

StoredUnit read_unit(Reader& r, size_t num_kernels) {
  StoredUnit u;
  u.backend = r.text();
  u.device = read_device(r);
  for (int64_t n = r.number(); n > 0; --n) {
    const int64_t k = r.number();
    if (k < 0 || static_cast<size_t>(k) >= num_kernels) throw std::runtime_error("a unit names a kernel out of range");
    u.kernels.push_back(static_cast<size_t>(k));
  }
  u.source_file = r.text();
  u.source = r.text();
  u.binary = r.text();
  u.schedules = read_schedules(r);
  if (u.schedules.size() != u.kernels.size()) throw std::runtime_error("a unit's schedules do not match its kernels");
  return u;
}

}  // namespace

std::string ProgramCode::serialize() const {
  Writer w;
  write_plan(w, plan);
  w.text(kernel_ir);
  w.number(static_cast<int64_t>(units.size()));
  for (const auto& u : units) {
    w.text(u.backend->target().name);
    w.number(static_cast<int64_t>(u.device.type()));
    w.number(u.device.index());
    w.number(static_cast<int64_t>(u.kernels.size()));
    for (size_t k : u.kernels) w.number(static_cast<int64_t>(k));
    w.text(u.source_file);
    w.text(u.source);
    w.text(u.binary->serialize());
    write_schedules(w, u.binary->schedules);
  }
  return w.take();
}

std::shared_ptr<const ProgramCode> ProgramCode::deserialize(const std::string& payload, const std::string& name) {
  auto code = std::make_shared<ProgramCode>();
  std::vector<StoredUnit> stored;
  try {
    Reader r(payload);
    code->plan = read_plan(r);
    code->kernel_ir = r.text();
    for (int64_t n = r.number(); n > 0; --n) stored.push_back(read_unit(r, code->plan.kernels.size()));
    if (!r.done()) return nullptr;
  } catch (const std::exception&) {  // Reader: truncated or malformed
    return nullptr;
  }
  for (auto& s : stored) {
    Unit u;
    u.backend = inductor::backend_named(s.backend);
    if (!u.backend) return nullptr;
    u.device = s.device;
    u.kernels = std::move(s.kernels);
    u.source = std::move(s.source);
    u.source_file = std::move(s.source_file);
    u.binary = u.backend->deserialize(s.binary);
    if (!u.binary) return nullptr;
    u.binary->schedules = std::move(s.schedules);
    u.loaded = u.backend->load(*u.binary, code->launches(u), {.name = name, .want_assembly = false, .device = u.device});
    if (!u.loaded) return nullptr;
    code->units.push_back(std::move(u));
  }
  std::vector<bool> covered(code->plan.kernels.size(), false);
  for (const auto& u : code->units)
    for (size_t k : u.kernels) covered[k] = true;
  if (std::find(covered.begin(), covered.end(), false) != covered.end()) return nullptr;
  code->link();
  return code;
}

}  // namespace jitc::runtime
