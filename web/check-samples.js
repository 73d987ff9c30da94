// The page's samples (read in the check's worker): the files the user picked, dropped or took
// from a folder, as the model's feeds. Images are decoded by the browser, at their own size and
// without colour management (so the pixels are the file's, as the Node side's decoders give
// them); everything after the pixels or the file's bytes is the Node package's shared code.
import { unzipSync } from './fflate.mjs';
import { dataError, readNpy } from './shared/npy.mjs';
import { readNpz } from './shared/npz.mjs';
import { imageBatch } from './shared/preprocess.mjs';
import { isImage, kindOfName } from './shared/sample_files.mjs';
import { concatSamples, labelsBesideImages, samplesForInputs } from './shared/samples.mjs';

// The labels of .npy samples: a .npy of this name picked with them.
const LABELS = 'labels.npy';

// The labels among the picked files and the samples: with images, the one .npy picked with them
// (labelsBesideImages); with .npy samples, labels.npy.
function splitLabels(files) {
  const at = labelsBesideImages(files.map((f) => f.name));
  const labelsFile = at >= 0 ? files[at] : files.find((f) => f.name === LABELS);
  return { labelsFile, data: files.filter((f) => f !== labelsFile) };
}

async function decode(file) {
  let bitmap;
  try {
    bitmap = await createImageBitmap(file, { colorSpaceConversion: 'none', premultiplyAlpha: 'none' });
  } catch {
    throw dataError(file.name, 'this browser cannot decode the image (not a PNG, JPEG or WebP it can read, or a damaged file)');
  }
  const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
  const context = canvas.getContext('2d');
  context.drawImage(bitmap, 0, 0);
  bitmap.close();
  return { width: canvas.width, height: canvas.height, data: context.getImageData(0, 0, canvas.width, canvas.height).data };
}

const bytesOf = async (file) => new Uint8Array(await file.arrayBuffer());

// {feeds, samples, labels?, source, conversions, preprocessing?} from File objects (sorted by the
// picker) for the model's `inputs`: one .npz, or .npy files joined along axis 0, or images, each
// with optional labels (splitLabels).
export async function readPicked(files, inputs, preprocessing) {
  const { labelsFile, data } = splitLabels(files);
  // By name (shared/sample_files.mjs); a file of no known kind is read as a .npy, whose reader
  // says what it looks like.
  const grouped = (kind) => (isImage(kind) ? 'image' : kind === 'npz' ? 'npz' : 'npy');
  const kinds = new Set(data.map((f) => grouped(kindOfName(f.name))));
  if (!data.length) throw dataError(LABELS, 'labels alone: pick the samples with them');
  if (kinds.size > 1) throw dataError(data[0].name, `the samples mix ${[...kinds].join(' and ')} files: pick one kind (with images, one .npy: their labels)`);
  const labels = labelsFile ? { ...readNpy(await bytesOf(labelsFile), labelsFile.name), source: labelsFile.name } : undefined;
  const [kind] = kinds;
  let arrays, source, record;
  if (kind === 'npz') {
    if (data.length > 1) throw dataError(data[1].name, 'one .npz at a time (it holds every input)');
    arrays = readNpz(await bytesOf(data[0]), data[0].name, unzipSync);
    source = data[0].name;
  } else if (kind === 'npy') {
    const list = [];
    for (const f of data) list.push({ source: f.name, arrays: new Map([[null, readNpy(await bytesOf(f), f.name)]]) });
    arrays = list.length === 1 ? list[0].arrays : concatSamples(list);
    source = list.length === 1 ? data[0].name : `${list.length} .npy files`;
  } else {
    const batch = imageBatch(inputs, preprocessing, { count: data.length, source: 'images' });
    for (const f of data) batch.add(await decode(f), f.name);
    ({ arrays, preprocessing: record } = batch.finish());
    source = `${data.length} image${data.length === 1 ? '' : 's'}`;
  }
  const samples = samplesForInputs(arrays, inputs, { source, labels });
  return record ? { ...samples, preprocessing: record } : samples;
}
