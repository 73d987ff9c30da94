/** The catalogue's targets (patterns().targets), the default first; tests/node/targets.test.mjs holds it to them. */
export type Target = 'lattice' | 'lattice-advanced' | 'none';

export interface ConvertOptions {
  /** Hardware target; default 'lattice'. */
  target?: Target;
  /** What a snapped Conv kernel's weights become: 'reinit' (default: drawn anew, Kaiming-uniform,
   *  as the seed does) or 'transfer' (the trained taps that read the same pixels, bias kept). */
  snapWeights?: 'reinit' | 'transfer';
  /** Lattice sensAI's fixed-point rules (FPGA-UG-02228 section 4), added to any target: 'fpq'
   *  (fixed steps: BatchNorm stays a layer, conv biases move into it, weights checked against
   *  signed 0.7 with scale 0.5) or 'lsq' (learned steps: structural notes; its steps are learned
   *  in training, so it has no fixed ranges to simulate: the FPQ twin is FPQ's). Default none. */
  fixedPoint?: 'fpq' | 'lsq';
  /** Fold inference BatchNorm into the preceding Conv/ConvTranspose/Gemm; default true, except
   *  with fixedPoint 'fpq' (false: FPQ refuses a folded conv's bias, and warns when asked to fold). */
  foldBatchNorm?: boolean;
  /** Stop after matching: report the plan, return no model. Default false. */
  dryRun?: boolean;
  /** Run only these patterns (names from patterns()). */
  only?: string[];
  /** Do not run these patterns. */
  skip?: string[];
  /** Leave out single matches, by their report id. An id that matches nothing is an error
   *  (code ERR_ONNX_LATTICE_OPTIONS) listing this model's match ids. */
  skipMatches?: string[];
  /** Where the converted model's tensor data goes: 'keep' (default: a data file if the input has
   *  one), 'external' (every tensor of 1 KiB or more in a data file), 'inline' (one file). */
  dataLayout?: 'keep' | 'external' | 'inline';
  /** Accept skipMatches ids that match nothing (as the page does across target switches). Default false. */
  ignoreUnknownSkips?: boolean;
  /** Pinned input shapes, e.g. {input: [1, 3, 640, 640]}: used for the analysis and written into
   *  the output's graph inputs. A pin contradicting a fixed dimension of the model is an error. */
  inputShapes?: Record<string, number[]>;
}

/** What every call of the asynchronous converter takes besides its conversion options. */
export interface CallOptions {
  /** Called as each stage starts (parse, validate, each pass, audit, save), then as the output is
   *  written ('writing', many times on a model with folds), then 'done' once the output's bytes
   *  all exist. `fraction` (0..1) only grows: the stages up to save take [0, 0.2), writing the rest. */
  onProgress?: (event: ProgressEvent) => void;
  /** Cancels the call: it rejects with code ERR_ONNX_LATTICE_ABORTED and leaves no file. An abort
   *  that comes once every output file is complete (as they are renamed into place) is too late:
   *  the call resolves. Not taken by the synchronous converter. */
  signal?: AbortSignal;
}

export interface ProgressEvent { stage: string; fraction: number }

/** The data files of an external-data model, by `location`: a function, a Map or an object. */
export type Resolver =
  | ((location: string) => Uint8Array | ArrayBuffer | null | undefined)
  | Map<string, Uint8Array | ArrayBuffer>
  | Record<string, Uint8Array | ArrayBuffer>;

export interface MemoryConvertOptions extends ConvertOptions {
  /** Reads the input's external data; without it an external-data model is refused. */
  resolver?: Resolver;
  /** The `location` written into the converted model for its data file: the name you will save
   *  `data` under, beside the model (e.g. 'mine.onnx.data'). Required when the output keeps a data
   *  file (an external-data input, or dataLayout 'external'); refused as ERR_ONNX_LATTICE_OPTIONS
   *  without it, since in memory there is no output name to derive it from. */
  dataFile?: string;
  /** Also return `description` and `inputDescription`: the converted model and the input as
   *  describe() gives them, with the report's labels (the page's graph view). Default false. */
  describe?: boolean;
}

/** A tensor a node reads or writes; `shape` null when not even the rank is known. */
export interface TensorInfo { name: string; shape?: (number | string)[] | null; constant?: boolean }

/** What describe() returns: the graph for a viewer, nodes labelled as the report labels them. */
export interface ModelDescription {
  bytes: number;
  ir_version: number;
  opset: number;
  producer: string;
  /** Elements in all initializers and in the tensors of Constant nodes. */
  parameters: number;
  /** Graph inputs a caller feeds (weights left out) and graph outputs; symbolic dims by name, '?' unknown. */
  inputs: { name: string; type: string; shape?: (number | string)[] | null }[];
  outputs: { name: string; type: string; shape?: (number | string)[] | null }[];
  nodes: {
    name: string; op: string; domain?: string; unnamed?: boolean;
    inputs: TensorInfo[]; outputs: TensorInfo[];
    attributes: Record<string, number | string | (number | string)[]>;
  }[];
}

export interface ModelStats {
  bytes: number;
  ir_version: number;
  opset: number;
  nodes: number;
  op_counts: Record<string, number>;
}

/** Which converted nodes an input node became (`node_map`): one entry per input node an applied
 *  match took; a node without one is in the converted model unchanged, under its own name. */
export interface NodeMapEntry {
  node: string;
  /** Its match's new nodes, each followed through the later matches that took it. */
  new_nodes: string[];
  /** Every step numerically equivalent (a fold). */
  exact: boolean;
  steps: { match_id: string; pattern: string; numerically_equivalent: boolean }[];
}

export interface Match {
  id: string;
  pattern: string;
  phase: 'conversion' | 'fusion';
  numerically_equivalent: boolean;
  applied: boolean;
  /** Why the match was not applied (present when applied is false). */
  reason?: string;
  nodes: string[];
  new_nodes: string[];
  /** Op types of `nodes` and `new_nodes`, in the same order. */
  node_ops: string[];
  new_node_ops: string[];
  /** A snapped Conv kernel (its weights changed shape): how they were made, and |W_new|² / |W_old|²
   *  of the trained kernel (0 for 'reinit'; 1 when every non-zero tap was kept). */
  weights?: { method: 'reinit' | 'transfer'; kept_energy: number };
}

