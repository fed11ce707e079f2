// Lowerings of views (index arithmetic, never copies), of ops that assemble tensors (cat, stack,
// constant_pad_nd, tril/triu), of indexing (embedding, index_select, gather) and of factories (arange, full, zeros,
// ones and their _like forms). A view of a buffer loads straight from it through the view's strides; a
// view of a computed value remaps the index and inlines the value.
//
// Indices read from tensors (embedding, index_select, gather) are checked (kCheck: on the CPU the program
// then replays the graph eagerly, which raises eager's IndexError; on CUDA a device-side assert, as eager's)
// and clamped into range, so that the kernel's own reads stay inside its buffers until the check reports.
#include "inductor/lowering.h"

#include <fmt/format.h>

#include <algorithm>

namespace jitc::inductor {

namespace {

using c10::ScalarType;
using graph::Node;
using graph::SymExpr;
using graph::SymShape;
using graph::ValueId;
using Remap = std::function<Index(KernelBuilder&, const Index&)>;

ValueId output(const Node& n, size_t k = 0) { return n.outputs.at(0).values.at(k); }

int64_t int_arg(const Node& n, size_t i) {
  if (i >= n.args.size() || n.args[i].kind != graph::Arg::Kind::kConstant || !n.args[i].symbolic.empty() || !n.args[i].constant.isInt())
    throw Unsupported(fmt::format("argument {} of {} is not a constant integer", i, n.name()));
  return n.args[i].constant.toInt();
}

int64_t wrap_dim(int64_t d, size_t rank) {
  if (d < 0) d += static_cast<int64_t>(rank);
  if (d < 0 || d >= static_cast<int64_t>(std::max<size_t>(rank, 1))) throw Unsupported("dim out of range");
  return d;
}

// Where `start` (negative: from the end, clamped to 0 as slice does) falls in a dim of `size` elements.
// A dynamic size makes a start from the end a run-time value; a select's index is in range (eager
// checked it when tracing, and every size is traced once before it runs compiled).
int position_in(KernelBuilder& kb, int64_t start, const SymExpr& size) {
  if (start >= 0) return kb.index_constant(start);
  if (size.is_constant()) return kb.index_constant(std::max<int64_t>(start + size.offset, 0));
  const int from_end = kb.add(kb.extent(size), kb.index_constant(start));
  return kb.binary(ScalarOp::kMax, from_end, kb.index_constant(0));
}

// A slice's start (argument `arg`, None meaning 0) in a dim of `size` elements: from the end where
// negative, clamped into the dim as slice does, where the size is static (position_in does the rest).
int64_t slice_start(const Node& n, size_t arg, const SymExpr& size) {
  int64_t start = n.args.size() > arg && !n.args[arg].constant.isNone() ? int_arg(n, arg) : 0;
  if (size.is_constant()) start = std::clamp<int64_t>(start < 0 ? start + size.offset : start, 0, size.offset);
  return start;
}

// A view's loader: straight from the buffer it views, or the viewed value at the remapped index.
Loader view(LoweringContext& c, ValueId in, ValueId out, Remap remap) {
  return [&c, in, out, remap](KernelBuilder& kb, const Index& index) {
    if (auto loaded = c.load_view(kb, out, index)) return *loaded;
    return c.at(kb, in, remap(kb, index));
  };
}

// The dims of a reshape's input and output (size-1 dims left out) in groups of equal element count, in
// order: a dim kept as it is is a group of one on each side; [C] -> [2, C/2] is one group. Empty when
// the groups cannot be told apart (symbolic sizes that differ): the whole index is then one group.
struct DimGroup {
  std::vector<size_t> from, to;  // dims of the input and of the output
};

std::vector<DimGroup> dim_groups(const SymShape& from, const SymShape& to) {
  std::vector<size_t> a, b;
  for (size_t d = 0; d < from.size(); ++d)
    if (!from[d].is_one()) a.push_back(d);
  for (size_t d = 0; d < to.size(); ++d)
    if (!to[d].is_one()) b.push_back(d);
  std::vector<DimGroup> groups;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    DimGroup g{{a[i++]}, {b[j++]}};
    if (from[g.from[0]] != to[g.to[0]]) {
      if (!from[g.from[0]].is_constant() || !to[g.to[0]].is_constant()) return {};
      int64_t in = from[g.from[0]].offset, out = to[g.to[0]].offset;
      while (in != out) {
        std::vector<size_t>& side = in < out ? g.from : g.to;
        const std::vector<size_t>& dims = in < out ? a : b;
        size_t& next = in < out ? i : j;
        if (next == dims.size() || !(in < out ? from : to)[dims[next]].is_constant()) return {};
        (in < out ? in : out) *= (in < out ? from : to)[dims[next]].offset;
        side.push_back(dims[next++]);
      }
    }
    groups.push_back(std::move(g));
  }
  if (i != a.size() || j != b.size()) return {};
  return groups;
}

// One group of a reshape: the row-major position in the output's dims of the group, split over the
// input's dims of the group (no division where the input has one dim: the position is its index).
void remap_group(KernelBuilder& kb, const SymShape& from, const SymShape& to, const std::vector<size_t>& from_dims,
                 const std::vector<size_t>& to_dims, const Index& index, Index& in) {
  int linear = index[to_dims[0]];
  for (size_t k = 1; k < to_dims.size(); ++k) linear = kb.add(kb.mul(linear, kb.extent(to[to_dims[k]])), index[to_dims[k]]);
  for (size_t k = from_dims.size(); k-- > 1;) {
    const int extent = kb.extent(from[from_dims[k]]);
    in[from_dims[k]] = kb.binary(ScalarOp::kRem, linear, extent);
    linear = kb.binary(ScalarOp::kDiv, linear, extent);
  }
  in[from_dims[0]] = linear;  // below its extent: the group's element count bounds the position
}

// Reshape as row-major element order, group by group (dim_groups): dims that keep their size pass their
// index through, split or merged dims divide only within their group.
Remap reshape(const SymShape& from, const SymShape& to) {
  std::vector<DimGroup> groups = dim_groups(from, to);
  if (groups.empty()) {  // one group of every non-1 dim (or nothing but size-1 dims)
    DimGroup all;
    for (size_t d = 0; d < from.size(); ++d)
      if (!from[d].is_one()) all.from.push_back(d);
    for (size_t d = 0; d < to.size(); ++d)
      if (!to[d].is_one()) all.to.push_back(d);
    if (!all.from.empty() && !all.to.empty()) groups.push_back(std::move(all));
  }
  return [from, to, groups](KernelBuilder& kb, const Index& index) {
    Index in(from.size());
    for (size_t d = 0; d < from.size(); ++d) in[d] = kb.index_constant(0);  // size-1 dims (and no elements)
    for (const DimGroup& g : groups) remap_group(kb, from, to, g.from, g.to, index, in);
    return in;
  };
}

void register_view_ops(Registry& r) {
  auto reshape_like = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0), out = output(n);
    return {view(c, in, out, reshape(c.sizes(in), c.sizes(out)))};
  };
  for (const char* name :
       {"aten::view", "aten::reshape", "aten::_unsafe_view", "aten::_reshape_alias", "aten::squeeze", "aten::unsqueeze", "aten::flatten",
        "aten::unflatten", "aten::alias", "aten::detach", "aten::lift_fresh", "aten::view_as", "aten::reshape_as"})
    r[name] = reshape_like;
  // view(dtype) reinterprets the bits: a lowered reader would convert the values instead.
  r["aten::view.dtype"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    if (c.meta(c.tensor_arg(n, 0)).dtype != c.meta(output(n)).dtype) throw Unsupported("view as another dtype (a bit cast)");
    return {view(c, c.tensor_arg(n, 0), output(n), [](KernelBuilder&, const Index& index) { return index; })};
  };
  r["aten::permute"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0);
    const size_t rank = c.sizes(in).size();
    std::vector<int64_t> dims = n.args.at(1).constant.toIntVector();
    for (auto& d : dims) d = wrap_dim(d, rank);
    return {view(c, in, output(n), [dims](KernelBuilder&, const Index& index) {
      Index in(index.size());
      for (size_t d = 0; d < dims.size(); ++d) in[dims[d]] = index[d];
      return in;
    })};
  };
  auto transpose = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0);
    const size_t rank = c.sizes(in).size();
    const int64_t a = n.args.size() > 1 ? wrap_dim(int_arg(n, 1), rank) : 0;
    const int64_t b = n.args.size() > 2 ? wrap_dim(int_arg(n, 2), rank) : (rank > 1 ? 1 : 0);
    return {view(c, in, output(n), [a, b](KernelBuilder&, const Index& index) {
      Index in = index;
      if (a != b) std::swap(in[a], in[b]);  // t() of a 0-d tensor: no dims to swap
      return in;
    })};
  };
  for (const char* name : {"aten::transpose", "aten::t", "aten::swapaxes", "aten::swapdims"}) r[name] = transpose;
  auto expand = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0), out = output(n);
    const SymShape from = c.sizes(in), to = c.sizes(out);
    return {view(c, in, out, [from, to](KernelBuilder& kb, const Index& index) {
      Index in(from.size());
      const size_t lead = to.size() - from.size();
      for (size_t d = 0; d < from.size(); ++d) in[d] = from[d].is_one() && !to[lead + d].is_one() ? kb.index_constant(0) : index[lead + d];
      return in;
    })};
  };
  r["aten::expand"] = expand;
  r["aten::expand_as"] = expand;
}

