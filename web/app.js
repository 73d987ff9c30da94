// The page: picks a model, hands it to the worker, and shows the report. The page's defaults are
// the CLI's (target lattice, BatchNorm folding on), so its download equals `onnx-lattice convert`.
import { drawRewrite } from './draw.js';

const MAX_MODEL_BYTES = 2 ** 31 - 1;  // protobuf's limit for a single-file ONNX model
const $ = (id) => document.getElementById(id);
const ui = {
  drop: document.querySelector('[data-testid="drop-zone"]'), file: $('file-input'), sample: $('sample-model'),
  target: $('target'), fold: $('fold-bn'), convert: $('convert'), status: $('status'), error: $('error'),
  results: $('results'), plan: $('plan'), warnings: $('warnings'), audit: $('audit'), counts: document.querySelector('#op-counts tbody'),
  download: $('download'), downloadReport: $('download-report'), version: $('version'),
};

let worker = null;
let picked = false;  // a model has been chosen since the page loaded
let working = false;  // the worker is converting something the page sent
let modelName = 'model';
let objectUrls = [];

function startWorker() {
  worker = new Worker('worker.js');
  worker.onmessage = ({ data }) => {
    // The worker's own start-up ("loading the converter", "ready") speaks only while no model
    // has been picked: a picked model's status (a refusal before reading, say) must not be
    // overwritten by a start-up message that arrives late on a busy machine.
    if (data.type === 'ready') document.body.dataset.converter = 'ready';
    if (data.type === 'ready' && !picked) setStatus('Ready: choose a model, or try the sample.');
    if (data.type === 'progress' && (working || !picked)) setStatus(data.stage);
    if (data.type === 'result') showResult(data);
    if (data.type === 'error') showError(data.message);
  };
  worker.onerror = (e) => {
    e.preventDefault();
    showError(`the converter stopped unexpectedly (${e.message || 'worker error'}); reload the page to try again`);
    worker.terminate();
    worker = null;
  };
}

function setStatus(text) { ui.status.textContent = text; }

function busy(on) {
  working = on;
  for (const control of [ui.sample, ui.convert, ui.file, ui.target, ui.fold]) control.disabled = on;
}

function showError(message) {
  busy(false);
  ui.convert.disabled = true;
  ui.results.hidden = true;
  ui.error.hidden = false;
  ui.error.textContent = `This model could not be converted: ${message}`;
  setStatus('Failed.');
}

function options(skipMatches = []) {
  return { target: ui.target.value, foldBatchNorm: ui.fold.checked, skipMatches };
}

function send(message, transfer = []) {
  if (!worker) startWorker();
  ui.error.hidden = true;
  busy(true);
  worker.postMessage(message, transfer);
}

// `dataFiles`: the data files of an external-data model, dropped or picked with it.
async function loadBytes(name, readBuffer, size, dataFiles = []) {
  picked = true;
  if (size > MAX_MODEL_BYTES) {
    showError(`the file is ${(size / 2 ** 30).toFixed(2)} GiB; a single-file ONNX model is limited to 2 GiB`);
    return;
  }
  modelName = name.replace(/\.onnx$/i, '') || 'model';
  setStatus(`reading ${name}…`);
  try {
    const bytes = await readBuffer();
    const files = Object.fromEntries(await Promise.all(dataFiles.map(async (f) => [f.name, await f.arrayBuffer()])));
    send({ type: 'load', bytes, files, options: options() }, [bytes, ...Object.values(files)]);  // transferred, not copied
  } catch (e) {
    showError(`the file could not be read (${e.message})`);
  }
}

// The model (the .onnx among the files) and the rest as its data files.
function loadFiles(list) {
  const all = [...list];
  const model = all.find((f) => /\.onnx$/i.test(f.name)) ?? all[0];
  if (model) loadBytes(model.name, () => model.arrayBuffer(), model.size, all.filter((f) => f !== model));
}

function text(tag, content, className) {
  const e = document.createElement(tag);
  e.textContent = content;
  if (className) e.className = className;
  return e;
}

