#include "runtime/module_state.h"

#include "runtime/module_options.h"

#include <torch/nn/module.h>

#include <algorithm>
#include <sstream>

namespace jitc::runtime {

namespace {

// LibTorch offers its registries only as copies (named_parameters() builds an OrderedDict of strings per
// call), too slow for a guard read on every call. These read the registries in place. An explicit
// instantiation may name private members ([temp.spec.general]); the friend it defines hands the pointer out.
using TensorDict = torch::OrderedDict<std::string, at::Tensor>;
using ModuleDict = torch::OrderedDict<std::string, std::shared_ptr<torch::nn::Module>>;

template <class Tag, typename Tag::type Member>
struct Expose {
  friend typename Tag::type member_of(Tag) { return Member; }
};
struct Parameters {
  using type = TensorDict torch::nn::Module::*;
  friend type member_of(Parameters);
};
struct Buffers {
  using type = TensorDict torch::nn::Module::*;
  friend type member_of(Buffers);
};
struct Children {
  using type = ModuleDict torch::nn::Module::*;
  friend type member_of(Children);
};
template struct Expose<Parameters, &torch::nn::Module::parameters_>;
template struct Expose<Buffers, &torch::nn::Module::buffers_>;
template struct Expose<Children, &torch::nn::Module::children_>;

const TensorDict& parameters(const torch::nn::Module& m) { return m.*member_of(Parameters{}); }
const TensorDict& buffers(const torch::nn::Module& m) { return m.*member_of(Buffers{}); }
const ModuleDict& children(const torch::nn::Module& m) { return m.*member_of(Children{}); }

uintptr_t identity(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.unsafeGetTensorImpl()); }
// Whether something besides the registration holds the tensor (normally the module's field).
uintptr_t held(const at::Tensor& t) { return t.use_count() > 1; }

using Slot = guards::ModuleGuard::Slot;

// One walk for both uses: `emit(word, slot, name)`; names are built only when `Named`, and
// `with_options(module, path)` is told of each module that has option words.
template <bool Named, class Emit, class WithOptions>
void walk(const torch::nn::Module& m, const std::string& path, Emit& emit, WithOptions& with_options) {
  const auto& params = parameters(m);
  const auto& bufs = buffers(m);
  const auto& kids = children(m);
  emit(uintptr_t{m.is_training()}, Slot::kTraining, path);
  c10::SmallVector<uintptr_t, 16> options;
  append_option_words(m, options);
  if (!options.empty()) with_options(m, path);
  for (uintptr_t word : options) emit(word, Slot::kOptions, path);
  emit(params.size(), Slot::kParameters, path);
  emit(bufs.size(), Slot::kBuffers, path);
  emit(kids.size(), Slot::kChildren, path);
  const auto child_path = [&](const std::string& key) { return Named ? path + "." + key : std::string(); };
  for (const auto& item : params) {
    emit(identity(item.value()), Slot::kParameter, child_path(item.key()));
    emit(held(item.value()), Slot::kHeld, child_path(item.key()));
  }
  for (const auto& item : bufs) {
    emit(identity(item.value()), Slot::kBuffer, child_path(item.key()));
    emit(held(item.value()), Slot::kHeld, child_path(item.key()));
  }
  for (const auto& item : kids) emit(reinterpret_cast<uintptr_t>(item.value().get()), Slot::kChild, child_path(item.key()));
  for (const auto& item : kids)
    if (item.value()) walk<Named>(*item.value(), child_path(item.key()), emit, with_options);
}

}  // namespace

void read_module_state(const torch::nn::Module& root, ModuleWords& out) {
  out.clear();
  auto emit = [&out](uintptr_t word, Slot, const std::string&) { out.push_back(word); };
  auto no_description = [](const torch::nn::Module&, const std::string&) {};
  static const std::string& kNoName = *new std::string;
  walk<false>(root, kNoName, emit, no_description);
}

guards::ModuleGuard snapshot_module_state(const torch::nn::Module& root) {
  guards::ModuleGuard g;
  auto emit = [&g](uintptr_t word, Slot slot, const std::string& name) {
    g.words.push_back(word);
    g.slots.push_back(slot);
    g.names.push_back(name);
  };
  auto describe = [&g](const torch::nn::Module& m, const std::string& path) {
    std::ostringstream printed;
    m.pretty_print(printed);
    g.options_printed.emplace(path, printed.str());
  };
  walk<true>(root, "self", emit, describe);
  return g;
}

bool any_parameter_requires_grad(const torch::nn::Module& root) {
  const auto parameters = root.parameters();
  return std::any_of(parameters.begin(), parameters.end(), [](const at::Tensor& p) { return p.requires_grad(); });
}

}  // namespace jitc::runtime
