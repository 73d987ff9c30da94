#include "core/cli/data_files.h"

namespace lattice {

FolderData::FolderData(Host& host, const ModelInput& model) : host_(host), from_stdin_(model.from_stdin()) {
  size_t slash = model.path.rfind('/');
  folder_ = from_stdin_ || slash == std::string::npos ? "." : model.path.substr(0, slash + 1);
  files_.emplace(kInputLocation, File{model.file.resolved, model.size});
  if (from_stdin_) held_ = model.bytes;
}

std::optional<std::string_view> FolderData::held(const std::string& location) const {
  if (location != kInputLocation || !from_stdin_) return std::nullopt;
  return held_;
}

Result<const FolderData::File*> FolderData::checked(const std::string& location) {
  if (auto it = files_.find(location); it != files_.end()) return &it->second;
  if (auto s = check_location(location, "a tensor"); !s) return s.error();
  auto folder = host_.real_path(folder_);
  if (!folder) return error("the model's folder: {}", folder.error().message);
  auto path = host_.real_path(folder_ + "/" + location);
  if (!path && from_stdin_) {
    // The message says which folder: for a model on standard input the user named none.
    return error("{} in the current folder (where a model read from standard input finds its data files)",
                 path.error().message);
  }
  if (!path) return Error{path.error().message};
  std::string inside = *folder == "/" ? "/" : *folder + "/";
  if (!path->starts_with(inside)) {
    return error("it resolves to '{}', outside the model's folder '{}' (a symlink?); data files must be inside it",
                 *path, *folder);
  }
  auto stat = host_.lstat(*path);
  if (!stat) return Error{stat.error().message};
  if (stat->kind != FileStat::Kind::kRegular) return error("not a regular file");
  return &files_.emplace(location, File{*path, stat->size}).first->second;
}

Result<uint64_t> FolderData::size(const std::string& location) {
  auto file = checked(location);
  if (!file) return file.error();
  return (*file)->size;
}

Result<std::string> FolderData::read(const std::string& location, uint64_t offset, uint64_t length) {
  auto file = checked(location);
  if (!file) return file.error();
  if (offset > (*file)->size || length > (*file)->size - offset) return error("range beyond the end of the file");
  if (auto bytes = held(location)) {
    return std::string(bytes->substr(static_cast<size_t>(offset), static_cast<size_t>(length)));
  }
  return host_.read_range((*file)->path, offset, length);
}

std::optional<std::string_view> FolderData::view(const std::string& location, uint64_t offset, uint64_t length) {
  auto file = checked(location);
  if (!file) return std::nullopt;
  auto mapped = held(location) ? held(location) : host_.map((*file)->path);
  if (!mapped || offset > mapped->size() || length > mapped->size() - offset) return std::nullopt;
  return mapped->substr(static_cast<size_t>(offset), static_cast<size_t>(length));
}

Result<std::string> FolderData::path_of(const std::string& location) {
  auto file = checked(location);
  if (!file) return file.error();
  return (*file)->path;
}

}  // namespace lattice
