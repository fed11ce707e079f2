// The options of LibTorch's own modules as guard words. A module's forward reads its options (a Dropout's
// p, a BatchNorm's momentum and eps, a LeakyReLU's slope) as C++ values, which a trace records as constants:
// Dynamo guards such attributes of a Python module, and so does jitc for the modules LibTorch defines. A
// module of another type (the user's own class) has no option words: its C++ members are not seen.
#pragma once

#include <c10/util/SmallVector.h>

#include <cstdint>
#include <string>

namespace torch::nn {
class Module;
}

namespace jitc::runtime {

// Appends the words that identify `m`'s options (their bytes, or their fields where the options hold a
// vector, a string or a tensor); nothing for a module that is not one of LibTorch's.
void append_option_words(const torch::nn::Module& m, c10::SmallVectorImpl<uintptr_t>& out);

}  // namespace jitc::runtime
