#pragma once
// The layer a repair refits, as the caller describes it (op, attributes in ONNX's names, the
// weight's shape) and the shapes of its input and of its target, checked against each other once
// so the patch and fit code can trust every index it computes.
#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/window.h"
#include "core/util/result.h"

namespace lattice::repair {

// A Conv or Gemm node's attributes, ONNX names and defaults: an empty list is the attribute
// absent (kernel_shape from the weight, strides and dilations 1, pads 0).
struct LayerSpec {
  std::string op;  // "Conv" | "Gemm"
  std::vector<int64_t> kernel_shape, strides, pads, dilations;
  int64_t group = 1;
  std::string auto_pad = "NOTSET";
  bool trans_a = false, trans_b = false;
  double alpha = 1.0, beta = 1.0;
  std::vector<int64_t> weight_shape;  // Conv [M, C/group, kh, kw]; Gemm [K, M], or [M, K] with transB

  friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
};

// What the fit solves, per group: rows of `columns` features (the patch under the kernel, or a
// Gemm input row) against `outputs` targets. A Gemm is one group whose positions are its rows.
struct LayerGeometry {
  bool conv = true;
  int64_t batch = 0;                // N
  int64_t channels = 0, height = 0, width = 0;  // the input [N, C, H, W]; Gemm: [N, K] -> channels K
  int64_t out_channels = 0, out_height = 1, out_width = 1;  // the target [N, M, Ho, Wo]; Gemm: [N, M]
  int64_t group = 1;
  Window window;                    // Conv: kernel, strides, dilations, pads with auto_pad resolved
  int64_t columns = 0;              // per group: C/group * kh * kw (Gemm: K)
  int64_t outputs = 0;              // per group: M/group (Gemm: M)

  // Output positions per image times images: the rows there are to sample from.
  uint64_t positions() const {
    return static_cast<uint64_t>(batch) * static_cast<uint64_t>(out_height) * static_cast<uint64_t>(out_width);
  }
  uint64_t weight_count() const {
    return static_cast<uint64_t>(out_channels) * static_cast<uint64_t>(columns);
  }
};

// Checks the spec and the shapes against each other: a 2-D Conv (1-D and 3-D refused), groups
// dividing the channels, the weight's shape, the target's spatial size the one the window gives;
// a Gemm with alpha = beta = 1, no transA, a 2-D input. Every refusal says which field is wrong.
Result<LayerGeometry> layer_geometry(const LayerSpec& spec, const std::vector<int64_t>& input_dims,
                                     const std::vector<int64_t>& target_dims);

}  // namespace lattice::repair
