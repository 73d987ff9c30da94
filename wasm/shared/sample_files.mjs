// The kinds of file the check and the repair read samples from, in one table for every shell: how
// each is known by its first bytes and by its name, and whether it holds arrays (read here, by
// npy.mjs and npz.mjs) or an image (decoded by the shell: pngjs and jpeg-js in Node, the browser
// on the page, then preprocess.mjs). A new format is a row here and a reader beside npy.mjs;
// docs/development.md says where each shell picks it up. Imports nothing.

const ascii = (text) => [...text].map((c) => c.charCodeAt(0));

// `magic`: the first bytes of each form the format takes, null for a byte that may be anything.
export const SAMPLE_FILES = Object.freeze({
  npy: { extensions: ['.npy'], magic: [[0x93, ...ascii('NUMPY')]], image: false },
  npz: { extensions: ['.npz'], magic: [[...ascii('PK'), 3, 4], [...ascii('PK'), 5, 6]], image: false },
  png: { extensions: ['.png'], magic: [[0x89, ...ascii('PNG'), 0x0d, 0x0a, 0x1a, 0x0a]], image: true },
  jpeg: { extensions: ['.jpg', '.jpeg'], magic: [[0xff, 0xd8, 0xff]], image: true },
  webp: { extensions: ['.webp'], magic: [[...ascii('RIFF'), null, null, null, null, ...ascii('WEBP')]], image: true },
});

const starts = (bytes, signature) => bytes.length >= signature.length && signature.every((b, i) => b === null || bytes[i] === b);

// What a file is by its first bytes: a key of SAMPLE_FILES, or null.
export function kindOfBytes(bytes) {
  for (const [kind, { magic }] of Object.entries(SAMPLE_FILES)) if (magic.some((m) => starts(bytes, m))) return kind;
  return null;
}

// What a file is by its name's extension (any case): a key of SAMPLE_FILES, or null.
export function kindOfName(name) {
  const lower = name.toLowerCase();
  for (const [kind, { extensions }] of Object.entries(SAMPLE_FILES)) if (extensions.some((e) => lower.endsWith(e))) return kind;
  return null;
}

export const isImage = (kind) => Boolean(SAMPLE_FILES[kind]?.image);
