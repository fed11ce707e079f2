#include "report.h"

#include "contention_meter.h"

#include <torch/headeronly/version.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace jitc::bench {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string format(const char* spec, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, spec, value);
  return buffer;
}

// Small times keep two decimals (tiny_chain is a few µs); large ones one.
std::string micros(double seconds) { return format(seconds * 1e6 < 100 ? "%.2f" : "%.1f", seconds * 1e6); }

const PeerResult* peer_of(const std::optional<PeerRun>& peer, const Row& row) {
  if (!peer) return nullptr;
  auto it = peer->workloads.find(row.workload->name);
  return it == peer->workloads.end() ? nullptr : &it->second;
}

std::string peer_cells(const PeerResult* p, const Row& row) {
  if (!p) return " – | – |";
  if (!p->error.empty() || p->compiled_us <= 0) return " error | – |";
  const std::string ratio = row.error.empty() ? format("%.2f", p->compiled_us / (row.jitc_s * 1e6)) : "–";
  return " " + micros(p->compiled_us * 1e-6) + (p->match ? "" : " (MISMATCH)") +
         (p->other_cores > kContendedCores ? " !" : "") + " | " + ratio + " |";
}

std::string table_row(const Machine& machine, const Row& row, const std::optional<PeerRun>& peer) {
  const Workload& w = *row.workload;
  const char* contended = row.other_cores > kContendedCores ? " !" : "";
  std::string line = "| " + w.name + (w.compute_bound ? "*" : "") + contended + " | " + micros(row.eager_s) + " |";
  if (!row.error.empty()) {
    line += " error | – | – | – | – | – | " + format("%.1f", row.eager_peak_bytes / kMiB) + " | – | ERROR |";
  } else {
    const double bandwidth = w.min_bytes / row.jitc_s;
    line += " " + micros(row.jitc_s) + " | " + format("%.2f", row.eager_s / row.jitc_s) + " | " +
            format("%.1f", row.first_call_s * 1e3) + " | " + format("%.1f", bandwidth / 1e9) + " | " +
            format("%.0f", 100 * bandwidth / machine.copy_bytes_per_s) + " | " +
            format("%.0f", 100 * row.same_size_copy_s / row.jitc_s) + " | " +
            format("%.1f", row.eager_peak_bytes / kMiB) + " | " + format("%.1f", row.jitc_peak_bytes / kMiB) +
            " | " + (row.match ? "yes" : "MISMATCH " + format("%.3g", row.max_abs_diff)) + " |";
  }
  if (peer) line += peer_cells(peer_of(peer, row), row);
  return line;
}

std::string json_number(double value) { return std::isfinite(value) ? format("%.6g", value) : "null"; }

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

std::string json_stats(const jitc::Stats& s) {
  return "{\"calls\":" + std::to_string(s.calls) + ",\"hits\":" + std::to_string(s.hits) +
         ",\"compiles\":" + std::to_string(s.compiles) + ",\"recompiles\":" + std::to_string(s.recompiles) +
         ",\"eager_fallbacks\":" + std::to_string(s.eager_fallbacks) +
         ",\"graph_breaks\":" + std::to_string(s.graph_breaks) + ",\"compile_s\":" + json_number(s.compile_seconds) +
         ",\"codegen_s\":" + json_number(s.codegen_seconds) +
         ",\"programs_compiled\":" + std::to_string(s.programs_compiled) +
         ",\"kernels_compiled\":" + std::to_string(s.kernels_compiled) +
         ",\"programs_from_cache\":" + std::to_string(s.programs_from_cache) + "}";
}

std::string json_peer(const PeerResult& p, const Row& row) {
  std::string out = ",\"torch_compile\":{\"eager_us\":" + json_number(p.eager_us) +
                    ",\"compiled_us\":" + json_number(p.compiled_us) + ",\"compile_s\":" + json_number(p.compile_s) +
                    ",\"match\":" + (p.match ? "true" : "false") +
                    ",\"other_cores\":" + json_number(p.other_cores) + "}";
  if (row.error.empty() && p.compiled_us > 0)
    out += ",\"torch_compile_us_over_jitc_us\":" + json_number(p.compiled_us / (row.jitc_s * 1e6));
  return out;
}