// Views that take part of a tensor: slice, narrow, select, split, unbind.
void register_part_views(Registry& r) {
  // slice(self, dim, start, end, step); narrow(self, dim, start, length) reads the same up to its start.
  auto slice = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0), out = output(n);
    const int64_t dim = wrap_dim(int_arg(n, 1), c.sizes(in).size());
    const SymExpr size = c.sizes(in)[dim];
    const int64_t start = slice_start(n, 2, size);
    const int64_t step = n.args.size() > 4 ? int_arg(n, 4) : 1;
    return {view(c, in, out, [dim, start, size, step](KernelBuilder& kb, const Index& index) {
      Index in = index;
      in[dim] = kb.add(position_in(kb, start, size), kb.mul(index[dim], kb.index_constant(step)));
      return in;
    })};
  };
  r["aten::slice"] = slice;
  r["aten::narrow"] = slice;
  r["aten::select"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0), out = output(n);
    const int64_t dim = wrap_dim(int_arg(n, 1), c.sizes(in).size());
    const int64_t at = int_arg(n, 2);
    const SymExpr size = c.sizes(in)[dim];
    return {view(c, in, out, [dim, at, size](KernelBuilder& kb, const Index& index) {
      Index in = index;
      in.insert(in.begin() + dim, position_in(kb, at, size));
      return in;
    })};
  };
  // split / unbind: list outputs, each a slice (or select) of the input.
  auto pieces = [](bool select) {
    return [select](LoweringContext& c, const Node& n) -> std::vector<Loader> {
      const ValueId in = c.tensor_arg(n, 0);
      const size_t rank = c.sizes(in).size();
      const int64_t dim = wrap_dim(select ? (n.args.size() > 1 ? int_arg(n, 1) : 0) : (n.args.size() > 2 ? int_arg(n, 2) : 0), rank);
      std::vector<Loader> out;
      std::vector<SymExpr> before;  // the extents of the pieces before this one: its start is their sum
      for (ValueId v : n.outputs.at(0).values) {
        out.push_back(view(c, in, v, [dim, before, select](KernelBuilder& kb, const Index& index) {
          int start = kb.index_constant(0);
          for (const auto& e : before) start = kb.add(start, kb.extent(e));
          Index i = index;
          if (select) i.insert(i.begin() + dim, start);
          else i[dim] = kb.add(index[dim], start);
          return i;
        }));
        before.push_back(c.sizes(v).size() == rank ? c.sizes(v)[dim] : SymExpr::constant(1));
      }
      return out;
    };
  };
  r["aten::split"] = pieces(false);
  r["aten::split_with_sizes"] = pieces(false);
  r["aten::unbind"] = pieces(true);
}

