#include "core/repair/session.h"

#include <new>

#include "core/onnx/model_io.h"
#include "core/onnx/validate.h"

namespace lattice::repair {
namespace {

Result<onnx::ModelProto> load(std::span<const uint8_t> bytes, std::string_view what) {
  if (auto s = check_model_size(bytes.size()); !s) return s.error();
  auto model = parse_model(bytes);
  if (!model) return Error{fmt::format("the {} model: {}", what, model.error().message), model.error().kind};
  return model;
}

}  // namespace

Result<std::unique_ptr<RepairSession>> RepairSession::open(std::span<const uint8_t> original,
                                                           std::span<const uint8_t> converted) {
  try {
    std::unique_ptr<RepairSession> session(new RepairSession());
    auto theirs = load(original, "original");
    if (!theirs) return theirs.error();
    auto mine = load(converted, "converted");
    if (!mine) return mine.error();
    if (auto s = validate_model(*mine); !s) return error("the converted model: {}", s.error().message);
    session->original_.proto = std::move(theirs).value();
    session->converted_.proto = std::move(mine).value();
    for (Model* m : {&session->original_, &session->converted_}) m->parts = std::make_unique<ModelParts>(m->proto);
    session->labels_ = GraphView::original_labels(session->converted_.proto.graph());
    return session;
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("out of memory while holding a repair's models ({} and {} bytes)", original.size(), converted.size()),
                 ErrorKind::kMemory};
  }
}

Status RepairSession::usable() const {
  if (broken_) return error("this repair stopped after an earlier error: {}", *broken_);
  return ok_status();
}

Result<RepairPlan> RepairSession::plan(const std::optional<std::vector<ConversionMatch>>& matches, const SampleSizes& sizes) {
  if (auto s = usable(); !s) return s.error();
  try {
    return plan_repair(original_.proto, converted_.proto, labels_, matches, sizes);
  } catch (const std::bad_alloc&) {
    return Error{"out of memory while planning the repair", ErrorKind::kMemory};
  }
}

void RepairSession::start(Which which, const std::vector<std::string>& inputs, const std::vector<std::string>& keep) {
  model(which).runs.emplace(inputs, keep);
}

Result<PartRun> RepairSession::next(Which which, const GivenTensors& held, const std::vector<std::string>& commit,
                                    const std::vector<std::string>& peek) {
  if (auto s = usable(); !s) return s.error();
  Model& m = model(which);
  if (!m.runs) return options_error("the model's runs were not started");
  try {
    return m.runs->next(*m.parts, held, commit, peek);
  } catch (const std::bad_alloc&) {
    return Error{"out of memory while cutting a part of the model", ErrorKind::kMemory};
  }
}

Result<std::vector<std::string>> RepairSession::adopt(Which which, const std::vector<std::string>& held) {
  if (auto s = usable(); !s) return s.error();
  Model& m = model(which);
  if (!m.runs) return options_error("the model's runs were not started");
  return m.runs->adopt(*m.parts, held);
}

Status RepairSession::release(Which which, const std::string& name) {
  Model& m = model(which);
  if (!m.runs) return options_error("the model's runs were not started");
  m.runs->release(name);
  return ok_status();
}

Status RepairSession::set_weights(const std::vector<LayerWeights>& layers) {
  if (auto s = usable(); !s) return s.error();
  // The index reads the graph the rewrite changes: it goes first, and is made again after.
  converted_.parts.reset();
  auto written = write_layer_weights(converted_.proto, labels_, layers);
  try {
    converted_.parts = std::make_unique<ModelParts>(converted_.proto);
  } catch (const std::bad_alloc&) {
    broken_ = "out of memory while indexing the model with new weights";
    return Error{*broken_, ErrorKind::kMemory};
  }
  if (!written) {
    // The checks before the first write refuse with options errors; anything else may have left
    // the model half written.
    if (written.error().kind != ErrorKind::kOptions) broken_ = written.error().message;
    return written.error();
  }
  return ok_status();
}

Result<std::string> RepairSession::converted_bytes() const {
  if (auto s = usable(); !s) return s.error();
  return serialize_model(converted_.proto);
}

}  // namespace lattice::repair
