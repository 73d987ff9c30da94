// The page's "Check" and "Repair": the input, the converted model and the fold-only twin in
// onnxruntime-web, in a worker of its own that is ended afterwards (its memory goes back); a
// repair's fit, FPQ's range fit (under FPQ, on the samples picked) and the FPQ twin (when asked)
// answered by the conversion worker on a port of its own. Loaded with the first press. `page`:
// what of the page it reads and calls (web/app.js, check()), its state among them.
import { CHECK_MEMORY_LIMIT, changeText, checkShapes, finiteForJson, renderCheck, repairText, sizesTooLarge } from './check-panel.js';
import './messages.js';
import { breakable } from './panels.js';

const { fromCheck, fromConverter, receive, toCheck, toConverter } = self.pageMessages;

// Under FPQ a check on samples fits the ranges on them (shared/range_fit.mjs): the download is then the
// fitted model (made from the repaired one after a repair), named so, and the report carries the
// fit (`range_fit`) and the fitted model's fit analysis, as the Node CLI writes them. A check
// without a fit goes back to the model before it and the conversion's analysis (the estimate).
// Returns whether the analysis changed (the graph's badges and the summary then say it).
function offerFitted(page, { rangeFit, fitted, fixedPoint }) {
  const { current } = page.state;
  if (!rangeFit && !current.rangeFit) return false;
  current.estimated ??= current.report.fixed_point;
  current.rangeFit = rangeFit;
  current.report.fixed_point = rangeFit ? fixedPoint : current.estimated;
  current.name = `${current.repaired ? `${current.stem}.repaired` : current.stem}${rangeFit ? '.range-fit' : ''}`;
  page.offerModel(rangeFit ? { model: new Blob([fitted], { type: 'application/octet-stream' }), data: null } : current.repaired ?? current.made);
  page.showFixedPoint(current.report.fixed_point, current.output);
  return true;
}

// The check's fold-only twin comes from the conversion worker (it holds the module and the input).
// `inputShapes`: the check's sizes, so that the twin's description gives every activation's
// shape at them (what the memory estimate reads); none when samples size the runs.
function makeTwin({ state: { worker }, options }, inputShapes) {
  return new Promise((resolve, reject) => {
    const arrived = ({ data }) => {
      if (data.type !== fromConverter.twin.type) return;
      worker.removeEventListener('message', arrived);
      if (data.message) reject(new Error(data.message)); else resolve(data);
    };
    worker.addEventListener('message', arrived);
    worker.postMessage(toConverter.twin({ options: { ...options(), ...(inputShapes ? { inputShapes } : {}) } }));
  });
}

// After a repair the download is the repaired model (one file: the repair refuses external
// data), named so, and each refitted layer's change shows in its plan row.
function offerRepaired({ state: { current }, offerModel }, { repair, repaired }) {
  current.repair = repair;
  current.repaired = { model: new Blob([repaired], { type: 'application/octet-stream' }), data: null };
  current.name = `${current.stem}.repaired`;
  offerModel(current.repaired);
  // A layer left as converted shows in its match's row as prominently as one refitted.
  current.repairs = new Map();
  for (const l of [...repair.layers.filter((x) => x.refitted), ...repair.left]) {
    if (l.match_id) current.repairs.set(l.match_id, [current.repairs.get(l.match_id), repairText(l)].filter(Boolean).join(' '));
  }
}

// In each plan row, above its button: the rewrite's change at its output (layer by layer) and
// what the repair did with its layers (one left as converted as prominent as one refitted).
function planLines(plan, { changes, repairs }) {
  for (const row of plan.querySelectorAll('[data-testid="match-row"]')) {
    const button = row.querySelector('.body > button:last-child');
    const change = changes.get(row.dataset.matchId), repaired = repairs?.get(row.dataset.matchId);
    for (const [content, className] of [[change, 'check-change'], [repaired, `check-change repair-change${repaired?.includes('left as converted') ? ' warn' : ''}`]]) {
      if (!content) continue;
      const div = Object.assign(document.createElement('div'), { className });
      div.append(breakable(content));
      button.before(div);
    }
  }
}

