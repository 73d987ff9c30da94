#include "core/fixed_point/scheme.h"

#include <vector>

namespace lattice::fixed_point {

std::span<const SchemeRow> scheme_rows() {
  // Table 4.1 (FPQ) and Table 4.2 (LSQ) of FPGA-UG-02228, restated in ONNX terms.
  static const std::vector<SchemeRow> rows{
      {"(graph input)", "InputLayer", "unsigned 1.7: [0, 2), step 1/128", "8-bit activations"},
      {"Conv", "Conv2D, DepthwiseConv2D",
       "weights signed 0.7 scale 0.5 ([-0.5, 0.5 - 1/256], step 1/256), output signed 5.10; a bias must be followed "
       "by BatchNormalization (section 5.1.1)",
       "output signed 16; any kernel size and stride"},
      {"Gemm, MatMul", "Dense, GEMM", "Dense: weights signed 0.7 scale 0.5, output signed 5.10; GEMM: weights signed 5.10",
       "listed"},
      {"BatchNormalization", "BatchNormalization", "signed 5.10 (a 16-bit layer of its own)", "signed 16"},
      {"Relu", "ReLU", "output unsigned 1.7: [0, 2)", "unsigned 8"},
      {"MaxPool", "MaxPooling2D", "unsigned 1.7", "unsigned 8; any pooling region, SPPF supported"},
      {"Add", "Add", "output unsigned 1.7", "signed 8"},
      {"GlobalAveragePool", "GlobalAveragePooling2D", "", "8 bit"},
      {"Resize, Upsample", "UpSampling2D, Resizing", "", "nearest and bilinear"},
      {"Concat, Flatten, Slice, Split, Transpose, Reshape", "Concatenate, Flatten, Slicing, Split, Permute, Reshape",
       "as input (moves data)", ""},
      {"Sigmoid, Softmax", "sigmoid, SiLU, Softmax", "Dense before a sigmoid outputs signed 2.13", "listed"},
      {"Mul, Reciprocal", "Multiply, Reciprocal", "", "not supported on the FPGA"},
      {"Dropout", "Dropout", "ignored by the simulator", ""},
  };
  return rows;
}

std::string_view scheme_description(FixedPoint scheme) {
  switch (scheme) {
    case FixedPoint::kFpq:
      return "FPQ, fixed step-size quantization: every layer type has a fixed representation";
    case FixedPoint::kLsq:
      return "LSQ, learned step-size quantization: 8-bit activations, 16-bit conv and BatchNormalization outputs, "
             "steps learned in training and fixed by a post-training calibration";
    case FixedPoint::kNone:
      break;
  }
  return "";
}

}  // namespace lattice::fixed_point
