#include "core/onnx/attributes.h"

namespace lattice::attr {

const onnx::AttributeProto* find(const onnx::NodeProto& node, std::string_view name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t get_int(const onnx::NodeProto& node, std::string_view name, int64_t fallback) {
  const auto* a = find(node, name);
  return a && a->has_i() ? a->i() : fallback;
}

float get_float(const onnx::NodeProto& node, std::string_view name, float fallback) {
  const auto* a = find(node, name);
  return a && a->has_f() ? a->f() : fallback;
}

std::string get_string(const onnx::NodeProto& node, std::string_view name, std::string_view fallback) {
  const auto* a = find(node, name);
  return a && a->has_s() ? a->s() : std::string(fallback);
}

std::optional<std::vector<int64_t>> get_ints(const onnx::NodeProto& node, std::string_view name) {
  const auto* a = find(node, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

namespace {
onnx::AttributeProto& slot(onnx::NodeProto& node, std::string_view name, onnx::AttributeProto::AttributeType type) {
  for (auto& a : *node.mutable_attribute()) {
    if (a.name() == name) {
      a.Clear();
      a.set_name(std::string(name));
      a.set_type(type);
      return a;
    }
  }
  auto* a = node.add_attribute();
  a->set_name(std::string(name));
  a->set_type(type);
  return *a;
}
}  // namespace

void set_int(onnx::NodeProto& node, std::string_view name, int64_t value) {
  slot(node, name, onnx::AttributeProto::INT).set_i(value);
}

void set_float(onnx::NodeProto& node, std::string_view name, float value) {
  slot(node, name, onnx::AttributeProto::FLOAT).set_f(value);
}

void set_ints(onnx::NodeProto& node, std::string_view name, const std::vector<int64_t>& values) {
  auto& a = slot(node, name, onnx::AttributeProto::INTS);
  for (auto v : values) a.add_ints(v);
}

void remove(onnx::NodeProto& node, std::string_view name) {
  auto* attrs = node.mutable_attribute();
  for (int i = 0; i < attrs->size(); ++i) {
    if (attrs->Get(i).name() == name) {
      attrs->DeleteSubrange(i, 1);
      return;
    }
  }
}

}  // namespace lattice::attr
