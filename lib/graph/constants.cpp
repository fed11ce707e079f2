#include "graph/passes.h"

#include <cstring>
#include <sstream>

namespace jitc::graph {

bool same_constant(const c10::IValue& a, const c10::IValue& b) {
  if (a.tagKind() != b.tagKind()) return false;
  if (a.isNone()) return true;
  if (a.isTensor()) return a.toTensor().unsafeGetTensorImpl() == b.toTensor().unsafeGetTensorImpl();
  if (a.isGenerator()) return a.isSameIdentity(b);
  if (a.isInt()) return a.toInt() == b.toInt();
  if (a.isBool()) return a.toBool() == b.toBool();
  if (a.isDouble()) {  // bitwise, so that -0.0 and NaN constants are told apart
    const double x = a.toDouble(), y = b.toDouble();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  if (a.isIntList()) return a.toIntVector() == b.toIntVector();
  std::ostringstream sa, sb;  // scalars, lists, strings, devices, dtypes: their printed form is exact
  sa << a;
  sb << b;
  return sa.str() == sb.str() && a.isScalar() == b.isScalar() && (!a.isScalar() || a.toScalar().type() == b.toScalar().type());
}

}  // namespace jitc::graph
