// The package's one way to make an Error whose `code` says what kind of error it is (index.d.ts,
// ErrorCode). Imports nothing, so that the check's worker thread, the converter's and the CLI
// share it without loading the converter's module.

// `extra`: what else the error carries — the file (`path`) and errno's name (`errno`) of an I/O
// error, the sizes a check is `missing` — each set only when defined.
export function codedError(message, code, extra = {}, Type = Error) {
  const e = new Type(message);
  e.code = code;
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) e[key] = value;
  return e;
}