/** The report (`--report FILE`, `report` in results): its field names are the file format's,
 *  snake_case, the same from every API and CLI. */
export interface Report {
  schema: 'onnx-lattice-report/1';
  tool: { name: string; version: string };
  target: Target;
  options: {
    target: Target; fold_batch_norm: boolean; only: string[]; skip: string[];
    skip_matches: string[]; dry_run: boolean; data_layout: 'keep' | 'external' | 'inline';
    snap_weights: 'reinit' | 'transfer';
    /** Only when a scheme was asked for. */
    fixed_point?: 'fpq' | 'lsq';
  };
  input: ModelStats;
  output: ModelStats;
  /** The pinned input shapes (inputShapes / --input-shape); {} when none. */
  input_shapes: Record<string, number[]>;
  matches: Match[];
  node_map: NodeMapEntry[];
  warnings: { match_id: string; pattern: string; node: string; message: string }[];
  /** One entry per node. `group`: the activation idiom it is part of ('SiLU', 'HardSwish', ...)
   *  or its op type; `unit`: for an idiom's nodes, all the nodes of that one activation. */
  unsupported: { node: string; op_type: string; reason: string; group: string; unit?: string[] }[];
  /** Only for a quantized model (QuantizeLinear/DequantizeLinear, QLinearConv, ConvInteger, ...):
   *  those nodes are described here instead of in `unsupported`. */
  quantization?: Quantization;
  /** Only with fixedPoint: the fit of the converted model in the scheme. */
  fixed_point?: FixedPointFit;
  timings_ms: { load: number; convert: number; save: number };
  /** `convert --check` (Node CLI) and the page's Check: the converted model and the fold-only twin
   *  (the same folds, no conversion pattern), each against the input; after a repair `converted`
   *  is the repaired model and `unrepaired` the converted one as it was, on the same samples;
   *  on samples, `models` sets them side by side. */
  check?: { converted: CheckReport; fold_only: CheckReport; unrepaired?: CheckReport; fpq?: FpqCheckReport; models?: ModelsTable };
  /** `convert --repair` (Node CLI) and the page's repair: what was refitted, on what data. */
  repair?: RepairReport;
  /** Under fixedPoint 'fpq', when the Node CLI runs the model (--check, --repair, --calibration):
   *  FPQ's range fit on measured ranges. See docs/fixed-point.md. */
  range_fit?: RangeFitReport;
}

/** FPQ's range fit on data (FpqRangeFitPattern given the ranges measured on the samples). */
export interface RangeFitReport {
  pattern: 'FpqRangeFitPattern';
  data: { source: string; samples: number; seed?: number; note?: string };
  /** Relu, MaxPool, Add, Conv and BatchNormalization outputs whose per-channel ranges were measured. */
  tensors_measured: number;
  /** The range fit's matches (ids as every pattern's; skip one with skipMatches). */
  matches: Match[];
  /** What no scale could fit: the layer and what it would need. */
  warnings: Report['warnings'];
  /** The share of all FPQ activation values that clip, before → after; and per tensor. */
  clipped: { before: number; after: number };
  activations: { tensor: string; role: string; representation: string; clipped: { before: number; after: number }; sqnr_db: { before: number; after: number } }[];
  /** The channels that clip where no scale fits: each at its clip (the MSE-optimal one on the samples,
   *  or where the next layer's weights stop the scale), in the model's own units, with its largest
   *  value and what the clip costs on the samples. */
  clips: { tensor: string; channels: { channel: number; clip: number; largest: number; clipped: number; sqnr_db: number }[] }[];
  /** The fitted model against the model before the fit, with the fold-only tolerance. */
  float_check: { pass: boolean; verdict?: string; error?: string; outputs: { name: string; max_abs: number; pass: boolean }[] };
}

/** What a repair did: each Conv/Gemm whose output the conversion changed, refitted by ridge least
 *  squares so that its output reproduces the original's tensor on the calibration samples. */
export interface RepairReport {
  data: { source: string; samples: number; preprocessing?: CheckReport['inputs']['preprocessing']; seed?: number; note?: string };
  options: { ridge: number; max_rows: number; seed: number; refit_above: number };
  /** In topological order. `before`/`after`: max |Δ| and ‖Δ‖/‖target‖ at `target_tensor` on the
   *  calibration samples; `residual`: the fit's own relative residual on the rows it sampled;
   *  `runtime_ms`: onnxruntime's sessions and runs in this layer's step (the part of each model up
   *  to it), `fit_ms`: its fits and the new weights written into the model. `through`: the nodes
   *  between the layer and `target_tensor` it was fitted through ('BatchNormalization → Relu →
   *  MaxPool'), when its target is not its own output. */
  layers: {
    node: string; match_id?: string; target_tensor: string; through?: string; samples: number; refitted: boolean; reason?: string;
    rows?: number; residual?: number; before: { max_abs: number; rel: number }; after: { max_abs: number; rel: number };
    runtime_ms: number; fit_ms: number;
    /** Under FPQ, the input the layer was fitted on: the FPQ twin's values of it, or the float
     *  model's where the twin's SQNR against them (`twin_input_sqnr_db`) is under 6 dB. */
    fit_input?: 'fpq twin' | 'float'; twin_input_sqnr_db?: number;
    /** Under FPQ, a refitted layer's new weights against FPQ's signed 0.7 (as FixedPointFit's layers). */
    fixed_point?: { clipped: number; quantization_error: number; fits: boolean };
  }[];
  /** Conv and Gemm layers left as converted, with the reason (no tensor of the original to reproduce). */
  left: { node: string; match_id?: string; reason: string }[];
  /** Under FPQ (the conversion's report says so): the new conv biases moved into the
   *  BatchNormalization after each, and the refitted layers whose new weights FPQ's range clips. */
  fixed_point?: {
    scheme: 'fpq'; biases_moved: number; weights_clip: string[];
    /** Each layer fitted on its input as the FPQ twin computes it; false (with the note saying
     *  why) when the samples lie beyond FPQ's input range [0, 2). */
    twin_inputs: boolean; twin_inputs_note?: string;
  };
  time_ms: number;
}

