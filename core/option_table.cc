#include "core/option_table.h"

#include <fmt/format.h>

#include "core/options.h"
#include "core/pattern/registry.h"

namespace lattice {
namespace {

constexpr unsigned kConvertInspect = kConvertCommand | kInspectCommand;
constexpr unsigned kCheckFlagCommands = kConvertCommand | kCheckCommand;
// The check's options: the Node CLI's flags (the native CLI parses them and points to the Node
// CLI), check() and, for those that shape the samples, repair().
constexpr unsigned kCheckShells = kNodeCli | kApiCheck;
constexpr unsigned kSampleShells = kNodeCli | kApiCheck | kApiRepair;

// --target's help: the catalogue's targets, the default first ("lattice (default), ... or none").
std::string target_help() {
  auto targets = all_targets();
  std::string listed;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (i > 0) listed += i + 1 == targets.size() ? " or " : ", ";
    listed += targets[i]->name;
    if (i == 0) listed += " (default)";
  }
  return listed;
}

std::vector<OptionRow> make_rows() {
  using enum OptionId;
  using V = ApiValue;
  return {
      {kOutput, "--output", "-o", "FILE", "a file name", "", V::kNone, "", "IN.<target>[.choices].onnx beside the input", {},
       "the converted model; default {default}; - for standard output (never a terminal)", kConvertCommand, kBothClis, ""},
      {kReport, "--report", "", "FILE", "a file name (or - for stdout)", "", V::kNone, "", "", {},
       "also write the JSON report (- for standard output)", kConvertCommand, kBothClis, ""},
      {kJson, "--json", "", "", "", "", V::kNone, "", "", {},
       "print the JSON report (or {\"error\": ...}) on standard output instead of the summary", kConvertCommand, kBothClis, ""},
      {kOutDir, "--out-dir", "-d", "DIR", "a folder", "", V::kNone, "", "", {},
       "several models (or a folder): their outputs go there (made if missing), as <name>.<target>[.choices].onnx", kConvertCommand,
       kBothClis, ""},
      {kReports, "--reports", "", "", "", "", V::kNone, "", "", {},
       "several models: also <name>.<target>.report.json beside each output", kConvertCommand, kBothClis, ""},
      {kFailOnUnsupported, "--fail-on-unsupported", "", "", "", "", V::kNone, "", "", {},
       "exit 4 when the target cannot run some node of a model", kConvertCommand, kBothClis, ""},
      {kDryRun, "--dry-run", "", "", "", "dryRun", V::kBoolean, "boolean", "false", {}, "convert and report, write nothing",
       kConvertCommand, kBothClis | kConversionApi, "options.dry_run"},
      {kQuiet, "--quiet", "", "", "", "", V::kNone, "", "", {}, "print no summary", kConvertCommand, kBothClis, ""},
      {kExternalData, "--external-data", "", "", "", "", V::kNone, "", "", {},
       "every tensor of 1 KiB or more into OUT.onnx.data", kConvertCommand, kBothClis, "options.data_layout"},
      {kInline, "--inline", "", "", "", "", V::kNone, "", "", {}, "one file, all data inline (refused above 2 GiB)",
       kConvertCommand, kBothClis, "options.data_layout"},
      {kDataLayout, "", "", "", "", "dataLayout", V::kString, "'keep' | 'external' | 'inline'", "keep",
       {"keep", "external", "inline"},
       "where tensor data goes: as in the input, a data file for every tensor of 1 KiB or more, or one file",
       kConvertInspect, kConversionApi, "options.data_layout"},
      {kTarget, "--target", "", "NAME", "a name", "target", V::kString, "Target", "lattice", {}, "{targets}",
       kConvertInspect, kBothClis | kConversionApi, "options.target"},
      {kFixedPoint, "--fixed-point", "", "fpq|lsq", "a scheme (fpq or lsq)", "fixedPoint", V::kString, "'fpq' | 'lsq'", "",
       {"fpq", "lsq"},
       "add Lattice sensAI's fixed-point rules (FPQ: BatchNorm kept, conv biases moved into it; LSQ: structural notes, "
       "its steps are learned, so there are no fixed ranges to simulate)",
       kConvertInspect, kBothClis | kConversionApi, "options.fixed_point"},
      // Its default is derived from the scheme: options_json()'s `derived`, never a literal.
      {kFoldBatchNorm, "--fold-bn", "", "", "", "foldBatchNorm", V::kBoolean, "boolean", "", {},
       "fold BatchNormalization (and Mul/Add scale-shift) into the conv (default, except under FPQ)", kConvertInspect,
       kBothClis | kConversionApi, "options.fold_batch_norm"},
      {kNoFoldBatchNorm, "--no-fold-bn", "", "", "", "", V::kNone, "", "", {},
       "keep BatchNormalization (and Mul/Add scale-shift) layers: no folding", kConvertInspect, kBothClis,
       "options.fold_batch_norm"},
      {kSnapWeights, "--snap-weights", "", "reinit|transfer", "reinit or transfer", "snapWeights", V::kString,
       "'reinit' | 'transfer'", "reinit", {"reinit", "transfer"},
       "a snapped conv kernel drawn anew (default) or carrying its trained taps", kConvertInspect,
       kBothClis | kConversionApi, "options.snap_weights"},
      {kOnly, "--only", "", "P1,P2", "pattern names", "only", V::kStrings, "string[]", "", {},
       "run only these patterns (names from `onnx-lattice patterns`)", kConvertInspect, kBothClis | kConversionApi,
       "options.only"},
      {kSkip, "--skip", "", "P3,...", "pattern names", "skip", V::kStrings, "string[]", "", {}, "do not run these patterns",
       kConvertInspect, kBothClis | kConversionApi, "options.skip"},
      {kSkipMatches, "--skip-match", "", "ID,...", "match ids", "skipMatches", V::kStrings, "string[]", "", {},
       "leave out single matches, by their report id", kConvertInspect, kBothClis | kConversionApi,
       "options.skip_matches"},
      {kInputShapes, "--input-shape", "", "NAME:1,3,640,640", "NAME:d0,d1,...", "inputShapes", V::kShapes,
       "Record<string, number[]>", "", {}, "pin a graph input's shape (repeatable)", kConvertInspect,
       kBothClis | kConversionApi, "input_shapes"},
      {kCheck, "--check", "", "", "", "", V::kNone, "", "", {},
       "then run the output and its fold-only twin against the input (Node CLI; takes the check's flags)",
       kConvertCommand, kNodeCli, "check"},
      {kRepair, "--repair", "", "", "", "", V::kNone, "", "", {},
       "refit the rewritten layers so the output reproduces the input's tensors on samples (Node CLI)", kConvertCommand,
       kNodeCli, "repair"},
      {kCalibration, "--calibration", "", "PATH", "a file or folder of samples", "calibration", V::kOther,
       "CheckOptions['inputs'] | CheckOptions['inputs'][]", "32 seeded random inputs", {},
       "the samples --repair fits and --fixed-point fpq's range fit measures (repeatable; as --inputs; default {default})", kConvertCommand | kRepairCall,
       kNodeCli | kApiRepair, "repair.data"},
      {kFpqTwin, "--fpq-twin", "", "FILE", "a file name (not -)", "", V::kNone, "", "", {},
       "also write the output's FPQ twin: every value in Lattice FPQ's fixed point, in standard ONNX (Node CLI)",
       kConvertCommand, kNodeCli, ""},
      {kLayerwise, "--layerwise", "", "", "", "layerwise", V::kOther, "boolean", "false", {},
       "also compare every tensor both models compute, and name the first that parts", kCheckFlagCommands, kCheckShells,
       "check.layers"},
      {kSeed, "--seed", "", "N", "a value", "seed", V::kOther, "number", "0", {},
       "seed of the random inputs (0 to 4294967295; default {default})", kCheckFlagCommands | kRepairCall, kSampleShells,
       "check.seed"},
      {kInputRange, "--input-range", "", "LO,HI", "a value", "inputRange", V::kOther, "[number, number]", "-1,1", {},
       "floating-point inputs uniform in [LO, HI) (default {default})", kCheckFlagCommands | kRepairCall, kSampleShells,
       "check.input_range"},
      {kRtol, "--rtol", "", "R", "a value", "rtol", V::kOther, "number", "1e-4", {}, "relative tolerance (default {default})",
       kCheckFlagCommands | kRepairCall, kSampleShells, "check.tolerance.rtol"},
      {kAtol, "--atol", "", "A", "a value", "atol", V::kOther, "number", "1e-5", {}, "absolute tolerance (default {default})",
       kCheckFlagCommands | kRepairCall, kSampleShells, "check.tolerance.atol"},
      {kInputs, "--inputs", "", "PATH", "a value", "inputs", V::kOther,
       "string | Uint8Array | Record<string, { data: ArrayLike<number | bigint>; dims: number[] }>", "", {},
       "your samples instead of random inputs: .npy, .npz, PNG/JPEG, or a folder of them", kCheckFlagCommands,
       kCheckShells, "check.inputs"},
      {kLabels, "--labels", "", "FILE.npy", "a value", "labels", V::kOther, "string | ArrayLike<number>", "", {},
       "their labels (or an array 'labels' in the .npz): each model's accuracy too", kCheckFlagCommands, kCheckShells,
       "check.inputs.labels"},
      {kMapThreshold, "--map-threshold", "", "T", "a value", "mapThreshold", V::kOther, "number", "0.3", {},
       "a probability map's pixels above T count as marked, for its IoU (0 to 1; default {default})", kCheckFlagCommands,
       kCheckShells, "check.outputs.task.threshold"},
      {kMinAgreement, "--min-agreement", "", "P", "a value", "minAgreement", V::kOther, "number", "", {},
       "gate: exit 6 unless every output with a task figure agrees with the original's on a share >= P of the "
       "samples (top-1, map IoU, detections, sequences; 0 to 1)",
       kCheckFlagCommands, kCheckShells, "check.gate.min_agreement"},
      {kMinAccuracy, "--min-accuracy", "", "P", "a value", "minAccuracy", V::kOther, "number", "", {},
       "gate: exit 6 unless the model's accuracy on the labelled samples is >= P (0 to 1)", kCheckFlagCommands,
       kCheckShells, "check.gate.min_accuracy"},
      {kImageResize, "--image-resize", "", "stretch|pad", "a value", "preprocessing.resize", V::kOther,
       "'stretch' | 'pad'", "stretch", {"stretch", "pad"},
       "images to the input's H×W: stretched (default) or aspect kept, zero-padded", kCheckFlagCommands | kRepairCall,
       kSampleShells, "check.inputs.preprocessing.resize"},
      {kImageScale, "--image-scale", "", "SCALE", "a value", "preprocessing.scale", V::kOther,
       "'0,1' | '0,2' | '-1,1' | 'imagenet'", "0,1", {"0,1", "0,2", "-1,1", "imagenet"},
       "pixel values to 0,1 (default: [0, 1]), 0,2 (Lattice's [0, 2)), -1,1 or imagenet (mean/std)",
       kCheckFlagCommands | kRepairCall, kSampleShells, "check.inputs.preprocessing.scale"},
      {kImageOrder, "--image-order", "", "rgb|bgr", "a value", "preprocessing.order", V::kOther, "'rgb' | 'bgr'", "rgb",
       {"rgb", "bgr"}, "channel order of a 3-channel input (default {default})", kCheckFlagCommands | kRepairCall,
       kSampleShells, "check.inputs.preprocessing.order"},
      {kCheckShape, "--check-shape", "", "NAME:1,3,640,640", "NAME:d0,d1,...", "", V::kNone, "", "", {},
       "the size the check feeds a dynamic input, the model left as it is (repeatable)", kCheckFlagCommands, kNodeCli,
       "check.inputs.batch_shapes"},
      {kSimulate, "--simulate", "", "fpq", "a value", "simulate", V::kOther, "'fpq'", "", {"fpq"},
       "also run the candidate's FPQ twin (Lattice FPQ's fixed point) against it (check.fpq)", kCheckFlagCommands,
       kCheckShells, "check.fpq"},
      // The rows below are wordings of flags above for the other commands, then the Node API's own.
      {kInputShapes, "--input-shape", "", "NAME:1,3,640,640", "NAME:d0,d1,...", "inputShapes", V::kOther,
       "Record<string, number[]>", "", {}, "pin a dynamic input's shape (repeatable)", kCheckCommand | kRepairCall,
       kSampleShells, "check.inputs.batch_shapes"},
      {kFailOnUnsupported, "--fail-on-unsupported", "", "", "", "", V::kNone, "", "", {},
       "exit 4 when the target cannot run some node", kInspectCommand, kBothClis, ""},
      {kJson, "--json", "", "", "", "", V::kNone, "", "", {},
       "JSON on standard output (a failure as {\"error\": {code, message, path}})",
       kInspectCommand | kCheckCommand | kPatternsCommand | kHardwareCommand, kBothClis, ""},
      {kEndOfFlags, "--", "", "", "", "", V::kNone, "", "", {},
       "what follows is an input file, even if its name starts with - (- alone is standard input; ./- a file)",
       kConvertInspect | kCheckCommand, kBothClis, ""},
      {kHelp, "--help", "-h", "", "", "", V::kNone, "", "", {}, "this text", kConvertInspect | kCheckCommand, kBothClis, ""},
      {kIgnoreUnknownSkips, "", "", "", "", "ignoreUnknownSkips", V::kBoolean, "boolean", "false", {},
       "accept `skipMatches` ids that match nothing", kConvertInspect, kConversionApi, ""},
      {kDescribe, "", "", "", "", "describe", V::kBoolean, "boolean", "false", {},
       "`convert` only: also return the graph descriptions the web page draws", kConvertCommand, kApiConvert | kPage, ""},
      {kResolver, "", "", "", "", "resolver", V::kFunction, "Resolver", "", {},
       "`convert`/`inspect` only: the input's data files by `location`", kConvertInspect, kApiConvert | kPage, ""},
      {kDataFile, "", "", "", "", "dataFile", V::kString, "string", "", {},
       "`convert` only: the name the data file will be saved under beside the model", kConvertCommand, kApiConvert | kPage,
       ""},
      // The page's worker reads ranges ahead (`held`) and shows the report before the downloads.
      {kHeld, "", "", "", "", "held", V::kMap, "", "", {}, "ranges of the input read ahead", kConvertInspect, kPage, ""},
      {kOnConverted, "", "", "", "", "onConverted", V::kFunction, "", "", {}, "the report before the output is written",
       kConvertCommand, kPage, ""},
      // The page names its downloads, and the data file written into the model, by the core's
      // output_name from the model's name and what the conversion did.
      {kOutputStem, "", "", "", "", "outputStem", V::kString, "", "", {},
       "the model's name: the output and its data file are named after it and the conversion", kConvertCommand, kPage,
       ""},
      // The package's own in-memory callers (the check's worker, wasm/shared/range_fit.mjs) hand
      // FPQ's range fit the per-channel ranges they measured; the public convert() refuses it.
      {kChannelRanges, "", "", "", "", "channelRanges", V::kOther, "", "", {},
       "FPQ's range fit: measured per-channel ranges by tensor", kConvertCommand, kPage, ""},
      {kChannelClips, "", "", "", "", "channelClips", V::kOther, "", "", {},
       "FPQ's range fit: per-channel MSE-optimal clips of the activations by tensor", kConvertCommand, kPage, ""},
      {kOnProgress, "", "", "", "", "onProgress", V::kWrapper, "(event: ProgressEvent) => void", "", {},
       "every call: `{stage, fraction}` events", kConvertInspect | kCheckCommand | kRepairCall,
       kConversionApi | kApiCheck | kApiRepair, ""},
      {kSignal, "", "", "", "", "signal", V::kWrapper, "AbortSignal", "", {},
       "every call of `createConverter()`'s converter: cancels it", kConvertInspect | kCheckCommand | kRepairCall,
       kApiConvert | kApiConvertFile | kApiCheck | kApiRepair, ""},
      {kScaleAtol, "", "", "", "", "scaleAtol", V::kOther, "boolean", "false", {},
       "atol times each output's largest |value|", kCheckCommand, kApiCheck, "check.tolerance.scale_atol"},
      {kInputValues, "", "", "", "", "inputValues", V::kOther, "Record<string, ArrayLike<number | bigint>>", "", {},
       "values of integer or bool inputs, flat", kCheckCommand, kApiCheck, ""},
      {kConversion, "", "", "", "", "conversion", V::kOther, "Report", "", {},
       "the conversion's report: layers and rewrites name their match", kCheckCommand | kRepairCall,
       kApiCheck | kApiRepair, ""},
      {kRidge, "", "", "", "", "ridge", V::kOther, "number", "1e-3", {},
       "ridge regularisation, relative to the normal equations' mean diagonal", kRepairCall, kApiRepair, "repair.ridge"},
      {kMaxRows, "", "", "", "", "maxRows", V::kOther, "number", "16384", {}, "output positions sampled per layer",
       kRepairCall, kApiRepair, "repair.max_rows"},
      {kRefitAbove, "", "", "", "", "refitAbove", V::kOther, "number", "0.03", {},
       "a layer no rewrite changed is refitted when its output is off by more than this share", kRepairCall, kApiRepair,
       "repair.refit_above"},
  };
}

}  // namespace

