#include "runtime/marks.h"

#include <jitc/dynamic.h>
#include <jitc/errors.h>

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace jitc::runtime {

namespace {

struct Marked {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> owner{
      c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>()};  // detects a reused address
  TensorMarks marks;
};

std::atomic<bool> g_any{false};
std::mutex g_mutex;
std::unordered_map<const c10::TensorImpl*, Marked> g_marks;

void drop_freed_locked() {
  for (auto it = g_marks.begin(); it != g_marks.end();) it = it->second.owner.expired() ? g_marks.erase(it) : std::next(it);
}

TensorMarks& marks_for(const at::Tensor& t, int64_t dim, const char* api) {
  if (!t.defined()) throw UnsupportedError(fmt::format("jitc::{}: the tensor is undefined", api));
  if (dim < 0) dim += t.dim();
  if (dim < 0 || dim >= t.dim() || dim >= 64)
    throw UnsupportedError(fmt::format("jitc::{}: dim {} is out of range for a tensor of rank {}", api, dim, t.dim()));
  drop_freed_locked();
  auto* impl = t.unsafeGetTensorImpl();
  auto [it, added] = g_marks.try_emplace(impl);
  if (added || it->second.owner.expired()) {
    it->second.owner = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(t.getIntrusivePtr());
    it->second.marks = {};
  }
  g_any.store(true, std::memory_order_release);
  return it->second.marks;
}

int64_t normalized(const at::Tensor& t, int64_t dim) { return dim < 0 ? dim + t.dim() : dim; }

}  // namespace

bool any_marks() { return g_any.load(std::memory_order_acquire); }

TensorMarks marks_of(const c10::TensorImpl* impl) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_marks.find(impl);
  if (it == g_marks.end() || it->second.owner.expired()) return {};
  return it->second.marks;
}

}  // namespace jitc::runtime

namespace jitc {

void mark_dynamic(const at::Tensor& tensor, int64_t dim, int64_t min, int64_t max) {
  std::lock_guard<std::mutex> lock(runtime::g_mutex);
  auto& m = runtime::marks_for(tensor, dim, "mark_dynamic");
  const int64_t d = runtime::normalized(tensor, dim);
  if (min > max) throw UnsupportedError(fmt::format("jitc::mark_dynamic: min {} is larger than max {}", min, max));
  m.dynamic |= 1ull << d;
  if (d < 8) m.ranges[d] = {std::max<int64_t>(min, 2), max};
}

void maybe_mark_dynamic(const at::Tensor& tensor, int64_t dim) {
  std::lock_guard<std::mutex> lock(runtime::g_mutex);
  runtime::marks_for(tensor, dim, "maybe_mark_dynamic").dynamic |= 1ull << runtime::normalized(tensor, dim);
}

void mark_static(const at::Tensor& tensor, int64_t dim) {
  std::lock_guard<std::mutex> lock(runtime::g_mutex);
  runtime::marks_for(tensor, dim, "mark_static").stat |= 1ull << runtime::normalized(tensor, dim);
}

}  // namespace jitc
