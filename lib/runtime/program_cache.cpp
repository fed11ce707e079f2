#include "runtime/program_cache.h"

#include "cache/disk_cache.h"
#include "cache/sha256.h"
#include "graph/passes.h"
#include "inductor/backend.h"
#include "runtime/env.h"
#include "runtime/log.h"

#include <torch/version.h>

#include <fmt/format.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace jitc::runtime {

namespace {

struct MemoryCache {
  std::mutex mutex;
  std::unordered_map<std::string, std::weak_ptr<const ProgramCode>> programs;

  std::shared_ptr<const ProgramCode> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = programs.find(key);
    return it == programs.end() ? nullptr : it->second.lock();
  }
  void keep(const std::string& key, const std::shared_ptr<const ProgramCode>& code) {
    std::lock_guard<std::mutex> lock(mutex);
    programs[key] = code;
  }
};

MemoryCache& memory() {
  static MemoryCache* cache = new MemoryCache();
  return *cache;
}

cache::DiskCache& disk() {
  static cache::DiskCache* d = [] {
    auto* c = new cache::DiskCache(env_disk_cache());  // never destroyed: used until exit
    c->set_reporter([](const std::string& m) { warn(m); });
    return c;
  }();
  return *d;
}

// This build of jitc: a rebuilt libjitc may generate different code for the same graph, so entries of
// another build must not be found. The library file's size and modification time tell builds apart
// without reading it.
std::string library_identity() {
  Dl_info info;
  struct stat s;
  if (!dladdr(reinterpret_cast<void*>(&library_identity), &info) || !info.dli_fname || stat(info.dli_fname, &s) != 0)
    return "unknown build";
  return fmt::format("{} bytes, modified {}.{:09d}", s.st_size, s.st_mtim.tv_sec, s.st_mtim.tv_nsec);
}

}  // namespace

// What a graph's code depends on besides its text: the identity of each backend its values' devices have
// (compiler versions, target, architecture) and this build of jitc.
std::string codegen_identity(const graph::Graph& g) {
  std::vector<c10::Device> devices;
  for (const auto& v : g.values)
    if (std::find(devices.begin(), devices.end(), v.meta.device) == devices.end()) devices.push_back(v.meta.device);
  std::string identity;
  for (const auto& device : devices)
    if (const inductor::Backend* backend = inductor::backend_for(device.type()))
      identity += fmt::format("{} ({}): {}; ", backend->target().name, device.str(), backend->identity(device));
  static const std::string& build = *new std::string(library_identity());
  return identity + "jitc " + build;
}

// What a key is made of besides the graph, one named part per line.
std::string key_parts(const graph::Graph& functional, bool tuned) {
  return fmt::format("cache format: {}\nlibtorch: {}\ncode generator: {}\noptions: tile {}{}\n", cache::kFormatVersion, TORCH_VERSION,
                     codegen_identity(functional), inductor::kTile, tuned ? " max-autotune" : "");
}

// The parts of `now` that differ from `before` (their names), for a miss's log line.
std::string differing_parts(const std::string& before, const std::string& now) {
  std::istringstream a(before), b(now);
  std::string x, y, out;
  while (std::getline(a, x) && std::getline(b, y))
    if (x != y) out += (out.empty() ? "" : ", ") + y.substr(0, y.find(':'));
  return out;
}

// Static sizes whose every tensor spans fewer than 2^31 elements (dynamic sizes could grow past it).
bool fits_32_bits(const graph::Graph& g) {
  if (g.num_symbols > 0) return false;
  for (const auto& v : g.values) {
    int64_t extent = 1;
    for (size_t d = 0; d < v.meta.sizes.size(); ++d) {
      const int64_t size = v.meta.sizes[d].offset, stride = v.meta.strides[d].offset;
      if (size == 0) extent = 0;
      if (size > 0) extent += (size - 1) * std::abs(stride);
    }
    if (extent + v.meta.storage_offset.offset >= (int64_t{1} << 31)) return false;
  }
  return true;
}

