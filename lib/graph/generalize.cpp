#include "graph/generalize.h"

#include "graph/passes.h"

#include <c10/util/bit_cast.h>
#include <fmt/format.h>

namespace jitc::graph {

namespace {

// Adds expr to the candidates unless an identical one is there.
void add_candidate(std::vector<SymExpr>& candidates, const SymExpr& e) {
  for (const auto& c : candidates)
    if (c == e) return;
  candidates.push_back(e);
}

void fit_monomial(std::vector<SymExpr>& out, int64_t ca, int64_t cb, int64_t ma, int64_t mb, int s, int t) {
  if (ma == mb) return;
  if (ma != 0 && ca % ma == 0 && ca / ma != 0 && (ca / ma) * mb == cb) add_candidate(out, SymExpr::monomial(ca / ma, s, t));
  if (t < 0 && mb + (ca - ma) == cb) add_candidate(out, SymExpr::monomial(1, s, -1, ca - ma));
}

class Generalizer {
 public:
  Generalizer(const Graph& a, const Graph& b, const SymbolValues& s) : a_(a), b_(b), s_(s) {}

  std::optional<Graph> run(std::string* why) {
    Graph out = a_;
    out.num_symbols = static_cast<int>(s_.a.size());
    const bool ok = same_structure() && values(out) && nodes(out);
    if (!ok && why) *why = why_;
    if (!ok) return std::nullopt;
    return out;
  }

 private:
  bool fail(std::string why) {
    why_ = std::move(why);
    return false;
  }

  bool same_structure() {
    if (a_.inputs.size() != b_.inputs.size() || a_.values.size() != b_.values.size() || a_.nodes.size() != b_.nodes.size() ||
        a_.outputs != b_.outputs)
      return fail("the two traces recorded different graphs");
    for (size_t i = 0; i < a_.inputs.size(); ++i) {
      const Input& x = a_.inputs[i];
      const Input& y = b_.inputs[i];
      if (x.kind != y.kind || x.leaf != y.leaf || x.value != y.value)
        return fail(fmt::format("input {} differs between the traces", x.name));
      if (x.kind == InputKind::kCaptured && x.captured._unsafe_get_target() != y.captured._unsafe_get_target())
        return fail(fmt::format("{} is a different tensor in the two traces", x.name));
      if (x.kind == InputKind::kConstant) return fail(fmt::format("{} is a tensor made inside the callable", x.name));
    }
    return true;
  }

  bool shape(const SymShape& x, const SymShape& y, SymShape& out, const char* what, size_t value) {
    if (x.size() != y.size()) return fail(fmt::format("%{} has a different rank", value));
    for (size_t d = 0; d < x.size(); ++d) {
      auto e = fit(x[d].offset, y[d].offset, s_);
      if (!e)
        return fail(
            fmt::format("{} {} of %{} ({} vs {}) is not a function of the dynamic sizes", what, d, value, x[d].offset, y[d].offset));
      out[d] = *e;
    }
    return true;
  }

  bool offset(int64_t x, int64_t y, SymExpr& out, size_t value) {
    auto e = fit_line(x, y, s_);
    if (!e) return fail(fmt::format("the storage offset of %{} ({} vs {}) is not a line in one dynamic size", value, x, y));
    out = *e;
    return true;
  }

  bool values(Graph& out) {
    for (size_t v = 0; v < a_.values.size(); ++v) {
      const TensorMeta& x = a_.values[v].meta;
      const TensorMeta& y = b_.values[v].meta;
      if (x.dtype != y.dtype || x.device != y.device || a_.values[v].storage != b_.values[v].storage)
        return fail(fmt::format("%{} has a different dtype, device or aliasing", v));
      if (!offset(x.storage_offset.offset, y.storage_offset.offset, out.values[v].meta.storage_offset, v) ||
          !shape(x.sizes, y.sizes, out.values[v].meta.sizes, "size", v) ||
          !shape(x.strides, y.strides, out.values[v].meta.strides, "stride", v))
        return false;
    }
    return true;
  }

