#pragma once
// Every exit status of the command line, one row each: its number, the name the Node CLI's check
// gives it (wasm/check_cli.mjs reads the table through the module's exitStatuses()), and what it
// means, as `--help` says it. A status is added here, and both CLIs and their help follow.
#include <span>
#include <string>
#include <string_view>

#include "core/util/json.h"
#include "core/util/result.h"

namespace lattice {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRejected = 1;  // the model was rejected, or a check failed
inline constexpr int kExitUsage = 2;
inline constexpr int kExitIO = 3;  // a file could not be read or written (ErrorKind::kIO)
inline constexpr int kExitUnsupported = 4;  // --fail-on-unsupported: the target cannot run some node
inline constexpr int kExitInconclusive = 5;  // a check that could not have shown a change (Node CLI)
inline constexpr int kExitBelowGate = 6;  // a check below the gate it was given (Node CLI)

struct ExitStatus {
  int number;
  std::string_view name;
  std::string_view meaning;       // in `--help` and the commands' own help
  bool check;                     // in `check --help`: the check gives it
  std::string_view check_words;   // what it means there, if other than `meaning` (else empty)
};

std::span<const ExitStatus> exit_statuses();

// The exit status of an error of that kind: 1 a rejected model (or one too large for memory),
// 2 a usage error, 3 an I/O error.
inline int exit_status(ErrorKind kind) {
  return kind == ErrorKind::kOptions ? kExitUsage : kind == ErrorKind::kIO ? kExitIO : kExitRejected;
}

// How bad a batch's model's status is, 0 for success: a batch exits with the worst of its models'.
int batch_rank(int status);

// The statuses' lines of `--help` (`check`: of `check --help`), from "exit status:" on.
std::string exit_status_help(bool check = false);

// The table as the module gives it: [{number, name, meaning, check_meaning (for a status the check gives)}].
Json exit_statuses_json();

}  // namespace lattice
