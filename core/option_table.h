#pragma once
// Every option of every shell as data, one row each: the native and Node CLIs parse their flags
// and print `--help` from it, the binding reads the Node API's options object by it, and the
// tests hold index.d.ts, the docs' options tables and the JavaScript defaults to it
// (tests/cpp/option_table_test.cc, tests/node/options.test.mjs). Adding an option is adding a
// row to option_rows() (option_table.cc), then its effect where the shell applies it
// (docs/development.md says where).
#include <string>
#include <string_view>
#include <vector>

#include "core/util/json.h"

namespace lattice {

// What an option sets, whichever shell it comes from: the CLIs' flags and the API's keys that
// mean the same thing share one id (`--fold-bn`, `--no-fold-bn` and `foldBatchNorm`).
enum class OptionId {
  kOutput, kReport, kJson, kOutDir, kReports, kFailOnUnsupported, kDryRun, kQuiet, kExternalData, kInline, kDataLayout,
  kTarget, kFixedPoint, kFoldBatchNorm, kNoFoldBatchNorm, kSnapWeights, kOnly, kSkip, kSkipMatches, kInputShapes,
  kCheck, kRepair, kCalibration, kFpqTwin,
  kLayerwise, kSeed, kInputRange, kRtol, kAtol, kInputs, kLabels, kImageResize, kImageScale, kImageOrder, kCheckShape,
  kSimulate, kMapThreshold, kMinAgreement, kMinAccuracy, kEndOfFlags, kHelp,
  // The Node API's alone: how a call is made, not what the conversion does.
  kIgnoreUnknownSkips, kDescribe, kResolver, kDataFile, kOutputStem, kHeld, kOnConverted, kChannelRanges, kChannelClips, kOnProgress,
  kSignal,
  kScaleAtol, kInputValues, kConversion, kRidge, kMaxRows, kRefitAbove,
};

// The CLI commands (and the Node API's repair()) that take an option: bits of OptionRow::commands.
enum CommandBit : unsigned {
  kConvertCommand = 1, kInspectCommand = 2, kCheckCommand = 4, kPatternsCommand = 8, kHardwareCommand = 16,
  kRepairCall = 32,
};
// The shells that take it: bits of OptionRow::shells. The Node API is split by call, since
// convert() in memory takes what convertFile() cannot (the input's data files, say).
enum ShellBit : unsigned {
  kNativeCli = 1, kNodeCli = 2, kApiConvert = 4, kApiConvertFile = 8, kApiCheck = 16, kApiRepair = 32, kPage = 64,
};
inline constexpr unsigned kBothClis = kNativeCli | kNodeCli;
inline constexpr unsigned kConversionApi = kApiConvert | kApiConvertFile | kPage;

// What the Node API's key holds, which the binding checks before anything else.
// kWrapper: taken out by the JavaScript wrapper (wasm/node/engine.mjs) before the binding sees the
// object, so the binding refuses it as unknown. kOther: checked by the JavaScript that takes it
// (check(), repair(): wasm/node/check_node.mjs), which the binding never sees.
enum class ApiValue { kNone, kString, kBoolean, kStrings, kShapes, kFunction, kMap, kWrapper, kOther };

struct OptionRow {
  OptionId id;
  std::string_view flag;     // "--fixed-point"; empty for the Node API's alone
  std::string_view alias;    // "-o"; usually empty
  std::string_view value;    // the value's placeholder in --help ("fpq|lsq"); empty for a switch
  std::string_view needs;    // said when the value is missing: "--target needs a name"
  std::string_view key;      // the Node API's key ("fixedPoint", "preprocessing.resize"); empty when none
  ApiValue api_value;        // what the binding accepts under `key`
  std::string_view type;     // `key`'s type as index.d.ts declares it
  std::string_view default_value;      // as --help and the docs say it; empty: none
  std::vector<std::string_view> allowed;  // the values a choice takes; empty: any
  std::string_view help;     // one line of --help; "{default}" stands for default_value
  unsigned commands = 0;     // CommandBit
  unsigned shells = 0;       // ShellBit
  std::string_view report;   // where the report records it ("options.fixed_point"); empty: not recorded
};

// Every row, in the order `convert --help` lists them. A flag whose help differs between
// commands has a row per wording (`--json` for convert, and for the others), each with its own
// commands; a command's --help lists its rows in this order.
const std::vector<OptionRow>& option_rows();

// The row of `flag` (or its alias) as `command` (a CommandBit) takes it, or null.
const OptionRow* find_flag(std::string_view flag, unsigned command);
// The row of the Node API's `key` in a call of `shell` (a ShellBit), or null.
const OptionRow* find_key(std::string_view key, unsigned shell);
// The keys a call of `shell` takes, in table order, for an error listing them.
std::string known_keys(unsigned shell);
// The row's help line with its default in place of "{default}".
std::string option_help(const OptionRow& row);

// The table as the binding's options() gives it to the Node package and the page: {options: [{flag, alias, value, key, type, default, allowed, help, commands, shells,
// report}], derived: {fold_batch_norm: {scheme: default}}}. `derived` is what a shell that offers
// a scheme asks for instead of restating the rule (core/options.h, default_fold_batch_norm).
Json options_json();

}  // namespace lattice
