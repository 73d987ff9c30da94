// The page's "Check" and "Repair": the input, the converted model and the fold-only twin in
// onnxruntime-web, in a worker of its own that is ended afterwards (its memory goes back); a
// repair's fit, FPQ's range fit (under FPQ, on the samples picked) and the FPQ twin (when asked)
// answered by the conversion worker on a port of its own. Loaded with the first press. `page`:
// what of the page it reads and calls (web/app.js, check()).
import { CHECK_MEMORY_LIMIT, changeText, checkShapes, finiteForJson, renderCheck, repairText, sizesTooLarge } from './check-panel.js';

// Under FPQ a check on samples fits the ranges on them (range_fit.mjs): the download is then the
// fitted model (made from the repaired one after a repair), named so, and the report carries the
// fit (`range_fit`) and the fitted model's fit analysis, as the Node CLI writes them. A check
// without a fit goes back to the model before it and the conversion's analysis (the estimate).
// Returns whether the analysis changed (the graph's badges and the summary then say it).
function offerFitted(page, { rangeFit, fitted, fixedPoint }) {
  const { current } = page;
  if (!rangeFit && !current.rangeFit) return false;
  current.estimated ??= current.report.fixed_point;
  current.rangeFit = rangeFit;
  current.report.fixed_point = rangeFit ? fixedPoint : current.estimated;
  current.name = `${current.repaired ? `${current.stem}.repaired` : current.stem}${rangeFit ? '.range-fit' : ''}`;
  page.offerModel(rangeFit ? { model: new Blob([fitted], { type: 'application/octet-stream' }), data: null } : current.repaired ?? current.made);
  page.showFixedPoint(current.report.fixed_point, current.output);
  return true;
}

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
    // Under FPQ the ranges are fitted on the samples picked, as the Node CLI fits them on its
    // calibration samples (range_fit.mjs); without samples the conversion's estimate stays, and a
    // model keeping its weights in a data file too (the fit, like the repair, rewrites one file).
    const fpqScheme = report.options.fixed_point === 'fpq';
    const rangeFit = fpqScheme && Boolean(data) && !converted.data;
    const rangeEstimate = fpqScheme && !rangeFit
      ? (data ? 'the model keeps its weights in a data file, which the fit in the page does not rewrite; keep them inline to fit them'
        : 'no samples were picked; pick some to fit them on your data')
      : undefined;
    const result = await new Promise((resolve, reject) => {
      checker = new Worker('check-worker.js', { type: 'module' });
      checker.onmessage = ({ data }) => {
        if (data.type === 'progress') showProgress(data.stage, data.fraction);
        if (data.type === 'result') resolve(data);
        if (data.type === 'error') reject(new Error(data.message));
      };
      checker.onerror = (e) => { e.preventDefault(); reject(new Error(e.message || 'the check worker stopped')); };
      // Under the name the conversion wrote into the model (the download's may since say more).
      const dataFile = converted.data ? { [`${current.stem}.onnx.data`]: converted.data } : {};
      // The repair's fit and new weights, the range fit and the FPQ twin are the converter's: its
      // worker answers on a port of its own (and loads their modules then).
      let port;
      if (repair || fpq || rangeFit) {
        const channel = new MessageChannel();
        worker.postMessage({ type: 'repair-port', port: channel.port1, repair }, [channel.port1]);
        port = channel.port2;
      }
      checker.postMessage({
        original: { model: inputModel, files: inputFiles, description: current.input },
        candidate: { model: converted.model, files: dataFile, description: current.output },
        twin: { model: twin.model, files: twin.data ? { 'twin.onnx.data': twin.data } : inputFiles, description: twin.description },
        options: { layerwise: ui.checkLayerwise.checked, inputShapes, inputRange: samples.inputRange() },
        data, ...(repair ? { repair: { port } } : {}), ...(fpq ? { fpq: { port } } : {}), ...(rangeFit ? { rangeFit: { port } } : {}),
        conversion: report, twinConversion: twin.report,
      }, port ? [port] : []);
    });
    current.check = result.check;
    current.changes = new Map((result.check.converted.rewrites ?? []).map((r) => [r.match_id, changeText(r)]));
    if (result.repair) page.offerRepaired(result, repairText);
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
    if ((activations || refitted) && report.fixed_point) page.drawGraph();
  } catch (e) {
    busy(false);
    renderCheck(ui.checkResult, { error: e.message });
    setStatus('The check could not run.');
  } finally {
    checker?.terminate();
  }
}
