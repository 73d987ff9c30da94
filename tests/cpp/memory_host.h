#pragma once
// A file system in memory behind the CLI's Host interface, for the rules core/cli keeps once
// (which paths may be written or read, the all-or-nothing order of writing), with failures
// injected at the n-th temporary file or rename, which a real file system cannot be asked for.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/cli/host.h"

namespace test {

class MemoryHost final : public lattice::Host {
 public:
  std::map<std::string, std::string> files;     // path -> contents
  std::map<std::string, std::string> links;     // path -> target, as readlink gives it
  std::map<std::string, lattice::FileStat::Kind> specials;  // directories, FIFOs, devices
  int fail_temporary_at = 0;  // the n-th write_temporary fails (1-based; 0: none)
  int fail_rename_at = 0;     // the n-th rename fails
  int temporaries = 0, renames = 0;
  std::string stdout_bytes;
  bool fail_stdout = false;  // writing standard output fails
  std::string stdin_bytes;
  std::string stdin_errno;  // set: reading standard input fails with this errno's name
  bool stdin_is_terminal = false;
  uint64_t stdin_asked = 0;  // the most read_stdin was asked for
  std::string out_text, err_text;  // what out() and err() printed

  lattice::Result<lattice::FileStat> lstat(const std::string& path) override {
    lattice::FileStat s;
    if (auto it = files.find(path); it != files.end()) {
      s.kind = lattice::FileStat::Kind::kRegular;
      s.size = it->second.size();
    } else if (links.contains(path)) {
      s.kind = lattice::FileStat::Kind::kSymlink;
    } else if (auto sp = specials.find(path); sp != specials.end()) {
      s.kind = sp->second;
    }
    s.identity = path;
    return s;
  }
  lattice::Status make_dirs(const std::string& path) override {
    for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
      std::string prefix = path.substr(0, at);
      if (files.contains(prefix)) return lattice::Error{"Not a directory", lattice::ErrorKind::kIO, prefix, "ENOTDIR"};
      specials.emplace(prefix, lattice::FileStat::Kind::kDirectory);
      if (at == std::string::npos) return lattice::ok_status();
    }
  }
  lattice::Result<std::string> read_link(const std::string& path) override {
    auto it = links.find(path);
    if (it == links.end()) return lattice::error("Invalid argument");
    return it->second;
  }
  lattice::Result<std::string> read_file(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) return lattice::error("No such file or directory");
    return it->second;
  }
  lattice::Result<std::string> read_stdin(uint64_t at_most) override {
    stdin_asked = at_most;
    if (!stdin_errno.empty()) return lattice::Error{"Is a directory", lattice::ErrorKind::kIO, "", stdin_errno};
    return stdin_bytes.substr(0, static_cast<size_t>(std::min<uint64_t>(at_most, stdin_bytes.size())));
  }
  // The files and links directly inside `path`.
  lattice::Result<std::vector<std::string>> list_dir(const std::string& path) override {
    std::string folder = normal(path) + "/";
    std::vector<std::string> names;
    for (const auto* entries : {&files, &links}) {
      for (const auto& [name, value] : *entries) {
        (void)value;
        if (name.starts_with(folder) && name.find('/', folder.size()) == std::string::npos) names.push_back(name.substr(folder.size()));
      }
    }
    return names;
  }
  // realpath(3) over absolute paths: `.`, `..` and repeated slashes resolved, symlinks followed.
  lattice::Result<std::string> real_path(const std::string& path) override {
    std::string p = normal(path);
    for (int hops = 0; links.contains(p); ++hops) {
      if (hops == 40) return lattice::error("Too many levels of symbolic links");
      const std::string& target = links.at(p);
      p = normal(target.starts_with("/") ? target : p.substr(0, p.rfind('/') + 1) + target);
    }
    if (files.contains(p) || specials.contains(p)) return p;
    return lattice::error("No such file or directory");
  }
  lattice::Result<std::string> read_range(const std::string& path, uint64_t offset, uint64_t length) override {
    auto it = files.find(path);
    if (it == files.end()) return lattice::error("No such file or directory");
    if (offset + length > it->second.size()) return lattice::error("short read");
    return it->second.substr(static_cast<size_t>(offset), static_cast<size_t>(length));
  }
  lattice::Result<std::string> write_temporary(const std::string& path, const std::vector<lattice::Piece>& pieces) override {
    if (++temporaries == fail_temporary_at) return lattice::error("No space left on device");
    std::string bytes, run;
    for (const auto& piece : pieces) {
      if (piece.produce) {
        auto s = lattice::write_produced(piece.produce, run, [&](std::string_view b) {
          bytes += b;
          return lattice::ok_status();
        });
        if (!s) return s.error();
      } else if (!piece.source.empty()) {
        auto range = read_range(piece.source, piece.offset, piece.length);
        if (!range) return range.error();
        bytes += *range;
      } else {
        bytes += piece.bytes;
      }
    }
    std::string tmp = path + ".tmp" + std::to_string(temporaries);
    files[tmp] = bytes;
    return tmp;
  }
  lattice::Status rename(const std::string& from, const std::string& to) override {
    if (++renames == fail_rename_at) return lattice::error("Input/output error");
    auto node = files.extract(from);
    if (node.empty()) return lattice::error("No such file or directory");
    node.key() = to;
    files.erase(to);
    files.insert(std::move(node));
    return lattice::ok_status();
  }
  void remove(const std::string& path) override { files.erase(path); }
  lattice::Status write_device(const std::string&, std::string_view) override { return lattice::ok_status(); }
  lattice::Status out_bytes(std::string_view bytes) override {
    if (fail_stdout) return lattice::error("Broken pipe");
    stdout_bytes += bytes;
    return lattice::ok_status();
  }
  void out(std::string_view text) override { out_text += text; }
  void err(std::string_view text) override { err_text += text; }
  bool err_is_terminal() override { return false; }
  bool out_is_terminal() override { return false; }
  bool in_is_terminal() override { return stdin_is_terminal; }

 private:
  static std::string normal(const std::string& path) {
    std::vector<std::string> parts;
    for (size_t start = 0; start <= path.size();) {
      size_t end = std::min(path.find('/', start), path.size());
      std::string part = path.substr(start, end - start);
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      start = end + 1;
    }
    std::string out;
    for (const auto& part : parts) out += "/" + part;
    return out.empty() ? "/" : out;
  }
};

}  // namespace test
