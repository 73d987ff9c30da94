// The page: picks a model, hands it to the conversion worker, and shows the result — model card,
// graph, plan, warnings, audit. The page's defaults are the CLI's (target lattice, BatchNorm
// folding on), so its download equals `onnx-lattice convert`.
import { drawRewrite } from './draw.js';
import { GraphView } from './graph.js';
import './messages.js';
import { breakable, renderAudit, renderCard, renderProps, showButton, weightsText } from './panels.js';

const { toConverter, fromConverter, receive } = self.pageMessages;
// The page's state, in one object: read and changed here and by check-run.js.
const state = {
  worker: null,  // the conversion worker; null once it stopped, started again by the next send
  foldDefaults: null,  // by scheme, whether it folds BatchNorm unless told (the worker's `ready`)
  foldTouched: false,  // the fold box changed since the scheme was chosen: a late `ready` leaves it
  picked: false,  // a model was chosen
  working: false,  // the worker is converting something the page sent
  busySince: null, ticker: null, focusAfter: null,  // while busy: since when, the time's timer, the control to focus after
  summaryHeld: false,  // the status's first line is a conversion's result
  // The picked model, its data files by name and the skips chosen for it by match id.
  fileName: '', modelName: 'model', inputModel: null, inputFiles: {}, skipped: new Set(),
  // The result: {report, input, output, byName: {input, converted}, files (promise of {model, data}),
  // made (those, once made), stem, name (the download's), check, …}.
  current: null,
  objectUrls: [], drawing: null, selected: null,  // selected: {name, view} shown in the properties
  picker: null, pickerLoading: null, compare: null, fixedPointPanel: null,  // modules loaded on first use
  // Another model: what was chosen for the one before goes.
  pick(fileName, model, dataFiles) {
    Object.assign(this, {
      fileName, modelName: fileName.replace(/\.onnx$/i, '') || 'model', inputModel: model,
      inputFiles: Object.fromEntries(dataFiles.map((f) => [f.name, f])), skipped: new Set(),
    });
  },
  // Another result: the downloads and the selection of the one before go.
  show(current) {
    for (const url of this.objectUrls) URL.revokeObjectURL(url);
    Object.assign(this, { current, objectUrls: [], selected: null });
  },
};

const MAX_MODEL_BYTES = 2 ** 31 - 1;  // protobuf's limit for a single-file ONNX model
const $ = (id) => document.getElementById(id);
const ui = {
  drop: $('file-input').closest('label'), file: $('file-input'), sample: $('sample-model'), pickNotice: $('pick-notice'),
  target: $('target'), fixedPoint: $('fixed-point'), snapWeights: $('snap-weights'), fold: $('fold-bn'), layout: $('layout'), convert: $('convert'), summary: $('status-summary'), event: $('status-event'), error: $('error'),
  progressBox: $('progress-box'), progress: $('progress'), stage: $('progress-stage'), elapsed: $('progress-elapsed'),
  quantization: $('quantization'), fixedPointSummary: $('fixed-point-summary'), findings: $('fixed-point-findings'), results: $('results'), heading: $('results-heading'), card: $('model-card'), plan: $('plan'), stale: $('stale-skips'),
  warnings: $('warnings'), audit: $('audit'), counts: document.querySelector('#op-counts tbody'),
  download: $('download'), downloadData: $('download-data'), downloadReport: $('download-report'), preparing: $('downloads-preparing'),
  version: $('version'),
  graphSwitch: document.querySelector('[data-testid="graph-switch"]'), collapse: $('graph-collapse'), legend: $('legend'), props: $('node-props'), graphHeading: $('graph-heading'),
  check: $('check'), repair: $('repair'), checkLayerwise: $('check-layerwise'), checkResult: $('check-result'),
};