// ---- assembling tensors ---------------------------------------------------------------------------

bool is_empty_dim(const SymExpr& size) { return size.is_constant() && size.offset == 0; }

// min(max(i, 0), extent - 1): an index that is always inside its dim.
int clamp_index(KernelBuilder& kb, int i, int extent) {
  const int hi = kb.binary(ScalarOp::kSub, extent, kb.index_constant(1));
  return kb.binary(ScalarOp::kMax, kb.binary(ScalarOp::kMin, i, hi), kb.index_constant(0));
}

void register_triangles(Registry& r) {
  // tril / triu: an element of the last two dims (i, j) is kept where j - i <= diagonal (tril) or >=
  // diagonal (triu), zero elsewhere: a causal mask fuses into the kernel that applies it.
  auto triangle = [](bool lower) {
    return [lower](LoweringContext& c, const Node& n) -> std::vector<Loader> {
      const ValueId in = c.tensor_arg(n, 0);
      if (c.sizes(in).size() < 2) throw Unsupported("tril/triu of fewer than 2 dims");
      const int64_t diagonal = n.args.size() > 1 ? int_arg(n, 1) : 0;
      const ScalarType t = compute_type_of(c.meta(output(n)).dtype);
      return {[&c, in, diagonal, lower, t](KernelBuilder& kb, const Index& index) {
        const size_t rank = index.size();
        const int offset = kb.binary(ScalarOp::kSub, index[rank - 1], index[rank - 2]);
        const int kept = kb.binary(lower ? ScalarOp::kLe : ScalarOp::kGe, offset, kb.index_constant(diagonal));
        return kb.where(kept, kb.cast(c.at(kb, in, index), t), kb.constant(0, t));
      }};
    };
  };
  r["aten::tril"] = triangle(true);
  r["aten::triu"] = triangle(false);
}