export interface RepairOptions {
  /** The samples to fit on (as CheckOptions.inputs; several are joined); default 32 seeded random
   *  inputs, which make a weaker repair. */
  calibration?: CheckOptions['inputs'] | CheckOptions['inputs'][];
  /** Ridge regularisation, relative to the mean diagonal of the normal equations; default 1e-3. */
  ridge?: number;
  /** Rows (output positions) sampled per layer and group; default 16384. */
  maxRows?: number;
  /** A layer no Lattice rewrite changed (its weights the original's, up to a fold) is refitted
   *  only when its output differs from the original's by more than this share (‖Δ‖/‖original‖);
   *  0 refits every changed layer; default 0.03. Needs `conversion` to know which layers a rewrite
   *  changed: without it every changed layer is refitted. */
  refitAbove?: number;
  seed?: number;
  inputRange?: [number, number];
  inputShapes?: Record<string, number[]>;
  preprocessing?: ImagePreprocessing;
  /** A layer within rtol/atol of its target is left as it is; defaults 1e-4 and 1e-5. */
  rtol?: number;
  atol?: number;
  /** The conversion's report: each layer then names the match that made it, and under FPQ the
   *  repaired model keeps FPQ's rules (no Conv with a bias); without it the scheme is unknown. */
  conversion?: Report;
  onProgress?: (event: ProgressEvent) => void;
  /** Aborting ends the runtime's worker; the promise rejects with ERR_ONNX_LATTICE_ABORTED and nothing is returned. */
  signal?: AbortSignal;
}

export interface Quantization {
  /** The quantization nodes, in graph order. */
  nodes: string[];
  form: 'qdq' | 'qoperator' | 'dynamic';
  /** Some scale has more than one value. */
  per_channel: boolean;
  /** Over the constant scales; null when none is a constant. */
  scales: { min: number; max: number } | null;
  /** With fixedPoint 'fpq': every scale a power of two; null otherwise. */
  power_of_two: boolean | null;
  /** Said once: Lattice's flow quantizes the float model itself, these scales are not carried over. */
  message: string;
}

export interface FixedPointFit {
  scheme: 'fpq' | 'lsq';
  /** The scheme in one line, with its document. */
  source: string;
  /** A layer fits when nothing clips and quantization_error is under this (0.1; the project's, not Lattice's). 0 for LSQ. */
  error_threshold: number;
  /** FPQ: each Conv, ConvTranspose and Gemm with a float constant weight, its weights as signed 0.7 with scale 0.5
   *  ([-0.5, 0.5 - 1/256], step 1/256). Shares are of all the layer's weights. Empty for LSQ. */
  layers: {
    node: string; op: string; weight_min: number; weight_max: number;
    /** Share that clips at the range. */
    clipped: number;
    /** Share of the non-zero weights that round to zero. */
    vanished: number;
    /** ||w - q(w)|| / ||w||. */
    quantization_error: number;
    fits: boolean;
  }[];
  /** FPQ: each BatchNormalization with constant parameters: gamma / sqrt(var + eps) and beta - mean * scale
   *  per channel, against signed 5.10 ([-32, 32 - 1/1024]). */
  batch_norms: { node: string; scale_min: number; scale_max: number; offset_min: number; offset_max: number; fits: boolean }[];
  /** With `convert --check --simulate fpq` on samples: the activations' fit (FpqCheckReport.activations). */
  activations?: FpqActivationFit[];
  /** Rules broken or to know, each with its source ('FPGA-UG-02228 section 5.1.1', ...). `node` '' for the whole model.
   *  rule: 'input-range' | 'weights-clip' | 'quantization-error' | 'weights-not-analysed' | 'conv-bias-needs-batchnorm'
   *  | 'batchnorm-range' | 'not-on-fpga' | 'lsq-snapping-not-needed'. */
  findings: { node: string; rule: string; message: string; source: string }[];
}

export interface PatternInfo {
  name: string;
  phase: 'conversion' | 'fusion';
  numerically_equivalent: boolean;
  targets: Target[];
  matches: string;
  emits: string;
  /** A pattern only this scheme runs (FpqConvBiasIntoBatchNormPattern: 'fpq'). */
  fixed_point?: 'fpq' | 'lsq';
}

export interface Catalogue {
  patterns: PatternInfo[];
  targets: { name: Target; description: string; conversion: string[] }[];
}

/** What every Error the converter throws (or rejects with) carries in `code`:
 *  - ERR_ONNX_LATTICE_OPTIONS: an option is unknown, mistyped or names nothing (the model is fine);
 *  - ERR_ONNX_LATTICE_MODEL: the model was rejected (the message names the node, tensor or field);
 *  - ERR_ONNX_LATTICE_IO: a file could not be read or written (`path` and `errno` say which and why);
 *  - ERR_ONNX_LATTICE_MEMORY: the model does not fit in the WebAssembly heap (the asynchronous
 *    converter starts a fresh worker for its next call; a synchronous one is not used again);
 *  - ERR_ONNX_LATTICE_ABORTED: the call's `signal` was aborted (`name` is 'AbortError');
 *  - ERR_ONNX_LATTICE_CHECK_RUNTIME: check() or repair() needs onnxruntime-node, which is not installed;
 *  - ERR_ONNX_LATTICE_CHECK: the check's worker thread stopped unexpectedly;
 *  - ERR_ONNX_LATTICE_DATA: the samples given to check() or repair() cannot be read or do not fit
 *    the model (`file` names the file; docs/data.md lists every case). */
export type ErrorCode = 'ERR_ONNX_LATTICE_OPTIONS' | 'ERR_ONNX_LATTICE_MODEL' | 'ERR_ONNX_LATTICE_IO'
  | 'ERR_ONNX_LATTICE_MEMORY' | 'ERR_ONNX_LATTICE_ABORTED' | 'ERR_ONNX_LATTICE_CHECK_RUNTIME' | 'ERR_ONNX_LATTICE_CHECK'
  | 'ERR_ONNX_LATTICE_DATA';

export interface ConverterError extends Error {
  code: ErrorCode;
  /** ERR_ONNX_LATTICE_IO: the file, as it was named. */
  path?: string;
  /** ERR_ONNX_LATTICE_IO: the C library's name of the failure ('ENOENT', 'EISDIR', 'EACCES', ...);
   *  absent when the file is there but is not a regular file. */
  errno?: string;
}

