#include "core/report/report.h"

#include <algorithm>

#include "core/onnx/domain.h"
#include "core/report/node_map.h"
#include "core/util/utf8.h"

namespace lattice {

ModelStats ModelStats::of(const onnx::ModelProto& model, uint64_t bytes) {
  ModelStats stats;
  stats.bytes = bytes;
  stats.ir_version = model.ir_version();
  stats.opset = default_opset(model);
  stats.nodes = static_cast<uint64_t>(model.graph().node_size());
  for (const auto& node : model.graph().node()) ++stats.op_counts[node.op_type()];
  return stats;
}

bool Report::has_match(std::string_view id) const {
  return std::any_of(matches.begin(), matches.end(), [&](const MatchRecord& m) { return m.id == id; });
}

bool Report::any_applied() const {
  for (const auto& m : matches) {
    if (m.applied) return true;
  }
  return false;
}

namespace {

Json stats_json(const ModelStats& s) {
  Json counts = Json::object();
  for (const auto& [op, n] : s.op_counts) counts.set(op, n);
  return Json::object()
      .set("bytes", s.bytes)
      .set("ir_version", s.ir_version)
      .set("opset", s.opset)
      .set("nodes", s.nodes)
      .set("op_counts", std::move(counts));
}

}  // namespace

Json Quantization::to_json() const {
  Json scales = nullptr;
  if (scale_min) scales = Json::object().set("min", *scale_min).set("max", *scale_max);
  return Json::object()
      .set("nodes", Json::array_of(nodes))
      .set("form", form)
      .set("per_channel", per_channel)
      .set("scales", std::move(scales))
      .set("power_of_two", power_of_two ? Json(*power_of_two) : Json(nullptr))
      .set("message", printable(message));
}

Json FixedPointFit::to_json() const {
  Json layers_json = Json::array();
  for (const auto& l : layers) {
    layers_json.push(Json::object()
                         .set("node", l.node)
                         .set("op", l.op)
                         .set("weight_min", l.weight_min)
                         .set("weight_max", l.weight_max)
                         .set("clipped", l.clipped)
                         .set("vanished", l.vanished)
                         .set("quantization_error", l.quantization_error)
                         .set("fits", l.fits));
  }
  Json norms = Json::array();
  for (const auto& b : batch_norms) {
    norms.push(Json::object()
                   .set("node", b.node)
                   .set("scale_min", b.scale_min)
                   .set("scale_max", b.scale_max)
                   .set("offset_min", b.offset_min)
                   .set("offset_max", b.offset_max)
                   .set("fits", b.fits));
  }
  Json findings_json = Json::array();
  for (const auto& f : findings) {
    findings_json.push(Json::object()
                           .set("node", f.node)
                           .set("rule", f.rule)
                           .set("message", printable(f.message))
                           .set("source", f.source));
  }
  return Json::object()
      .set("scheme", scheme)
      .set("source", source)
      .set("error_threshold", error_threshold)
      .set("layers", std::move(layers_json))
      .set("batch_norms", std::move(norms))
      .set("findings", std::move(findings_json));
}

// Messages (reasons, warnings) are escaped to one printable line each, as the CLI prints them;
// names stay as they are, since they are data a reader matches against the model.
Json Report::to_json() const {
  Json matches_json = Json::array();
  for (const auto& m : matches) {
    Json row = Json::object()
                   .set("id", m.id)
                   .set("pattern", m.pattern)
                   .set("phase", m.phase)
                   .set("numerically_equivalent", m.numerically_equivalent)
                   .set("applied", m.applied);
    if (!m.applied) row.set("reason", printable(m.reason));
    row.set("nodes", Json::array_of(m.nodes))
        .set("new_nodes", Json::array_of(m.new_nodes))
        .set("node_ops", Json::array_of(m.node_ops))
        .set("new_node_ops", Json::array_of(m.new_node_ops));
    if (m.weights) {
      row.set("weights", Json::object().set("method", m.weights->method).set("kept_energy", m.weights->kept_energy));
    }
    matches_json.push(std::move(row));
  }
  Json warnings_json = Json::array();
  for (const auto& w : warnings) {
    warnings_json.push(Json::object()
                           .set("match_id", w.match_id)
                           .set("pattern", w.pattern)
                           .set("node", w.node)
                           .set("message", printable(w.message)));
  }
  Json unsupported_json = Json::array();
  for (const auto& u : unsupported) {
    Json row = Json::object().set("node", u.node).set("op_type", u.op_type).set("reason", printable(u.reason)).set("group", u.group);
    if (!u.unit.empty()) row.set("unit", Json::array_of(u.unit));
    unsupported_json.push(std::move(row));
  }
  Json input_shapes = Json::object();
  for (const auto& [name, dims] : options.input_shapes) input_shapes.set(name, Json::array_of(dims));
  Json json = Json::object();
  json.set("schema", kReportSchema)
      .set("tool", Json::object().set("name", kToolName).set("version", kToolVersion))
      .set("target", options.target)
      .set("options", options.to_json())
      .set("input_shapes", std::move(input_shapes))
      .set("input", stats_json(input))
      .set("output", stats_json(output))
      .set("matches", std::move(matches_json))
      .set("node_map", node_map_json(matches))
      .set("warnings", std::move(warnings_json))
      .set("unsupported", std::move(unsupported_json));
  // Only for a quantized model, and with a scheme: other reports stay byte for byte what they were.
  if (quantization) json.set("quantization", quantization->to_json());
  if (fixed_point) json.set("fixed_point", fixed_point->to_json());
  json.set("timings_ms", Json::object()
                             .set("load", timings_ms.load)
                             .set("convert", timings_ms.convert)
                             .set("save", timings_ms.save));
  return json;
}

}  // namespace lattice
