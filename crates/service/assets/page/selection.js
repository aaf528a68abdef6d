// Names ticked for "Download selected": kept across sorting, filtering and
// reloads (a name that went away is dropped); one link downloads them as a
// zip (`?archive=zip&name=…`).
import { here, locked, withShare } from './context.js';
import { saveWithToken } from './downloads.js';
import { collator, enc, h } from './dom.js';

export const selected = new Set();
let selLink = null;

/** The ticked rows as one zip: shown once a row is ticked, its link and
 * count follow the ticks. */
export function selectionLink(folder) {
  const file = (folder || 'files') + '.zip';
  const a = h('a', { href: here, download: file, class: 'btn', id: 'download-selected', hidden: true }, '');
  if (locked) a.addEventListener('click', (ev) => (ev.preventDefault(), saveWithToken(a.href, file)));
  selLink = a;
  return a;
}

/** Tick or untick `name`. */
export function select(name, on) {
  if (on) selected.add(name);
  else selected.delete(name);
  updateSelection();
}

/** Drop the ticks of names no longer listed. */
export function keepOnly(names) {
  for (const n of selected) if (!names.has(n)) selected.delete(n);
  updateSelection();
}

function updateSelection() {
  if (!selLink) return;
  const names = Array.from(selected).sort(collator.compare);
  selLink.hidden = !names.length;
  selLink.href = withShare(here + '?archive=zip' + names.map((n) => '&name=' + enc(n)).join(''));
  selLink.textContent = `Download ${names.length} selected (zip)`;
}
