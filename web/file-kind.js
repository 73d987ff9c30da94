// What a picked file is, when its name or first bytes say it is not an ONNX model: the page says
// so in words before the converter sees it ("photo.onnx is a PNG image"), where the converter
// could only say its bytes do not decode. An ONNX model (a bare protobuf) has no signature of its
// own, so only files that have one are named; anything else goes to the converter, which judges.

// A ZIP archive by its first entry's name (local header: name length at 26, name at 30): numpy's
// .npz holds .npy files, PyTorch's checkpoints a pickle.
function zipKind(bytes) {
  const name = new TextDecoder().decode(bytes.subarray(30, 30 + (bytes[26] | (bytes[27] << 8))));
  if (name.endsWith('.npy')) return 'a NumPy archive (.npz)';
  return name.endsWith('.pkl') ? 'a PyTorch checkpoint (torch.save\'s ZIP archive: export the model to ONNX first)' : 'a ZIP archive';
}

// The first bytes of the formats a model is most often mistaken for.
const SIGNATURES = [
  [[0x89, 0x50, 0x4e, 0x47], 'a PNG image'],
  [[0xff, 0xd8, 0xff], 'a JPEG image'],
  [[0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59], 'a NumPy array (.npy)'],
  [[0x50, 0x4b, 0x03, 0x04], zipKind],
];

// UTF-8 without control characters other than white space: the start of a text file. A
// protobuf's field tags and lengths are control bytes, so a model does not pass.
function textStart(bytes) {
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: true });
    return /[\0-\x08\x0b\x0e-\x1f\x7f]/.test(text) ? null : text;
  } catch {
    return null;
  }
}

// A sentence naming `file` (a File) when it is something else than an ONNX model; else null.
export async function notOnnx(file) {
  if (/\.data$/i.test(file.name)) {
    return `${file.name} holds a model's external tensor data, not the model: pick the model (.onnx) and it together`;
  }
  const bytes = new Uint8Array(await file.slice(0, 512).arrayBuffer());
  const signature = SIGNATURES.find(([magic]) => magic.every((b, i) => bytes[i] === b));
  if (signature) return `${file.name} is ${typeof signature[1] === 'function' ? signature[1](bytes) : signature[1]}, not an ONNX model`;
  const text = bytes.length ? textStart(bytes) : null;
  if (text === null) return null;
  const line = text.trim().split('\n')[0];
  return `${file.name} is text, not an ONNX model: it begins “${line.length > 60 ? `${line.slice(0, 60)}…` : line}”`;
}