export interface Hardware {
  follows: string;
  /** Each Lattice target's accepted Conv kernels and strides, and where that comes from. */
  targets: { name: Target; conv_kernels: string; source: string }[];
  operators: { op: string; runs: boolean; condition: string; source: string; note: string }[];
  otherwise: string;
  /** The sensAI ML engine's fixed-point schemes per layer ('' where the source lists nothing). */
  fixed_point: { source: string; operators: { op: string; layer: string; fpq: string; lsq: string }[] };
}

/** A model for check(): a file path (its data files are read beside it), the model's bytes, or
 *  the bytes with an external-data model's data files by `location`. */
export type CheckModel = string | Uint8Array | ArrayBuffer |
  { model: Uint8Array | ArrayBuffer; dataFiles?: Map<string, Uint8Array | ArrayBuffer> | Record<string, Uint8Array | ArrayBuffer> };

export interface CheckOptions {
  /** Seed of the random inputs (0 to 2^32 − 1); default 0. The same seed feeds the same values in Node and in the page. */
  seed?: number;
  /** Floating-point inputs are uniform in [lo, hi); default [-1, 1]. */
  inputRange?: [number, number];
  /** An element passes when |Δ| ≤ atol + rtol·|original| (numpy's allclose); defaults 1e-4 and 1e-5. */
  rtol?: number;
  atol?: number;
  /** Multiply atol by each output's largest |value| (at least 1): float rounding grows with the values'
   *  scale, so an exact rewrite is judged by it. `convert --check` uses it for the fold-only twin. Default false. */
  scaleAtol?: boolean;
  /** The sizes to feed, e.g. {images: [1, 3, 640, 640]}. A dynamic batch (axis 0) is 1; any other
   *  dynamic dimension must be given: the error names it and proposes a size from the model. */
  inputShapes?: Record<string, number[]>;
  /** Values of inputs, flat, e.g. integer ids; integer and bool inputs are zeros unless given. */
  inputValues?: Record<string, ArrayLike<number | bigint>>;
  /** Also compare every tensor both models compute under the same name and shape. */
  layerwise?: boolean;
  /** The conversion's report: layers and rewrites then name the match behind each tensor. */
  conversion?: Report;
  /** Your samples instead of random inputs: a path (a .npy for a one-input model, a .npz with one
   *  array per input name, a PNG or JPEG, or a folder of .npy files or of images, joined along
   *  axis 0 in name order), a file's bytes, or the tensors themselves by input name. Batch on axis
   *  0; a dynamic dimension takes the data's size; values are converted to the input's type as
   *  numpy's astype would (said in the report's `inputs.conversions`). See docs/data.md. */
  inputs?: string | Uint8Array | Record<string, { data: ArrayLike<number | bigint>; dims: number[] }>;
  /** Class labels of the samples (a .npy path or the values), for each model's accuracy; a .npz's
   *  array named `labels` is used when this is not given. */
  labels?: string | ArrayLike<number>;
  /** How images become tensors (images only; defaults stretch, 0,1, rgb). */
  preprocessing?: ImagePreprocessing;
  /** A probability map's pixel counts as marked above this value, for its task figures
   *  (CheckedOutput.task, kind 'map'); from 0 to 1, default 0.3 (PaddleOCR's DB binarisation). */
  mapThreshold?: number;
  /** A gate (CheckReport.gate): every output with a task figure agrees with the original's on at
   *  least this share of the samples (top-1, map IoU, detection decisions, CTC sequences); 0 to 1.
   *  Judged on samples only: without `inputs` the call rejects with ERR_ONNX_LATTICE_OPTIONS. */
  minAgreement?: number;
  /** A gate: the candidate's accuracy on the labelled samples is at least this share; 0 to 1. */
  minAccuracy?: number;
  /** 'fpq': also run the candidate's FPQ twin (fpqTwin()) against the candidate on the same inputs;
   *  the report's `fpq` holds that comparison. See docs/fixed-point.md. */
  simulate?: 'fpq';
  onProgress?: (event: ProgressEvent) => void;
  /** Aborting ends the runtime's worker; the promise rejects with ERR_ONNX_LATTICE_ABORTED. */
  signal?: AbortSignal;
}

/** What an FPQ twin holds in which of Lattice FPQ's representations (FPGA-UG-02228 Table 4.1), and
 *  what it leaves in float. */
export interface FpqSimulation {
  source: string;
  opset: number;
  /** ONNX's rounding, to nearest with ties to even; the FPGA's own is not documented. */
  rounding: string;
  /** Each representation's form in the twin: 'QuantizeLinear/DequantizeLinear (int8)', ... or
   *  'Mul/Round/Clip/Mul' (16-bit representations below opset 21). */
  forms: Record<string, string>;
  /** How many values are held in each representation, by role. */
  values: { representation: string; role: 'input' | 'weights' | 'bias' | 'parameters' | 'output'; count: number }[];
  /** Each graph input's and node output's representation in the twin. */
  activations: { tensor: string; role: 'input' | 'output'; representation: string; step: number; min: number; max: number }[];
  /** Nodes whose outputs stay in float: ops Table 4.1 gives no representation, GEMMs, other domains. */
  not_simulated: { node: string; op: string; reason: string }[];
}

/** The candidate (float) against its FPQ twin: the check's schema, `simulation` added. A twin
 *  that cannot be made (an opset below 11) is a report with `error` only. */
export type FpqCheckReport = CheckReport & { simulation?: FpqSimulation; activations?: FpqActivationFit[] };

/** On samples, one activation of the float model in its FPQ representation: the share of its
 *  values that round outside the range (clip), of non-zero values that round to 0 (vanish), and
 *  10·log10(Σx² / Σ(x − q(x))²) in dB (Infinity when nothing changes). */
export interface FpqActivationFit {
  tensor: string; role: 'input' | 'output'; representation: string; values: number;
  clipped: number; vanished: number; sqnr_db: number;
}

/** An image's way to a tensor: resized to the input's H×W (`stretch`, or `pad`: aspect kept,
 *  centred, zero-padded), pixel values scaled ('0,1': v/255; '0,2': v/128, Lattice's input range;
 *  '-1,1': v/127.5 − 1; 'imagenet': (v/255 − mean)/std), channels in RGB or BGR order. */
export interface ImagePreprocessing {
  resize?: 'stretch' | 'pad';
  scale?: '0,1' | '0,2' | '-1,1' | 'imagenet';
  order?: 'rgb' | 'bgr';
}

