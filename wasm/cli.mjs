#!/usr/bin/env node
// The package's `bin` and the documented `node wasm/cli.mjs`: the CLI itself is in cli/.
import './cli/main.mjs';
