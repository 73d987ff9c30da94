#pragma once
// The files of a model on a file system, read through a Host: the model file itself (location
// kInputLocation, for the data its skeleton leaves in it) and its external data files, whose
// `location`s resolve in the model's folder. The one place that decides whether a data file may
// be read.
#include <string>
#include <unordered_map>

#include "core/cli/host.h"
#include "core/onnx/external_data.h"

namespace lattice {

class FolderData final : public ExternalData {
 public:
  // `model_path` as the user wrote it: its folder is where locations are resolved (as onnx and
  // onnxruntime do). `model_file`: the model file, symlinks followed, of `model_size` bytes.
  FolderData(Host& host, const std::string& model_path, const std::string& model_file, uint64_t model_size);

  Result<uint64_t> size(const std::string& location) override;
  Result<std::string> read(const std::string& location, uint64_t offset, uint64_t length) override;
  std::optional<std::string_view> view(const std::string& location, uint64_t offset, uint64_t length) override;
  // The file a checked location names, every symlink followed.
  Result<std::string> path_of(const std::string& location);

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
  std::unordered_map<std::string, File> files_;
};

}  // namespace lattice
