// The grid: the listing as tiles, a thumbnail for each picture and video
// (`?thumbnail`, loaded lazily as tiles come into view, so only a
// screenful is asked for at once; a thumbnail that cannot be made falls
// back to the file's icon) and a glyph for the rest. A button in the bar
// switches between the table and the grid; the choice is kept. The
// server's listing markup stays as tools read it: this is the page's own.
import { $, doc, h } from './dom.js';
import { hasThumbnail } from './kinds.js';

const MODE_KEY = 'wirespeed-view';
const SLICE = 500; // tiles added per step after the first
let grid = null;
let on = localStorage.getItem(MODE_KEY) === 'grid';
let generation = 0;

/** Whether the grid is shown. */
export const gridOn = () => on;

/** The button that switches views, for the toolbar. */
export function gridButton(redraw) {
  const b = h('button', { type: 'button', id: 'view-btn', 'aria-pressed': String(on) }, on ? 'List' : 'Grid');
  b.addEventListener('click', () => {
    on = !on;
    localStorage.setItem(MODE_KEY, on ? 'grid' : 'list');
    b.textContent = on ? 'List' : 'Grid';
    b.setAttribute('aria-pressed', String(on));
    redraw();
  });
  return b;
}

/** Shows `shown` (sorted, filtered entries) as tiles, or hides the grid. */
export function renderGrid(shown, hrefOf, thumbOf) {
  const table = $('#list');
  doc.documentElement.classList.toggle('grid-view', on);
  if (!on) {
    if (grid) grid.replaceChildren();
    return;
  }
  if (!grid) {
    grid = h('ul', { id: 'grid', 'aria-label': 'Files' });
    table.after(grid);
  }
  const gen = ++generation;
  const tile = (e) => {
    const pic = !e.dir && hasThumbnail(e.name)
      ? h('img', { src: thumbOf(e), alt: '', loading: 'lazy', decoding: 'async', onerror: (ev) => ev.target.replaceWith(glyph(e)) })
      : glyph(e);
    const a = h('a', { href: hrefOf(e), class: 'tile' }, h('span', { class: 'pic' }, pic), h('span', { class: 'label' }, e.name + (e.dir ? '/' : '')));
    a.wsEntry = e;
    return h('li', e.dir ? { class: 'd' } : {}, a);
  };
  const slice = (from, to) => {
    const frag = doc.createDocumentFragment();
    for (let i = from; i < to; i++) frag.append(tile(shown[i]));
    return frag;
  };
  grid.replaceChildren(slice(0, Math.min(SLICE, shown.length)));
  let next = SLICE;
  const more = () => {
    if (gen !== generation || next >= shown.length) return;
    grid.append(slice(next, Math.min(next + SLICE, shown.length)));
    next += SLICE;
    setTimeout(more, 0);
  };
  setTimeout(more, 0);
}

function glyph(e) {
  return h('span', { class: 'glyph', 'aria-hidden': 'true' }, e.dir ? '\u{1F4C1}' : '\u{1F4C4}');
}

/** Clicks on tiles (and on the table's names) call `open(entry, ev)`. */
export function onOpen(container, open) {
  container.addEventListener('click', (ev) => {
    if (ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return;
    const a = ev.target.closest('a');
    const e = a && (a.wsEntry || a.closest('tr')?.wsEntry);
    if (e && !e.dir && open(e)) ev.preventDefault();
  });
}
