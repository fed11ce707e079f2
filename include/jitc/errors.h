// The jitc error hierarchy. Every message says what happened (with the values involved) and what to do.
#pragma once
#include <stdexcept>
#include <string>

namespace jitc {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An op, argument or feature jitc cannot handle (names the op or argument).
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

// Generating or compiling code failed (carries the compiler log and the source path).
class CompileError : public Error {
 public:
  using Error::Error;
};

// A compiled program failed while running (names the kernel and the driver error).
class RuntimeError : public Error {
 public:
  using Error::Error;
};

// A bug in jitc itself.
class InternalError : public Error {
 public:
  using Error::Error;
};

// fullgraph=true and the callable needed a graph break or passed the recompile limit.
class FullGraphError : public UnsupportedError {
 public:
  using UnsupportedError::UnsupportedError;
};

}  // namespace jitc