function renderPlan(report) {
  ui.plan.replaceChildren();
  if (!report.matches.length) ui.plan.append(text('p', 'No pattern matched this model.', 'hint'));
  for (const m of report.matches) {
    const row = document.createElement('div');
    row.className = 'match';
    row.dataset.testid = 'match-row';
    row.dataset.matchId = m.id;
    const skipped = report.options.skip_matches.includes(m.id);
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.checked = m.applied;
    box.disabled = !m.applied && !skipped;  // refused by the tool: nothing to switch on
    box.setAttribute('aria-label', `apply ${m.id}`);
    const id = text('div', m.id, 'id');
    id.append(text('span', m.numerically_equivalent ? 'equivalent' : 'output will differ',
      `tag ${m.numerically_equivalent ? 'eq' : 'neq'}`));
    if (!m.applied) id.append(text('span', skipped ? 'skipped' : 'not applied', 'tag off'));
    row.append(box, id, text('div', `${m.phase} · ${m.nodes.join(' → ')}`, 'meta'));
    if (m.reason) row.append(text('div', m.reason, 'reason'));
    row.append(drawRewrite(m));
    ui.plan.append(row);
  }
}

function renderList(list, items, testid) {
  list.replaceChildren();
  if (!items.length) list.append(text('li', 'None.'));
  for (const item of items) {
    const li = text('li', item);
    if (testid) li.dataset.testid = testid;
    list.append(li);
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
  objectUrls.push(url);
  link.href = url;
  link.download = fileName;
}

function showResult({ report, model, ms }) {
  busy(false);
  for (const url of objectUrls) URL.revokeObjectURL(url);
  objectUrls = [];
  ui.results.hidden = false;
  ui.convert.disabled = false;
  ui.version.textContent = report.tool.version;
  renderPlan(report);
  renderList(ui.warnings, report.warnings.map((w) => w.message), 'warning-row');
  renderList(ui.audit, report.unsupported.map((u) => `${u.node} (${u.op_type}): ${u.reason}`), 'audit-row');
  renderCounts(report);
  offer(ui.download, new Blob([model], { type: 'application/octet-stream' }), `${modelName}.lattice.onnx`);
  offer(ui.downloadReport, new Blob([JSON.stringify(report, null, 2)], { type: 'application/json' }),
    `${modelName}.lattice.report.json`);
  const applied = report.matches.filter((m) => m.applied).length;
  setStatus(`Done in ${Math.round(ms)} ms: ${applied} of ${report.matches.length} matches applied, ` +
    `${report.warnings.length} warnings, ${report.unsupported.length} nodes the hardware cannot run.`);
}

// Everything the page needs is fetched now, so it keeps working offline once loaded: the
// worker loads the WebAssembly module, and the sample model is read ahead.
const sampleBytes = fetch('sample.onnx').then((r) => {
  if (!r.ok) throw new Error(`sample.onnx: HTTP ${r.status}`);
  return r.arrayBuffer();
});
sampleBytes.catch(() => {});  // reported when the button is pressed
startWorker();
worker.postMessage({ type: 'init' });

ui.file.addEventListener('change', () => loadFiles(ui.file.files));
ui.drop.addEventListener('dragover', (e) => { e.preventDefault(); ui.drop.classList.add('over'); });
ui.drop.addEventListener('dragleave', () => ui.drop.classList.remove('over'));
ui.drop.addEventListener('drop', (e) => {
  e.preventDefault();
  ui.drop.classList.remove('over');
  loadFiles(e.dataTransfer.files);
});
ui.drop.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); ui.file.click(); }
});
ui.sample.addEventListener('click', () => loadBytes('sample.onnx', async () => (await sampleBytes).slice(0), 0));
ui.convert.addEventListener('click', () => {
  const skip = [...ui.plan.querySelectorAll('[data-testid="match-row"]')]
    .filter((row) => { const box = row.querySelector('input'); return !box.checked && !box.disabled; })
    .map((row) => row.dataset.matchId);
  send({ type: 'convert', options: options(skip) });
});
for (const control of [ui.target, ui.fold]) {
  control.addEventListener('change', () => { if (!ui.convert.disabled) send({ type: 'convert', options: options() }); });
}