/** An output (or, in `layers`, a tensor) of both models compared. Infinity is written "Infinity" in JSON files. */
export interface CheckedOutput {
  name: string;
  /** onnxruntime's element type: 'float32', 'float16', 'int64', ... */
  dtype: string;
  shape_original: number[];
  shape_candidate: number[] | null;
  /** false when the shape or type changed, or the candidate lacks the output: then `reason` and statistics, no diff. */
  comparable: boolean;
  reason?: string;
  max_abs?: number;
  /** Where max_abs is, one index per dimension. */
  max_abs_index?: number[];
  mean_abs?: number;
  p99_abs?: number;
  /** max |Δ| / |original| over the elements that changed (Infinity where an original 0 changed). */
  max_rel?: number;
  /** NaN and ±infinity counts, [original, candidate]. */
  nan?: [number, number];
  inf?: [number, number];
  /** The smallest atol that passes at the given rtol, and the smallest rtol that passes at the given atol. */
  min_atol?: number;
  min_rtol?: number;
  /** With tolerance.scaled: atol times the output's largest |value| (at least 1), the atol applied. */
  atol_used?: number;
  pass: boolean;
  /** Why a pass on this output says nothing: the original computes it as one value. */
  inconclusive?: string;
  /** For an output shaped [N, K] (K > 1): the share of the N samples whose largest of the K values
   *  is at the same index in both models (the same top-1 class); also `task.top1_agreement`. */
  top1_agreement?: number;
  /** Whether the candidate still does the original's task, for outputs whose shape says what they
   *  are: class scores, a probability map, per-anchor scores or per-step class scores (see
   *  CheckedTask). Computed on random inputs too, where it says nothing of the task. */
  task?: CheckedTask;
  /** With labels: each model's share of samples whose top-1 class is the label. */
  accuracy?: { original: number; candidate: number };
  stats_original?: { min: number | null; max: number | null; mean: number | null; std: number | null };
  stats_candidate?: { min: number | null; max: number | null; mean: number | null; std: number | null };
}

/** An output's task figures (CheckedOutput.task), by what its shape says it is. Shares are of the
 *  `samples` (axis 0) unless named otherwise; null when there are no samples. */
export type CheckedTask = ClassesTask | MapTask | AnchorsTask | SequenceTask;

/** [N, K], K > 1: scores over classes. */
export interface ClassesTask {
  kind: 'classes';
  samples: number;
  /** The share of samples whose largest score is at the same class in both models. */
  top1_agreement: number | null;
}

/** [N, 1, H, W] ('nchw') or [N, H, W, 1] ('nhwc'), H·W > 1, every value of the original's in [0, 1]:
 *  a probability or score map (a DB text detector's). A pixel is marked when its value is above
 *  `threshold` (mapThreshold, default 0.3). */
export interface MapTask {
  kind: 'map';
  samples: number;
  layout: 'nchw' | 'nhwc';
  threshold: number;
  /** The mean over samples of |marked in both| / |marked in either| (1 for a sample neither marks). */
  mean_iou: number | null;
  /** The share of all pixels marked (or not) in both. */
  pixel_agreement: number | null;
  /** The share of all pixels each model marks, [original, candidate]. */
  marked: [number | null, number | null];
}

/** [N, A, 1]: a score per anchor. An anchor detects when its score is above `threshold` (0.5),
 *  after a sigmoid (`sigmoid: true`) when the original's scores leave [0, 1] (logits); a sample
 *  detects when its best anchor does. */
export interface AnchorsTask {
  kind: 'anchors';
  samples: number;
  threshold: number;
  sigmoid: boolean;
  /** The share of samples that detect, or do not, in both models. */
  decision_agreement: number | null;
  /** The share of samples whose highest-scoring anchor is the same in both. */
  top_anchor_agreement: number | null;
  /** The share of all anchors' decisions (above the threshold or not) alike. */
  anchor_agreement: number | null;
  /** The share of samples each model detects in, [original, candidate]. */
  detected: [number | null, number | null];
}

/** [N, T, C], C > 1: class scores per step, as a CTC decoder reads them. */
export interface SequenceTask {
  kind: 'sequence';
  samples: number;
  /** The CTC blank's class: 0. */
  blank: number;
  /** The share of samples whose greedy CTC sequence (each step's top class, repeats collapsed,
   *  blanks removed) is the same in both models. */
  sequence_agreement: number | null;
  /** The share of all steps whose top class is the same in both. */
  step_agreement: number | null;
}

/** Every model a check on samples ran, on those same samples: the original (its accuracy with
 *  labels), the converted model (before its repair, when repaired), the repaired one and the FPQ
 *  twin. A column per output with a task figure: `figure` names it (top1_agreement, mean_iou,
 *  decision_agreement, sequence_agreement); each cell its value against the row's `against` (the
 *  twin's: the float model it simulates) and the model's accuracy, null where there is none. */
export interface ModelsTable {
  samples: string;
  outputs: { name: string; figure: 'top1_agreement' | 'mean_iou' | 'decision_agreement' | 'sequence_agreement' }[];
  rows: { model: string; against: string | null; cells: { value: number | null; accuracy: number | null }[] }[];
}

