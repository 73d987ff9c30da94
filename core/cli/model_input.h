#pragma once
// The model a command reads: a file, read in ranges where it lies, or standard input (`-`), read
// whole first, since a pipe cannot be read at an offset and the conversion reads some of the
// model's bytes twice (the skeleton, then the tensor data it left out). The one place that says
// what an input must be and how messages name it.
#include <string>
#include <string_view>

#include "core/cli/files.h"

namespace lattice {

inline constexpr std::string_view kStandardInput = "-";

struct ModelInput {
  std::string path;       // as given: "-" for standard input
  std::string name;       // for messages and the summary: the path, or "standard input"
  ResolvedPath file;      // the file, symlinks followed (standard input: none)
  std::string bytes;      // standard input's, whole
  uint64_t size = 0;

  bool from_stdin() const { return path == kStandardInput; }
};

// How messages name the input `path`.
std::string input_name(const std::string& path);

// `path` as a regular file, or standard input read whole; refused above a model's size limit
// before more is read. A file or stream that cannot be read is an I/O error (ErrorKind::kIO)
// naming it ("-" for standard input), an empty or oversized one a rejected model, as a file's.
Result<ModelInput> open_input(Host& host, const std::string& path);

}  // namespace lattice
