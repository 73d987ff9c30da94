#include "core/cli/files.h"

#include <algorithm>

namespace lattice {
namespace {

constexpr int kMaxSymlinks = 40;  // as Linux's MAXSYMLINKS: a loop is an error, not a hang

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

std::string_view kind_name(FileStat::Kind kind) {
  switch (kind) {
    case FileStat::Kind::kDirectory: return "a directory";
    case FileStat::Kind::kFifo: return "a FIFO";
    default: return "not a regular file";
  }
}

}  // namespace

bool ResolvedPath::same_file(const ResolvedPath& other) const {
  if (stat.kind != FileStat::Kind::kMissing && other.stat.kind != FileStat::Kind::kMissing) {
    return stat.identity == other.stat.identity;
  }
  return resolved == other.resolved;
}

Result<ResolvedPath> resolve(Host& host, const std::string& path) {
  ResolvedPath r{path, path, {}};
  for (int hops = 0;; ++hops) {
    auto stat = host.lstat(r.resolved);
    if (!stat) return file_error(fmt::format("'{}': {}", path, stat.error().message), path, stat.error());
    if (stat->kind != FileStat::Kind::kSymlink) {
      r.stat = std::move(stat).value();
      return r;
    }
    if (hops == kMaxSymlinks) return error("'{}': Too many levels of symbolic links", path);
    auto target = host.read_link(r.resolved);
    if (!target) return file_error(fmt::format("'{}': {}", path, target.error().message), path, target.error());
    r.resolved = target->starts_with("/") ? *target : folder_of(r.resolved) + *target;
  }
}

Error file_error(std::string message, const std::string& path, const Error& cause) {
  bool io = cause.kind == ErrorKind::kIO;
  return Error{std::move(message), cause.kind, io ? path : "", io ? cause.errno_name : ""};
}

Result<Destination> destination(Host& host, std::string_view flag, const std::string& path) {
  Destination d{std::string(flag), path == "-", {path, path, {}}};
  if (d.to_stdout) return d;
  auto target = resolve(host, path);
  if (!target) return options_error("cannot write {}", target.error().message);
  d.target = std::move(target).value();
  auto kind = d.target.stat.kind;
  if (kind != FileStat::Kind::kMissing && kind != FileStat::Kind::kRegular && kind != FileStat::Kind::kCharDevice) {
    return options_error("{} '{}' is {}; give the name of a file to write", flag, path, kind_name(kind));
  }
  return d;
}

namespace {

// Pieces written in order to a stream (standard output, a device): ranges of files are read in
// chunks, so a large model never sits in memory whole.
Status write_stream(Host& host, const std::vector<Piece>& pieces, const ByteSink& write) {
  constexpr uint64_t kChunk = 16 << 20;
  std::string buffer;
  for (const auto& piece : pieces) {
    if (piece.produce) {
      if (auto s = write_produced(piece.produce, buffer, write); !s) return s;
      continue;
    }
    if (piece.source.empty()) {
      if (auto s = write(piece.bytes); !s) return s;
      continue;
    }
    for (uint64_t done = 0; done < piece.length; done += kChunk) {
      auto bytes = host.read_range(piece.source, piece.offset + done, std::min(kChunk, piece.length - done));
      if (!bytes) return bytes.error();
      if (auto s = write(*bytes); !s) return s;
    }
  }
  return ok_status();
}

Error cannot_write(const std::string& path, const Error& cause) {
  return file_error(fmt::format("cannot write '{}': {}", path, cause.message), path, cause);
}

}  // namespace

namespace {

// Every file (not standard output, not a device) under a temporary name; on a failure none stays.
Result<std::vector<StagedFile>> write_temporaries(Host& host, const std::vector<Output>& outputs) {
  std::vector<StagedFile> staged;
  for (const auto& o : outputs) {
    if (!o.to->stages()) continue;
    auto tmp = host.write_temporary(o.to->target.resolved, o.pieces);
    if (!tmp) {
      for (const auto& f : staged) host.remove(f.temporary);
      return cannot_write(o.to->target.path, tmp.error());
    }
    staged.push_back({std::move(tmp).value(), o.to->target.resolved, o.to->target.path});
  }
  return staged;
}

}  // namespace

Status write_together(Host& host, const std::vector<Output>& outputs) {
  auto staged = write_temporaries(host, outputs);
  if (!staged) return staged.error();
  auto fail = [&](Error e) {
    for (const auto& f : *staged) host.remove(f.temporary);
    return e;
  };
  for (const auto& o : outputs) {
    if (o.to->target.stat.kind != FileStat::Kind::kCharDevice) continue;
    auto s = write_stream(host, o.pieces, [&](std::string_view bytes) { return host.write_device(o.to->target.resolved, bytes); });
    if (!s) return fail(cannot_write(o.to->target.path, s.error()));
  }
  for (const auto& o : outputs) {
    if (!o.to->to_stdout) continue;
    auto s = write_stream(host, o.pieces, [&](std::string_view bytes) { return host.out_bytes(bytes); });
    if (!s) return fail(file_error(fmt::format("cannot write to standard output: {}", s.error().message), "-", s.error()));
  }
  return place_together(host, std::move(staged).value());
}

Result<std::vector<StagedFile>> stage_together(Host& host, const std::vector<Output>& outputs) {
  for (const auto& o : outputs) {
    if (!o.to->stages()) return error("'{}' cannot be staged under a temporary name", o.to->target.path);
  }
  return write_temporaries(host, outputs);
}

Status place_together(Host& host, std::vector<StagedFile> staged) {
  for (size_t i = 0; i < staged.size(); ++i) {
    if (auto s = host.rename(staged[i].temporary, staged[i].resolved); !s) {
      for (size_t j = i; j < staged.size(); ++j) host.remove(staged[j].temporary);
      return cannot_write(staged[i].path, s.error());
    }
  }
  return ok_status();
}

}  // namespace lattice
