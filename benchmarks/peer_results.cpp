#include "peer_results.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace jitc::bench {
namespace {

// Just enough JSON for the peer's file (no \u escapes); LibTorch ships no JSON reader.
struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json* find(const std::string& key) const {
    for (const auto& [name, value] : fields)
      if (name == key) return &value;
    return nullptr;
  }
  double number_or(const std::string& key, double fallback) const {
    const Json* v = find(key);
    return v && v->kind == Kind::kNumber ? v->number : fallback;
  }
};

class Parser {
 public:
  Parser(std::string text, std::string path) : text_(std::move(text)), path_(std::move(path)) {}

  Json parse_document() {
    Json value = parse_value();
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": " + what + " at byte " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  bool consume_word(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }

  Json parse_value() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    Json value;
    const char c = text_[pos_];
    if (c == '{') return parse_object();
    if (c == '[') return parse_array();
    if (c == '"') {
      value.kind = Json::Kind::kString;
      value.text = parse_string();
    } else if (consume_word("true")) {
      value.kind = Json::Kind::kBool;
      value.number = 1;
    } else if (consume_word("false")) {
      value.kind = Json::Kind::kBool;
    } else if (consume_word("null")) {
      value.kind = Json::Kind::kNull;
    } else {
      char* end = nullptr;
      value.number = std::strtod(text_.c_str() + pos_, &end);
      if (end == text_.c_str() + pos_) fail("expected a value");
      value.kind = Json::Kind::kNumber;
      pos_ = static_cast<size_t>(end - text_.c_str());
    }
    return value;
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\') ++pos_;
      if (pos_ < text_.size()) out += text_[pos_++];
    }
    expect('"');
    return out;
  }

  Json parse_array() {
    Json value;
    value.kind = Json::Kind::kArray;
    expect('[');
    if (consume(']')) return value;
    do value.items.push_back(parse_value());
    while (consume(','));
    expect(']');
    return value;
  }

  Json parse_object() {
    Json value;
    value.kind = Json::Kind::kObject;
    expect('{');
    if (consume('}')) return value;
    do {
      skip_space();
      std::string key = parse_string();
      expect(':');
      value.fields.emplace_back(std::move(key), parse_value());
    } while (consume(','));
    expect('}');
    return value;
  }

  std::string text_, path_;
  size_t pos_ = 0;
};

std::string describe_machine(const Json* machine) {
  if (!machine) return "unknown machine";
  const Json* cpu = machine->find("cpu");
  return (cpu ? cpu->text : std::string("unknown CPU")) + ", " +
         std::to_string(static_cast<int>(machine->number_or("threads", 0))) + " threads";
}

Json parse_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open the peer results " + path + " (run peer_torch_compile.py first)");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return Parser(buffer.str(), path).parse_document();
}

std::string text_or(const Json* object, const std::string& key, const std::string& fallback) {
  const Json* v = object ? object->find(key) : nullptr;
  return v && v->kind == Json::Kind::kString ? v->text : fallback;
}

}  // namespace

PeerRun read_peer_results(const std::string& path) {
  const Json root = parse_file(path);
  const Json* workloads = root.find("workloads");
  if (!workloads || workloads->kind != Json::Kind::kArray) throw std::runtime_error(path + ": no \"workloads\" array");
  PeerRun run;
  run.machine = describe_machine(root.find("machine"));
  for (const Json& w : workloads->items) {
    const Json* name = w.find("name");
    if (!name) continue;
    const Json* match = w.find("match");
    const Json* error = w.find("error");
    run.workloads[name->text] = {w.number_or("eager_us", 0), w.number_or("compiled_us", 0),
                                 w.number_or("compile_s", 0), !match || match->number != 0,
                                 w.number_or("eager_checksum", 0), w.number_or("other_cores", 0),
                                 error && error->kind == Json::Kind::kString ? error->text : ""};
  }
  return run;
}

CudaPeerRun read_cuda_peer_results(const std::string& path) {
  const Json root = parse_file(path);
  const Json* workloads = root.find("workloads");
  if (text_or(&root, "device", "").empty())
    throw std::runtime_error(path + ": no \"device\": not written by peer_torch_compile.py --device cuda");
  if (!workloads || workloads->kind != Json::Kind::kObject)
    throw std::runtime_error(path + ": no \"workloads\" object (keyed by workload)");
  CudaPeerRun run;
  run.device = text_or(&root, "device", "");
  const Json* machine = root.find("machine");
  run.machine = text_or(machine, "gpu", "unknown GPU") + ", torch " + text_or(machine, "torch", "?") + ", triton " +
                text_or(machine, "triton", "?");
  run.copy_gbs = root.number_or("copy_gbs", 0);
  if (const Json* host = root.find("host_us"))
    for (const auto& [mode, us] : host->fields)
      if (us.kind == Json::Kind::kNumber) run.host_us[mode] = us.number;
  for (const auto& [key, w] : workloads->fields) {
    CudaPeerWorkload& out = run.workloads[key];
    out.name = text_or(&w, "name", key);
    out.calls = static_cast<int>(w.number_or("calls", 0));
    out.eager_ms = w.number_or("eager_ms", 0);
    out.peak_bytes_eager = w.number_or("peak_bytes_eager", 0);
    const Json* modes = w.find("modes");
    if (!modes) continue;
    for (const auto& [mode, m] : modes->fields) {
      const Json* match = m.find("match");
      out.modes[mode] = {m.number_or("ms", 0),           m.number_or("first_calls_s", 0), m.number_or("peak_bytes", 0),
                         m.number_or("held_bytes", 0),   m.number_or("max_abs_diff", 0),  !match || match->number != 0,
                         m.number_or("cudagraph_skips", 0), text_or(&m, "error", "")};
    }
  }
  return run;
}

}  // namespace jitc::bench