// A scatter into an argument that lies at a storage offset takes the argument's layout, offset included
// (functionalization's metadata): a later as_strided addresses its storage by that offset, which an
// extern call's result is copied to honour (runtime in_layout) and a kernel's compact buffer does not.
void require_no_storage_offset(LoweringContext& c, ValueId out) {
  if (c.meta(out).storage_offset != graph::SymExpr::constant(0)) throw Unsupported("a scatter whose result lies at a storage offset");
}

// slice_scatter(self, src, dim, start, end, step) and select_scatter(self, src, dim, index): src's
// elements where the slice (select) reads, self's elsewhere. Functionalization makes them of writes
// through slices (an LSTM's in-place gates on chunks of one buffer, `t.narrow(...).mul_(...)`).
void register_scatters(Registry& r) {
  r["aten::slice_scatter"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId self = c.tensor_arg(n, 0), src = c.tensor_arg(n, 1), out = output(n);
    require_no_storage_offset(c, out);
    const int64_t dim = wrap_dim(n.args.size() > 2 ? int_arg(n, 2) : 0, c.sizes(self).size());
    const SymExpr size = c.sizes(self)[dim], count = c.sizes(src)[dim];
    const int64_t start = slice_start(n, 3, size);
    const int64_t step = n.args.size() > 5 ? int_arg(n, 5) : 1;
    const ScalarType t = compute_type_of(c.meta(out).dtype);
    const SymShape src_sizes = c.sizes(src);
    if (std::any_of(src_sizes.begin(), src_sizes.end(), is_empty_dim))  // nothing scattered, nothing of src to read
      return {[&c, self, t](KernelBuilder& kb, const Index& index) { return kb.cast(c.at(kb, self, index), t); }};
    return {[&c, self, src, dim, start, size, count, step, t](KernelBuilder& kb, const Index& index) {
      const int offset = kb.binary(ScalarOp::kSub, index[dim], position_in(kb, start, size));
      const int extent = kb.extent(count), stride = kb.index_constant(step);
      int inside = kb.binary(ScalarOp::kAnd, kb.binary(ScalarOp::kGe, offset, kb.index_constant(0)),
                             kb.binary(ScalarOp::kLt, offset, kb.mul(extent, stride)));
      int position = offset;
      if (step != 1) {
        const int on_step = kb.binary(ScalarOp::kEq, kb.binary(ScalarOp::kRem, offset, stride), kb.index_constant(0));
        inside = kb.binary(ScalarOp::kAnd, inside, on_step);
        position = kb.binary(ScalarOp::kFloorDiv, offset, stride);
      }
      Index i = index;
      i[dim] = clamp_index(kb, position, extent);
      return kb.where(inside, kb.cast(c.at(kb, src, i), t), kb.cast(c.at(kb, self, index), t));
    }};
  };
  r["aten::select_scatter"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId self = c.tensor_arg(n, 0), src = c.tensor_arg(n, 1), out = output(n);
    require_no_storage_offset(c, out);
    const int64_t dim = wrap_dim(int_arg(n, 2), c.sizes(self).size());
    const int64_t at = int_arg(n, 3);
    const SymExpr size = c.sizes(self)[dim];
    const ScalarType t = compute_type_of(c.meta(out).dtype);
    return {[&c, self, src, dim, at, size, t](KernelBuilder& kb, const Index& index) {
      const int hit = kb.binary(ScalarOp::kEq, index[dim], position_in(kb, at, size));
      Index i = index;
      i.erase(i.begin() + dim);
      return kb.where(hit, kb.cast(c.at(kb, src, i), t), kb.cast(c.at(kb, self, index), t));
    }};
  };
}