std::string program_key_text(const graph::Graph& functional, bool tuned) {
  return key_parts(functional, tuned) + graph::to_text(functional);
}

std::string program_key(const graph::Graph& functional, bool tuned) { return cache::sha256_hex(program_key_text(functional, tuned)); }

namespace {

// Sets `why`; returns false (for checks that fail with a reason).
bool fail(std::string* why, std::string reason) {
  *why = std::move(reason);
  return false;
}

// Whether every index `plan` holds (values, nodes, kernels, kernel buffers) is in range for `g`: what
// must hold before the plan's signature can be computed against `g`, or the plan run on it.
bool indices_fit(const inductor::Plan& plan, const graph::Graph& g, std::string* why) {
  const auto value_ok = [&](int64_t v) { return v >= 0 && v < static_cast<int64_t>(g.values.size()); };
  for (const auto& k : plan.kernels) {
    if (k.buffers.size() != k.kernel.buffers.size())
      return fail(why, fmt::format("kernel {} takes another number of buffers", k.kernel.name));
    for (const auto* ids : {&k.buffers, &k.outputs})
      for (auto v : *ids)
        if (!value_ok(v)) return fail(why, fmt::format("kernel {} names value {} of {}", k.kernel.name, v, g.values.size()));
  }
  for (const auto& s : plan.steps) {
    const size_t bound = s.kind == inductor::Step::Kind::kKernel   ? plan.kernels.size()
                         : s.kind == inductor::Step::Kind::kExtern ? g.nodes.size()
                                                                   : g.values.size();
    if (s.index < 0 || static_cast<size_t>(s.index) >= bound) return fail(why, fmt::format("a step names index {} of {}", s.index, bound));
  }
  return true;
}

void describe_value(std::string& out, const graph::Graph& g, graph::ValueId v) {
  const auto& m = g.values[v].meta;
  out += fmt::format(" {}:{} {} {} {} +{}", v, c10::toString(m.dtype), m.device.str(), graph::to_string(m.sizes),
                     graph::to_string(m.strides), m.storage_offset.to_string());
}

// What `plan` assumes of the graph it runs on: each kernel's signature (buffer dtypes, written or not)
// beside the dtype, device, sizes and strides of the values passed to it, the ops of its extern steps, and
// the graph's outputs. Computed from the compiled graph when an entry is stored and from the graph it
// serves when loaded: a plan compiled for another graph differs. Needs indices_fit.
std::string plan_signature(const inductor::Plan& plan, const graph::Graph& g) {
  std::string out = fmt::format("values {} nodes {} symbols {} outputs", g.values.size(), g.nodes.size(), g.num_symbols);
  for (auto v : g.outputs) out += fmt::format(" {}", v);
  for (const auto& k : plan.kernels) {
    out += fmt::format("\nkernel {} on {}:", k.kernel.name, k.device.str());
    for (size_t b = 0; b < k.buffers.size(); ++b) {
      out += fmt::format(" [{}{}]", c10::toString(k.kernel.buffers[b].dtype), k.kernel.buffers[b].written ? " written" : "");
      describe_value(out, g, k.buffers[b]);
    }
    out += " writes";
    for (auto v : k.outputs) describe_value(out, g, v);
  }
  for (const auto& s : plan.steps)
    if (s.kind == inductor::Step::Kind::kExtern) out += fmt::format("\nextern {} {}", s.index, g.nodes[s.index].name());
  return out;
}

// A payload: the plan's signature ("<size>\n<signature>") before the serialized code.
std::string payload_of(const ProgramCode& code, const graph::Graph& g) {
  const std::string signature = plan_signature(code.plan, g);
  return fmt::format("{}\n", signature.size()) + signature + code.serialize();
}

// The code of a payload if it parses and its plan fits `g` (else null, and why).
std::shared_ptr<const ProgramCode> code_of(const std::string& payload, const graph::Graph& g, const std::string& name, std::string* why) {
  const size_t eol = payload.find('\n');
  size_t size = 0;
  if (eol == std::string::npos || eol > 20 || std::sscanf(payload.c_str(), "%zu", &size) != 1 || size > payload.size() - eol - 1) {
    *why = "it does not parse";
    return nullptr;
  }
  auto code = ProgramCode::deserialize(payload.substr(eol + 1 + size), name);
  if (!code) {
    *why = "it does not parse";
    return nullptr;
  }
  if (!indices_fit(code->plan, g, why)) return nullptr;
  if (plan_signature(code->plan, g) != payload.substr(eol + 1, size)) {
    *why = "its kernels' buffers, dtypes or sizes differ from this graph's";
    return nullptr;
  }
  return code;
}

// The code for `key` from memory, else from disk (`source` says which); null if neither has it.
std::shared_ptr<const ProgramCode> cached_code(const std::string& key, const std::string& key_text, const graph::Graph& functional,
                                               const std::string& name, const std::string& compile_id, CodeSource& source) {
  if (auto code = memory().find(key)) {
    source = CodeSource::kMemory;
    log(Artifact::kCache, fmt::format("cache hit (memory) {} for {}", key, name), compile_id);
    return code;
  }
  auto payload = disk().load(key_text);
  if (!payload) return nullptr;
  std::string why;
  auto code = code_of(*payload, functional, name, &why);
  if (!code) {
    warn(fmt::format("jitc: ignoring the cache entry {}: {}; it is compiled again", disk().path_of(key_text), why), compile_id);
    return nullptr;
  }
  source = CodeSource::kDisk;
  memory().keep(key, code);
  log(Artifact::kCache, fmt::format("cache hit (disk) {} for {}: {}", key, name, disk().path_of(key_text)), compile_id);
  return code;
}

}  // namespace

