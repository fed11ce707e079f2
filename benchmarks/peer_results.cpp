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

}  // namespace

PeerRun read_peer_results(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open the peer results " + path + " (run peer_torch_compile.py first)");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const Json root = Parser(buffer.str(), path).parse_document();
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

}  // namespace jitc::bench