/** What check() resolves to: schema 'onnx-lattice-check/1'. */
export interface CheckReport {
  schema: 'onnx-lattice-check/1';
  runtime: { name: 'onnxruntime-node' | 'onnxruntime-web'; version: string };
  /** The random inputs' seed and range; absent when the inputs were your samples. */
  seed?: number;
  input_range?: [number, number];
  tolerance: { rtol: number; atol: number; scaled?: true };
  /** What both models were fed: the seeded random values ('random', with seed and range) or your
   *  samples (their source, count, batches, labels, dtype conversions and image preprocessing);
   *  `batch_shapes` gives each input's dims in one run. */
  inputs: {
    source: string; samples: number; batch_shapes: Record<string, number[]>;
    seed?: number; range?: [number, number]; batches?: number; labels?: number; conversions?: string[];
    /** After a repair: these samples were held out of its fit (the calibration's last quarter, or
     *  samples given apart from it). */
    held_out?: true;
    /** `colour_to_luma`: how many colour images a one-channel input took as their luma. */
    preprocessing?: Required<ImagePreprocessing> & { layout: 'nchw' | 'nhwc'; channels: 1 | 3; height: number; width: number; colour_to_luma?: number };
  };
  /** Every comparable output within the tolerance (and at least one comparable), both models ran,
   *  and the comparison could have shown a change (never true when inconclusive). */
  pass: boolean;
  /** 'inconclusive' when every output is within the tolerance but the comparison could not have
   *  shown a change: an output the original computes as one value, or a rewritten layer's output
   *  with no elements at the sizes fed (the reasons in `inconclusive`). */
  verdict: 'pass' | 'fail' | 'inconclusive';
  inconclusive?: string[];
  /** A model that failed to load or run (then `failed` says which: 'original' or 'candidate'). */
  error?: string;
  failed?: 'original' | 'candidate';
  outputs: CheckedOutput[];
  /** With minAgreement or minAccuracy: whether the candidate is at or above them, and each figure
   *  (or what could not be judged: random inputs, no task figure, no labels) below them. The Node
   *  CLI exits 6 when `pass` is false. */
  gate?: { min_agreement?: number; min_accuracy?: number; pass: boolean; below: string[] };
  /** layerwise: the tensors compared, in the candidate's topological order. */
  /** `range`: the original tensor's max − min (finite values), so max_abs / range is the change as a share of it. */
  layers?: { tensor: string; node: string; op: string; match_id?: string; shape: number[]; max_abs: number; mean_abs: number; max_rel: number; pass: boolean; range: number }[];
  /** layerwise: the first tensor beyond the tolerance, and the match that computes it. */
  first_failing?: { tensor: string; match_id?: string };
  /** layerwise with `conversion`: per applied rewrite, the change at its output and the largest change
   *  among the tensors it reads (what it inherited), largest first. */
  rewrites?: { match_id: string; pattern: string; tensor: string; max_abs: number; max_rel: number; max_abs_in: number; pass: boolean }[];
  timings_ms: { load: number; run: number };
  /** With simulate: 'fpq' (check() only): the candidate against its FPQ twin. */
  fpq?: FpqCheckReport;
}

export interface ConvertResult {
  /** The input unchanged when nothing was applied; null for a dry run. */
  model: Uint8Array | null;
  /** The data file's bytes, to be saved as `dataFile` beside the model; null when there is none. */
  data: Uint8Array | null;
  report: Report;
  description?: ModelDescription;
  inputDescription?: ModelDescription;
}

export interface FileResult {
  report: Report;
  /** The files written, the model first (then its data file). */
  files: string[];
}

/** Options of convertFile: every conversion option; the data files are read beside the model. */
export type FileConvertOptions = ConvertOptions;

/** createConverter(): every call runs in a worker thread the converter owns (started by the first
 *  call, one call at a time, in order), so the calling thread never waits. */
export interface Converter {
  /** Converts a model held in memory. */
  convert(bytes: Uint8Array | ArrayBuffer, options?: MemoryConvertOptions & CallOptions): Promise<ConvertResult>;
  /** Converts the file `input` into `output` (plus `output + '.data'` when the output keeps its
   *  data in a file), exactly as the CLIs: external data is read from the model's folder (a
   *  location outside it is refused, ERR_ONNX_LATTICE_MODEL), the outputs are written together
   *  or not at all. Paths are file names, whatever they start with ('-' is the file named '-').
   *  Without `output`: `<name>.<target>.onnx` beside the input (never the input itself). */
  convertFile(input: string, output?: string | null, options?: FileConvertOptions & CallOptions): Promise<FileResult>;
  /** The plan and the audit, converting nothing. */
  inspect(bytes: Uint8Array | ArrayBuffer, options?: MemoryConvertOptions & CallOptions): Promise<Report>;
  /** The model's graph, inputs/outputs and card facts, for viewers. */
  describe(bytes: Uint8Array | ArrayBuffer, options?: CallOptions): Promise<ModelDescription>;
  /** Runs `original` and `candidate` (the same graph inputs) in onnxruntime-node with graph
   *  optimisations off, on seeded random inputs, in a worker thread, and compares their outputs.
   *  onnxruntime-node is an optional peer dependency: without it the promise rejects with
   *  ERR_ONNX_LATTICE_CHECK_RUNTIME. Bad options reject with ERR_ONNX_LATTICE_OPTIONS, an unreadable
   *  file with ERR_ONNX_LATTICE_IO (`path`, `errno`); a model that does not load or run is in the report. */
  check(original: CheckModel, candidate: CheckModel, options?: CheckOptions): Promise<CheckReport>;
  /** Refits the converted model's rewritten layers to reproduce the original's tensors on
   *  calibration samples (onnxruntime-node in a worker; the fit in the converter's module).
   *  Resolves to the repaired model's bytes and what was done. See docs/repair.md. */
  repair(original: CheckModel, converted: CheckModel, options?: RepairOptions): Promise<{ model: Uint8Array; report: RepairReport }>;
  /** FPQ's range fit (docs/fixed-point.md) of a model converted with fixedPoint 'fpq': the ranges
   *  measured on `calibration` (default 32 seeded random inputs in [0, 2), said so) in
   *  onnxruntime-node, the rewrite by FpqRangeFitPattern. Resolves to the fitted model's bytes and
   *  the clipped shares before → after. */
  fitRanges(converted: CheckModel, options?: Omit<RepairOptions, 'ridge' | 'maxRows' | 'refitAbove'>): Promise<{ model: Uint8Array; report: RangeFitReport }>;
  /** The FPQ twin of a (converted) model: a copy with every value in Lattice FPQ's fixed point
   *  (FPGA-UG-02228 Table 4.1) in standard ONNX, which any runtime runs. Loads its module on the
   *  first call. Rejects with ERR_ONNX_LATTICE_MODEL for bytes that are no model or an opset below 11. */
  fpqTwin(model: Uint8Array | ArrayBuffer): Promise<{ model: Uint8Array; twin: FpqSimulation }>;
  patterns(): Catalogue;
  /** The hardware table: which operators the accelerator runs, each with its source. */
  hardware(): Hardware;
  /** The option table: every CLI flag and API key, its default, and where each is taken. */
  options(): OptionTable;
  version: string;
  /** Ends the worker once the call in flight is cancelled; calls still waiting reject with
   *  ERR_ONNX_LATTICE_ABORTED. An idle converter never keeps the process alive, so close() is
   *  only needed to free the worker's memory early; a later call starts a new worker. */
  close(): Promise<void>;
}

