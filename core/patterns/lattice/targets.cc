#include "core/patterns/lattice/targets.h"

#include "core/patterns/lattice/patterns.h"

namespace lattice {
namespace {

// Where a row's facts come from. Where the sources disagree, the target follows the seed (the
// Embedl Deploy Lattice backend), and the row says so.
constexpr std::string_view kSeed = "seed (Embedl Deploy's Lattice conversions)";
constexpr std::string_view kEmbedl = "Embedl Deploy docs (Lattice backend: Conv2d, MaxPool2d, AdaptiveAvgPool2d, LeakyReLU)";
constexpr std::string_view kSensai = "Lattice sensAI guide FPGA-UG-02228";
constexpr std::string_view kAssumed = "assumed";

// The operator rows both targets share: what the accelerator runs as it is (Conv and MaxPool
// within the entry's windows), and what it does not, each with its source.
const std::vector<HardwareOp>& operator_table() {
  static const std::vector<HardwareOp> table{
      {"Conv", true, "the target's kernels and strides, pads k/2, no dilation", kSeed, "", false},
      {"MaxPool", true, "2x2, stride 2, no padding", kSeed, "Embedl Deploy: MaxPool2d", false},
      {"GlobalAveragePool", true, "", kEmbedl, "sensAI guide: GlobalAveragePooling2D", false},
      {"LeakyRelu", true, "", kEmbedl, "", false},
      {"Relu", true, "", kSensai, "ReLU", false},
      {"Clip", true, "as ReLU6", kAssumed, "", false},
      {"Add", true, "", kSensai, "Add", false},
      {"Concat", true, "", kSensai, "Concatenate", false},
      {"Flatten", true, "", kSensai, "Flatten", false},
      {"Reshape", true, "", kSensai, "Reshape", false},
      {"Gemm", true, "", kSensai, "Dense, GEMM", false},
      {"MatMul", true, "", kSensai, "Dense", false},
      {"Resize", true, "mode nearest", kSensai,
       "nearest UpSampling/Resizing; the guide also lists bilinear, which the target does not assume", false},
      {"Upsample", true, "mode nearest", kSensai, "as Resize", false},
      {"Pad", true, "", kSeed, "emitted by the stride-2 pattern", false},
      {"Identity", true, "", kAssumed, "no computation at inference", false},
      {"Dropout", true, "", kAssumed, "no computation at inference", false},
      {"Constant", true, "", kAssumed, "no computation at inference", false},
      {"BatchNormalization", false, "folded into the preceding layer", kSeed,
       "the sensAI guide lists BatchNormalization; the target follows the seed, which folds it", false},
      {"Mul", false, "", kSensai, "Multiply as a standalone layer is not supported on the FPGA", false},
      {"Reciprocal", false, "", kSensai, "not supported on the FPGA", false},
      {"Sigmoid", false, "", kEmbedl,
       "the sensAI guide lists sigmoid and SiLU; the target follows the seed, whose backend has no such conversion", true},
      {"Softmax", false, "", kEmbedl, "the sensAI guide lists Softmax; the target follows the seed", true},
      {"Transpose", false, "", kEmbedl, "the sensAI guide lists Permute; the target follows the seed", false},
      {"Split", false, "", kEmbedl, "the sensAI guide lists Split; the target follows the seed", false},
      {"Slice", false, "", kEmbedl, "the sensAI guide lists slicing; the target follows the seed", false},
      {"Tanh", false, "", kAssumed, "", true},
      {"HardSigmoid", false, "", kAssumed, "", true},
      {"HardSwish", false, "", kAssumed, "", true},
      {"Elu", false, "", kAssumed, "", true},
      {"Selu", false, "", kAssumed, "", true},
      {"Softplus", false, "", kAssumed, "", true},
      {"Mish", false, "", kAssumed, "", true},
      {"Gelu", false, "", kAssumed, "", true},
      {"PRelu", false, "", kAssumed, "", true},
  };
  return table;
}

}  // namespace

std::span<const HardwareOp> hardware_operators() { return operator_table(); }

std::vector<const Pattern*> lattice_conversion(const Pattern& sppf) {
  return {&sppf,          &stride2_asym_pad_conv_maxpool_pattern(), &stride2_conv_bn_relu_pattern(),
          &maxpool2d_pattern(), &global_avg_pool_pattern(),         &conv2d_pattern()};
}

constexpr int64_t kStride1[] = {1}, kStride1Or2[] = {1, 2};
constexpr ConvKernel kCompactKernels[] = {{1, kStride1}, {3, kStride1Or2}};
constexpr ConvKernel kExtendedKernels[] = {{1, kStride1}, {3, kStride1Or2}, {5, kStride1}, {7, kStride1}};
constexpr int64_t kCompactSppf[] = {3}, kExtendedSppf[] = {3, 5, 7};

std::vector<Target> lattice_targets() {
  std::vector<Target> targets;
  targets.push_back(make_target({
      .name = "lattice",
      .description = "Lattice CNN accelerator (Compact/Optimized): 1x1 stride 1 and 3x3 stride 1/2 convolutions",
      .conversion = lattice_conversion(sppf_maxpool_pattern()),
      .conv_kernels = kCompactKernels,
      .stride2_kernel = 3,
      .max_pool = {2, 2},
      .sppf_kernels = kCompactSppf,
      .operators = operator_table(),
      .source = kSeed,
  }));
  targets.push_back(make_target({
      .name = "lattice-advanced",
      .description = "Lattice CNN accelerator (Extended): also 5x5 and 7x7 stride-1 convolutions",
      .conversion = lattice_conversion(sppf_maxpool_advanced_pattern()),
      .conv_kernels = kExtendedKernels,
      .stride2_kernel = 3,
      .max_pool = {2, 2},
      .sppf_kernels = kExtendedSppf,
      .operators = operator_table(),
      .source = kSeed,
  }));
  return targets;
}

}  // namespace lattice