std::string json_row(const Machine& machine, const Row& row, const std::optional<PeerRun>& peer) {
  const Workload& w = *row.workload;
  std::string out = "{\"name\":" + json_string(w.name) + ",\"shapes\":" + json_string(w.shapes) +
                    ",\"min_bytes\":" + std::to_string(w.min_bytes) +
                    ",\"compute_bound\":" + (w.compute_bound ? "true" : "false") +
                    ",\"same_size_copy_us\":" + json_number(row.same_size_copy_s * 1e6) +
                    ",\"eager_us\":" + json_number(row.eager_s * 1e6) +
                    ",\"eager_gbs\":" + json_number(w.min_bytes / row.eager_s / 1e9) +
                    ",\"eager_peak_bytes\":" + std::to_string(row.eager_peak_bytes) +
                    ",\"other_cores\":" + json_number(row.other_cores) +
                    ",\"eager_checksum\":" + format("%.17g", row.eager_checksum);
  if (!row.error.empty()) return out + ",\"error\":" + json_string(row.error) + "}";
  const double bandwidth = w.min_bytes / row.jitc_s;
  out += ",\"jitc_us\":" + json_number(row.jitc_s * 1e6) + ",\"speedup\":" + json_number(row.eager_s / row.jitc_s) +
         ",\"first_call_ms\":" + json_number(row.first_call_s * 1e3) + ",\"jitc_gbs\":" + json_number(bandwidth / 1e9) +
         ",\"jitc_copy_bw_pct\":" + json_number(100 * bandwidth / machine.copy_bytes_per_s) +
         ",\"jitc_same_size_copy_pct\":" + json_number(100 * row.same_size_copy_s / row.jitc_s) +
         ",\"jitc_peak_bytes\":" + std::to_string(row.jitc_peak_bytes) + ",\"match\":" + (row.match ? "true" : "false") +
         ",\"max_abs_diff\":" + json_number(row.max_abs_diff) + ",\"stats\":" + json_stats(row.stats);
  if (const PeerResult* p = peer_of(peer, row)) out += json_peer(*p, row);
  return out + "}";
}

}  // namespace

void print_table(const Machine& machine, const std::vector<Row>& rows, const std::optional<PeerRun>& peer) {
  std::printf("CPU: %s (last-level cache %s); threads: %d; LibTorch %s; copy bandwidth %.1f GB/s (64 MiB copy_, "
              "read + write); load average at start %.2f\njitc compile cache: %s; jitc start-up compile (x+1) "
              "%.1f ms\n",
              machine.cpu.c_str(), machine.last_level_cache.c_str(), machine.threads, TORCH_VERSION,
              machine.copy_bytes_per_s / 1e9, machine.load_average, machine.compile_cache.c_str(),
              machine.startup_compile_s * 1e3);
  if (peer) std::printf("torch.compile columns: %s\n", peer->machine.c_str());
  std::printf("\n| workload | eager µs | jitc µs | speedup | jitc first call ms | jitc GB/s | %% copy bw "
              "| %% same-size copy | eager peak MiB | jitc peak MiB | matches eager |%s\n",
              peer ? " torch.compile µs | tc µs / jitc µs |" : "");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|%s\n", peer ? "---:|---:|" : "");
  for (const Row& row : rows) std::printf("%s\n", table_row(machine, row, peer).c_str());
  std::printf("\n* compute-bound (matmul/conv): %% of copy bandwidth is not its roofline.\n");
  std::printf("! other processes used > %.2f cores while it ran: its times are not representative.\n",
              kContendedCores);
  std::printf("GB/s: the workload's minimal bytes (inputs and weights read once, result written once) / time.\n");
  std::printf("%% copy bw: of the 64 MiB copy (memory). %% same-size copy: of a copy_ moving the same minimal bytes,\n"
              "as cache-resident as the workload: the roofline for working sets that fit the last-level cache.\n");
  std::printf("Peak: bytes the CPU allocator handed out during one call beyond those live before it.\n");
  for (const Row& row : rows) std::printf("  %-18s %s\n", row.workload->name.c_str(), row.workload->shapes.c_str());
}

void write_json(const std::string& path, const Machine& machine, const std::vector<Row>& rows,
                const std::optional<PeerRun>& peer) {
  std::string json = "{\"machine\":{\"cpu\":" + json_string(machine.cpu) +
                     ",\"last_level_cache\":" + json_string(machine.last_level_cache) +
                     ",\"threads\":" + std::to_string(machine.threads) + ",\"libtorch\":\"" TORCH_VERSION "\"" +
                     ",\"copy_gbs\":" + json_number(machine.copy_bytes_per_s / 1e9) +
                     ",\"load_average\":" + json_number(machine.load_average) +
                     ",\"compile_cache\":" + json_string(machine.compile_cache) +
                     ",\"startup_compile_s\":" + json_number(machine.startup_compile_s) + "},\n\"workloads\":[";
  for (size_t i = 0; i < rows.size(); ++i) json += (i ? ",\n" : "\n") + json_row(machine, rows[i], peer);
  json += "\n]}\n";
  std::ofstream out(path);
  if (!out || !(out << json)) throw std::runtime_error("cannot write " + path);
}

}  // namespace jitc::bench