void register_assembly(Registry& r) {
  r["aten::cat"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const auto& list = n.args.at(0);
    if (list.kind != graph::Arg::Kind::kValueList) throw Unsupported("cat of a non-list");
    const ValueId out = output(n);
    const int64_t dim = wrap_dim(n.args.size() > 1 ? int_arg(n, 1) : 0, c.sizes(out).size());
    std::vector<ValueId> parts;
    for (ValueId v : list.list)
      // Legacy 1-d empty tensors, and parts empty along dim, add nothing and must not be read.
      if (c.sizes(v).size() == c.sizes(out).size() && !is_empty_dim(c.sizes(v)[dim])) parts.push_back(v);
    if (parts.empty()) throw Unsupported("cat of empty parts only");
    const ScalarType t = compute_type_of(c.meta(out).dtype);
    return {[&c, parts, dim, t](KernelBuilder& kb, const Index& index) {
      // where(i >= start_k, part_k[i - start_k], <the parts before k>), indices clamped into each part.
      std::vector<int> starts;
      int start = kb.index_constant(0);
      for (ValueId v : parts) {
        starts.push_back(start);
        start = kb.add(start, kb.extent(c.sizes(v)[dim]));
      }
      int value = -1;
      for (size_t k = 0; k < parts.size(); ++k) {
        Index i = index;
        i[dim] = clamp_index(kb, kb.binary(ScalarOp::kSub, index[dim], starts[k]), kb.extent(c.sizes(parts[k])[dim]));
        const int part = kb.cast(c.at(kb, parts[k], i), t);
        value = value < 0 ? part : kb.where(kb.binary(ScalarOp::kGe, index[dim], starts[k]), part, value);
      }
      return value;
    }};
  };
  r["aten::stack"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const auto& list = n.args.at(0);
    if (list.kind != graph::Arg::Kind::kValueList) throw Unsupported("stack of a non-list");
    const ValueId out = output(n);
    const int64_t dim = wrap_dim(n.args.size() > 1 ? int_arg(n, 1) : 0, c.sizes(out).size());
    const std::vector<ValueId> parts = list.list;
    const ScalarType t = compute_type_of(c.meta(out).dtype);
    return {[&c, parts, dim, t](KernelBuilder& kb, const Index& index) {
      Index i = index;
      i.erase(i.begin() + dim);
      int value = -1;
      for (size_t k = parts.size(); k-- > 0;) {
        const int part = kb.cast(c.at(kb, parts[k], i), t);
        value = value < 0 ? part : kb.where(kb.binary(ScalarOp::kEq, index[dim], kb.index_constant(static_cast<int64_t>(k))), part, value);
      }
      return value;
    }};
  };
  r["aten::constant_pad_nd"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0), out = output(n);
    const std::vector<int64_t> pad = n.args.at(1).constant.toIntVector();
    const double fill = n.args.size() > 2 && !n.args[2].constant.isNone() ? n.args[2].constant.toScalar().toDouble() : 0.0;
    const SymShape sizes = c.sizes(in);
    const ScalarType t = compute_type_of(c.meta(out).dtype);
    if (std::any_of(sizes.begin(), sizes.end(), is_empty_dim))  // nothing to read
      return {[fill, t](KernelBuilder& kb, const Index&) { return kb.constant(fill, t); }};
    return {[&c, in, pad, fill, sizes, t](KernelBuilder& kb, const Index& index) {
      Index i = index;
      int inside = kb.integer(1, ScalarType::Bool);
      for (size_t p = 0; p + 1 < pad.size() && p / 2 < sizes.size(); p += 2) {
        const size_t d = sizes.size() - 1 - p / 2;
        const int shifted = kb.binary(ScalarOp::kSub, index[d], kb.index_constant(pad[p]));
        const int extent = kb.extent(sizes[d]);
        const int ok =
            kb.binary(ScalarOp::kAnd, kb.binary(ScalarOp::kGe, shifted, kb.index_constant(0)), kb.binary(ScalarOp::kLt, shifted, extent));
        inside = kb.binary(ScalarOp::kAnd, inside, ok);
        i[d] = clamp_index(kb, shifted, extent);
      }
      return kb.where(inside, kb.cast(c.at(kb, in, i), t), kb.constant(fill, t));
    }};
  };
}