const std::vector<OptionRow>& option_rows() {
  static const std::vector<OptionRow> rows = make_rows();
  return rows;
}

const OptionRow* find_flag(std::string_view flag, unsigned command) {
  if (flag.empty()) return nullptr;
  for (const OptionRow& row : option_rows()) {
    if ((row.flag == flag || row.alias == flag) && (row.commands & command)) return &row;
  }
  return nullptr;
}

const OptionRow* find_key(std::string_view key, unsigned shell) {
  if (key.empty()) return nullptr;
  for (const OptionRow& row : option_rows()) {
    if (row.key == key && (row.shells & shell)) return &row;
  }
  return nullptr;
}

std::string known_keys(unsigned shell) {
  std::string known;
  for (const OptionRow& row : option_rows()) {
    if (row.key.empty() || !(row.shells & shell) || row.api_value == ApiValue::kWrapper) continue;
    if (find_key(row.key, shell) != &row) continue;  // a key of two rows is listed once
    known += fmt::format("{}{}", known.empty() ? "" : ", ", row.key);
  }
  return known;
}

std::string option_help(const OptionRow& row) {
  if (row.help == "{targets}") return target_help();
  std::string help(row.help);
  if (size_t at = help.find("{default}"); at != std::string::npos) help.replace(at, 9, row.default_value);
  return help;
}

