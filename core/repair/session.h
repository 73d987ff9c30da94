#pragma once
// A repair's two models held between its steps: the original and the converted model are parsed
// once; the repair is planned on them (plan.h), each step cuts the part of one of them that it
// runs (part_runs.h), new weights go into the converted model in place (set_weights.h), and its
// bytes are written once, at the end. The
// JavaScript that drives it runs onnxruntime on the parts and the fits, and holds no model.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/graph/graph_view.h"
#include "core/repair/part.h"
#include "core/repair/part_runs.h"
#include "core/repair/plan.h"
#include "core/repair/set_weights.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice::repair {

class RepairSession {
 public:
  enum class Which { kOriginal, kConverted };

  // Errors: bytes that are not a model (either), a converted model that is not valid.
  static Result<std::unique_ptr<RepairSession>> open(std::span<const uint8_t> original, std::span<const uint8_t> converted);

  // Which layers the repair refits and what each reproduces (plan.h), both models described at
  // the samples' sizes. Errors: a session an earlier error left half written.
  Result<RepairPlan> plan(const std::optional<std::vector<ConversionMatch>>& matches, const SampleSizes& sizes);

  // Starts the bookkeeping of one model's runs (PartRuns): `inputs` held from the start, `keep`
  // the names the repair will ask for.
  void start(Which which, const std::vector<std::string>& inputs, const std::vector<std::string>& keep);
  // The next part of that model to run (PartRuns::next). Errors: the runs not started, a part
  // that cannot be cut, a session an earlier error left half written.
  Result<PartRun> next(Which which, const GivenTensors& held, const std::vector<std::string>& commit,
                       const std::vector<std::string>& peek);
  Result<std::vector<std::string>> adopt(Which which, const std::vector<std::string>& held);
  Status release(Which which, const std::string& name);

  // New weights into the converted model (write_layer_weights). An error found before anything
  // was written leaves the session as it was; one after that ends it.
  Status set_weights(const std::vector<LayerWeights>& layers);
  // The converted model as it is now.
  Result<std::string> converted_bytes() const;

 private:
  struct Model {
    onnx::ModelProto proto;
    std::unique_ptr<ModelParts> parts;  // indexes `proto`: made again after every edit
    std::optional<PartRuns> runs;
  };
  RepairSession() = default;
  Model& model(Which which) { return which == Which::kOriginal ? original_ : converted_; }
  Status usable() const;

  Model original_, converted_;
  GraphView::Labels labels_;  // the converted model's node labels, as loaded
  std::optional<std::string> broken_;
};

}  // namespace lattice::repair
