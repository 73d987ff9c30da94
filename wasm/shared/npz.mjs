// numpy's .npz (np.savez, np.savez_compressed): a zip of .npy files, one per array. Imports
// nothing: the caller hands in fflate's unzipSync (the Node package imports 'fflate', the page
// its browser module), as the check is handed its runtime.
import { DATA_ERROR, DEFAULT_MAX_BYTES, MAX_HEADER_BYTES, dataError, readNpy } from './npy.mjs';

// Deflate cannot expand more than 1032:1 (258 bytes from one 2-bit code, stored blocks aside):
// an entry that declares more is corrupt, refused before fflate allocates what it declares.
const MAX_DEFLATE_RATIO = 1032;
const CENTRAL_HEADER_BYTES = 46;  // the smallest central directory entry
const STORED = 0, DEFLATED = 8;

// Reads an .npz: Map(array name -> readNpy's {dtype, shape, data, notes}), in the zip's order. The
// array name is the entry's name without '.npy' (np.savez's keyword). Every entry's declared size
// is checked against maxBytes before it is inflated.
export function readNpz(bytes, name, unzipSync, { maxBytes = DEFAULT_MAX_BYTES } = {}) {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('readNpz: bytes must be a Uint8Array');
  if (typeof unzipSync !== 'function') throw new TypeError("readNpz: unzipSync must be fflate's unzipSync");
  const isZip = bytes[0] === 0x50 && bytes[1] === 0x4b && (bytes[2] === 3 || bytes[2] === 5) && bytes[3] === bytes[2] + 1;
  if (!isZip) throw dataError(name, 'not an .npz file (not a zip archive)');
  const entryError = (entry, message) => dataError(name, `entry '${entry}': ${message}`);
  const seen = new Set();
  // The entry's own sizes, checked before fflate allocates and inflates it.
  const admit = ({ name: entry, size, originalSize, compression }) => {
    // A corrupt count of entries would have fflate walk billions of garbage headers.
    if (seen.size >= bytes.length / CENTRAL_HEADER_BYTES) throw dataError(name, 'corrupt zip: more entries than the file can hold');
    if (seen.has(entry)) throw entryError(entry, 'appears twice in the archive');
    seen.add(entry);
    if (!entry.endsWith('.npy')) throw entryError(entry, 'not a .npy array (an .npz holds only .npy entries, as np.savez writes)');
    if (compression !== STORED && compression !== DEFLATED) {
      throw entryError(entry, `compressed with zip method ${compression} (numpy writes stored (0) or deflated (8))`);
    }
    if (originalSize > maxBytes + MAX_HEADER_BYTES) {
      throw entryError(entry, `its uncompressed size is ${originalSize} bytes, over the limit of ${maxBytes} bytes (maxBytes)`);
    }
    const possible = compression === STORED ? size : size * MAX_DEFLATE_RATIO + 1024;
    if (compression === STORED ? originalSize !== size : originalSize > possible) {
      throw entryError(entry, `corrupt zip: it declares ${originalSize} bytes uncompressed from ${size} bytes stored`);
    }
    if (size > bytes.length) throw entryError(entry, `corrupt zip: it declares ${size} bytes in a file of ${bytes.length}`);
    return true;
  };
  let files;
  try {
    files = unzipSync(bytes, { filter: admit });
  } catch (e) {
    if (e.code === DATA_ERROR) throw e;
    // fflate's errors (invalid zip data, unexpected EOF, …) and what garbage offsets make it throw.
    throw dataError(name, `corrupt zip (${e.message})`);
  }
  const arrays = new Map();
  for (const [entry, data] of Object.entries(files)) {
    try {
      arrays.set(entry.slice(0, -'.npy'.length), readNpy(data, `${name}: entry '${entry}'`, { maxBytes }));
    } catch (e) {
      if (e.code === DATA_ERROR) e.file = name;
      throw e;
    }
  }
  if (!arrays.size) throw dataError(name, 'the archive holds no arrays');
  return arrays;
}
