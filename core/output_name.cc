#include "core/output_name.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

namespace lattice {

namespace {

// FNV-1a (32 bits) of the sorted ids joined by newlines; its top 16 bits as 4 hex digits: short
// enough for a file name, and the same for the same set in any order.
std::string skip_hash(std::span<const std::string> skipped) {
  std::vector<std::string> ids(skipped.begin(), skipped.end());
  std::sort(ids.begin(), ids.end());
  uint32_t h = 0x811c9dc5u;
  auto mix = [&h](unsigned char c) { h = (h ^ c) * 0x01000193u; };
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) mix('\n');
    for (unsigned char c : ids[i]) mix(c);
  }
  return fmt::format("{:04x}", h >> 16);
}

}  // namespace

std::string output_stem(std::string_view input) {
  std::string stem(input);
  if (stem.size() > 5 && stem.ends_with(".onnx") && stem[stem.size() - 6] != '/') stem.resize(stem.size() - 5);
  return stem;
}

std::string output_name(std::string_view stem, const Options& options, std::span<const std::string> skipped) {
  std::string name = fmt::format("{}.{}", stem, options.target);
  if (options.fixed_point != FixedPoint::kNone) name += fmt::format(".{}", fixed_point_name(options.fixed_point));
  if (options.snap_weights == SnapWeights::kTransfer) name += ".transfer";
  if (options.fold_batch_norm && *options.fold_batch_norm != default_fold_batch_norm(options.fixed_point)) {
    name += *options.fold_batch_norm ? ".fold" : ".no-fold";
  }
  if (!skipped.empty()) name += ".skip-" + skip_hash(skipped);
  return name + ".onnx";
}

}  // namespace lattice
