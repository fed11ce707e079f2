// Ops rewritten into ops that fuse, as Inductor's decomposition table does: a loss over class scores
// becomes a row reduction and a gather (cross_entropy_loss: logsumexp(x) - x[target], never the full
// log-probability tensor that eager writes and reads back), then a sum. The rewritten graph computes what
// eager computes: an out-of-range target fails the gather's run-time check, and the call then runs the
// traced op eagerly, which raises eager's error.
#pragma once
#include "graph/graph.h"

namespace jitc::inductor {

// Float, double, half and bfloat16: the dtypes the decompositions write (half precision computes in float).
bool decomposed_floating(c10::ScalarType t);

// Rewrites, on static sizes:
//   cross_entropy_loss(x [N, C], target [N] int64, weight None, reduction, ignore_index, label_smoothing)
//   nll_loss / nll_loss_nd(x [N, C], target [N] int64, weight None, reduction, ignore_index)
//   mse_loss(x, y of x's shape, reduction)
//   binary_cross_entropy(x, y, weight? of x's shape, reduction mean or sum) on the CPU
// for float32 and float64 x. Returns g unchanged where there is no such node.
graph::Graph decompose_losses(const graph::Graph& g);

// Rewrites linalg_vector_norm(x, ord 1, 2 or inf, dims, keepdim) over floating x of static sizes, with
// at least one dim kept, into abs, a square, a sum or amax and a sqrt (norm_decompositions.cpp).
graph::Graph decompose_norms(const graph::Graph& g);

// Rewrites adaptive_avg_pool2d(x, [1, 1]) of contiguous floating x into mean over H and W (ATen's own
// composition) and outer(a, b) into a[:, None] * b, and embedding_bag whose first result alone is read
// into _embedding_bag_forward_only (composite_decompositions.cpp).
graph::Graph decompose_composites(const graph::Graph& g);

// Rewrites native_batch_norm and batch_norm in training mode, and native_batch_norm's backward, into
// reductions and pointwise ops, the running statistics updated by annotated in-place copies
// (batch_norm_training.cpp). Runs before functionalization, which refuses their unannotated writes.
// `integer_counts`: the backward divides by the integer element count rather than multiplying by its float
// reciprocal, so that two traces' decompositions generalize to a symbolic graph.
graph::Graph decompose_batch_norm_training(const graph::Graph& g, bool integer_counts = false);
// A joint training graph with cuDNN's float32/float64 batch norms in training mode (forward and backward) replaced by
// ATen's native ones: the same statistics (cuDNN saves the inverse standard deviation, as native does),
// without the reserve space only cuDNN's backward reads; decompose_batch_norm_training then applies to
// the forward and backward graphs. Unchanged where a reserve space has another reader.
graph::Graph native_batch_norms(const graph::Graph& joint);

// Rewrites add(matmul(x, w), bias) into addmm (a GEMM epilogue adds the bias) where no kernel reads the
// sum, on static sizes (matmul_bias.cpp).
graph::Graph fold_biases_into_matmuls(const graph::Graph& g);

// Rewrites the backward formulas of softmax, log_softmax and nll_loss (gradient_decompositions.cpp).
graph::Graph decompose_gradients(const graph::Graph& g);

}  // namespace jitc::inductor
