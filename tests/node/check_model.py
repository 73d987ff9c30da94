"""onnx's own checker (Debian's python3-onnx, ONNX 1.12: opsets up to 17) as a service for the
node:test suites: one model path per line on stdin, one answer per line on stdout --
"ok", "skip <why>" or "error <message>". One process serves a whole suite, since importing
onnx takes longer than checking a model."""
import sys

import onnx
import onnx.checker
import onnx.defs

HIGHEST = onnx.defs.onnx_opset_version()

for line in sys.stdin:
    path = line.rstrip("\n")
    try:
        model = onnx.load(path)
        opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
        if opset > HIGHEST:
            answer = f"skip opset {opset} is newer than this onnx knows ({HIGHEST})"
        else:
            onnx.checker.check_model(model)
            answer = "ok"
    except Exception as e:  # every failure is an answer, never the end of the service
        answer = "error " + " ".join(str(e).split())
    print(answer, flush=True)
