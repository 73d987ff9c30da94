export type Target = 'lattice' | 'lattice-advanced' | 'none';

export interface ConvertOptions {
  /** Hardware target; default 'lattice'. */
  target?: Target;
  /** Lattice sensAI's fixed-point rules (FPGA-UG-02228 section 4), added to any target: 'fpq'
   *  (fixed steps: BatchNorm stays a layer, conv biases move into it, weights checked against
   *  signed 0.7 with scale 0.5) or 'lsq' (learned steps: structural notes). Default none. */
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
    /** Only when a scheme was asked for. */
    fixed_point?: 'fpq' | 'lsq';
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
  /** Only for a quantized model (QuantizeLinear/DequantizeLinear, QLinearConv, ConvInteger, ...):
   *  those nodes are described here instead of in `unsupported`. */
  quantization?: Quantization;
  /** Only with fixedPoint: the fit of the converted model in the scheme. */
  fixed_point?: FixedPointFit;
  timings_ms: { load: number; convert: number; save: number };
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

/** What every Error the converter throws carries in `code`:
 *  - ERR_ONNX_LATTICE_OPTIONS: an option is unknown, mistyped or names nothing (the model is fine);
 *  - ERR_ONNX_LATTICE_MODEL: the model was rejected (the message names the node, tensor or field);
 *  - ERR_ONNX_LATTICE_MEMORY: the model does not fit in the WebAssembly heap; this converter is
 *    not used again (create a new one). */
export type ErrorCode = 'ERR_ONNX_LATTICE_OPTIONS' | 'ERR_ONNX_LATTICE_MODEL' | 'ERR_ONNX_LATTICE_MEMORY';

export interface ConverterError extends Error {
  code: ErrorCode;
}

export interface Hardware {
  follows: string;
  targets: { name: Target; conv_kernels: string }[];
  operators: { op: string; runs: boolean; condition: string; source: string; note: string }[];
  otherwise: string;
  /** The sensAI ML engine's fixed-point schemes per layer ('' where the source lists nothing). */
  fixed_point: { source: string; operators: { op: string; layer: string; fpq: string; lsq: string }[] };
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
  patterns(): Catalogue;
  /** The hardware table: which operators the accelerator runs, each with its source. */
  hardware(): Hardware;
  version: string;
}

export function createConverter(): Promise<Converter>;