CacheLookup find_code(const graph::Graph& functional, const std::string& name, bool tuned, bool use_cache, const std::string& compile_id,
                      CompileTimes* times) {
  CacheLookup out;
  out.key_text = program_key_text(functional, tuned);
  out.key = cache::sha256_hex(out.key_text);
  if (!use_cache) return out;
  CompileTimes lookup;  // a hit's whole cost is loading; a miss's lookup is not a stage of its own
  out.code =
      timed(&lookup, &CodegenStages::load, [&] { return cached_code(out.key, out.key_text, functional, name, compile_id, out.source); });
  if (out.code && times) times->stages.load += lookup.stages.load;
  return out;
}

void keep_code(const CacheLookup& lookup, const graph::Graph& functional, const std::shared_ptr<const ProgramCode>& code,
               const std::string& name, bool tuned, const std::string& compile_id) {
  // The nearest entry: the same graph compiled with other key parts (another jitc, LibTorch, target...).
  const std::string graph_key = cache::sha256_hex(graph::to_text(functional)), parts = key_parts(functional, tuned);
  std::string why = "no entry for this graph";
  if (auto before = disk().load_note(graph_key)) {
    const std::string differ = differing_parts(*before, parts);
    if (!differ.empty()) why = "the entry for this graph was made with another " + differ;
  }
  memory().keep(lookup.key, code);
  if (disk().enabled()) disk().store(lookup.key_text, payload_of(*code, functional));
  disk().store_note(graph_key, parts);
  log(Artifact::kCache,
      fmt::format("cache miss {} for {} ({}): compiled{}", lookup.key, name, why,
                  disk().enabled() ? ", saved to " + disk().path_of(lookup.key_text) : ""),
      compile_id);
}

void clear_program_caches() {
  {
    std::lock_guard<std::mutex> lock(memory().mutex);
    memory().programs.clear();
  }
  disk().clear();
}

}  // namespace jitc::runtime