// ---- indexing -------------------------------------------------------------------------------------

// An index read from a tensor: checked to lie in [0, extent) as eager checks it (no wrapping of negative
// indices), then clamped so that the kernel's load is in bounds whatever the check reports.
int checked_index(KernelBuilder& kb, int position, int extent) {
  const int at_least_0 = kb.binary(ScalarOp::kGe, position, kb.index_constant(0));
  kb.check(kb.binary(ScalarOp::kAnd, at_least_0, kb.binary(ScalarOp::kLt, position, extent)));
  return clamp_index(kb, position, extent);
}

void register_indexing(Registry& r) {
  r["aten::embedding"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId weight = c.tensor_arg(n, 0), indices = c.tensor_arg(n, 1);
    const SymExpr rows = c.sizes(weight).at(0);
    if (is_empty_dim(rows)) throw Unsupported("embedding of an empty weight (eager raises the index error)");
    c.run_time_checks[output(n)] = 1;
    return {[&c, weight, indices, rows](KernelBuilder& kb, const Index& index) {
      const Index at_indices(index.begin(), index.end() - 1);
      const int row = checked_index(kb, kb.cast(c.at(kb, indices, at_indices), ScalarType::Long), kb.extent(rows));
      return c.at(kb, weight, {row, index.back()});
    }};
  };
  // index_select reads its 1-d index at the output's position along dim; gather at the whole position.
  auto select_along_dim = [](bool whole_position) {
    return [whole_position](LoweringContext& c, const Node& n) -> std::vector<Loader> {
      const ValueId self = c.tensor_arg(n, 0), indices = c.tensor_arg(n, 2);
      const int64_t dim = wrap_dim(int_arg(n, 1), c.sizes(self).size());
      const SymExpr extent = c.sizes(self).empty() ? SymExpr::constant(1) : c.sizes(self)[dim];
      if (is_empty_dim(extent)) throw Unsupported("indexing an empty dim (eager raises the index error)");
      const bool scalar_index = c.sizes(indices).empty();  // index_select with a 0-d index
      c.run_time_checks[output(n)] = 1;
      return {[&c, self, indices, dim, extent, whole_position, scalar_index](KernelBuilder& kb, const Index& index) {
        if (index.empty()) return c.at(kb, self, {});
        Index i = index;
        const Index at_indices = whole_position ? index : scalar_index ? Index{} : Index{index[dim]};
        const int position = kb.cast(c.at(kb, indices, at_indices), ScalarType::Long);
        i[dim] = checked_index(kb, position, kb.extent(extent));
        return c.at(kb, self, i);
      }};
    };
  };
  r["aten::index_select"] = select_along_dim(false);
  r["aten::gather"] = select_along_dim(true);
}

