#pragma once
// The files of a model on a file system, read through a Host: the model itself (location
// kInputLocation, for the data its skeleton leaves in it: a file, or the bytes of standard input)
// and its external data files, whose `location`s resolve in the model's folder. The one place that
// decides whether a data file may be read.
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/cli/host.h"
#include "core/cli/model_input.h"
#include "core/onnx/external_data.h"

namespace lattice {

class FolderData final : public ExternalData {
 public:
  // Locations resolve in the folder of the model's path as the user wrote it (as onnx and
  // onnxruntime do), and for a model read from standard input in the current folder (as
  // onnxruntime does for a model loaded from bytes). `model` outlives this.
  FolderData(Host& host, const ModelInput& model);

  Result<uint64_t> size(const std::string& location) override;
  Result<std::string> read(const std::string& location, uint64_t offset, uint64_t length) override;
  std::optional<std::string_view> view(const std::string& location, uint64_t offset, uint64_t length) override;
  // The file a checked location names, every symlink followed.
  Result<std::string> path_of(const std::string& location);
  // The model's own bytes where they are in memory (read from standard input): a range of them is
  // written as bytes, since there is no file to copy it from.
  std::optional<std::string_view> held(const std::string& location) const;

 private:
  struct File {
    std::string path;
    uint64_t size;
  };
  // A location whose file, symlinks followed, is a regular file inside the model's folder (as
  // onnx's checker since CVE-2024-27318/27319); checked once, before any byte is read.
  Result<const File*> checked(const std::string& location);

  Host& host_;
  std::string folder_;
  bool from_stdin_;
  std::string_view held_;  // standard input's bytes, or empty
  std::unordered_map<std::string, File> files_;
};

}  // namespace lattice
