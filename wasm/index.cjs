'use strict';
// The CommonJS entry: require('onnx-lattice') on Node 18 to 21, where require() of an ES module
// throws. Both factories are asynchronous anyway, so each loads the ES module when first called.
const load = () => import('./index.mjs');
exports.createConverter = async () => (await load()).createConverter();
exports.createSyncConverter = async () => (await load()).createSyncConverter();