// ---- factories ------------------------------------------------------------------------------------

void register_factories(Registry& r) {
  auto constant = [](std::optional<double> fixed, size_t value_at) {
    return [fixed, value_at](LoweringContext& c, const Node& n) -> std::vector<Loader> {
      c10::Scalar v = fixed ? c10::Scalar(*fixed) : c10::Scalar(int64_t{0});
      const ScalarType t = compute_type_of(c.meta(output(n)).dtype);
      if (!fixed) {
        const Operand o = c.operand_of(n, value_at);
        if (o.is_tensor()) throw Unsupported("a fill value that is a tensor");
        if (o.symbolic) return {c.operand(o, c.sizes(output(n)), t)};  // a size, read at run time
        v = o.scalar;
      }
      // An integer fill goes in as an integer: through a double, values beyond 2^53 would round.
      const bool exact = !c10::isFloatingType(t) && t != ScalarType::Bool && v.isIntegral(false);
      return {[v, t, exact](KernelBuilder& kb, const Index&) { return exact ? kb.integer(v.toLong(), t) : kb.constant(v.toDouble(), t); }};
    };
  };
  r["aten::zeros"] = constant(0.0, 0);
  r["aten::ones"] = constant(1.0, 0);
  r["aten::zeros_like"] = constant(0.0, 0);
  r["aten::zero"] = constant(0.0, 0);  // zero_ functionalized (an optimizer's zero_grad)
  r["aten::ones_like"] = constant(1.0, 0);
  r["aten::full"] = constant(std::nullopt, 1);
  r["aten::full_like"] = constant(std::nullopt, 1);
  r["aten::scalar_tensor"] = constant(std::nullopt, 0);
  r["aten::new_zeros"] = constant(0.0, 0);
  r["aten::new_ones"] = constant(1.0, 0);
  r["aten::new_full"] = constant(std::nullopt, 2);
  // Uninitialized memory may hold anything: zeros it is (what C++'s `2 - x`, empty_like(x).fill_(2).sub_(x),
  // fuses into one kernel through).
  for (const char* name : {"aten::empty_like", "aten::empty.memory_format", "aten::new_empty"}) r[name] = constant(0.0, 0);
  // arange(end) / arange(start, end) / arange(start, end, step): start + i * step, in the output's type.
  r["aten::arange"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const std::string overload = n.op.operator_name().overload_name;
    auto number = [&](size_t i) {
      const Operand o = c.operand_of(n, i);
      if (o.is_tensor()) throw Unsupported("an arange bound that is a tensor");
      return o;
    };
    Operand start, step;  // 0 and 1 unless given
    step.scalar = int64_t{1};
    if (!overload.empty()) start = number(0);
    if (overload == "start_step") step = number(2);
    const ScalarType out = c.meta(output(n)).dtype;
    const ScalarType t = compute_type_of(out);
    // ATen's accumulate type: int64 for integer outputs, double on CPU (acc_type<float, false>), float
    // for float32 on CUDA. A bound computed from a size is a run-time integer (arange(n, 2 * n)).
    const ScalarType acc = !c10::isFloatingType(out)                                        ? ScalarType::Long
                           : out == ScalarType::Double || c.meta(output(n)).device.is_cpu() ? ScalarType::Double
                                                                                            : ScalarType::Float;
    const Loader first = c.operand(start, {}, acc), stride = c.operand(step, {}, acc);
    return {[=](KernelBuilder& kb, const Index& index) {
      const int i = kb.cast(index[0], acc);
      return kb.cast(kb.binary(ScalarOp::kAdd, first(kb, index), kb.binary(ScalarOp::kMul, i, stride(kb, index))), t);
    }};
  };
}

}  // namespace

void register_views(Registry& r) {
  register_view_ops(r);
  register_part_views(r);
  register_assembly(r);
  register_scatters(r);
  register_triangles(r);
  register_indexing(r);
  register_factories(r);
}

}  // namespace jitc::inductor
