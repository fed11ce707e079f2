#include "graph/functionalize.h"

#include "graph/args.h"
#include "graph/element_views.h"
#include "graph/functional_ops.h"

#include <jitc/errors.h>

#include <ATen/ATen.h>
#include <ATen/core/stack.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <deque>

namespace jitc::graph {

namespace {

struct RawInfo {
  ValueId root = kNoValue;
  std::vector<const Node*> chain;  // view nodes (raw nodes, or a list view's element_view) from the root to this value
  bool regenerable = true;         // false for list views without an element_view: cannot be rebuilt or written through
  ValueId fv = kNoValue;           // functional value holding its content ...
  int version = -1;                // ... as of this version of its root
};

class Functionalizer {
 public:
  explicit Functionalizer(const Graph& raw) : raw_(raw), info_(raw.values.size()) {}

  std::optional<Graph> run(std::string* why) {
    const bool ok = inputs() && body() && epilogue();
    if (!ok) {
      if (why) *why = why_;
      return std::nullopt;
    }
    return std::move(out_);
  }

 private:
  bool fail(std::string why) {
    why_ = std::move(why);
    return false;
  }

  // ---- values ----
  ValueId define(TensorMeta meta, int32_t storage) {
    return out_.add_value(std::move(meta), static_cast<int32_t>(out_.nodes.size()), storage);
  }

  ValueId new_root(ValueId raw_value, ValueId functional) {
    RawInfo& i = info_[raw_value];
    i.root = raw_value;
    i.fv = functional;
    i.version = 0;
    current_[raw_value] = functional;
    return functional;
  }

  // The functional value with the current content of raw value r; rebuilds stale views of written memory.
  ValueId read(ValueId r) {
    RawInfo& i = info_[r];
    if (i.root == r || i.chain.empty()) return current_[i.root];
    if (i.version == version_[i.root]) return i.fv;
    return rebuilt(r, false);
  }

  // read(r) in r's traced layout: a view written in place holds the write's value, laid out as that op
  // made it; a result must lie in memory as eager's does (a strided slice of a value made in the graph).
  ValueId read_as_traced(ValueId r) {
    const ValueId v = read(r);
    const RawInfo& i = info_[r];
    if (i.root == r || i.chain.empty() || !i.regenerable || same_layout(r)) return v;
    // as_strided addresses storage: rebuilt on a base laid out otherwise, it would read other elements.
    for (const Node* view : i.chain)
      if (view->op.operator_name().name == "aten::as_strided") return v;
    return rebuilt(r, true);
  }

  // View r made again from its base's current content (the base read as traced where `as_traced`).
  ValueId rebuilt(ValueId r, bool as_traced) {
    RawInfo& i = info_[r];
    if (!i.regenerable) throw UnsupportedError("a view from split/unbind/chunk is read after its base was written");
    const Node& view = *i.chain.back();
    const int base_arg = base_argument(view);
    const ValueId base = view.args[base_arg].value;
    std::vector<Arg> args = map_args(view, base_arg, as_traced ? read_as_traced(base) : read(base));
    i.fv = emit(view.op, std::move(args), raw_.values[r].meta, out_.values[current_[i.root]].storage);
    i.version = version_[i.root];
    return i.fv;
  }

  // The node's arguments with every tensor read at its current content; argument `replace` (if >= 0)
  // takes the functional value `with` instead.
  std::vector<Arg> map_args(const Node& n, int replace = -1, ValueId with = kNoValue) {
    std::vector<Arg> args;
    for (size_t k = 0; k < n.args.size(); ++k) {
      Arg a = n.args[k];
      if (static_cast<int>(k) == replace) a.value = with;
      else if (a.kind == Arg::Kind::kValue) a.value = read(a.value);
      for (auto& v : a.list)
        if (v != kNoValue) v = read(v);
      args.push_back(std::move(a));
    }
    return args;
  }