  bool constant(const Arg& x, const Arg& y, Arg& out, const Node& node) {
    if (same_constant(x.constant, y.constant)) return true;
    const auto& cx = x.constant;
    const auto& cy = y.constant;
    std::vector<int64_t> ax, by;
    if (cx.isInt() && cy.isInt()) {
      ax = {cx.toInt()};
      by = {cy.toInt()};
    } else if (cx.isIntList() && cy.isIntList()) {
      ax = cx.toIntVector();
      by = cy.toIntVector();
    }
    if (cx.isDouble() && cy.isDouble()) return real(cx.toDouble(), cy.toDouble(), out, node);
    if (ax.empty() || ax.size() != by.size()) return fail(fmt::format("an argument of {} differs and is not an integer", node.name()));
    for (size_t k = 0; k < ax.size(); ++k) {
      auto e = fit(ax[k], by[k], s_);
      if (!e)
        return fail(fmt::format("an integer argument of {} ({} vs {}) is not k*s, s + c or k*s*t of the dynamic sizes, or is ambiguous",
                                node.name(), ax[k], by[k]));
      out.symbolic.push_back(*e);
    }
    bool any_symbolic = false;
    for (const auto& e : out.symbolic) any_symbolic = any_symbolic || !e.is_constant();
    if (!any_symbolic) out.symbolic.clear();
    return true;
  }

  // A float that differs between the traces must be a double argument's value in both of them.
  bool real(double x, double y, Arg& out, const Node& node) {
    std::optional<SymExpr> e;
    for (size_t k = 0; k < s_.a.size(); ++k) {
      if (!s_.is_real(k) || s_.a[k] != c10::bit_cast<int64_t>(x) || s_.b[k] != c10::bit_cast<int64_t>(y)) continue;
      if (e) return fail(fmt::format("a float argument of {} ({} vs {}) is ambiguous between two arguments", node.name(), x, y));
      e = SymExpr::monomial(1, static_cast<int>(k));
    }
    if (!e) return fail(fmt::format("a float argument of {} ({} vs {}) is not the value of a double argument", node.name(), x, y));
    out.symbolic = {*e};
    return true;
  }

  bool nodes(Graph& out) {
    for (size_t i = 0; i < a_.nodes.size(); ++i) {
      const Node& x = a_.nodes[i];
      const Node& y = b_.nodes[i];
      if (x.op != y.op || x.kind != y.kind || x.args.size() != y.args.size() || x.outputs.size() != y.outputs.size())
        return fail(fmt::format("node {} is {} in one trace and {} in the other", i, x.name(), y.name()));
      if (!same_constant(x.expected, y.expected)) return fail(fmt::format("the checked result of {} differs", x.name()));
      for (size_t k = 0; k < x.args.size(); ++k) {
        const Arg& ax = x.args[k];
        const Arg& ay = y.args[k];
        if (ax.kind != ay.kind || ax.value != ay.value || ax.list != ay.list)
          return fail(fmt::format("argument {} of {} differs", k, x.name()));
        if (ax.kind == Arg::Kind::kConstant && !constant(ax, ay, out.nodes[i].args[k], x)) return false;
      }
      for (size_t o = 0; o < x.outputs.size(); ++o)
        if (x.outputs[o].values != y.outputs[o].values) return fail(fmt::format("outputs of {} differ", x.name()));
    }
    return true;
  }

  const Graph& a_;
  const Graph& b_;
  const SymbolValues& s_;
  std::string why_;
};

}  // namespace

std::optional<SymExpr> fit(int64_t ca, int64_t cb, const SymbolValues& s) {
  if (ca == cb) return SymExpr::constant(ca);
  std::vector<SymExpr> candidates;
  const int n = static_cast<int>(s.a.size());
  for (int i = 0; i < n; ++i)
    if (!s.is_real(i)) fit_monomial(candidates, ca, cb, s.a[i], s.b[i], i, -1);
  for (int i = 0; i < n; ++i)
    for (int j = i; j < n; ++j)
      if (!s.is_real(i) && !s.is_real(j)) fit_monomial(candidates, ca, cb, s.a[i] * s.a[j], s.b[i] * s.b[j], i, j);
  if (candidates.size() != 1) return std::nullopt;  // none, or ambiguous between symbols
  return candidates[0];
}

std::optional<SymExpr> fit_line(int64_t ca, int64_t cb, const SymbolValues& s) {
  if (ca == cb) return SymExpr::constant(ca);
  if (auto e = fit(ca, cb, s)) return e;
  std::optional<SymExpr> line;
  for (size_t i = 0; i < s.a.size(); ++i) {
    if (s.is_real(i)) continue;
    const int64_t ds = s.b[i] - s.a[i];
    if (ds == 0 || (cb - ca) % ds != 0) continue;
    const int64_t k = (cb - ca) / ds;
    const SymExpr e = SymExpr::monomial(k, static_cast<int>(i), -1, ca - k * s.a[i]);
    if (line && *line != e) return std::nullopt;  // ambiguous between symbols
    line = e;
  }
  return line;
}

std::optional<Graph> generalize(const Graph& a, const Graph& b, const SymbolValues& symbols, std::string* why_not) {
  return Generalizer(a, b, symbols).run(why_not);
}

}  // namespace jitc::graph
