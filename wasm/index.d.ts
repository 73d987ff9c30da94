export type Target = 'lattice' | 'lattice-advanced' | 'none';

export interface ConvertOptions {
  /** Hardware target; default 'lattice'. */
  target?: Target;
  /** Fold inference BatchNorm into the preceding Conv/ConvTranspose/Gemm; default true. */
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
  /** Also return `description` and `inputDescription`: the converted model and the input as
   *  describe() gives them, with the report's labels (the page's graph view). Default false. */
  describe?: boolean;
  /** Pinned input shapes, e.g. {input: [1, 3, 640, 640]}: used for the analysis and written into
   *  the output's graph inputs. A pin contradicting a fixed dimension of the model is an error. */
  inputShapes?: Record<string, number[]>;
  /** Called as each stage of the conversion starts (parse, validate, each pass, audit, save, done);
   *  `fraction` (0..1) is how much of the conversion is done. */
  onProgress?: (event: { stage: string; fraction: number }) => void;
}

/** The data files of an external-data model, by `location`: a function, a Map or an object. */
export type Resolver =
  | ((location: string) => Uint8Array | ArrayBuffer | null | undefined)
  | Map<string, Uint8Array | ArrayBuffer>
  | Record<string, Uint8Array | ArrayBuffer>;

export interface MemoryConvertOptions extends ConvertOptions {
  /** Reads the input's external data; without it an external-data model is refused. */
  resolver?: Resolver;
  /** The `location` written into the converted model for its data file; default 'model.onnx.data'. */
  dataFile?: string;
}

/** A tensor a node reads or writes; `shape` null when not even the rank is known. */
export interface TensorInfo { name: string; shape?: (number | string)[] | null; constant?: boolean }

/** What describe() returns: the graph for a viewer, nodes labelled as the report labels them. */
export interface ModelDescription {
  bytes: number;
  ir_version: number;
  opset: number;
  producer: string;
  /** Elements in all initializers. */
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
}

export interface Report {
  schema: 'onnx-lattice-report/1';
  tool: { name: string; version: string };
  target: Target;
  options: {
    target: Target; fold_batch_norm: boolean; only: string[]; skip: string[];
    skip_matches: string[]; dry_run: boolean; data_layout: 'keep' | 'external' | 'inline';
  };
  input: ModelStats;
  output: ModelStats;
  /** The pinned input shapes (inputShapes / --input-shape); {} when none. */
  input_shapes: Record<string, number[]>;
  matches: Match[];
  warnings: { match_id: string; pattern: string; node: string; message: string }[];
  /** One entry per node. `group`: the activation idiom it is part of ('SiLU', 'HardSwish', ...)
   *  or its op type; `unit`: for an idiom's nodes, all the nodes of that one activation. */
  unsupported: { node: string; op_type: string; reason: string; group: string; unit?: string[] }[];
  timings_ms: { load: number; convert: number; save: number };
  /** `convert --check` (Node CLI) and the page's Check: the converted model and the fold-only twin
   *  (the same folds, no conversion pattern), each against the input. */
  check?: { converted: CheckReport; fold_only: CheckReport };
}

export interface PatternInfo {
  name: string;
  phase: 'conversion' | 'fusion';
  numerically_equivalent: boolean;
  targets: Target[];
  matches: string;
  emits: string;
}

export interface Catalogue {
  patterns: PatternInfo[];
  targets: { name: Target; description: string; conversion: string[] }[];
}

/** What every Error the converter throws carries in `code`:
 *  - ERR_ONNX_LATTICE_OPTIONS: an option is unknown, mistyped or names nothing (the model is fine);
 *  - ERR_ONNX_LATTICE_MODEL: the model was rejected (the message names the node, tensor or field);
 *  - ERR_ONNX_LATTICE_MEMORY: the model does not fit in the WebAssembly heap; this converter is
 *    not used again (create a new one);
 *  - ERR_ONNX_LATTICE_IO: check() could not read a file (`path`, `errno`);
 *  - ERR_ONNX_LATTICE_CHECK_RUNTIME: check() needs onnxruntime-node, which is not installed;
 *  - ERR_ONNX_LATTICE_CHECK: the check's worker thread stopped unexpectedly. */
export type ErrorCode = 'ERR_ONNX_LATTICE_OPTIONS' | 'ERR_ONNX_LATTICE_MODEL' | 'ERR_ONNX_LATTICE_MEMORY'
  | 'ERR_ONNX_LATTICE_IO' | 'ERR_ONNX_LATTICE_CHECK_RUNTIME' | 'ERR_ONNX_LATTICE_CHECK';