// The check's samples panel sits in the result, so its script loads with the first result, off
// the first load (offline before then it stays inert, as the check's runtime cannot load either).
// The check asks it through `samples`: no samples and the chosen random range until it is there.
const samples = {
  samples: () => state.picker?.samples() ?? null,
  inputRange: () => (state.picker ? state.picker.inputRange() : $('input-range').value.split(',').map(Number)),
};
function loadPicker() {
  state.pickerLoading ??= import('./data-picker.js').then(({ dataPicker }) => {
    state.picker = dataPicker({
      input: $('data-input'), folder: $('data-folder'), drop: document.querySelector('[data-testid="data-drop"]'), chosen: $('data-chosen'),
      clear: $('data-clear'), imageOptions: document.querySelector('[data-testid="image-options"]'),
      resize: $('image-resize'), scale: $('image-scale'), order: $('image-order'), range: $('input-range'),
      model: () => state.current?.input,
    });
  }, () => { state.pickerLoading = null; });
  return state.pickerLoading;
}
const graph = new GraphView({
  host: $('graph'), legend: ui.legend, zoomIn: $('zoom-in'), zoomOut: $('zoom-out'), fit: $('zoom-fit'),
}, (name) => selectNode(name, { fromGraph: true }));
// A collapsed box opened in either pane: both drawn again with their marks, the selection kept.
async function redraw() {
  if (await drawGraph() && state.selected) selectNode(state.selected.name, { view: state.selected.view });
}
graph.onRedraw = redraw;
graph.setCollapse(ui.collapse.checked);  // as the browser may have restored it

// Whether the chosen scheme folds BatchNorm unless told, from the worker's `ready` (core/options.h,
// default_fold_batch_norm); until then the box keeps what it shows.
const foldDefault = () => state.foldDefaults[ui.fixedPoint.value || 'none'];

function startWorker() {
  state.worker = new Worker('worker.js');
  // The worker's own start-up ("loading the converter", "ready") speaks only while no model has
  // been picked: a picked model's status (a refusal before reading, say) must not be overwritten
  // by a start-up message that arrives late on a busy machine.
  const handlers = {
    ready: (data) => {
      document.body.dataset.converter = 'ready';
      if (!state.foldDefaults) {
        state.foldDefaults = data.foldDefaults;
        if (!state.foldTouched) ui.fold.checked = foldDefault();
      }
      if (!ui.target.length) for (const name of data.targets) ui.target.add(new Option(name));
      if (!state.picked) setSummary('Ready: choose a model, or try the sample.');
    },
    progress: (data) => { if (state.working || !state.picked) showProgress(data.stage, data.fraction); },
    result: showResult,
    output: offerOutput,
    error: (data) => {
      state.current?.files.reject(new Error(data.message));
      showError(data.message);
    },
    twin: () => {},  // the check's, which listens for it itself (check-run.js)
  };
  state.worker.onmessage = ({ data }) => receive(fromConverter, data, handlers, (said) => showError(`the converter sent an ${said}`));
  state.worker.onerror = (e) => {
    e.preventDefault();
    showError(`the converter stopped unexpectedly (${e.message || 'worker error'}); reload the page to try again`);
    state.worker.terminate();
    state.worker = null;
  };
}

