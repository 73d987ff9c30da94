#pragma once
// Reading and writing NodeProto attributes by name, with the ONNX defaults supplied by callers.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnx-ml.pb.h"

namespace lattice::attr {

const onnx::AttributeProto* find(const onnx::NodeProto& node, std::string_view name);
int64_t get_int(const onnx::NodeProto& node, std::string_view name, int64_t fallback);
float get_float(const onnx::NodeProto& node, std::string_view name, float fallback);
std::string get_string(const onnx::NodeProto& node, std::string_view name, std::string_view fallback);
std::optional<std::vector<int64_t>> get_ints(const onnx::NodeProto& node, std::string_view name);

void set_int(onnx::NodeProto& node, std::string_view name, int64_t value);
void set_float(onnx::NodeProto& node, std::string_view name, float value);
void set_ints(onnx::NodeProto& node, std::string_view name, const std::vector<int64_t>& values);
void remove(onnx::NodeProto& node, std::string_view name);

}  // namespace lattice::attr
