"""Scales the weight of one Conv (by node name) by 1.5: a folded model with one wrong layer, for
the check's tests. Usage: corrupt_weight.py IN.onnx OUT.onnx NODE_NAME"""
import sys

import numpy
import onnx
import onnx.numpy_helper

source, target, node_name = sys.argv[1:4]
model = onnx.load(source)
node = next(n for n in model.graph.node if n.name == node_name)
weight = next(t for t in model.graph.initializer if t.name == node.input[1])
weight.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(weight) * numpy.float32(1.5), weight.name))
onnx.save(model, target)
