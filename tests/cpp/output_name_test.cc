// The converted model's name, as every shell gives it (core/output_name.h).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/output_name.h"

using namespace lattice;

TEST_CASE("a converted model is named after its input and what differs from the defaults") {
  Options options;
  const std::vector<std::string> none;
  CHECK(output_stem("models/yolo.onnx") == "models/yolo");
  CHECK(output_stem("models/.onnx") == "models/.onnx");  // a hidden file named ".onnx" keeps its name
  CHECK(output_stem("weights.bin") == "weights.bin");
  CHECK(output_name("m", options, none) == "m.lattice.onnx");
  options.fixed_point = FixedPoint::kFpq;
  CHECK(output_name("m", options, none) == "m.lattice.fpq.onnx");  // no fold is FPQ's default
  options.fold_batch_norm = true;
  CHECK(output_name("m", options, none) == "m.lattice.fpq.fold.onnx");
  options = Options{};
  options.fold_batch_norm = true;  // folding is the default without FPQ: not named
  options.snap_weights = SnapWeights::kTransfer;
  options.target = "lattice-advanced";
  CHECK(output_name("m", options, none) == "m.lattice-advanced.transfer.onnx");
  options.fold_batch_norm = false;
  CHECK(output_name("m", options, none) == "m.lattice-advanced.transfer.no-fold.onnx");
  CHECK(data_file_name("m.lattice.onnx") == "m.lattice.onnx.data");
}

TEST_CASE("skipped matches name their set by a hash, whatever their order") {
  Options options;
  const std::vector<std::string> a{"LatticeMaxPool2dPattern:/pool"}, b{"LatticeStride2ConvPattern:/stem"},
      ab{a[0], b[0]}, ba{b[0], a[0]};
  std::string one = output_name("m", options, a), other = output_name("m", options, b);
  CHECK(one.starts_with("m.lattice.skip-"));
  CHECK(one.size() == std::string("m.lattice.skip-0000.onnx").size());
  CHECK(one != other);
  CHECK(output_name("m", options, ab) == output_name("m", options, ba));
  CHECK(output_name("m", options, ab) != one);
  // The hash the page gave before the core named its downloads (FNV-1a of the sorted ids joined
  // by newlines, top 16 bits): names users already hold stay the same.
  CHECK(output_name("m", options, std::vector<std::string>{"x"}) == "m.lattice.skip-fd0c.onnx");
}
