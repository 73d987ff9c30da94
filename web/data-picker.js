// The check panel's samples: files picked, dropped or taken from a folder, kept as File objects
// (nothing is read here: the check's worker reads them when "Check" is pressed), and the choices
// that turn images into tensors. The page's first load carries only this; the readers load with
// the check.
import { imageLayout } from './shared/preprocess.mjs';

const IMAGE = /\.(png|jpe?g|webp)$/i;
const ARRAY = /\.(npy|npz)$/i;

// The channels an image feeds the model's one image input (1 or 3), or null when it takes no image.
function imageChannels(description) {
  if (description?.inputs.length !== 1) return null;
  try {
    return imageLayout(description.inputs[0]).channels;
  } catch {
    return null;
  }
}

// What the check will be fed, in words: "64 images, labels.npy" or "No samples: random inputs."
function summary(files) {
  if (!files.length) return 'No samples: random inputs.';
  const images = files.filter((f) => IMAGE.test(f.name)).length;
  const arrays = files.filter((f) => ARRAY.test(f.name)).map((f) => f.name);
  const parts = [];
  if (images) parts.push(`${images} image${images === 1 ? '' : 's'}`);
  if (arrays.length) parts.push(arrays.length > 3 ? `${arrays.length} arrays` : arrays.join(', '));
  return `Samples: ${parts.join(', ')}.`;
}

// `model()`: the input model's description, whose image input says whether a colour order means
// anything (a one-channel input takes the images' luma).
export function dataPicker({ input, folder, drop, chosen, clear, imageOptions, resize, scale, order, range, model }) {
  let files = [];
  const show = () => {
    chosen.textContent = summary(files);
    clear.hidden = !files.length;
    imageOptions.hidden = !files.some((f) => IMAGE.test(f.name));
    order.closest('label').hidden = imageChannels(model()) === 1;
    range.closest('label').hidden = files.length > 0;  // random inputs only without samples
  };
  // Sorted by path: a folder's samples keep their order in every browser and in the Node CLI.
  const take = (list) => {
    const path = (f) => f.webkitRelativePath || f.name;
    files = [...list].filter((f) => IMAGE.test(f.name) || ARRAY.test(f.name)).sort((a, b) => (path(a) < path(b) ? -1 : path(a) > path(b) ? 1 : 0));
    const left = list.length - files.length;
    show();
    if (left) chosen.textContent += ` ${left} other file${left === 1 ? ' was' : 's were'} left out (not an image, .npy or .npz).`;
  };
  input.addEventListener('change', () => take(input.files));
  folder.addEventListener('change', () => take(folder.files));
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    take(e.dataTransfer.files);
  });
  clear.addEventListener('click', () => {
    files = [];
    input.value = '';
    folder.value = '';
    show();
  });
  // Files picked while this script was loading (the panel shows with the result, before it) are
  // taken now: their change event came before the listener.
  if (input.files?.length) take(input.files);
  else if (folder.files?.length) take(folder.files);
  else show();
  return {
    // {files, preprocessing} for the check's worker, or null for random inputs.
    samples: () => (files.length ? { files, preprocessing: { resize: resize.value, scale: scale.value, order: order.value } } : null),
    // A new model: whether its input takes a colour order.
    refresh: show,
    inputRange: () => range.value.split(',').map(Number),
  };
}
