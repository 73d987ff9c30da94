#include "core/cli/model_input.h"

#include "core/onnx/model_io.h"

namespace lattice {
namespace {

// The input as a regular file, or an I/O error naming it.
Result<ResolvedPath> readable_file(Host& host, const std::string& path) {
  auto input = resolve(host, path);
  if (!input) return file_error(fmt::format("cannot read {}", input.error().message), path, input.error());
  switch (input->stat.kind) {
    case FileStat::Kind::kRegular: return input;
    case FileStat::Kind::kMissing:
      return Error{fmt::format("cannot read '{}': No such file or directory", path), ErrorKind::kIO, path, "ENOENT"};
    case FileStat::Kind::kDirectory:
      return Error{fmt::format("cannot read '{}': Is a directory", path), ErrorKind::kIO, path, "EISDIR"};
    default: return Error{fmt::format("cannot read '{}': not a regular file", path), ErrorKind::kIO, path, ""};
  }
}

}  // namespace

std::string input_name(const std::string& path) { return path == kStandardInput ? "standard input" : path; }

Result<ModelInput> open_input(Host& host, const std::string& path) {
  ModelInput input{path, input_name(path), {}, {}, 0};
  if (!input.from_stdin()) {
    auto file = readable_file(host, path);
    if (!file) return file.error();
    input.file = std::move(file).value();
    input.size = input.file.stat.size;
    // A model over the limit is refused before reading gigabytes for nothing.
    if (auto s = check_model_size(input.size); !s) return error("{}: {}", path, s.error().message);
    return input;
  }
  // A model is binary: typed on a terminal it never is one, and the command would seem to hang.
  if (host.in_is_terminal()) {
    return options_error("- reads the model from standard input, which is a terminal; pipe or redirect a model into "
                         "it (a file named - is ./-)");
  }
  // One byte past the limit tells a stream that is too large without holding all of it.
  auto bytes = host.read_stdin(kMaxModelBytes + 1);
  if (!bytes) {
    return file_error(fmt::format("cannot read standard input: {}", bytes.error().message), std::string(kStandardInput),
                      bytes.error());
  }
  input.bytes = std::move(bytes).value();
  input.size = input.bytes.size();
  if (input.size == 0) return error("standard input is empty; expected an ONNX model (.onnx)");
  if (input.size > kMaxModelBytes) {
    return error("standard input: more than 2 GiB; a single-file ONNX model is limited to 2 GiB by protobuf");
  }
  return input;
}

}  // namespace lattice
