// What a file is, by its name: which open in the page's viewer (pictures,
// audio, video, text) and which have a thumbnail (`?thumbnail`). PDFs and
// everything else open as the browser opens them.
const ext = (name) => {
  const i = name.lastIndexOf('.');
  return i < 0 ? '' : name.slice(i + 1).toLowerCase();
};
const set = (s) => new Set(s.split(' '));
const IMAGE = set('jpg jpeg png gif webp avif svg bmp ico');
const VIDEO = set('mp4 m4v webm mov ogv mkv');
const AUDIO = set('mp3 m4a aac oga ogg opus wav flac');
const MARKDOWN = set('md markdown');
const CSV = set('csv tsv');
const TEXT = set(
  'txt text log md markdown csv tsv json jsonl ndjson xml yaml yml toml ini cfg conf env ' +
    'rs go py rb pl php js mjs cjs ts tsx jsx java kt swift c h cc cpp hpp cs sh bash zsh fish ' +
    'sql css scss html htm vue svelte lua r dart ex exs erl hs ml scala gradle make cmake dockerfile gitignore diff patch',
);
const THUMB = set('jpg jpeg png gif webp');

/** 'image', 'video', 'audio', 'markdown', 'csv', 'text' or '' (no viewer). */
export function kindOf(name) {
  const x = ext(name);
  if (IMAGE.has(x)) return 'image';
  if (VIDEO.has(x)) return 'video';
  if (AUDIO.has(x)) return 'audio';
  if (MARKDOWN.has(x)) return 'markdown';
  if (CSV.has(x)) return 'csv';
  if (TEXT.has(x) || /^(readme|license|makefile|dockerfile)$/i.test(name)) return 'text';
  return '';
}

/** Whether the server may make a thumbnail (a video's needs ffmpeg there:
 * the grid falls back to its icon when the answer is not a picture). */
export const hasThumbnail = (name) => THUMB.has(ext(name)) || VIDEO.has(ext(name));

/** Whether the page shows the file as text (and may edit it). */
export const isText = (kind) => kind === 'text' || kind === 'markdown' || kind === 'csv';