// The status's first line is the conversion's ("Converting…", "Done in … 8 warnings"); what
// follows a result (a check, a repair) takes a second line, so it never hides the result's.
function setSummary(text, held = false) {
  ui.summary.textContent = text;
  ui.event.textContent = '';
  ui.event.hidden = true;
  state.summaryHeld = held;
}
function setStatus(text) {
  if (!state.summaryHeld) return setSummary(text);
  ui.event.textContent = text;
  ui.event.hidden = false;
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

function showProgress(stage, fraction) {
  ui.stage.textContent = stage;
  if (fraction !== undefined) ui.progress.setAttribute('value', String(Math.min(1, Math.max(0, fraction))));
}

// While busy the controls are disabled; focus on one of them would fall to <body>, so it moves to
// the progress box, and on to the result heading (or the error) when the work ends.
function busy(on) {
  state.working = on;
  const controls = [ui.sample, ui.convert, ui.file, ui.target, ui.fixedPoint, ui.snapWeights, ui.fold, ui.layout, ui.check, ui.repair, ui.checkLayerwise];
  if (on && state.ticker === null) {
    state.busySince ??= performance.now();
    ui.progressBox.hidden = false;
    ui.progress.setAttribute('value', '0');
    const active = document.activeElement;
    state.focusAfter = [ui.target, ui.fixedPoint, ui.snapWeights, ui.fold, ui.layout].includes(active) ? active : null;
    if (controls.includes(active) || active === document.body) ui.progressBox.focus();
    state.ticker = setInterval(() => { ui.elapsed.textContent = seconds(performance.now() - state.busySince); }, 200);
  } else if (!on) {
    clearInterval(state.ticker);
    state.ticker = null;
    state.busySince = null;
    ui.progressBox.hidden = true;
    ui.elapsed.textContent = '';
  }
  for (const control of controls) control.disabled = on;
}

function showError(message) {
  busy(false);
  ui.convert.disabled = true;
  ui.results.hidden = true;
  ui.error.hidden = false;
  ui.error.textContent = `This model could not be converted: ${message}`;
  setSummary('Failed.');
  if (!ui.error.contains(document.activeElement)) ui.error.focus();
}

function options() {
  const scheme = ui.fixedPoint.value ? { fixedPoint: ui.fixedPoint.value } : {};
  return {
    target: ui.target.value, ...scheme, snapWeights: ui.snapWeights.value, foldBatchNorm: ui.fold.checked,
    dataLayout: ui.layout.value, skipMatches: [...state.skipped],
  };
}

function send(message) {
  if (!state.worker) startWorker();
  setSummary(`Converting ${state.modelName}…`);
  ui.error.hidden = true;
  busy(true);
  state.worker.postMessage(message);
}

// `model`: a File, or the sample's bytes; `dataFiles`: the data files of an external-data model,
// dropped or picked with it. The worker reads them where they lie: nothing is read here. A file
// whose first bytes say it is something else (an image, an archive, a Git LFS pointer) is named
// by the converter, as in every shell (core/onnx/file_kind.h); only a data file picked alone is
// named here, by its name, which the converter never sees.
function load(name, model, dataFiles = []) {
  state.picked = true;
  state.busySince = performance.now();  // the status's time runs from the pick
  setSummary(`Reading ${name}…`);  // at once: the previous result's "Done" is no longer this one's
  if ((model.size ?? model.length) > MAX_MODEL_BYTES) {
    showError(`the file is ${(model.size / 2 ** 30).toFixed(2)} GiB; a single-file ONNX model is limited to 2 GiB`);
    return;
  }
  if (/\.data$/i.test(name)) {
    return showError(`${name} holds a model's external tensor data, not the model: pick the model (.onnx) and it together`);
  }
  state.pick(name, model, dataFiles);
  showProgress(`reading ${name}`, 0);
  send(toConverter.load({ model, name: state.modelName, files: state.inputFiles, options: options() }));
}

// One model at a time: the first .onnx by name, with the other files as its data files. The
// notice names the other models and the files named after them (their data files), left out.
function loadFiles(list) {
  const all = [...list];
  const isModel = (f) => /\.onnx$/i.test(f.name);
  const [model = all[0], ...others] = all.filter(isModel).sort((a, b) => (a.name < b.name ? -1 : 1));
  if (!model) return;
  const dataOf = (m) => all.filter((f) => !isModel(f) && f.name.startsWith(m.name));
  ui.pickNotice.hidden = !others.length;
  ui.pickNotice.textContent = `One model at a time: this is ${model.name}, the first by name. Not converted: ` +
    `${others.map((m) => [m.name, ...dataOf(m).map((f) => f.name)].join(' with ')).join(', ')}. Pick each on its own, with its data files.`;
  const leftOut = others.flatMap((m) => [m, ...dataOf(m)]);
  load(model.name, model, all.filter((f) => f !== model && !leftOut.includes(f)));
}

// A line of the plan: tensor and node names in it wrap at their separators (breakable).
function text(tag, content, className) {
  const e = document.createElement(tag);
  e.append(breakable(content));
  if (className) e.className = className;
  return e;
}

// The nodes a match concerns in a view: what it matched (input, or converted if still there) or
// what replaced it.
function matchNodes(m, view) {
  return view === 'input' || !m.applied ? m.nodes : m.new_nodes;
}

function renderPlan(report) {
  ui.plan.replaceChildren();
  if (!report.matches.length) ui.plan.append(text('p', 'No pattern matched this model.', 'hint'));
  const before = (n) => state.current.byName.input.get(n), after = (n) => state.current.byName.converted.get(n);
  for (const m of report.matches) {
    const row = document.createElement('div');
    row.className = 'match';
    row.dataset.testid = 'match-row';
    row.dataset.matchId = m.id;
    const isSkipped = state.skipped.has(m.id);
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.checked = m.applied;
    box.disabled = !m.applied && !isSkipped;  // refused by the tool: nothing to switch on
    box.setAttribute('aria-label', `apply ${m.id}`);
    box.addEventListener('change', () => { if (box.checked) state.skipped.delete(m.id); else state.skipped.add(m.id); });
    const head = document.createElement('div');
    head.className = 'id';
    // Tags are separate words for a screen reader: "…/MaxPool, output will differ".
    head.append(text('span', m.id, 'match-id'), text('span', ', ', 'visually-hidden'),
      text('span', m.numerically_equivalent ? 'equivalent' : 'output will differ', `tag ${m.numerically_equivalent ? 'eq' : 'neq'}`));
    if (!m.applied) head.append(text('span', ', ', 'visually-hidden'), text('span', isSkipped ? 'skipped' : 'not applied', 'tag off'));
    const body = document.createElement('div');
    body.className = 'body';
    body.append(text('div', `${m.phase} · ${m.nodes.join(' → ')}`, 'meta'));
    if (m.weights) body.append(text('div', weightsText(m.weights), 'weights'));
    if (m.reason) body.append(text('div', m.reason, 'reason'));
    body.append(drawRewrite(m, before, after));
    const warnings = report.warnings.filter((w) => w.match_id === m.id);
    if (warnings.length) {
      const list = document.createElement('ul');
      list.className = 'row-warnings';
      list.setAttribute('aria-label', 'Warnings of this match');
      for (const w of warnings) list.append(text('li', w.message, 'warn'));
      body.append(list);
    }
    body.append(showButton(m.id, () => revealMatch(m)));
    row.append(box, head, body);
    row.addEventListener('click', (e) => {
      if (e.target.closest('input, button, a')) return;
      revealMatch(m);
    });
    ui.plan.append(row);
  }
  // Skips chosen for ids this conversion does not have (another target, say): said once, here.
  const gone = [...state.skipped].filter((id) => !report.matches.some((m) => m.id === id));
  ui.stale.hidden = !gone.length;
  ui.stale.textContent = gone.length ? `No longer matched (your skip is kept for when it matches again): ${gone.join(', ')}` : '';
}

function renderWarnings(report) {
  ui.warnings.replaceChildren();
  if (!report.warnings.length) ui.warnings.append(text('li', 'None.'));
  for (const w of report.warnings) {
    // The message itself is the button that shows the match in the graph.
    const li = document.createElement('li');
    li.dataset.testid = 'warning-row';
    const m = report.matches.find((x) => x.id === w.match_id);
    const button = text('button', w.message, 'link');
    button.type = 'button';
    button.addEventListener('click', () => revealMatch(m));
    li.append(m ? button : w.message);
    ui.warnings.append(li);
  }
}

function renderCounts(report) {
  ui.counts.replaceChildren();
  const before = report.input.op_counts, after = report.output.op_counts;
  for (const op of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    const tr = document.createElement('tr');
    const changed = (before[op] ?? 0) !== (after[op] ?? 0);
    tr.append(text('td', op), text('td', String(before[op] ?? 0)), text('td', String(after[op] ?? 0), changed ? 'changed' : ''));
    ui.counts.append(tr);
  }
}

function offer(link, blob, fileName) {
  const url = URL.createObjectURL(blob);
  state.objectUrls.push(url);
  link.href = url;
  link.download = fileName;
}

// Node states in each view, the first that holds: the target cannot run it (the audit names it —
// whatever a match did, so every node the hardware cannot run shows), rewritten, refused (or
// skipped) match, plain. The node's matches are still listed in its properties.
function statesOf(report, view, byName) {
  const states = new Map();
  const mark = (name, state) => { if (byName.has(name) && !states.has(name)) states.set(name, state); };
  for (const u of report.unsupported) mark(u.node, 'unsupported');
  for (const m of report.matches) if (m.applied) for (const n of matchNodes(m, view)) mark(n, 'applied');
  for (const m of report.matches) if (!m.applied) for (const n of m.nodes) mark(n, 'refused');
  return states;
}

// "side by side" shows the input in the graph's pane, and the converted model beside it
// (compare.js, loaded when first chosen).
const graphChoice = () => ui.graphSwitch.querySelector('input:checked').value;
function currentView() { return graphChoice() === 'both' ? 'input' : graphChoice(); }

// Draws the chosen view; resolves false (with a message in the graph's place) when it cannot be
// laid out, so the rest of the page keeps working.
function drawGraph() {
  const view = currentView();
  const description = view === 'input' ? state.current.input : state.current.output;
  state.drawing = graph.show(description, statesOf(state.current.report, view, state.current.byName[view])).then(async (shown) => {
    // The fixed-point fit describes the converted model; its overlay's module loads only when a
    // scheme is chosen, and marks only the drawing still shown once it has loaded.
    const fit = shown && view === 'converted' && state.current.report.fixed_point;
    const overlay = fit && await import('./fit-overlay.js').catch(() => null);  // offline before it was needed: no overlay
    if (!shown || graph.shown !== description) return true;
    if (overlay) overlay.overlayFit(graph, fit, ui.legend);
    else ui.legend.querySelectorAll('.fit').forEach((e) => e.remove());
    const both = graphChoice() === 'both';
    if (both) state.compare ??= await import('./compare.js').then((m) => m.sideBySide({ graph, legend: ui.legend, props: ui.props, redraw,
      onSelect: (name, v) => selectNode(name, { view: v, fromGraph: true }), states: (v) => statesOf(state.current.report, v, state.current.byName[v]) }), () => null);
    await state.compare?.show(both, state.current);
    return true;
  }, (e) => {
    graph.showMessage(`The graph could not be laid out: ${e.message}. The rest of the page works without it.`);
    return false;
  });
  return state.drawing;
}

// Highlights the nodes `namesIn(view)` names: in `view` if given, else in the current view when it
// has any of them, else in the other one — each view asked for its own names (a rewrite's nodes in
// the input, the nodes it emitted in the converted model).
async function reveal(namesIn, view) {
  const has = (v) => namesIn(v).some((n) => state.current.byName[v].has(n));
  let target = view ?? currentView();
  if (!view && !has(target)) target = target === 'input' ? 'converted' : 'input';
  // Side by side shows both models: the nodes are highlighted in their own pane.
  const both = graphChoice() === 'both';
  if (!both && target !== currentView()) {
    ui.graphSwitch.querySelector(`input[value="${target}"]`).checked = true;
    drawGraph();
  }
  if (!(await state.drawing)) return;
  const names = namesIn(target);
  const first = names.find((n) => state.current.byName[target].has(n));
  if (first) selectNode(first, { view: target });
  // Side by side, each pane highlights its own nodes of what is shown (a match's before and
  // after), in place of the counterparts the selection highlighted.
  if (both && state.compare) for (const v of view ? [view] : ['input', 'converted']) state.compare.highlight(v, namesIn(v));
  else graph.highlight(names);
  ui.graphHeading.scrollIntoView({ block: 'start' });
}

function revealMatch(m) { reveal((view) => matchNodes(m, view), null); }

const narrow = window.matchMedia('(max-width: 760px)');

// Shows a node's properties and marks it in the graph. `fromGraph`: picked in the graph itself;
// on a narrow screen the panel is below the graph, so it is scrolled into view.
function selectNode(name, { view = currentView(), fromGraph = false } = {}) {
  const node = state.current.byName[view].get(name);
  if (!node) return;
  // The panel is rebuilt: focus on one of its buttons ("Show in graph") would fall to <body>, so
  // it goes to the panel's heading, which now names the node shown.
  const hadFocus = ui.props.contains(document.activeElement);
  state.selected = { name, view };
  graph.select(name);
  const fit = state.current.report.fixed_point, described = view === 'input' ? state.current.input : state.current.output;
  renderProps(ui.props, node, {
    report: state.current.report, view, onShowMatch: revealMatch, changes: state.current.changes,
    fitLines: (name) => (fit && state.fixedPointPanel ? state.fixedPointPanel.fitLines(fit, name, node.outputs.map((o) => o.name)) : []),
    declared: new Map([...described.inputs, ...described.outputs].map((v) => [v.name, v.shape])),
  });
  state.compare?.selected(name, view);
  if (hadFocus) ui.props.querySelector('h3').focus({ preventScroll: true });
  if (fromGraph && narrow.matches) ui.props.scrollIntoView({ block: 'nearest' });
}

// The report as downloaded: with the check's results once it has run (JSON has no Infinity: the
// check module writes it as a string, as Python's json does).
function offerReport(finiteForJson = (x) => x) {
  const report = {
    ...state.current.report, ...(state.current.repair ? { repair: state.current.repair } : {}), ...(state.current.rangeFit ? { range_fit: state.current.rangeFit } : {}),
    ...(state.current.check ? { check: state.current.check } : {}),
  };
  offer(ui.downloadReport, new Blob([JSON.stringify(finiteForJson(report), null, 2)], { type: 'application/json' }), `${state.current.name}.report.json`);
}

// A promise and what settles it (Promise.withResolvers, which Safari has only since 17.4).
function settleLater() {
  const later = {};
  later.promise = new Promise((resolve, reject) => Object.assign(later, { resolve, reject }));
  return later;
}

// The report comes before the downloads: the worker computes the folded data and makes the files
// while the page shows the report (docs/performance.md: the page's speed). Until they come the model's links
// lead nowhere and say so.
function showResult({ report, name, input, output, ms }) {
  const started = state.busySince;
  busy(false);
  state.show({ report, input, output, files: settleLater(), name, stem: name, check: null,
    byName: { input: new Map(input.nodes.map((n) => [n.name, n])), converted: new Map(output.nodes.map((n) => [n.name, n])) } });
  ui.heading.textContent = `Result: ${state.fileName}`;
  state.current.files.promise.catch(() => {});  // said by showError
  document.body.dataset.downloads = 'preparing';
  ui.preparing.hidden = false;
  for (const link of [ui.download, ui.downloadData]) link.removeAttribute('href');
  ui.checkResult.hidden = true;
  ui.results.hidden = false;
  ui.convert.disabled = false;
  ui.version.textContent = report.tool.version;
  renderCard(ui.card, report, input, output);
  ui.quantization.hidden = !report.quantization;
  ui.quantization.textContent = report.quantization?.message ?? '';
  renderPlan(report);
  renderWarnings(report);
  renderAudit(ui.audit, report.unsupported, (names) => reveal(() => names, 'converted'));
  renderCounts(report);
  renderProps(ui.props, null);
  offerReport();
  const applied = report.matches.filter((m) => m.applied).length;
  const done = `Done in ${Math.round(performance.now() - started)} ms (converter ${Math.round(ms)} ms): ${applied} of ` +
    `${report.matches.length} matches applied, ${report.warnings.length} warnings, ` +
    `${report.unsupported.length} nodes the hardware cannot run.`;
  // A switch of target or folding keeps focus where it was; a new model or "Convert again" goes
  // to the result.
  (state.focusAfter ?? ui.heading).focus();
  drawGraph();
  // "Done" once everything is shown and works, the parts whose modules may still be loading too.
  const shown = state.current;
  Promise.all([showFixedPoint(report.fixed_point, output), loadPicker()]).then(() => {
    state.picker?.refresh();
    if (state.current === shown) setSummary(done, true);
  });
}

// The fixed-point summary and the findings, from their module, loaded with the first scheme
// chosen (offline before then, only the downloaded report has them).
async function showFixedPoint(fit, description) {
  ui.fixedPointSummary.hidden = ui.findings.hidden = true;
  if (!fit) return ui.findings.replaceChildren();
  state.fixedPointPanel ??= await import('./fixed-point-panel.js').catch(() => null);
  state.fixedPointPanel?.renderFixedPoint(ui.fixedPointSummary, ui.findings, fit, description, (names) => reveal(() => names, 'converted'));
}

// The model's download, and its data file's when it keeps one, under the download's name.
function offerModel({ model, data }) {
  offer(ui.download, model, `${state.current.name}.onnx`);
  // Two files: the model names its data file, which must sit beside it under this name.
  ui.downloadData.hidden = !data;
  if (data) offer(ui.downloadData, data, `${state.current.name}.onnx.data`);
}

// The converted model's files, made after the report was shown.
function offerOutput({ model, data, heapBytes }) {
  state.current.made = { model, data };
  offerModel(state.current.made);
  ui.preparing.hidden = true;
  document.body.dataset.wasmHeap = heapBytes;  // the conversion's peak, for the tests and a curious developer
  document.body.dataset.downloads = 'ready';
  state.current.files.resolve(state.current.made);
}

// "Check" and "Repair" (check-run.js, loaded with the first press, as the runtime is: none of it
// weighs on the page's first load), given what of the page they read and call.
async function check(given = {}, repair = false) {
  ui.checkResult.hidden = true;  // until this check's result is in
  const { runCheck } = await import('./check-run.js');
  return runCheck({
    ui, state, samples, options, busy, setStatus, showProgress, offerModel, showFixedPoint, offerReport, renderPlan, drawGraph, check,
  }, given, repair);
}

// Everything the page needs is fetched now, so it keeps working offline once loaded: the
// worker loads the WebAssembly module, and the sample model is read ahead.
const sampleBytes = fetch('sample.onnx').then((r) => {
  if (!r.ok) throw new Error(`sample.onnx: HTTP ${r.status}`);
  return r.arrayBuffer();
});
sampleBytes.catch(() => {});  // reported when the button is pressed
startWorker();
state.worker.postMessage(toConverter.init({}));

ui.file.addEventListener('change', () => loadFiles(ui.file.files));
ui.drop.addEventListener('dragover', (e) => { e.preventDefault(); ui.drop.classList.add('over'); });
ui.drop.addEventListener('dragleave', () => ui.drop.classList.remove('over'));
ui.drop.addEventListener('drop', (e) => {
  e.preventDefault();
  ui.drop.classList.remove('over');
  loadFiles(e.dataTransfer.files);
});
ui.sample.addEventListener('click', async () => {
  try {
    ui.pickNotice.hidden = true;
    load('sample.onnx', new Uint8Array(await sampleBytes));
  } catch (e) {
    showError(`the sample could not be read (${e.message})`);
  }
});
ui.convert.addEventListener('click', () => send(toConverter.convert({ options: options() })));
ui.check.addEventListener('click', () => check());
ui.repair.addEventListener('click', () => check({}, true));
// A scheme sets folding to what the CLI does under it unless told (the core's rule, asked of the
// worker: FPQ keeps BatchNorm as a layer of its own), and either can then be changed.
ui.fixedPoint.addEventListener('change', () => {
  state.foldTouched = false;
  if (state.foldDefaults) ui.fold.checked = foldDefault();
});
ui.fold.addEventListener('change', () => { state.foldTouched = true; });
for (const control of [ui.target, ui.fixedPoint, ui.snapWeights, ui.fold, ui.layout]) {
  control.addEventListener('change', () => { if (!ui.convert.disabled) send(toConverter.convert({ options: options() })); });
}
ui.graphSwitch.addEventListener('change', () => { if (state.current) drawGraph(); });
ui.collapse.addEventListener('change', () => {
  graph.setCollapse(ui.collapse.checked);
  if (state.current) redraw();
});
