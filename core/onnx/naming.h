#pragma once
// How nodes are named to users: by their name, or `<op_type>_<index>` when they have none.
#include <string>

#include "onnx-ml.pb.h"

namespace lattice {

inline std::string node_label(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
}

}  // namespace lattice
