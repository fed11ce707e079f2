// Threads that build programs in the background (Options::compile_in_background), joined before exit()
// destroys anything they may read: a compiled function kept in a static outlives main, and its build reads
// statics of jitc, LLVM and LibTorch.
#pragma once

#include <functional>

namespace jitc::runtime {

// Runs `work` on a thread of its own at the lowest priority (the calls replaying the graph meanwhile come
// first; the compile threads it starts inherit the priority). exit() joins every such thread first: a
// handler registered at each start, after every static made so far, runs before their destructors.
void start_background_thread(std::function<void()> work);

}  // namespace jitc::runtime
