// Each kind of message between the page and its workers, named once for both ends: how they are
// sent and received, docs/development.md; their payloads, messages.d.ts. A classic script, for the
// workers' importScripts; modules import it for its effect.
/** @type {import('./messages').PageMessages} */
self.pageMessages = (() => {
  // A constructor a kind, naming it too (`fromConverter.twin.type`).
  const channel = (kinds) => Object.freeze(Object.fromEntries(kinds.map((type) => [type, Object.assign((payload) => ({ ...payload, type }), { type })])));
  return Object.freeze({
    toConverter: channel(['init', 'load', 'convert', 'twin', 'repairPort']),  // to worker.js
    fromConverter: channel(['ready', 'progress', 'result', 'output', 'error', 'twin']),
    toCheck: channel(['check']),  // to check-worker.js
    fromCheck: channel(['progress', 'result', 'error']),
    toLayout: channel(['layout']),  // graph.js to layout-worker.js
    fromLayout: channel(['laidOut']),
    // The check's worker to repair-server.js, in worker.js: a kind a call.
    toPort: channel(['fitLayer', 'openRepairSession', 'repairSession', 'fpqWeightBounds', 'fpqTwin', 'settleFixedPoint', 'describe']),
    fromPort: channel(['answer']),
    receive(channel, data, handlers, unknown) {
      const kind = data?.type;
      if (Object.hasOwn(channel, kind) && Object.hasOwn(handlers, kind)) return handlers[kind](data);
      const said = `unknown message kind '${kind}'`;
      console.error(said, data);
      return unknown(said);
    },
  });
})();
