// The native CLI: a file-system Host around the shared command line in core/cli.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/cli/cli.h"

namespace {

class FileHost final : public lattice::Host {
 public:
  lattice::Result<uint64_t> file_size(const std::string& path) override {
    std::error_code ec;
    auto size = std::filesystem::file_size(path, ec);
    if (ec) return lattice::error("cannot read '{}': {}", path, ec.message());
    return static_cast<uint64_t>(size);
  }

  lattice::Result<std::string> read_file(const std::string& path) override {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return lattice::error("cannot read '{}': {}", path, std::strerror(errno));
    std::string bytes;
    char chunk[1 << 16];
    for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;) bytes.append(chunk, n);
    bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed) return lattice::error("cannot read '{}': read error", path);
    return bytes;
  }

  // Written to a temporary file beside the target, then renamed over it: a reader never sees
  // a partial file, and a failure leaves nothing behind.
  lattice::Status write_file(const std::string& path, std::string_view bytes) override {
    std::string tmp = path + ".tmp-" + std::to_string(getpid());
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) return lattice::error("cannot write '{}': {}", path, std::strerror(errno));
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = (std::fclose(f) == 0) && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
      int saved = errno;
      std::remove(tmp.c_str());
      return lattice::error("cannot write '{}': {}", path, std::strerror(saved));
    }
    return lattice::ok_status();
  }

  void out(std::string_view text) override { std::cout << text << std::flush; }
  void err(std::string_view text) override { std::cerr << text << std::flush; }
  bool err_is_terminal() override { return isatty(STDERR_FILENO) != 0; }
};

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  FileHost host;
  return lattice::run_cli(std::vector<std::string>(argv + 1, argv + argc), host);
}