  // Exact metadata of every tensor result (lists flattened) by running the op on meta tensors; nullopt
  // where the op has no meta kernel.
  // `aliases` (if given) tells for each result whether it shares memory with a tensor argument.
  std::optional<std::vector<TensorMeta>> infer_metas(const c10::OperatorHandle& op, const std::vector<Arg>& args, c10::Device device,
                                                     std::vector<char>* aliases = nullptr) {
    torch::jit::Stack stack;
    std::vector<at::Tensor> inputs;
    for (const auto& a : args) {
      if (a.kind == Arg::Kind::kValue) {
        inputs.push_back(meta_tensor(out_.values[a.value].meta));
        stack.emplace_back(inputs.back());
      } else if (a.kind == Arg::Kind::kConstant) {
        stack.push_back(a.constant);
      } else {
        return std::nullopt;
      }
    }
    try {
      op.callBoxed(stack);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    std::vector<TensorMeta> metas;
    auto add = [&](const at::Tensor& t) {
      TensorMeta m;
      m.dtype = t.scalar_type();
      m.device = device;
      m.sizes = constant_shape(t.sizes().data(), t.sizes().size());
      m.strides = constant_shape(t.strides().data(), t.strides().size());
      m.storage_offset = SymExpr::constant(t.storage_offset());
      metas.push_back(std::move(m));
      if (aliases) aliases->push_back(std::any_of(inputs.begin(), inputs.end(), [&](const at::Tensor& in) { return t.is_alias_of(in); }));
    };
    for (const auto& r : stack) {
      if (r.isTensor()) add(r.toTensor());
      else if (r.isTensorList())
        for (const at::Tensor& t : r.toTensorList()) add(t);
    }
    return metas;
  }

  TensorMeta infer_meta(const c10::OperatorHandle& op, const std::vector<Arg>& args, const TensorMeta& fallback) {
    auto metas = infer_metas(op, args, fallback.device);
    return metas && !metas->empty() ? (*metas)[0] : fallback;
  }

  ValueId emit(const c10::OperatorHandle& op, std::vector<Arg> args, const TensorMeta& fallback, int32_t storage) {
    TensorMeta meta = infer_meta(op, args, fallback);
    Node n(op);
    n.args = std::move(args);
    const ValueId v = define(std::move(meta), storage < 0 ? next_storage_++ : storage);
    n.outputs.push_back({false, {v}});
    out_.nodes.push_back(std::move(n));
    return v;
  }

  // ---- inputs ----
  // The storages of the arguments that nodes write (their schemas mark them written).
  std::vector<int32_t> written_storages() const {
    std::vector<int32_t> written;
    for (const auto& n : raw_.nodes) {
      if (!n.mutates) continue;
      const auto& schema_args = n.op.schema().arguments();
      for (size_t i = 0; i < n.args.size() && i < schema_args.size(); ++i) {
        if (!writes(schema_args[i])) continue;
        if (n.args[i].kind == Arg::Kind::kValue) written.push_back(raw_.values[n.args[i].value].storage);
        for (ValueId v : n.args[i].list)
          if (v != kNoValue) written.push_back(raw_.values[v].storage);
      }
    }
    return written;
  }

  bool inputs() {
    std::vector<int32_t> storages;
    for (const auto& v : raw_.values) next_storage_ = std::max(next_storage_, v.storage + 1);
    current_.assign(raw_.values.size(), kNoValue);
    version_.assign(raw_.values.size(), 0);
    // Inputs sharing memory only matter where something writes it (a backward graph's saved values are
    // often views of one tensor, and nothing writes them).
    const std::vector<int32_t> written = written_storages();
    for (const auto& in : raw_.inputs) {
      const int32_t s = raw_.values[in.value].storage;
      const bool is_written = std::find(written.begin(), written.end(), s) != written.end();
      if (is_written && std::find(storages.begin(), storages.end(), s) != storages.end())
        return fail(fmt::format("{} shares memory with another input", in.name));
      storages.push_back(s);
      Input copy = in;
      copy.value = out_.add_value(raw_.values[in.value].meta, -1, s);
      out_.inputs.push_back(copy);
      new_root(in.value, copy.value);
    }
    return true;
  }

  // ---- body ----
  bool body() {
    try {
      for (size_t i = 0; i < raw_.nodes.size(); ++i)
        if (!node(i)) return false;
    } catch (const UnsupportedError& e) {  // a limitation; anything else is a bug, for the caller to report
      return fail(e.what());
    }
    return true;
  }

  bool node(size_t i) {
    const Node& n = raw_.nodes[i];
    if (n.op.hasTag(at::Tag::inplace_view)) return view_in_place(n);
    if (n.mutates) return mutation(i);
    return pure(n);
  }

  // x.transpose_(...), unsqueeze_ and the like change which elements x names, not their values: x's next
  // version is the out-of-place view of it, which later reads rebuild and writes scatter through. Not for
  // an argument itself: the caller would see its sizes change, which a graph cannot express.
  bool view_in_place(const Node& n) {
    if (n.args.empty() || n.args[0].kind != Arg::Kind::kValue || raw_.values[n.args[0].value].producer < 0)
      return fail(fmt::format("{} changes an argument's view in place", n.name()));
    const auto functional = out_of_place(n.op.operator_name());
    if (!functional || n.outputs.size() != 1 || n.outputs[0].values.size() != 1)
      return fail(fmt::format("{} changes a tensor's view in place", n.name()));
    Node view(*functional);
    view.args = n.args;
    view.outputs = n.outputs;
    return pure(synthetic_views_.emplace_back(std::move(view)));
  }

  // A node that writes nothing (a view among them); `n` outlives the functionalizer (a raw node, or one
  // of synthetic_views_).
  bool pure(const Node& n) {
    std::vector<Arg> args = map_args(n);
    // A view's strides and offset must describe the memory of the functional value it views, which
    // differs from the traced base's when that base was written (a fresh tensor, or a scatter into a
    // contiguous copy): they come from running the op on that value. Other results keep eager's layout.
    std::optional<std::vector<TensorMeta>> inferred;
    std::vector<char> aliases;
    bool views = false;
    for (const auto& o : n.outputs)
      for (ValueId v : o.values) views = views || alias_source(n, raw_.values[v].storage) != kNoValue;
    if (views) inferred = infer_metas(n.op, args, c10::kCPU, &aliases);
    size_t position = 0;
    Node copy(n.op);
    copy.kind = n.kind;
    copy.expected = n.expected;
    copy.args = std::move(args);
    for (size_t r = 0; r < n.outputs.size(); ++r) {
      NodeOutput out{n.outputs[r].is_list, {}};
      for (size_t element = 0; element < n.outputs[r].values.size(); ++element) {
        const ValueId raw_value = n.outputs[r].values[element];
        const Value& rv = raw_.values[raw_value];
        const ValueId base_raw = alias_source(n, rv.storage);
        TensorMeta meta = rv.meta;
        if (base_raw != kNoValue) {
          // as_strided addresses the storage itself: right only where the value lies as the traced one.
          if (n.op.operator_name().name == "aten::as_strided" && !same_layout(base_raw))
            throw UnsupportedError("as_strided of a written tensor that lies in memory otherwise than when traced");
          // reshape aliases only where the strides allow: on the functional value it might copy.
          if (inferred && position < aliases.size() && !aliases[position])
            throw UnsupportedError(fmt::format("{} of a written tensor copies where the trace made a view", n.name()));
          meta = view_meta(rv.meta, inferred, position, same_layout(base_raw));
        }
        ++position;
        const ValueId fv = out_.add_value(std::move(meta), static_cast<int32_t>(out_.nodes.size()),
                                          base_raw == kNoValue ? next_storage_++ : out_.values[read(base_raw)].storage);
        out.values.push_back(fv);
        if (base_raw == kNoValue) {
          new_root(raw_value, fv);
          continue;
        }
        RawInfo& info = info_[raw_value];
        info = info_[base_raw];
        const Node* view = &n;
        if (n.outputs[r].is_list) {
          auto single = element_view(raw_, n, element);
          info.regenerable = info.regenerable && single.has_value();
          if (single) view = &synthetic_views_.emplace_back(std::move(*single));
        }
        info.chain.push_back(view);
        info.fv = fv;
        info.version = version_[info.root];
      }
      copy.outputs.push_back(std::move(out));
    }
    out_.nodes.push_back(std::move(copy));
    return true;
  }

  // The layout of a view result (the k-th tensor result) from the meta run; a view whose memory layout
  // cannot be known cannot be read through strides, so the graph is not functionalized.
  // Where the op has no meta kernel, the traced layout holds only if the base's layout is the traced one.
  static TensorMeta view_meta(const TensorMeta& traced, const std::optional<std::vector<TensorMeta>>& inferred, size_t k,
                              bool base_as_traced) {
    if (!inferred || k >= inferred->size() || (*inferred)[k].sizes != traced.sizes) {
      if (base_as_traced) return traced;
      throw UnsupportedError("the layout of a view of a written tensor cannot be inferred");
    }
    TensorMeta m = (*inferred)[k];
    m.device = traced.device;
    return m;
  }

  // True when the functional value read for raw value r lies in memory as r did when traced.
  bool same_layout(ValueId r) {
    const TensorMeta& traced = raw_.values[r].meta;
    const TensorMeta& functional = out_.values[read(r)].meta;
    return traced.strides == functional.strides && traced.storage_offset == functional.storage_offset;
  }

  // Position of the argument a view node's (first) result aliases.
  int base_argument(const Node& view) const {
    const int32_t storage = raw_.values[view.outputs[0].values[0]].storage;
    for (size_t k = 0; k < view.args.size(); ++k)
      if (view.args[k].kind == Arg::Kind::kValue && raw_.values[view.args[k].value].storage == storage) return static_cast<int>(k);
    throw UnsupportedError(view.name() + " was taken for a view but shares memory with no argument");
  }

  // The argument a result aliases, told by the trace's storage identity rather than by the schema
  // (reshape and contiguous alias only sometimes; list views annotate the list's elements).
  ValueId alias_source(const Node& n, int32_t storage) const {
    for (const Arg& a : n.args)
      if (a.kind == Arg::Kind::kValue && raw_.values[a.value].storage == storage) return a.value;
    return kNoValue;
  }

  bool mutation(size_t i) {
    const Node& n = raw_.nodes[i];
    const auto& schema = n.op.schema();
    const auto& name = n.op.operator_name();
    if (writes_unannotated(n))  // no functional form here: the graph replays its ops, updates included
      return fail(fmt::format("{} in training mode updates its running statistics in place", n.name()));
    if (auto twin = functional_twin(n.op)) return twin_mutation(n, *twin);
    if (name.name.back() != '_' || !writes(schema.arguments()[0])) return fail(fmt::format("{} writes into an out= argument", n.name()));
    auto functional = out_of_place(name);
    if (!functional) return fail(fmt::format("{} has no out-of-place variant", n.name()));
    const ValueId target = n.args[0].value;
    const TensorMeta& target_meta = raw_.values[target].meta;
    if (!elements_apart(target_meta) || !elements_apart(raw_.values[info_[target].root].meta))
      return fail(fmt::format("{} writes into a tensor whose elements share memory (expanded)", n.name()));
    ValueId value = emit(*functional, map_args(n), target_meta, -1);
    if (out_.values[value].meta.dtype != target_meta.dtype) value = cast(value, target_meta);
    write(target, value);
    // The op's result is the target's next version: the same memory, now holding `value`.
    const ValueId raw_out = n.outputs[0].values[0];
    info_[raw_out] = info_[target];
    info_[raw_out].fv = value;
    info_[raw_out].version = version_[info_[target].root];
    return true;
  }

  // An op that writes arguments other than an in-place op's self (rrelu_with_noise's noise), through its
  // functional twin: the same results, then each written argument's new content.
  bool twin_mutation(const Node& n, const c10::OperatorHandle& twin) {
    const auto& schema_args = n.op.schema().arguments();
    std::vector<ValueId> targets;
    for (size_t k = 0; k < schema_args.size() && k < n.args.size(); ++k) {
      if (!writes(schema_args[k])) continue;
      if (n.args[k].kind != Arg::Kind::kValue) return fail(fmt::format("{} writes into a list argument", n.name()));
      const ValueId target = n.args[k].value;
      if (!elements_apart(raw_.values[target].meta) || !elements_apart(raw_.values[info_[target].root].meta))
        return fail(fmt::format("{} writes into a tensor whose elements share memory (expanded)", n.name()));
      targets.push_back(target);
    }
    if (twin.schema().returns().size() != n.outputs.size() + targets.size())
      return fail(fmt::format("{}'s functional form returns other results", n.name()));
    Node copy(twin);
    copy.args = map_args(n);
    for (const auto& o : n.outputs) {
      if (o.is_list || o.values.size() != 1) return fail(fmt::format("{} returns a list", n.name()));
      copy.outputs.push_back({false, {new_root(o.values[0], define(raw_.values[o.values[0]].meta, next_storage_++))}});
    }
    std::vector<ValueId> contents;
    for (ValueId target : targets) {
      contents.push_back(define(raw_.values[target].meta, next_storage_++));
      copy.outputs.push_back({false, {contents.back()}});
    }
    out_.nodes.push_back(std::move(copy));
    for (size_t k = 0; k < targets.size(); ++k) write(targets[k], contents[k]);
    return true;
  }

  ValueId cast(ValueId v, const TensorMeta& like) {
    auto to_copy = find_op("aten::_to_copy", "");
    std::vector<Arg> args = {value_arg(v),
                             constant_arg(like.dtype),
                             constant_arg(c10::IValue()),
                             constant_arg(c10::IValue()),
                             constant_arg(c10::IValue()),
                             constant_arg(false),
                             constant_arg(c10::IValue())};
    return emit(*to_copy, std::move(args), like, -1);
  }

  // New content `value` for raw value `target`: scatter it up the view chain into a new root version.
  void write(ValueId target, ValueId value) {
    const RawInfo info = info_[target];
    if (!info.regenerable) throw UnsupportedError("a write through a view made by split/unbind/chunk");
    for (size_t k = info.chain.size(); k-- > 0;) {
      const Node& view = *info.chain[k];
      const int base_arg = base_argument(view);
      const ValueId base_raw = view.args[base_arg].value;
      value = inverse(view, read(base_raw), value, raw_.values[base_raw].meta);
    }
    current_[info.root] = keep_layout(info.root, value);
    version_[info.root]++;
  }

  // The new content of a root computed inside the graph, in the root's traced layout: the user sees it
  // (a result, or a view of it) with eager's strides. A write's functional op or its scatters may have
  // laid it out otherwise (masked_fill_ through t.t() gives a contiguous transposed value, transposed
  // back). Inputs keep theirs through the write-back copy_.
  ValueId keep_layout(ValueId root, ValueId value) {
    const TensorMeta& traced = raw_.values[root].meta;
    const TensorMeta& now = out_.values[value].meta;
    if (raw_.values[root].producer < 0 || (now.strides == traced.strides && now.storage_offset == traced.storage_offset)) return value;
    const ValueId before = current_[root];
    const TensorMeta& old = out_.values[before].meta;
    if (old.strides != traced.strides) throw UnsupportedError("a written intermediate lost its traced layout");
    return emit(*find_op("aten::copy", ""), {value_arg(before), value_arg(value), constant_arg(false)}, old, -1);
  }

  ValueId inverse(const Node& view, ValueId base, ValueId value, const TensorMeta& base_meta) {
    const std::string name = view.op.operator_name().name;
    auto scatter = [&](const char* op, size_t first_constant, size_t count) {
      std::vector<Arg> args = {value_arg(base), value_arg(value)};
      for (size_t k = first_constant; k < first_constant + count; ++k) args.push_back(view.args[k]);
      return emit(*find_op(op, ""), std::move(args), base_meta, -1);
    };
    if (name == "aten::slice") return scatter("aten::slice_scatter", 1, 4);
    if (name == "aten::select") return scatter("aten::select_scatter", 1, 2);
    if (name == "aten::diagonal") return scatter("aten::diagonal_scatter", 1, 3);
    if (name == "aten::as_strided") {
      // as_strided_scatter addresses a fresh contiguous copy of the base: right only for such bases.
      int64_t expected = 1;
      bool contiguous = base_meta.storage_offset == SymExpr::constant(0);
      for (size_t d = base_meta.sizes.size(); d-- > 0;) {
        contiguous = contiguous && (base_meta.sizes[d].offset == 1 || base_meta.strides[d].offset == expected);
        expected *= base_meta.sizes[d].offset;
      }
      // ... and only where the functional base lies in memory as the traced one (as_strided's arguments
      // are storage coordinates of the traced base).
      const TensorMeta& now = out_.values[base].meta;
      contiguous = contiguous && now.strides == base_meta.strides && now.storage_offset == base_meta.storage_offset;
      if (!contiguous) throw UnsupportedError("a write through as_strided of a non-contiguous tensor");
      return scatter("aten::as_strided_scatter", 1, 3);
    }
    if (name == "aten::narrow" && view.args[2].constant.isInt()) {
      int64_t start = view.args[2].constant.toInt();
      const int64_t dim = view.args[1].constant.toInt();
      if (start < 0) start += base_meta.sizes[(dim + base_meta.sizes.size()) % base_meta.sizes.size()].offset;
      std::vector<Arg> args = {
          value_arg(base),         value_arg(value), view.args[1], constant_arg(start), constant_arg(start + view.args[3].constant.toInt()),
          constant_arg(int64_t{1})};
      return emit(*find_op("aten::slice_scatter", ""), std::move(args), base_meta, -1);
    }
    if (name == "aten::t" || name == "aten::transpose") {  // their own inverses
      std::vector<Arg> args = view.args;
      args[0] = value_arg(value);
      return emit(view.op, std::move(args), base_meta, out_.values[value].storage);
    }
    if (name == "aten::permute") {
      const auto dims = view.args[1].constant.toIntVector();
      std::vector<int64_t> inverse_dims(dims.size());
      for (size_t d = 0; d < dims.size(); ++d) inverse_dims[(dims[d] + dims.size()) % dims.size()] = static_cast<int64_t>(d);
      return emit(view.op, {value_arg(value), constant_arg(inverse_dims)}, base_meta, out_.values[value].storage);
    }
    // Ops that return their input itself when they alias it.
    if (name == "aten::alias" || name == "aten::contiguous" || name == "aten::to") return value;
    // Views that keep the logical element order: reshaping back to the base's sizes inverts them.
    static const char* const kReshapes[] = {"aten::view",    "aten::_unsafe_view", "aten::reshape", "aten::unsqueeze",     "aten::squeeze",
                                            "aten::flatten", "aten::unflatten",    "aten::view_as", "aten::_reshape_alias"};
    for (const char* r : kReshapes)
      if (name == r && view.op.operator_name().overload_name != "dtype") {  // view.dtype reinterprets bytes
        std::vector<int64_t> sizes;
        for (const auto& e : base_meta.sizes) sizes.push_back(e.offset);
        return emit(*find_op("aten::reshape", ""), {value_arg(value), constant_arg(sizes)}, base_meta, -1);
      }
    throw UnsupportedError(fmt::format("a write through {} cannot be turned into a scatter", view.name()));
  }

  // ---- epilogue ----
  bool epilogue() {
    std::vector<ValueId> written(raw_.values.size(), kNoValue);  // input root -> value after write-back
    for (size_t p = 0; p < raw_.inputs.size(); ++p) {
      const ValueId root = raw_.inputs[p].value;
      if (version_[root] == 0) continue;
      if (raw_.inputs[p].kind == InputKind::kConstant) continue;  // nobody else sees it
      Node copy(*find_op("aten::copy_", ""));
      copy.mutates = true;
      const ValueId input = out_.inputs[p].value;
      copy.args = {value_arg(input), value_arg(current_[root]), constant_arg(false)};
      const ValueId after = define(out_.values[input].meta, out_.values[input].storage);
      copy.outputs.push_back({false, {after}});
      out_.nodes.push_back(std::move(copy));
      written[root] = after;
    }
    try {
      for (ValueId r : raw_.outputs) out_.outputs.push_back(r == kNoValue ? kNoValue : output(r, written));
    } catch (const UnsupportedError& e) {  // a limitation; anything else is a bug, for the caller to report
      return fail(e.what());
    }
    return true;
  }

  // A result aliasing a written input is rebuilt as a view of the input after its write-back.
  ValueId output(ValueId r, const std::vector<ValueId>& written) {
    const RawInfo& info = info_[r];
    if (written[info.root] == kNoValue) return read_as_traced(r);
    if (!info.regenerable) throw UnsupportedError("a result is a split/unbind view of a written input");
    ValueId v = written[info.root];
    for (const Node* k : info.chain) {
      const Node& view = *k;
      const int base_arg = base_argument(view);
      std::vector<Arg> args = view.args;
      for (size_t a = 0; a < args.size(); ++a)
        if (static_cast<int>(a) == base_arg) args[a].value = v;
        else if (args[a].kind == Arg::Kind::kValue) args[a].value = read(args[a].value);
      v = emit(view.op, std::move(args), raw_.values[view.outputs[0].values[0]].meta, out_.values[v].storage);
    }
    return v;
  }

  const Graph& raw_;
  Graph out_;
  std::vector<RawInfo> info_;
  std::deque<Node> synthetic_views_;  // views RawInfo::chain points to that the raw graph lacks (element_view, view_in_place)
  std::vector<ValueId> current_;      // per root raw value: functional value of its latest content
  std::vector<int> version_;          // per root raw value: number of writes so far
  int32_t next_storage_ = 0;
  std::string why_;
};

}  // namespace

std::optional<Graph> functionalize(const Graph& graph, std::string* why_not) { return Functionalizer(graph).run(why_not); }

bool is_functional(const Graph& graph) {
  bool in_epilogue = false;
  for (const auto& n : graph.nodes) {
    // A write-back copies into a whole input; a traced copy_ into an intermediate or a view is a write
    // whose readers (later views, results) a code generator would not order after it.
    const bool write_back = n.mutates && n.op.operator_name().name == "aten::copy_" && !n.args.empty() &&
                            n.args[0].kind == Arg::Kind::kValue && graph.values[n.args[0].value].producer < 0;
    const auto& returns = n.op.schema().returns();
    const bool view = !returns.empty() && returns[0].alias_info() && !returns[0].alias_info()->isWrite();
    if (n.mutates && !write_back) return false;
    if (in_epilogue && !write_back && !view) return false;  // after the first write-back: copy_ and views only
    in_epilogue = in_epilogue || write_back;
  }
  return true;
}

}  // namespace jitc::graph
