// The payload of each message between the page and its workers, by channel and kind: the types of
// messages.js's table, for an editor's checks (tests/node/page_messages.test.mjs holds the two to
// the same channels and kinds). Not part of the site: the page never loads it.

type Files = { [location: string]: Blob };
type Port = { port: MessagePort };
/** A failure, in words. */
interface Failure { message: string }
interface Progress { stage: string; fraction?: number }
/** A model for the check: a File, a Blob or bytes, its data files, its graph description. */
interface CheckModel { model: File | Blob | Uint8Array; files: Files; description: object }

/** The page (app.js, check-run.js) to the conversion worker (worker.js). */
export interface ToConverter {
  /** Load the module ahead of time. */
  init: {};
  /** A model picked (`name` without .onnx; `files`: its data files by their `location`s), converted. */
  load: { model: File | Uint8Array; name: string; files: Files; options: object };
  /** The picked model converted again, with these options. */
  convert: { options: object };
  /** The check's fold-only twin of the picked model. */
  twin: { options: object };
  /** Serve ToPort on `port` (repair-server.js); `repair`: one is to run, so the fit's module loads now. */
  repairPort: { port: MessagePort; repair: boolean };
}

/** The conversion worker to the page. */
export interface FromConverter {
  /** The catalogue's targets, default first; by scheme, whether it folds BatchNorm unless told. */
  ready: { targets: string[]; foldDefaults: { [scheme: string]: boolean } };
  /** A stage of the work under way, as the core reports it. */
  progress: Progress;
  /** As soon as the report is known: the downloads' base name, the models' graph descriptions. */
  result: { report: object; name: string; input: object; output: object; ms: number };
  /** The downloads, once made (`data` null for one file); `heapBytes`: the conversion's peak. */
  output: { model: Blob; data: Blob | null; heapBytes: number };
  error: Failure;
  /** The fold-only twin, or why it could not be made. */
  twin: { model: Blob; data: Blob | null; description: object; report: object } | Failure;
}

/** The page (check-run.js) to the check's worker (check-worker.js): a check, a repair's with `repair`. */
export interface ToCheck {
  check: {
    original: CheckModel; candidate: CheckModel; twin: CheckModel; conversion: object; twinConversion: object;
    options: { layerwise: boolean; inputShapes: object; inputRange: number[] };
    data?: { files: File[]; preprocessing: object } | null; repair?: Port; fpq?: Port; rangeFit?: Port;
  };
}

/** The check's worker to the page. */
export interface FromCheck {
  progress: Progress;
  /** The check; after a repair its report and the repaired model's bytes; after a range fit its
   * report, the fitted model's bytes and fit analysis, or why the ranges stay the estimate. */
  result: {
    check: object; repair?: object; repaired?: Uint8Array; rangeFit?: object; fitted?: Uint8Array;
    fixedPoint?: object; rangeEstimate?: string; fpqTwin?: Uint8Array;
  };
  error: Failure;
}

/** The graph (graph.js) to its layout worker (layout-worker.js): edges between the nodes' indices. */
export interface ToLayout {
  layout: { id: number; nodes: { width: number; height: number }[]; edges: [number, number][] };
}

/** The layout worker to the graph: the nodes' centres, each edge's polyline [x, y, x, y, …]. */
export interface FromLayout {
  laidOut: { id: number; nodes: { x: number; y: number }[]; edges: number[][]; width: number; height: number; ms: number }
    | { id: number; error: string };
}

/** The check's worker to the converter's calls (repair-server.js, in the conversion worker). */
export interface ToPort {
  fitLayer: Call;
  openRepairSession: Call;
  repairSession: Call;
  fpqWeightBounds: Call;
  fpqTwin: Call;
  settleFixedPoint: Call;
  describe: Call;
}
interface Call { id: number; args: unknown[] }

/** The converter's answers, by the call's id. */
export interface FromPort {
  answer: { id: number; result: unknown } | { id: number; error: string };
}

/** A channel: a constructor a kind, which names it too. */
export type Channel<T> = {
  readonly [K in keyof T]: ((payload: T[K]) => T[K] & { type: K }) & { readonly type: K };
};

export interface PageMessages {
  toConverter: Channel<ToConverter>;
  fromConverter: Channel<FromConverter>;
  toCheck: Channel<ToCheck>;
  fromCheck: Channel<FromCheck>;
  toLayout: Channel<ToLayout>;
  fromLayout: Channel<FromLayout>;
  toPort: Channel<ToPort>;
  fromPort: Channel<FromPort>;
  /** Calls the handler of the message's kind; a kind the channel has not, or no handler for, goes
   * to the console and to `unknown`, which shows it. */
  receive<T>(channel: Channel<T>, data: unknown,
    handlers: { [K in keyof T]?: (message: T[K] & { type: K }) => unknown }, unknown: (said: string) => unknown): unknown;
}
