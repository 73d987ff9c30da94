#pragma once
// The files one command reads and writes, over a Host: symlinks followed, outputs checked before
// any work is done, and everything a run writes written together or not at all.
#include <string>
#include <string_view>
#include <vector>

#include "core/cli/host.h"

namespace lattice {

// A path with every symlink followed, and what is there.
struct ResolvedPath {
  std::string path;      // as the user wrote it, for messages
  std::string resolved;  // the file itself
  FileStat stat;         // of `resolved`; kind is never kSymlink

  // Two spellings of one file: same inode, or the same resolved path for files not there yet.
  bool same_file(const ResolvedPath& other) const;
};

Result<ResolvedPath> resolve(Host& host, const std::string& path);

// `message` about the file `path`, keeping what the host said of it in `cause`: an I/O error
// (ErrorKind::kIO) names the file and keeps its errno; any other error keeps its kind.
Error file_error(std::string message, const std::string& path, const Error& cause);

// Where `flag`'s output goes: "-" is standard output; a character device is written in place; a
// missing or regular file is replaced atomically. Anything else (a directory, a FIFO, a socket)
// is an options error naming the flag and the path.
struct Destination {
  std::string flag;
  bool to_stdout = false;
  ResolvedPath target;

  // A file, written under a temporary name and renamed into place; not a stream.
  bool stages() const { return !to_stdout && target.stat.kind != FileStat::Kind::kCharDevice; }
};

Result<Destination> destination(Host& host, std::string_view flag, const std::string& path);

struct Output {
  const Destination* to;
  std::vector<Piece> pieces;  // standard output and devices take `bytes` pieces only

  Output(const Destination* where, std::string_view bytes) : to(where), pieces{Piece{bytes, "", 0, 0}} {}
  Output(const Destination* where, std::vector<Piece> parts) : to(where), pieces(std::move(parts)) {}
};

// All or nothing: every file is first written beside its target under a temporary name, devices
// and standard output are written next, and only then are the temporary files renamed into
// place. A failure before the renames leaves no new file and every existing one untouched.
Status write_together(Host& host, const std::vector<Output>& outputs);

// A file written beside where it goes under a temporary name, not yet in place.
struct StagedFile {
  std::string temporary;
  std::string resolved;  // where it goes
  std::string path;      // as the user wrote it, for messages
};

// write_together's first half, for a caller that runs and rewrites the files before they are
// placed (the Node CLI's repair and check): every file under a temporary name, in order. Standard
// output and devices are not files (Destination::stages): the caller refuses them before any work.
Result<std::vector<StagedFile>> stage_together(Host& host, const std::vector<Output>& outputs);

// The second half: each renamed into place, in order. On a failure the rest are removed.
Status place_together(Host& host, std::vector<StagedFile> staged);

}  // namespace lattice
