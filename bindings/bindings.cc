// Embind surface of the core, used by the npm package (wasm/index.mjs, wasm/cli.mjs) and the
// page's worker. Rejections come back as {error: message} and the JS wrappers throw an Error
// with that message. The module is built without C++ exceptions: running out of heap aborts it,
// and the wrappers turn that abort into an Error too (never a bare number).
#include <emscripten/bind.h>
#include <emscripten/em_js.h>
#include <emscripten/heap.h>
#include <emscripten/val.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <span>

#include <fmt/ranges.h>

#include "core/cli/cli.h"
#include "core/cli/convert_file.h"
#include "core/cli/files.h"
#include "core/convert.h"
#include "core/describe.h"
#include "core/output_name.h"
#include "core/option_table.h"
#include "core/pattern/registry.h"
#include "core/patterns/lattice/hardware.h"
#include "core/util/utf8.h"
#include "bindings/failure.h"
#include "bindings/js_files.h"
#include "bindings/js_values.h"

// One Blob of `parts` (an array of Uint8Arrays, Blobs and File slices), timed into
// `Module.profile` when the caller set it (the page's worker does).
EM_JS(emscripten::EM_VAL, join_blob, (emscripten::EM_VAL parts), {
  const started = performance.now();
  const blob = new Blob(Emval.toValue(parts));
  const p = Module.profile;
  if (p) p.blobs++, p.blobMs += performance.now() - started;
  return Emval.toHandle(blob);
});