/** A Conv's or Gemm's activations for a repair's refit of it (core/repair/fit_layer.h): the
 *  repaired model's input to the layer and the original model's tensor it should reproduce. */
export interface LayerFitSpec {
  op: 'Conv' | 'Gemm';
  /** ONNX's attribute names and defaults; 2-D Conv only; Gemm with alpha = beta = 1, transA 0. */
  attributes?: {
    kernel_shape?: number[]; strides?: number[]; pads?: number[]; dilations?: number[]; group?: number;
    auto_pad?: 'NOTSET' | 'VALID' | 'SAME_UPPER' | 'SAME_LOWER'; transA?: 0 | 1 | boolean; transB?: 0 | 1 | boolean;
    alpha?: number; beta?: number;
  };
  /** Conv [M, C/group, kh, kw]; Gemm [K, M], or [M, K] with transB. */
  weightShape: number[];
  /** Conv [N, C, H, W], Gemm [N, K] (fitBytes reads only the dims). */
  input: { data?: Float32Array; dims: number[] };
  /** Conv [N, M, Ho, Wo], Gemm [N, M]. */
  target: { data?: Float32Array; dims: number[] };
  /** The layer's weights now (a bias absent is zeros): the fit then reports residualBefore. */
  current?: { weights: Float32Array; bias?: Float32Array };
  /** lambda = ridge * mean(diag(Cxx)); default 1e-3. */
  ridge?: number;
  /** Output positions fitted per group; more are sampled (seeded). Default 16384. */
  maxRows?: number;
  seed?: number;
  /** The layer's only reader is a Relu: fitted, then fitted again on the same rows with each target
   *  at or below zero that the first fit also puts there replaced by the first fit's value (a Relu
   *  lets neither through); the result is the second fit's. Default false. */
  rectified?: boolean;
  /** Per weight, in the node's layout, the largest magnitude the fit may give it (Infinity: free):
   *  the fit is then the best one within those bounds (under FPQ, fpqWeightBounds' bounds). */
  weightBounds?: Float32Array;
  /** Keep this fit's sums of the features (one group's) in the module until the next fit. Default false. */
  keep?: boolean;
  /** This fit is of the same input and rows as the one before, which kept its sums: they are
   *  reused, and only the targets' are made (a fit of other dims or rows starts from scratch). */
  again?: boolean;
}

export interface LayerFit {
  weights: Float32Array;
  bias: Float32Array;
  /** Positions fitted per group. */
  rows: number;
  /** ||output - target|| / ||target - its mean||, with the current weights and with the new ones. */
  residualBefore?: number;
  residualAfter: number;
}

/** createSyncConverter(): the same calls, run on the calling thread, returning their results (a
 *  call blocks the thread for as long as it works). No `signal`; onProgress is called during the call. */
export interface SyncConverter {
  convert(bytes: Uint8Array | ArrayBuffer, options?: MemoryConvertOptions & Pick<CallOptions, 'onProgress'>): ConvertResult;
  convertFile(input: string, output?: string | null, options?: FileConvertOptions & Pick<CallOptions, 'onProgress'>): FileResult;
  inspect(bytes: Uint8Array | ArrayBuffer, options?: MemoryConvertOptions & Pick<CallOptions, 'onProgress'>): Report;
  describe(bytes: Uint8Array | ArrayBuffer, options?: Pick<CallOptions, 'onProgress'>): ModelDescription;
  /** As Converter.check: asynchronous here too (it runs in a worker thread of its own). */
  check(original: CheckModel, candidate: CheckModel, options?: CheckOptions): Promise<CheckReport>;
  /** As Converter.repair: asynchronous here too. */
  repair(original: CheckModel, converted: CheckModel, options?: RepairOptions): Promise<{ model: Uint8Array; report: RepairReport }>;
  /** As Converter.fitRanges: asynchronous here too. */
  fitRanges(converted: CheckModel, options?: Omit<RepairOptions, 'ridge' | 'maxRows' | 'refitAbove'>): Promise<{ model: Uint8Array; report: RangeFitReport }>;
  /** FPQ's range fit (docs/fixed-point.md) of a model converted with fixedPoint 'fpq': the ranges
   *  measured on `calibration` (default 32 seeded random inputs in [0, 2), said so) in
   *  onnxruntime-node, the rewrite by FpqRangeFitPattern. Resolves to the fitted model's bytes and
   *  the clipped shares before → after. */
  fitRanges(converted: CheckModel, options?: Omit<RepairOptions, 'ridge' | 'maxRows' | 'refitAbove'>): Promise<{ model: Uint8Array; report: RangeFitReport }>;
  /** The FPQ twin of a (converted) model: a copy with every value in Lattice FPQ's fixed point
   *  (FPGA-UG-02228 Table 4.1) in standard ONNX, which any runtime runs. Loads its module on the
   *  first call. Rejects with ERR_ONNX_LATTICE_MODEL for bytes that are no model or an opset below 11. */
  fpqTwin(model: Uint8Array | ArrayBuffer): Promise<{ model: Uint8Array; twin: FpqSimulation }>;
  patterns(): Catalogue;
  hardware(): Hardware;
  options(): OptionTable;
  /** Repair's core: one layer's ridge refit from its activations (before a Relu, `rectified`: two
   *  fits on the same rows in one call). The module keeps nothing between calls. */
  fitLayer(spec: LayerFitSpec): LayerFit;
  /** The WebAssembly heap bytes fitLayer needs for such a spec (dims only). */
  fitBytes(spec: LayerFitSpec): number;
  /** The repair's session (core/repair/session.h): the original and the converted model held in
   *  the module until `close`. Rejects with ERR_ONNX_LATTICE_MODEL for bytes that are no model. */
  openRepairSession(original: Uint8Array | ArrayBuffer, converted: Uint8Array | ArrayBuffer): { session: number };
  /** A call of a repair session, `which` being 'original' or 'converted':
   *  `start(which, inputs, keep)` begins that model's runs (`inputs` held from the start, `keep` the
   *  names that will be asked for); `next(which, held, commit, peek)` gives the part to run now
   *  (`held`: {name: {type, dims}} of every tensor held), with the tensors to hold, those run
   *  aside, and those to let go; `adopt(which, held)` takes what the last step ran aside as final;
   *  `release(which, name)`; `setWeights(layers)` writes new weights and biases into the converted
   *  model (`throughBatchNorm`: the values are what the node and the BatchNormalization that alone
   *  reads its output compute as one; the node takes them with that map taken out); `bytes()` the
   *  converted model as it is; `close()`; `plan(matches, sizes)` which layers the repair refits and
   *  what each reproduces, and which it leaves and why (core/repair/plan.h), both models described
   *  at `sizes` (one sample's dims of each input) when one of their inputs is not fixed; `matches`:
   *  the conversion report's, null without a report (every layer then counts as rewritten). */
  repairSession(session: number, method: 'plan',
                args: [Pick<Match, 'id' | 'applied' | 'numerically_equivalent' | 'new_nodes'>[] | null, Record<string, number[]>]): RepairPlan;
  repairSession(session: number, method: 'start', args: [RepairModel, string[], string[]]): Record<string, never>;
  repairSession(session: number, method: 'next', args: [RepairModel, Record<string, { type: string; dims: number[] }>, string[], string[]]): RepairPart;
  repairSession(session: number, method: 'adopt', args: [RepairModel, string[]]): { drop: string[] };
  repairSession(session: number, method: 'release', args: [RepairModel, string]): Record<string, never>;
  repairSession(session: number, method: 'setWeights',
                args: [{ node: string; weights: Float32Array; bias: Float32Array; throughBatchNorm?: boolean }[]]): Record<string, never>;
  repairSession(session: number, method: 'bytes', args?: []): Uint8Array;
  repairSession(session: number, method: 'close', args?: []): Record<string, never>;
  /** Under FPQ, how large the new weights of the Conv / Gemm labelled `node` may be for FPQ's range
   *  fit to scale its input into range: `tensors`, the values whose ranges decide it; given their
   *  per-channel ranges and MSE-optimal clips (as the range fit measures them), `bounds` per weight.
   *  A layer with a BatchNormalization of its own may have each row as much larger as that
   *  BatchNormalization's scale can take back within FPQ's signed 5.10; `throughBatchNorm`: the
   *  bounds of the layer and its BatchNormalization fitted as one (its weights times the scale).
   *  No `bounds`: the layer reads nothing the range fit scales. */
  fpqWeightBounds(model: Uint8Array | ArrayBuffer, node: string, ranges: Record<string, number[]>,
                  clips: Record<string, number[]>, options?: { throughBatchNorm?: boolean }): { tensors: string[]; bounds?: Float32Array };
  version: string;
}