export interface ConverterError extends Error {
  code: ErrorCode;
}

export interface Hardware {
  follows: string;
  targets: { name: Target; conv_kernels: string }[];
  operators: { op: string; runs: boolean; condition: string; source: string; note: string }[];
  otherwise: string;
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
  /** Dims for dynamic dimensions, e.g. {images: [1, 3, 640, 640]}; an unpinned one is an error naming it. */
  inputShapes?: Record<string, number[]>;
  /** Values of inputs, flat, e.g. integer ids; integer and bool inputs are zeros unless given. */
  inputValues?: Record<string, ArrayLike<number | bigint>>;
  /** Also compare every tensor both models compute under the same name and shape. */
  layerwise?: boolean;
  /** The conversion's report: layers and rewrites then name the match behind each tensor. */
  conversion?: Report;
  onProgress?: (event: { stage: string; fraction: number }) => void;
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
  pass: boolean;
  stats_original?: { min: number | null; max: number | null; mean: number | null; std: number | null };
  stats_candidate?: { min: number | null; max: number | null; mean: number | null; std: number | null };
}

/** What check() resolves to: schema 'onnx-lattice-check/1'. */
export interface CheckReport {
  schema: 'onnx-lattice-check/1';
  runtime: { name: 'onnxruntime-node' | 'onnxruntime-web'; version: string };
  seed: number;
  input_range: [number, number];
  tolerance: { rtol: number; atol: number };
  /** Every comparable output within the tolerance (and at least one comparable), and both models ran. */
  pass: boolean;
  /** A model that failed to load or run (then `failed` says which: 'original' or 'candidate'). */
  error?: string;
  failed?: 'original' | 'candidate';
  outputs: CheckedOutput[];
  /** layerwise: the tensors compared, in the candidate's topological order. */
  layers?: { tensor: string; node: string; op: string; match_id?: string; shape: number[]; max_abs: number; mean_abs: number; max_rel: number; pass: boolean }[];
  /** layerwise: the first tensor beyond the tolerance, and the match that computes it. */
  first_failing?: { tensor: string; match_id?: string };
  /** layerwise with `conversion`: per applied rewrite, the change at its output and the largest change
   *  among the tensors it reads (what it inherited), largest first. */
  rewrites?: { match_id: string; pattern: string; tensor: string; max_abs: number; max_rel: number; max_abs_in: number; pass: boolean }[];
  timings_ms: { load: number; run: number };
}

export interface Converter {
  /** Converts a model. Throws a ConverterError naming what is wrong.
   *  `model` is the input unchanged when nothing was applied, and null for a dry run. */
  convert(bytes: Uint8Array | ArrayBuffer, options?: MemoryConvertOptions):
    { model: Uint8Array | null; data: Uint8Array | null; report: Report; description?: ModelDescription; inputDescription?: ModelDescription };
  /** Converts the file `inPath` into `outPath` (plus `outPath + '.data'` when the output keeps its
   *  data in a file), exactly as the CLIs: external data is read from the model's folder (a
   *  location outside it is refused, ERR_ONNX_LATTICE_MODEL), and the outputs are written
   *  together or not at all. */
  convertFile(inPath: string, outPath: string, options?: Omit<ConvertOptions, 'onProgress' | 'ignoreUnknownSkips' | 'describe'>): { report: Report };
  /** The plan and the audit, converting nothing. */
  inspect(bytes: Uint8Array | ArrayBuffer, options?: MemoryConvertOptions): Report;
  /** The model's graph, inputs/outputs and card facts, for viewers. Throws for a model it cannot parse. */
  describe(bytes: Uint8Array | ArrayBuffer): ModelDescription;
  /** Runs `original` and `candidate` (the same graph inputs) in onnxruntime-node with graph
   *  optimisations off, on seeded random inputs, in a worker thread, and compares their outputs.
   *  onnxruntime-node is an optional peer dependency: without it the promise rejects with
   *  ERR_ONNX_LATTICE_CHECK_RUNTIME. Bad options reject with ERR_ONNX_LATTICE_OPTIONS, an unreadable
   *  file with ERR_ONNX_LATTICE_IO (`path`, `errno`); a model that does not load or run is in the report. */
  check(original: CheckModel, candidate: CheckModel, options?: CheckOptions): Promise<CheckReport>;
  patterns(): Catalogue;
  /** The hardware table: which operators the accelerator runs, each with its source. */
  hardware(): Hardware;
  version: string;
}

export function createConverter(): Promise<Converter>;