namespace {

using emscripten::val;
using lattice_wasm::copy_in;
using lattice_wasm::JsFiles;


// inputShapes: {NAME: [1, 3, 640, 640]}, each dimension a positive whole number.
lattice::Status input_shapes(const val& v, lattice::Options& o) {
  const char* wrong = "options.inputShapes must be an object of arrays of positive whole numbers, e.g. {input: [1, 3, 640, 640]}";
  if (v.isNull() || v.typeOf().as<std::string>() != "object" || val::global("Array").call<bool>("isArray", v)) {
    return lattice::options_error("{}", wrong);
  }
  for (const auto& name : emscripten::vecFromJSArray<std::string>(val::global("Object").call<val>("keys", v))) {
    val dims = v[name];
    if (!val::global("Array").call<bool>("isArray", dims)) return lattice::options_error("{}", wrong);
    std::vector<int64_t> out;
    for (const auto& d : emscripten::vecFromJSArray<val>(dims)) {
      if (!val::global("Number").call<bool>("isSafeInteger", d) || d.as<double>() <= 0) {
        return lattice::options_error("options.inputShapes.{} must be an array of positive whole numbers", name);
      }
      out.push_back(static_cast<int64_t>(d.as<double>()));
    }
    o.input_shapes.emplace_back(name, std::move(out));
  }
  return lattice::ok_status();
}

// Options as the JS caller wrote them, each key read by its row of the option table
// (core/option_table.h) for a call of `shell`, and into `call` how the call is made
// ({ignoreUnknownSkips, describe}; resolver, dataFile, outputStem, held and onConverted are read
// by convert);
// anything absent takes the CLI's default, anything misspelt or mistyped is an error.
lattice::Result<lattice::Options> options_from(const val& opts, lattice::ConvertCall& call, unsigned shell) {
  using lattice::ApiValue;
  using lattice::OptionId;
  lattice::Options o;
  if (opts.isUndefined() || opts.isNull()) return o;
  if (opts.typeOf().as<std::string>() != "object") return lattice::options_error("options must be an object");
  for (const auto& key : emscripten::vecFromJSArray<std::string>(val::global("Object").call<val>("keys", opts))) {
    val v = opts[key];
    if (v.isUndefined()) continue;
    const lattice::OptionRow* row = lattice::find_key(key, shell);
    if (row == nullptr || row->api_value == ApiValue::kWrapper) {
      return lattice::options_error("unknown option '{}' (known: {})", key,
                                    lattice::known_keys(lattice::kApiConvert | lattice::kApiConvertFile));
    }
    std::string type = v.typeOf().as<std::string>();
    auto list = [&](std::vector<std::string>& out) -> lattice::Status {
      if (!val::global("Array").call<bool>("isArray", v)) return lattice::options_error("options.{} must be an array of strings", key);
      for (const auto& item : emscripten::vecFromJSArray<val>(v)) {
        if (!item.isString()) return lattice::options_error("options.{} must be an array of strings", key);
        out.push_back(item.as<std::string>());
      }
      return lattice::ok_status();
    };
    const bool typed = row->api_value == ApiValue::kString    ? type == "string"
                       : row->api_value == ApiValue::kBoolean  ? type == "boolean"
                       : row->api_value == ApiValue::kFunction ? type == "function"
                       : row->api_value == ApiValue::kMap      ? v.instanceof(val::global("Map"))
                                                               : true;  // lists and shapes say what they need
    if (!typed) return lattice::options_error("options.{} has the wrong type ({})", key, type);
    std::string text = type == "string" ? v.as<std::string>() : "";
    if (row->api_value == ApiValue::kString && !row->allowed.empty() &&
        std::find(row->allowed.begin(), row->allowed.end(), text) == row->allowed.end()) {
      return lattice::options_error("options.{} '{}' is not one of {}", key, text, fmt::join(row->allowed, ", "));
    }
    lattice::Status status = lattice::ok_status();
    switch (row->id) {
      case OptionId::kTarget: o.target = text; break;
      case OptionId::kFoldBatchNorm: o.fold_batch_norm = v.as<bool>(); break;
      case OptionId::kFixedPoint: o.fixed_point = lattice::parse_fixed_point(text).value(); break;
      case OptionId::kDryRun: o.dry_run = v.as<bool>(); break;
      case OptionId::kIgnoreUnknownSkips: call.ignore_unknown_skips = v.as<bool>(); break;
      case OptionId::kDescribe: call.describe = v.as<bool>(); break;
      case OptionId::kDataLayout: o.layout = *lattice::parse_data_layout(text); break;
      case OptionId::kSnapWeights: o.snap_weights = *lattice::parse_snap_weights(text); break;
      case OptionId::kOnly: status = list(o.only); break;
      case OptionId::kSkip: status = list(o.skip); break;
      case OptionId::kSkipMatches: status = list(o.skip_matches); break;
      case OptionId::kInputShapes: status = input_shapes(v, o); break;
      case OptionId::kChannelRanges: status = lattice_wasm::channel_values(v, "options.channelRanges", o.channel_ranges); break;
      case OptionId::kChannelClips: status = lattice_wasm::channel_values(v, "options.channelClips", o.channel_clips); break;
      // read by convert: resolver, dataFile, outputStem, held (ranges the page's worker read
      // ahead), onConverted
      default: break;
    }
    if (!status) return status.error();
  }
  return o;
}

using lattice_wasm::failure;

// Bytes copied out of the heap that a page's parts gather before they are joined into one Blob:
// in Chromium, 98 runs of 1 MiB joined in 64 MiB batches took 0.6 s, made a Blob each 1.1 s
// (README: the page's speed); the bound keeps the copies from piling up in JS memory.
constexpr uint64_t kBlobBatchBytes = uint64_t{64} << 20;

// A file's segments as an array of parts for JS to join (Node) or make a Blob of (the page): new
// bytes copied out of the heap, ranges of the input files as views or slices of them, produced
// data computed and copied out a run (1 MiB) at a time, so the heap never holds a folded layer.
// In the page (a Blob input) the parts so far become one Blob each time kBlobBatchBytes of copies
// have gathered, which the browser keeps outside the JS heap.
// `written` hears the bytes of each part as it is made.
lattice::Result<val> parts(const std::vector<lattice::DataSegment>& segments, JsFiles& files,
                           const std::function<void(uint64_t)>& written) {
  val out = val::array();
  std::string run;
  const bool blobs = files.model_is_blob();
  uint64_t copied = 0;  // bytes copied out since the parts were last joined
  auto push_copy = [&](std::string_view bytes) {
    written(bytes.size());
    out.call<void>("push", lattice_wasm::bytes_out(bytes));
    if (blobs && (copied += bytes.size()) >= kBlobBatchBytes) {
      val joined = val::take_ownership(join_blob(out.as_handle()));
      out = val::array();
      out.call<void>("push", joined);
      copied = 0;
    }
  };
  auto push_run = [&](std::string_view bytes) {
    push_copy(bytes);
    return lattice::ok_status();
  };
  for (const auto& s : segments) {
    if (s.deferred) {
      auto produce = [&](const lattice::ByteSink& sink) { return s.deferred->write(files, sink); };
      if (auto written = lattice::write_produced(produce, run, push_run); !written) {
        return lattice::cannot_compute(written.error());
      }
      continue;
    }
    if (s.location.empty()) {
      push_copy(s.bytes);
      continue;
    }
    auto view = files.range(s.location, s.offset, s.length);
    if (!view) return lattice::error("cannot read '{}': {}", lattice::printable(s.location), view.error().message);
    out.call<void>("push", *view);
    written(s.length);
  }
  return out;
}

// A JS onProgress as the core's ProgressFn; empty when it is not a function.
lattice::ProgressFn progress_of(const val& on_progress) {
  if (on_progress.typeOf().as<std::string>() != "function") return {};
  return [on_progress](std::string_view stage, double fraction) {
    val event = val::object();
    event.set("stage", std::string(stage));
    event.set("fraction", fraction);
    on_progress(event);
  };
}

// The model's files as `opts` gives them: the data files by its resolver, the ranges read ahead.
// `opts[key]`, or undefined when there are no options.
val given(const val& opts, const char* key) {
  return !opts.isUndefined() && !opts.isNull() && !opts[key].isUndefined() ? opts[key] : val::undefined();
}

JsFiles files_of(const val& model, const val& opts) { return JsFiles(model, given(opts, "resolver"), given(opts, "held")); }

std::string data_file_of(const val& opts) {
  val name = given(opts, "dataFile");
  return name.isString() ? name.as<std::string>() : "";
}

// `model`: a Uint8Array, or a Blob in a worker. `on_progress`, when a function, is called with
// {stage, fraction} as each stage starts, then "writing" as the output's parts are made, then
// "done" (core/progress.h). The result's `model` and `data` are arrays of parts (wasm/index.mjs
// joins them); `model` is undefined when the output is the input itself and null for a dry run.
// Without options.dataFile or options.outputStem a converted model that keeps a data file is
// refused: in memory there is no output name to name it after. With outputStem (the page's model
// name) the core names the output from what the conversion did (core/output_name.h), the result's
// `name`, and its data file after it, in the one conversion.
// `options.onConverted` (the page's worker), when a function, is called with the result before
// the output's parts are made ({report, inputDescription, description, name}), so the page can
// show the report while the folded data is computed.
val convert(const val& model, const val& opts, const val& on_progress) {
  lattice::ConvertCall call;
  auto options = options_from(opts, call, lattice::kApiConvert | lattice::kPage);
  if (!options) return failure(options.error());
  lattice::ProgressFn progress = progress_of(on_progress);
  JsFiles files = files_of(model, opts);
  call.progress = lattice::before_writing(progress);
  call.data_files = &files;
  auto conversion = lattice::analyse(files, JsFiles::size_of(model), *options, call);
  if (!conversion) return failure(conversion.error());
  std::string name, data_file = data_file_of(opts);
  if (val stem = given(opts, "outputStem"); stem.isString()) {
    name = lattice::output_name(stem.as<std::string>(), *options, conversion->skipped_ids());
    data_file = lattice::data_file_name(name);
  }
  auto result = std::move(*conversion).write(data_file);
  if (!result) return failure(result.error());
  val out = val::object();
  out.set("report", result->report.to_json().dump());
  if (result->input_description) out.set("inputDescription", result->input_description->dump(false));
  if (result->description) out.set("description", result->description->dump(false));
  if (!name.empty()) out.set("name", name);
  if (val on_converted = given(opts, "onConverted"); on_converted.typeOf().as<std::string>() == "function") {
    on_converted(out);
  }
  uint64_t total = 0, done = 0;
  for (const auto* segments : {&result->converted, &result->data}) {
    if (*segments) total += lattice::size_of(**segments);
  }
  lattice::WritingFn writing = lattice::writing_on_scale(progress);
  auto written = [&](uint64_t bytes) {
    done += bytes;
    if (writing && total > 0) writing(static_cast<double>(done) / static_cast<double>(total));
  };
  out.set("model", options->dry_run ? val::null() : val::undefined());
  out.set("data", val::null());
  if (result->converted) {
    auto model = parts(*result->converted, files, written);
    if (!model) return failure(model.error());
    out.set("model", *model);
  }
  if (result->data) {
    auto data = parts(*result->data, files, written);
    if (!data) return failure(data.error());
    out.set("data", *data);
  }
  // The heap only grows: its size now is the conversion's peak (the page's tests measure it).
  out.set("heapBytes", static_cast<double>(emscripten_get_heap_size()));
  if (writing && !options->dry_run) writing(1);
  if (progress) progress("done", 1);
  return out;
}

// What converting `model` (a Blob) with `opts` will read of its files' tensor data, found by a dry
// run that reads everything else (JsFiles::start_planning): {ranges: [{file, offset, length}],
// read: [{file, offset, bytes}]} (what the dry run read, for the conversion to reuse), or {error}.
// The page's worker reads the ranges ahead in large asynchronous reads (web/worker.js).
val plan(const val& model, const val& opts) {
  lattice::ConvertCall call;
  auto options = options_from(opts, call, lattice::kApiConvert | lattice::kPage);
  if (!options) return failure(options.error());
  options->dry_run = true;
  JsFiles files = files_of(model, opts);
  files.start_planning();
  call.data_files = &files;
  call.data_file = data_file_of(opts);
  call.describe = false;
  auto result = lattice::convert(files, JsFiles::size_of(model), *options, call);
  if (!result) return failure(result.error());
  val out = val::object();
  out.set("ranges", files.planned());
  out.set("read", files.kept());
  return out;
}

// The graph description (core/describe.h) as a JSON string, or {error}.
val describe(const val& u8) {
  std::string bytes = copy_in(u8);
  auto description = lattice::describe_model({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  if (!description) return failure(description.error());
  return val(description->dump(false));
}

std::string catalogue() { return lattice::catalogue_json().dump(); }
std::string options() { return lattice::options_json().dump(); }
std::string hardware() { return lattice::hardware_json().dump(); }
std::string version() { return lattice::kToolVersion; }
// The command line's exit statuses (core/cli/exit_status.h), which the Node CLI's check exits by.
std::string exit_statuses() { return lattice::exit_statuses_json().dump(); }

// The Node CLI's Host: `js` is an object of plain functions (wasm/node/fs_host.mjs,
// wasm/cli/main.mjs). Each returns its value, or `{error: message}` (strerror wording) on
// failure: a JS exception must not unwind through wasm frames built without C++ exceptions.
class JsHost final : public lattice::Host {
 public:
  explicit JsHost(val js) : js_(std::move(js)) {}

  lattice::Result<lattice::FileStat> lstat(const std::string& path) override {
    val r = js_.call<val>("lstat", path);
    if (auto e = failed(r)) return *e;
    return lattice::FileStat{static_cast<lattice::FileStat::Kind>(r["kind"].as<int>()),
                             static_cast<uint64_t>(r["size"].as<double>()), r["identity"].as<std::string>()};
  }
  lattice::Result<std::string> read_link(const std::string& path) override {
    val r = js_.call<val>("readLink", path);
    if (auto e = failed(r)) return *e;
    return r.as<std::string>();
  }
  lattice::Result<std::string> read_file(const std::string& path) override {
    val r = js_.call<val>("readFile", path);
    if (auto e = failed(r)) return *e;
    return copy_in(r);
  }
  lattice::Result<std::string> read_stdin(uint64_t at_most) override {
    val r = js_.call<val>("readStdin", static_cast<double>(at_most));
    if (auto e = failed(r)) return *e;
    return copy_in(r);
  }
  lattice::Result<std::vector<std::string>> list_dir(const std::string& path) override {
    val r = js_.call<val>("listDir", path);
    if (auto e = failed(r)) return *e;
    return emscripten::vecFromJSArray<std::string>(r);
  }
  lattice::Result<std::string> real_path(const std::string& path) override {
    val r = js_.call<val>("realPath", path);
    if (auto e = failed(r)) return *e;
    return r.as<std::string>();
  }
  lattice::Result<std::string> read_range(const std::string& path, uint64_t offset, uint64_t length) override {
    // Read by JS straight into the heap: no JS buffer, no second copy. Nothing allocates in the
    // heap during the call, so the view stays valid.
    std::string bytes(length, '\0');
    val into(emscripten::typed_memory_view(bytes.size(), reinterpret_cast<uint8_t*>(bytes.data())));
    if (auto e = failed(js_.call<val>("readRangeInto", path, static_cast<double>(offset), into))) return *e;
    return bytes;
  }
  // The pieces appended one by one to a new file JS opened; produced data is computed as it is
  // written (lattice::write_produced), so the heap never holds the output. Views of the heap are
  // written before it can grow.
  lattice::Result<std::string> write_temporary(const std::string& path,
                                               const std::vector<lattice::Piece>& pieces) override {
    val opened = js_.call<val>("openTemporary", path);
    if (auto e = failed(opened)) return *e;
    val fd = opened["fd"];
    auto name = opened["name"].as<std::string>();
    auto append = [&](std::string_view bytes) { return status(js_.call<val>("appendBytes", fd, view_of(bytes))); };
    lattice::Status written = lattice::ok_status();
    for (const auto& piece : pieces) {
      if (piece.produce) {
        written = lattice::write_produced(piece.produce, run_, append);
      } else if (piece.source.empty()) {
        written = append(piece.bytes);
      } else {
        written = status(js_.call<val>("appendRange", fd, piece.source, static_cast<double>(piece.offset),
                                       static_cast<double>(piece.length)));
      }
      if (!written) break;
    }
    if (written) written = status(js_.call<val>("closeTemporary", fd, opened["replacing"]));
    if (!written) {
      js_.call<void>("discardTemporary", fd, name);
      return written.error();
    }
    return name;
  }
  lattice::Status rename(const std::string& from, const std::string& to) override {
    return status(js_.call<val>("rename", from, to));
  }
  lattice::Status make_dirs(const std::string& path) override { return status(js_.call<val>("makeDirs", path)); }
  void remove(const std::string& path) override { js_.call<void>("remove", path); }
  lattice::Status write_device(const std::string& path, std::string_view bytes) override {
    return status(js_.call<val>("writeDevice", path, view_of(bytes)));
  }
  lattice::Status out_bytes(std::string_view bytes) override { return status(js_.call<val>("outBytes", view_of(bytes))); }
  void out(std::string_view text) override { js_.call<void>("out", std::string(text)); }
  void err(std::string_view text) override { js_.call<void>("err", std::string(text)); }
  bool err_is_terminal() override { return js_.call<bool>("errIsTerminal"); }
  bool out_is_terminal() override { return js_.call<bool>("outIsTerminal"); }
  bool in_is_terminal() override { return js_.call<bool>("inIsTerminal"); }
  // The Node CLI's host runs the check after run_cli returns (onnxruntime is asynchronous).
  bool has_runtime() override { return js_.hasOwnProperty("requestCheck"); }
  void request_check(std::string request_json) override { js_.call<void>("requestCheck", request_json); }
  std::string prepare_check(std::string request_json) override {
    return js_.hasOwnProperty("prepareCheck") ? js_.call<std::string>("prepareCheck", request_json) : "";
  }

 private:
  static std::optional<lattice::Error> failed(const val& r) {
    if (r.isNull() || r.isUndefined() || r.typeOf().as<std::string>() != "object" || !r.hasOwnProperty("error")) {
      return std::nullopt;
    }
    val code = r["code"];
    return lattice::Error{r["error"].as<std::string>(), lattice::ErrorKind::kIO, "",
                          code.isString() ? code.as<std::string>() : ""};
  }
  static lattice::Status status(const val& r) {
    if (auto e = failed(r)) return *e;
    return lattice::ok_status();
  }
  // Valid until the next heap growth: the JS side copies or writes it at once.
  static val view_of(std::string_view bytes) {
    return val(emscripten::typed_memory_view(bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data())));
  }

  val js_;
  std::string run_;  // write_produced's, reused
};

int run_cli(const val& args, const val& host) {
  JsHost js_host(host);
  return lattice::run_cli(emscripten::vecFromJSArray<std::string>(args), js_host);
}

// The Node CLI's staged files ({temporary, resolved, path}, in the order they are placed in: the
// twin its check wrote, then the core's model, data file and report) renamed into place by the
// core's rule (core/cli/files.h, place_together). "" when all are in place, else what failed (the
// rest removed).
std::string place_staged(const val& staged, const val& host) {
  std::vector<lattice::StagedFile> files;
  for (const auto& f : emscripten::vecFromJSArray<val>(staged)) {
    files.push_back({f["temporary"].as<std::string>(), f["resolved"].as<std::string>(), f["path"].as<std::string>()});
  }
  JsHost js_host(host);
  auto placed = lattice::place_together(js_host, std::move(files));
  return placed ? "" : placed.error().message;
}

// The Node API's convertFile: the paths are paths (never parsed as flags), the options as
// convert's. `output` "" means the default beside the input. {report, output, files} or an error.
val convert_file(const std::string& input, const std::string& output, const val& opts, const val& host,
                 const val& on_progress) {
  lattice::ConvertCall call;  // of which convertFile takes ignoreUnknownSkips (engine.mjs refuses describe)
  auto options = options_from(opts, call, lattice::kApiConvertFile);
  if (!options) return failure(options.error());
  JsHost js_host(host);
  lattice::ProgressFn progress = progress_of(on_progress);
  lattice::FileProgress listeners{lattice::before_writing(progress), lattice::writing_on_scale(progress)};
  auto result = lattice::convert_file({input, output, "", *options, false, call.ignore_unknown_skips}, js_host, listeners);
  if (!result) return failure(result.error());
  if (listeners.writing && !options->dry_run) listeners.writing(1);
  if (progress) progress("done", 1);
  val out = val::object();
  out.set("report", result->report_json);
  out.set("output", result->output);
  val files = val::array();
  for (const auto& f : result->files) files.call<void>("push", f);
  out.set("files", files);
  return out;
}

}  // namespace

EMSCRIPTEN_BINDINGS(onnx_lattice) {
  emscripten::function("convert", &convert);
  emscripten::function("plan", &plan);
  emscripten::function("describe", &describe);
  emscripten::function("catalogue", &catalogue);
  emscripten::function("options", &options);
  emscripten::function("hardware", &hardware);
  emscripten::function("version", &version);
  emscripten::function("exitStatuses", &exit_statuses);
  emscripten::function("runCli", &run_cli);
  emscripten::function("placeStaged", &place_staged);
  emscripten::function("convertFile", &convert_file);
}