/** The repair session's two models. */
export type RepairModel = 'original' | 'converted';

/** A Conv or Gemm of the plan (repairSession 'plan'): its node's label, op and input, whether a
 *  rewrite changed it (its match is not numerically equivalent), and the match that made it. */
export interface RepairPlanEntry {
  node: string;
  op: 'Conv' | 'Gemm';
  input: string;
  rewritten: boolean;
  match_id?: string;
}

/** Which layers a repair refits, in the converted model's order, and what each reproduces. */
export interface RepairPlan {
  layers: (RepairPlanEntry & {
    /** The original's tensor it reproduces. */
    target: string;
    /** The nodes between it and `target` ('BatchNormalization → Relu → MaxPool'). */
    through?: string;
    /** The original's grid is [fh, fw] times the layer's (past a pool the conversion made coarser). */
    pooled?: [number, number];
    /** Through the MaxPool a stride-2 rewrite put after it: the pool's kernel and strides, the
     *  layer's output shape, and the tensor the fit reproduces (its own, or its BatchNormalization's). */
    unpooled?: { kernel: number[]; strides: number[]; fine: number[]; tensor: string };
    /** A Relu alone reads it (or its BatchNormalization). */
    rectified?: true;
    /** Fitted with the BatchNormalization that alone reads it, as one. */
    throughBatchNorm?: true;
    attributes: Record<string, unknown>;
    weightShape: number[];
    hasBias: boolean;
  })[];
  /** Layers with nothing of the original's to fit them to, with the reason. */
  left: (RepairPlanEntry & { reason: string })[];
  /** Per sample (4 bytes an element, an unknown dimension as 1): the most bytes of activations each
   *  model has in flight at once, and each layer's input and target in the converted model and
   *  its target in the original (in the order of `layers`). */
  bytesPerSample: { original: number; converted: number; layers: { input: number; target: number; originalTarget: number }[] };
}

/** The part of a model a repair step runs (repairSession 'next'): no `bytes` when everything asked
 *  is held already. */
export interface RepairPart {
  bytes?: Uint8Array;
  /** The held tensors it is fed. */
  inputs: string[];
  /** The model's nodes it runs, by index. */
  nodes: number[];
  outputs: string[];
  /** Among inputs and outputs, those that depend on the samples (fed a batch at a time). */
  perSample: string[];
  /** Outputs to hold from now on. */
  hold: string[];
  /** Outputs computed aside: held only after 'adopt'. */
  aside: string[];
  /** Held tensors nothing will read any more. */
  drop: string[];
}

/** One option as a CLI command or an API call takes it (core/option_table.h). A flag worded
 *  differently for some commands has a row per wording. */
export interface OptionInfo {
  /** '--fixed-point'; '' for the API's alone. */
  flag: string;
  /** '-o'; usually ''. */
  alias: string;
  /** The value's placeholder in --help ('fpq|lsq'); '' for a switch. */
  value: string;
  /** The Node API's key ('fixedPoint', 'preprocessing.resize'); '' when there is none. */
  key: string;
  /** The key's type as this file declares it. */
  type: string;
  /** As --help and the docs say it; '' for none, or a default the `derived` table gives. */
  default: string;
  /** The values a choice takes; empty: any. */
  allowed: string[];
  help: string;
  commands: ('convert' | 'inspect' | 'check' | 'patterns' | 'hardware' | 'repair')[];
  shells: ('native-cli' | 'node-cli' | 'convert' | 'convertFile' | 'check' | 'repair' | 'page')[];
  /** Where the report records it ('options.fixed_point'); '' when it does not. */
  report: string;
}

export interface OptionTable {
  options: OptionInfo[];
  /** Defaults that follow from other options: whether each fixed-point scheme ('none' for none)
   *  folds BatchNorm unless told. */
  derived: { fold_batch_norm: Record<'none' | 'fpq' | 'lsq', boolean> };
}

export function createConverter(): Promise<Converter>;
export function createSyncConverter(): Promise<SyncConverter>;