// "Cancel" beside the progress bar while a check or a repair runs: made with the first run.
function cancelButton(ui) {
  let button = document.getElementById('check-cancel');
  if (!button) {
    button = Object.assign(document.createElement('button'), { type: 'button', id: 'check-cancel', className: 'small secondary', textContent: 'Cancel' });
    button.dataset.testid = 'check-cancel';
    ui.progressBox.append(button);
  }
  return button;
}

// A model the runtime cannot hold, or sizes it could not run at, are refused before anything loads.
export async function runCheck(page, given, repair) {
  const { ui, state, samples, busy, setStatus, showProgress } = page;
  const { current, inputModel, inputFiles, worker } = state;
  const { report } = current;
  // Given samples size every dynamic dimension themselves; otherwise a dynamic batch is 1 and
  // any other dynamic dimension is asked for, with the size the model suggests.
  const data = samples.samples();
  const { shapes: inputShapes, missing } = checkShapes(current.input, { ...report.input_shapes, ...given });
  if (!data && missing.length) return renderCheck(ui.checkResult, { missing, onSizes: (shapes) => page.check(shapes, repair) });
  // Refused before anything loads: a model onnxruntime-web could not hold (the input's own
  // description, whose unknown shapes count nothing), then sizes whose activations it could not
  // (the twin's, described at those sizes).
  const dataBytes = Object.values(inputFiles).reduce((n, f) => n + f.size, 0);
  const memory = { weightBytes: report.input.bytes + dataBytes, limit: CHECK_MEMORY_LIMIT, where: 'WebAssembly allows the page' };
  const refuse = (refused) => {
    busy(false);
    renderCheck(ui.checkResult, { refused });
    setStatus('The check was refused: too large for the browser.');
  };
  const tooLarge = sizesTooLarge(current.input, data ? {} : inputShapes, memory);
  if (tooLarge) return refuse(tooLarge);
  const started = performance.now();
  state.busySince = started;
  setStatus(repair ? 'Repairing…' : 'Checking…');
  busy(true);
  let checker = null;
  const fpq = document.getElementById('check-fpq').checked;
  // Cancel ends the check's worker at once, wherever it is (a repair between two of its layers'
  // fits, or inside one: the converter's worker finishes that one fit and is free again), and
  // leaves the page as it was before the press.
  const cancel = cancelButton(ui);
  const cancelled = new Promise((_, reject) => {
    cancel.onclick = () => reject(Object.assign(new Error('cancelled'), { cancelled: true }));
  });
  cancelled.catch(() => {});
  const orCancel = (promise) => Promise.race([promise, cancelled]);
  cancel.hidden = false;
  try {
    showProgress('making the fold-only twin', 0);
    const twin = await orCancel(makeTwin(page, data ? undefined : inputShapes));
    const atSizes = data ? null : sizesTooLarge(twin.description, inputShapes, memory);
    if (atSizes) return refuse(atSizes);
    // A check after a repair checks the repaired model (the download); a repair starts again
    // from the converted one.
    const converted = !repair && current.repaired ? current.repaired : await orCancel(current.files.promise);
    // Under FPQ the ranges are fitted on the samples picked, as the Node CLI fits them on its
    // calibration samples (shared/range_fit.mjs); without samples the conversion's estimate stays, and a
    // model keeping its weights in a data file too (the fit, like the repair, rewrites one file).
    const fpqScheme = report.options.fixed_point === 'fpq';
    const rangeFit = fpqScheme && Boolean(data) && !converted.data;
    const rangeEstimate = fpqScheme && !rangeFit
      ? (data ? 'the model keeps its weights in a data file, which the fit in the page does not rewrite; keep them inline to fit them'
        : 'no samples were picked; pick some to fit them on your data')
      : undefined;
    const result = await orCancel(new Promise((resolve, reject) => {
      checker = new Worker('check-worker.js', { type: 'module' });
      checker.onmessage = ({ data }) => receive(fromCheck, data, {
        progress: (d) => showProgress(d.stage, d.fraction),
        result: resolve,
        error: (d) => reject(new Error(d.message)),
      }, (said) => reject(new Error(`the check's worker sent an ${said}`)));
      checker.onerror = (e) => { e.preventDefault(); reject(new Error(e.message || 'the check worker stopped')); };
      // Under the name the conversion wrote into the model (the download's may since say more).
      const dataFile = converted.data ? { [`${current.stem}.onnx.data`]: converted.data } : {};
      // The repair's fit and new weights, the range fit and the FPQ twin are the converter's: its
      // worker answers on a port of its own (and loads their modules then).
      let port;
      if (repair || fpq || rangeFit) {
        const channel = new MessageChannel();
        worker.postMessage(toConverter.repairPort({ port: channel.port1, repair }), [channel.port1]);
        port = channel.port2;
      }
      checker.postMessage(toCheck.check({
        original: { model: inputModel, files: inputFiles, description: current.input },
        candidate: { model: converted.model, files: dataFile, description: current.output },
        twin: { model: twin.model, files: twin.data ? { 'twin.onnx.data': twin.data } : inputFiles, description: twin.description },
        options: { layerwise: ui.checkLayerwise.checked, inputShapes, inputRange: samples.inputRange() },
        data, ...(repair ? { repair: { port } } : {}), ...(fpq ? { fpq: { port } } : {}), ...(rangeFit ? { rangeFit: { port } } : {}),
        conversion: report, twinConversion: twin.report,
      }), port ? [port] : []);
    }));
    current.check = result.check;
    current.changes = new Map((result.check.converted.rewrites ?? []).map((r) => [r.match_id, changeText(r)]));
    if (result.repair) offerRepaired(page, result);
    // After a range fit the download is the fitted model and the fit analysis its own; a check
    // without one goes back to the model before it (`refitted`: the analysis changed).
    const refitted = offerFitted(page, result);
    // As the Node CLI's report: the fit analysis gains the activations' fit on the data, and the
    // graph's badges and the nodes' properties say it.
    const activations = result.check.fpq?.activations;
    if (activations && report.fixed_point) report.fixed_point.activations = activations;
    busy(false);
    const fpqTwin = result.fpqTwin && { blob: new Blob([result.fpqTwin], { type: 'application/octet-stream' }), name: `${current.name}.fpq-twin.onnx` };
    renderCheck(ui.checkResult, {
      check: result.check, repair: result.repair, rangeFit: result.rangeFit, rangeEstimate: result.rangeEstimate ?? rangeEstimate, fpqTwin, ms: performance.now() - started,
    });
    // A model that failed to load or run is a failed check, however long it took to say so.
    const failure = result.check.converted.error ?? result.check.fold_only.error;
    const inconclusive = [result.check.converted, result.check.fold_only].some((c) => c.verdict === 'inconclusive');
    const made = result.repair ? (result.rangeFit ? 'Repaired, ranges fitted and checked' : 'Repaired and checked') : result.rangeFit ? 'Ranges fitted and checked' : 'Checked';
    setStatus(failure ? `The check failed: ${failure}`
      : `${made}${inconclusive ? ' (inconclusive)' : ''} in ${Math.round(performance.now() - started)} ms.`);
    page.offerReport(finiteForJson);
    page.renderPlan(report);
    planLines(ui.plan, current);
    // The graph shows the fit's new badges, and each tensor's measured change (side by side).
    if (((activations || refitted) && report.fixed_point) || result.check.converted.layers) page.drawGraph();
  } catch (e) {
    busy(false);
    if (e.cancelled) {
      setStatus(`${repair ? 'The repair' : 'The check'} was cancelled; the model and its downloads are as they were.`);
      (repair ? ui.repair : ui.check).focus();
    } else {
      renderCheck(ui.checkResult, { error: e.message });
      setStatus('The check could not run.');
    }
  } finally {
    checker?.terminate();
    cancel.hidden = true;
  }
}
