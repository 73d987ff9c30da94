// The Node CLI: the same command line as the native one (core/cli), over Node's fs (node/fs_host.mjs).
// The check (`check`, `convert --check`) runs after the core is done, since onnxruntime is
// asynchronous (check_cli.mjs).
import { prepareCheck, runCheckRequest } from './check_cli.mjs';
import { fsHost } from '../node/fs_host.mjs';
import { guard, loadModule } from '../node/engine.mjs';

const module = await loadModule();
// The exit statuses by name, from the core's table (core/cli/exit_status.h), as --help lists them.
const exit = Object.fromEntries(JSON.parse(module.exitStatuses()).map((s) => [s.name, s.number]));
let checkRequest = null;
const host = {
  ...fsHost, exit, prepareCheck: (json) => prepareCheck(JSON.parse(json)), requestCheck: (json) => { checkRequest = JSON.parse(json); },
  // The staged files renamed into place by the core's rule; '' or what failed.
  placeStaged: (staged) => module.placeStaged(staged, host),
};
try {
  process.exitCode = guard({}, () => module.runCli(process.argv.slice(2), host));
  if (process.exitCode === exit.ok && checkRequest) process.exitCode = await runCheckRequest(checkRequest, host);
} catch (e) {
  process.stderr.write(`onnx-lattice: error: ${e.message}\n`);
  process.exitCode = exit.failed;
}
