#pragma once
// `onnx-lattice convert | inspect | patterns`: flags, output and exit status (SPEC section 4).
#include <string>
#include <vector>

#include "core/cli/host.h"
#include "core/util/result.h"

namespace lattice {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRejected = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitIO = 3;  // a file could not be read or written (ErrorKind::kIO)
inline constexpr int kExitUnsupported = 4;  // --fail-on-unsupported: the target cannot run some node

// The exit status of an error of that kind: 1 a rejected model (or one too large for memory),
// 2 a usage error, 3 an I/O error.
inline int exit_status(ErrorKind kind) {
  return kind == ErrorKind::kOptions ? kExitUsage : kind == ErrorKind::kIO ? kExitIO : kExitRejected;
}

// `args` excludes the program name.
int run_cli(const std::vector<std::string>& args, Host& host);

}  // namespace lattice
