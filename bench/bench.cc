// Native timings for scripts/bench.sh: a plain parse + serialise round trip (the baseline) and a
// full conversion, each repeated in this process; prints medians in milliseconds as JSON.
//   onnx_lattice_bench MODEL.onnx REPEATS TARGET
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/convert.h"
#include "core/onnx/model_io.h"

namespace {

template <typename Fn>
double median_ms(int repeats, Fn fn) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: onnx_lattice_bench MODEL.onnx REPEATS TARGET\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::span<const uint8_t> view(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  int repeats = std::atoi(argv[2]);
  lattice::Options options;
  options.target = argv[3];

  double round_trip = median_ms(repeats, [&] {
    auto model = lattice::parse_model(view);
    auto out = lattice::serialize_model(*model);
    if (out->empty()) std::abort();
  });
  size_t applied = 0;
  double convert = median_ms(repeats, [&] {
    auto result = lattice::convert(view, options);
    if (!result) {
      std::fprintf(stderr, "%s\n", result.error().message.c_str());
      std::exit(1);
    }
    applied = result->report.matches.size();
  });
  std::printf("{\"bytes\": %zu, \"round_trip_ms\": %.2f, \"convert_ms\": %.2f, \"matches\": %zu}\n", bytes.size(),
              round_trip, convert, applied);
}
