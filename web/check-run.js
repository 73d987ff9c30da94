// The page's "Check" and "Repair": the input, the converted model and the fold-only twin in
// onnxruntime-web, in a worker of its own that is ended afterwards (its memory goes back); a
// repair's fit (and the FPQ twin, when asked) answered by the conversion worker on a port of its
// own. Loaded with the first press. `page`: what of the page it reads and calls (web/app.js, check()).
import { CHECK_MEMORY_LIMIT, changeText, checkShapes, finiteForJson, renderCheck, repairText, sizesTooLarge } from './check-panel.js';

// A model the runtime cannot hold, or sizes it could not run at, are refused before anything loads.
export async function runCheck(page, given, repair) {
  const { ui, current, samples, inputModel, inputFiles, worker, busy, setStatus, showProgress } = page;
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
  page.started(started);
  setStatus(repair ? 'Repairing…' : 'Checking…');
  busy(true);
  let checker = null;
  const fpq = document.getElementById('check-fpq').checked;
  try {
    showProgress('making the fold-only twin', 0);
    const twin = await page.makeTwin(data ? undefined : inputShapes);
    const atSizes = data ? null : sizesTooLarge(twin.description, inputShapes, memory);
    if (atSizes) return refuse(atSizes);
    // A check after a repair checks the repaired model (the download); a repair starts again
    // from the converted one.
    const converted = !repair && current.repaired ? current.repaired : await current.files.promise;
    const result = await new Promise((resolve, reject) => {
      checker = new Worker('check-worker.js', { type: 'module' });
      checker.onmessage = ({ data }) => {
        if (data.type === 'progress') showProgress(data.stage, data.fraction);
        if (data.type === 'result') resolve(data);
        if (data.type === 'error') reject(new Error(data.message));
      };
      checker.onerror = (e) => { e.preventDefault(); reject(new Error(e.message || 'the check worker stopped')); };
      const dataFile = converted.data ? { [`${current.name}.onnx.data`]: converted.data } : {};
      // The repair's fit and new weights, and the FPQ twin, are the converter's: its worker answers
      // on a port of its own (and loads their modules then).
      let port;
      if (repair || fpq) {
        const channel = new MessageChannel();
        worker.postMessage({ type: 'repair-port', port: channel.port1, repair }, [channel.port1]);
        port = channel.port2;
      }
      checker.postMessage({
        original: { model: inputModel, files: inputFiles, description: current.input },
        candidate: { model: converted.model, files: dataFile, description: current.output },
        twin: { model: twin.model, files: twin.data ? { 'twin.onnx.data': twin.data } : inputFiles, description: twin.description },
        options: { layerwise: ui.checkLayerwise.checked, inputShapes, inputRange: samples.inputRange() },
        data, ...(repair ? { repair: { port } } : {}), ...(fpq ? { fpq: { port } } : {}),
        conversion: report, twinConversion: twin.report,
      }, port ? [port] : []);
    });
    current.check = result.check;
    // As the Node CLI's report: the fit analysis gains the activations' fit on the data, and the
    // graph's badges and the nodes' properties say it.
    const activations = result.check.fpq?.activations;
    if (activations && report.fixed_point) report.fixed_point.activations = activations;
    current.changes = new Map((result.check.converted.rewrites ?? []).map((r) => [r.match_id, changeText(r)]));
    if (result.repair) page.offerRepaired(result, repairText);
    busy(false);
    const fpqTwin = result.fpqTwin && { blob: new Blob([result.fpqTwin], { type: 'application/octet-stream' }), name: `${current.name}.fpq-twin.onnx` };
    renderCheck(ui.checkResult, { check: result.check, repair: result.repair, fpqTwin, ms: performance.now() - started });
    // A model that failed to load or run is a failed check, however long it took to say so.
    const failure = result.check.converted.error ?? result.check.fold_only.error;
    const inconclusive = [result.check.converted, result.check.fold_only].some((c) => c.verdict === 'inconclusive');
    setStatus(failure ? `The check failed: ${failure}`
      : `${result.repair ? 'Repaired and checked' : 'Checked'}${inconclusive ? ' (inconclusive)' : ''} in ${Math.round(performance.now() - started)} ms.`);
    page.offerReport(finiteForJson);
    page.renderPlan(report);
    if (activations && report.fixed_point) page.drawGraph();
  } catch (e) {
    busy(false);
    renderCheck(ui.checkResult, { error: e.message });
    setStatus('The check could not run.');
  } finally {
    checker?.terminate();
  }
}
