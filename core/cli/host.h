#pragma once
// What the CLI needs from the world around it. The native CLI implements it over the file
// system; the Node CLI over `fs` and `process`, through the wasm module. Hosts provide primitive
// file operations only: following symlinks, what may be written where, and the all-or-nothing
// order of writing live once, in core/cli.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/onnx/deferred_data.h"
#include "core/util/result.h"

namespace lattice {

// What lstat(2) says of a path. Errors are ErrorKind::kIO, worded as the C library's strerror with
// errno's name (Error::errno_name, "ENOENT") in every host.
struct FileStat {
  enum class Kind { kMissing, kRegular, kSymlink, kCharDevice, kDirectory, kFifo, kOther };
  Kind kind = Kind::kMissing;
  uint64_t size = 0;
  std::string identity;  // "device:inode", so two spellings of one file compare equal
};

// A piece of a file to write: `bytes`, `length` bytes at `offset` of the file `source`, which the
// host copies itself (tensor data never passes through the core), or what `produce` gives its
// sink, in order (data the conversion computes as it is written).
struct Piece {
  std::string_view bytes;
  std::string source;  // empty: `bytes`, or `produce`
  uint64_t offset = 0, length = 0;  // `length` is a produced piece's too
  Producer produce = {};
  uint64_t size() const { return source.empty() && !produce ? bytes.size() : length; }
};

class Host {
 public:
  virtual ~Host() = default;
  virtual Result<FileStat> lstat(const std::string& path) = 0;
  virtual Result<std::string> read_link(const std::string& path) = 0;
  virtual Result<std::string> read_file(const std::string& path) = 0;
  // Standard input to its end, or its first `at_most` bytes where it is longer (so a stream too
  // large for a model is refused without being held whole).
  virtual Result<std::string> read_stdin(uint64_t at_most) = 0;
  // The names in a folder (not "." or ".."), in any order.
  virtual Result<std::vector<std::string>> list_dir(const std::string& path) = 0;
  // realpath(3): absolute, every symlink followed; an error if the file is not there.
  virtual Result<std::string> real_path(const std::string& path) = 0;
  // Exactly `length` bytes at `offset` (an error if the file is shorter).
  virtual Result<std::string> read_range(const std::string& path, uint64_t offset, uint64_t length) = 0;
  // The whole file mapped into memory, valid while the host lives, where the host can map files;
  // nullopt: read_range it.
  virtual std::optional<std::string_view> map(const std::string& path) {
    (void)path;
    return std::nullopt;
  }
  // A new file in the folder of `path` holding the pieces in order, with the permissions of the
  // file it will replace if there is one; returns its name. Nothing is left behind on failure.
  virtual Result<std::string> write_temporary(const std::string& path, const std::vector<Piece>& pieces) = 0;
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  // Creates the folder and any missing parents, as `mkdir -p` does (-d OUTDIR).
  virtual Status make_dirs(const std::string& path) = 0;
  virtual void remove(const std::string& path) = 0;
  // Writes into an existing character device (e.g. /dev/null), which is never replaced.
  virtual Status write_device(const std::string& path, std::string_view bytes) = 0;
  virtual Status out_bytes(std::string_view bytes) = 0;  // binary, to standard output
  virtual void out(std::string_view text) = 0;
  virtual void err(std::string_view text) = 0;
  virtual bool err_is_terminal() = 0;
  virtual bool out_is_terminal() = 0;
  virtual bool in_is_terminal() = 0;
  // The check (core/cli/check_request.h) needs a runtime to run models in: the Node CLI has one
  // (onnxruntime-node) and runs the request once the command line's work is done; the native CLI
  // has none.
  virtual bool has_runtime() { return false; }
  virtual void request_check(std::string request_json) { (void)request_json; }
  // Before a conversion whose check it will run: the request with the input model's description
  // ("description"), answered with what is wrong with it ("" when nothing), so that a check the
  // host could not run is a usage error found before anything is written.
  virtual std::string prepare_check(std::string request_json) {
    (void)request_json;
    return "";
  }
};

}  // namespace lattice