Json options_json() {
  Json rows = Json::array();
  for (const OptionRow& row : option_rows()) {
    Json commands = Json::array(), shells = Json::array();
    constexpr std::pair<unsigned, std::string_view> kCommands[] = {
        {kConvertCommand, "convert"}, {kInspectCommand, "inspect"}, {kCheckCommand, "check"},
        {kPatternsCommand, "patterns"}, {kHardwareCommand, "hardware"}, {kRepairCall, "repair"}};
    constexpr std::pair<unsigned, std::string_view> kShells[] = {
        {kNativeCli, "native-cli"}, {kNodeCli, "node-cli"}, {kApiConvert, "convert"}, {kApiConvertFile, "convertFile"},
        {kApiCheck, "check"}, {kApiRepair, "repair"}, {kPage, "page"}};
    for (auto [bit, name] : kCommands) {
      if (row.commands & bit) commands.push(name);
    }
    for (auto [bit, name] : kShells) {
      if (row.shells & bit) shells.push(name);
    }
    Json out = Json::object().set("flag", row.flag).set("alias", row.alias).set("value", row.value).set("key", row.key)
                   .set("type", row.type).set("default", row.default_value).set("allowed", Json::array_of(row.allowed))
                   .set("help", option_help(row)).set("commands", std::move(commands)).set("shells", std::move(shells))
                   .set("report", row.report);
    rows.push(std::move(out));
  }
  Json fold = Json::object();
  for (auto scheme : {FixedPoint::kNone, FixedPoint::kFpq, FixedPoint::kLsq}) {
    fold.set(fixed_point_name(scheme), default_fold_batch_norm(scheme));
  }
  return Json::object().set("options", std::move(rows)).set("derived", Json::object().set("fold_batch_norm", std::move(fold)));
}

}  // namespace lattice
