// The native CLI: a POSIX file-system Host around the shared command line in core/cli.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
#include <iostream>

#include "core/cli/cli.h"
#include "core/cli/files.h"

namespace {

lattice::Error os_error(int code) {
  const char* name = ::strerrorname_np(code);  // glibc 2.32+
  return lattice::Error{std::strerror(code), lattice::ErrorKind::kIO, "", name ? name : ""};
}

// write(2) until done; false (errno set) on failure.
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// pread(2) until `length` bytes are read; false (errno set, EIO at an early end) on failure.
bool pread_all(int fd, char* out, uint64_t length, uint64_t offset) {
  while (length > 0) {
    ssize_t n = ::pread(fd, out, length, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    out += n;
    offset += static_cast<uint64_t>(n);
    length -= static_cast<uint64_t>(n);
  }
  return true;
}

// A range of another file appended to `fd`: copy_file_range(2) (in the kernel, no copy through
// user space), falling back to pread + write where the file systems do not support it.
bool copy_range(int fd, const lattice::Piece& piece) {
  int in = ::open(piece.source.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  auto offset = static_cast<off_t>(piece.offset);
  uint64_t left = piece.length;
  while (left > 0) {
    ssize_t n = ::copy_file_range(in, &offset, fd, nullptr, left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    left -= static_cast<uint64_t>(n);
  }
  std::string chunk;
  while (left > 0) {
    chunk.resize(std::min<uint64_t>(left, 1 << 20));
    if (!pread_all(in, chunk.data(), chunk.size(), static_cast<uint64_t>(offset)) || !write_all(fd, chunk)) {
      int saved = errno;
      ::close(in);
      errno = saved;
      return false;
    }
    offset += static_cast<off_t>(chunk.size());
    left -= chunk.size();
  }
  ::close(in);
  return true;
}

class FileHost final : public lattice::Host {
 public:
  lattice::Result<lattice::FileStat> lstat(const std::string& path) override {
    using Kind = lattice::FileStat::Kind;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return lattice::FileStat{};
      return os_error(errno);
    }
    Kind kind = S_ISREG(st.st_mode)   ? Kind::kRegular
                : S_ISLNK(st.st_mode) ? Kind::kSymlink
                : S_ISCHR(st.st_mode) ? Kind::kCharDevice
                : S_ISDIR(st.st_mode) ? Kind::kDirectory
                : S_ISFIFO(st.st_mode) ? Kind::kFifo
                                       : Kind::kOther;
    return lattice::FileStat{kind, static_cast<uint64_t>(st.st_size),
                             std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)};
  }

  lattice::Result<std::string> read_link(const std::string& path) override {
    char target[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), target, sizeof target);
    if (n < 0) return os_error(errno);
    return std::string(target, static_cast<size_t>(n));
  }

  lattice::Result<std::string> read_file(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return os_error(errno);
    std::string bytes;
    struct stat st;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) bytes.reserve(static_cast<size_t>(st.st_size));
    char chunk[1 << 16];
    ssize_t n;
    while ((n = ::read(fd, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0) bytes.append(chunk, static_cast<size_t>(n));
    }
    int saved = errno;
    ::close(fd);
    if (n < 0) return os_error(saved);
    return bytes;
  }

  lattice::Result<std::string> read_stdin(uint64_t at_most) override {
    std::string bytes;
    char chunk[1 << 16];
    while (bytes.size() < at_most) {
      ssize_t n = ::read(STDIN_FILENO, chunk, static_cast<size_t>(std::min<uint64_t>(sizeof chunk, at_most - bytes.size())));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return os_error(errno);
      if (n == 0) break;
      bytes.append(chunk, static_cast<size_t>(n));
    }
    return bytes;
  }

  lattice::Result<std::vector<std::string>> list_dir(const std::string& path) override {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return os_error(errno);
    std::vector<std::string> names;
    while (const dirent* entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    ::closedir(dir);
    return names;
  }

  lattice::Result<std::string> real_path(const std::string& path) override {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr) return os_error(errno);
    return std::string(resolved);
  }

  lattice::Result<std::string> read_range(const std::string& path, uint64_t offset, uint64_t length) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return os_error(errno);
    std::string bytes(length, '\0');
    bool ok = pread_all(fd, bytes.data(), length, offset);
    int saved = errno;
    ::close(fd);
    if (!ok) return os_error(saved ? saved : EIO);
    return bytes;
  }

