// Where a graph's values are used, for the scheduler: the tensors a node reads and defines, whether a
// value is read after a node, and the release steps that drop each intermediate after its last use; and
// the shape and dtype facts the scheduler asks of values.
#pragma once
#include "graph/graph.h"
#include "inductor/scheduler.h"

#include <functional>
#include <string>
#include <vector>

namespace jitc::inductor {

std::vector<graph::ValueId> node_outputs(const graph::Node& n);
std::vector<graph::ValueId> node_tensor_args(const graph::Node& n);
// Whether n's result v is a view of n's first tensor argument: an op whose schema may alias, that did
// when traced (contiguous of a transposed tensor copies: its result is a value of its own).
bool is_view_of_first_input(const graph::Graph& g, const graph::Node& n, graph::ValueId v);
// Per value: the nodes reading it, in order (a node reading it twice is listed twice).
std::vector<std::vector<int>> readers_by_value(const graph::Graph& g);
// Bit i: argument i of n is a double argument of the call, read at run time (see Operand::runtime_double).
uint64_t runtime_double_args(const graph::Node& n);

// Shape and dtype facts the scheduler asks of values: sizes without the 1s, whether a shape has no
// elements (sizes 0 and 1 always specialize, so an empty tensor has a constant 0 among its sizes), and
// whether the lowerings compute in a dtype.
graph::SymShape without_ones(const graph::SymShape& s);
bool has_no_elements(const graph::SymShape& s);
// Static sizes laid out contiguously (dims of size 1 may have any stride); the storage offset aside.
bool contiguous_static(const graph::TensorMeta& m);
bool supported_dtype(c10::ScalarType t);
// Why node n cannot run in generated kernels for the tensors it reads and writes (empty: it can): lowered
// ops read and write tensors of supported dtypes on one device that has a backend.
std::string unsupported_values(const graph::Graph& g, const graph::Node& n);

// The result of every node of value's producer's op at value's position among its producer's results
// (value included). The scheduler's ordering of a node's results holds for all such nodes: every layer's
// native_layer_norm reads its statistics alike, so one attempt learns it for all of them.
std::vector<graph::ValueId> same_result_of_every_such_node(const graph::Graph& g, graph::ValueId value);

// The same, narrowed to nodes that look like value's producer: tensor arguments of the same dtypes and
// sizes, the same other arguments, results read by the same ops. A network's repeated layers: what one
// attempt learns about one layer's value (it must be stored to a buffer) holds for every layer's.
std::vector<graph::ValueId> same_result_of_every_like_node(const graph::Graph& g, graph::ValueId value);

// Per value: the last node reading it (g.nodes.size() for a graph output, -1 for none).
std::vector<int> last_readers(const graph::Graph& g);

// Per value: whether the program dropping its reference frees its memory: made by the graph or an input
// the program owns, the only value of its storage, and not a graph output.
std::vector<char> freed_when_dropped(const graph::Graph& g);

// What read_across_write looks up: per value its last reader (last_readers) and its readers
// (readers_by_value), per storage the values that live in it.
struct ReadIndex {
  std::vector<int> last_reader;
  std::vector<std::vector<int>> readers;
  std::vector<std::vector<graph::ValueId>> values_of_storage;
};
ReadIndex read_index(const graph::Graph& g);

// Values computed inline (`computed`) before node i writes its tensor arguments, from those tensors'
// memory, and read after i: inlined into a later kernel they would read the written memory (fuzzer seed
// 563608). `lowered(j)`: node j runs in generated kernels. Found from the written memory forward through
// the lowered nodes before i, so an optimizer step's hundreds of write-backs cost their own values each.
std::vector<graph::ValueId> read_across_write(const graph::Graph& g, size_t i, const ReadIndex& index,
                                              const std::function<bool(size_t)>& lowered,
                                              const std::function<bool(graph::ValueId)>& computed);

// `steps` with a release after each intermediate's last use (its memory goes back to the allocator or
// to the program's pool for a later output).
std::vector<Step> with_releases(const graph::Graph& g, const std::vector<Step>& steps, const std::vector<KernelLaunch>& kernels);

}  // namespace jitc::inductor
