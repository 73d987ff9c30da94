#pragma once
// What the CLI needs from the world around it. The native CLI implements it over the file
// system; the Node CLI over `fs` and `process`, through the wasm module. Everything else about
// the command line lives once, in cli.cc.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/result.h"

namespace lattice {

class Host {
 public:
  virtual ~Host() = default;
  virtual Result<uint64_t> file_size(const std::string& path) = 0;
  virtual Result<std::string> read_file(const std::string& path) = 0;
  // All or nothing: a failed write leaves no file behind (and an existing file untouched).
  virtual Status write_file(const std::string& path, std::string_view bytes) = 0;
  virtual void out(std::string_view text) = 0;
  virtual void err(std::string_view text) = 0;
  virtual bool err_is_terminal() = 0;
};

}  // namespace lattice