  // Mapped once, for the process's life: the fold reads the weights it maps in place, twice, with
  // no copy (pread copied each read, and its buffers were faulted in anew). A file truncated by
  // another program while it is converted could fault; read_range is used when mapping fails.
  std::optional<std::string_view> map(const std::string& path) override {
    if (auto it = maps_.find(path); it != maps_.end()) return it->second;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat st;
    void* at = MAP_FAILED;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      at = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    }
    ::close(fd);
    if (at == MAP_FAILED) return std::nullopt;
    std::string_view mapped(static_cast<const char*>(at), static_cast<size_t>(st.st_size));
    return maps_.emplace(path, mapped).first->second;
  }

  lattice::Result<std::string> write_temporary(const std::string& path,
                                               const std::vector<lattice::Piece>& pieces) override {
    std::string tmp = path + ".tmp-XXXXXX";
    int fd = ::mkstemp(tmp.data());
    if (fd < 0) return os_error(errno);
    // mkstemp makes the file 0600; a replaced file keeps its mode, a new one gets the umask's.
    struct stat old;
    bool replacing = ::stat(path.c_str(), &old) == 0;
    mode_t mode = replacing ? (old.st_mode & 07777) : (0666 & ~current_umask());
    bool ok = ::fchmod(fd, mode) == 0;
    std::optional<lattice::Error> failed;  // by a piece's producer; errno otherwise
    for (const auto& piece : pieces) {
      if (!ok) break;
      if (piece.produce) {
        auto s = lattice::write_produced(piece.produce, buffer_, [fd](std::string_view bytes) {
          return write_all(fd, bytes) ? lattice::ok_status() : lattice::Status(os_error(errno));
        });
        if (!s) failed = s.error();
        ok = s.ok();
      } else {
        ok = piece.source.empty() ? write_all(fd, piece.bytes) : copy_range(fd, piece);
      }
    }
    // On disk before the rename only when it replaces a file (the input itself, say), whose
    // contents a crash must not lose; a new file has nothing to lose, and cp does not wait either.
    ok = ok && (!replacing || ::fsync(fd) == 0);
    int saved = errno;
    ok = (::close(fd) == 0) && ok;
    if (!ok) {
      ::unlink(tmp.c_str());
      if (failed) return *failed;
      return os_error(saved ? saved : EIO);
    }
    return tmp;
  }

  lattice::Status rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return os_error(errno);
    return lattice::ok_status();
  }

  lattice::Status make_dirs(const std::string& path) override {
    // Each prefix in turn, as `mkdir -p`: one that exists already is fine if it is a folder.
    for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
      std::string prefix = path.substr(0, at);
      struct stat s {};
      if (!prefix.empty() && ::mkdir(prefix.c_str(), 0777) != 0 &&
          !(errno == EEXIST && ::stat(prefix.c_str(), &s) == 0 && S_ISDIR(s.st_mode))) {
        return os_error(errno == EEXIST ? ENOTDIR : errno);
      }
      if (at == std::string::npos) return lattice::ok_status();
    }
  }

  void remove(const std::string& path) override { ::unlink(path.c_str()); }

  lattice::Status write_device(const std::string& path, std::string_view bytes) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);  // never O_CREAT: it must exist
    if (fd < 0) return os_error(errno);
    bool ok = write_all(fd, bytes);
    int saved = errno;
    ::close(fd);
    if (!ok) return os_error(saved);
    return lattice::ok_status();
  }

  lattice::Status out_bytes(std::string_view bytes) override {
    std::cout.flush();
    if (!write_all(STDOUT_FILENO, bytes)) return os_error(errno);
    return lattice::ok_status();
  }

  void out(std::string_view text) override { std::cout << text << std::flush; }
  void err(std::string_view text) override { std::cerr << text << std::flush; }
  bool err_is_terminal() override { return isatty(STDERR_FILENO) != 0; }
  bool out_is_terminal() override { return isatty(STDOUT_FILENO) != 0; }
  bool in_is_terminal() override { return isatty(STDIN_FILENO) != 0; }

 private:
  static mode_t current_umask() {
    mode_t mask = ::umask(0);
    ::umask(mask);
    return mask;
  }

  std::string buffer_;  // write_produced's run, kept between pieces
  std::unordered_map<std::string, std::string_view> maps_;  // never unmapped: views of them outlive conversions
};

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  FileHost host;
  return lattice::run_cli(std::vector<std::string>(argv + 1, argv + argc), host);
}
