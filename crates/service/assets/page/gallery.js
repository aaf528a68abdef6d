// The viewer: a full-screen layer over the listing that shows one file at
// a time — pictures, video and audio (the browser's players; Range makes
// seeking work), text, code, CSV and Markdown (render.js) — and steps
// through the folder's files with ←/→, swipes or its buttons; Esc closes.
// Text opens in a small editor where the principal may replace the file:
// it saves with If-Match (the ETag the text came with), so a save over a
// file changed meanwhile is refused (412) and said, never lost silently.
import { api } from './api.js';
import { canDelete, canWrite } from './context.js';
import { failure } from './dialogs.js';
import { doc, h, humanSize } from './dom.js';
import { isText, kindOf } from './kinds.js';
import { csvTable, markdown } from './render.js';

/** Text bigger than this opens as the file itself (no viewer, no editor). */
const MAX_TEXT = 4 << 20;

let layer = null;
let stage = null;
let caption = null;
let items = [];
let at = -1;
let urlOf = null;

/** Whether `e` opens in the viewer. */
export const viewable = (e) => !e.dir && kindOf(e.name) !== '' && !(isText(kindOf(e.name)) && e.size > MAX_TEXT);

/** Opens `entry` among `entries` (the listing as shown); `link(e)` is a
 * file's URL (with the share link on). */
export function openViewer(entry, entries, link) {
  items = entries.filter(viewable);
  urlOf = link;
  at = items.indexOf(entry);
  if (at < 0) return false;
  if (!layer) build();
  layer.hidden = false;
  doc.documentElement.classList.add('viewing');
  show();
  layer.focus();
  return true;
}

function build() {
  const btn = (cls, label, text, onclick) => h('button', { type: 'button', class: cls, 'aria-label': label, title: label, onclick }, text);
  stage = h('div', { class: 'stage' });
  caption = h('div', { class: 'caption' });
  layer = h(
    'div',
    { id: 'viewer', role: 'dialog', 'aria-modal': 'true', 'aria-label': 'Viewer', tabindex: '-1', hidden: true },
    h('div', { class: 'top' }, caption, btn('close', 'Close (Esc)', '\u2715', close)),
    btn('prev', 'Previous (\u2190)', '\u2039', () => step(-1)),
    stage,
    btn('next', 'Next (\u2192)', '\u203A', () => step(1)),
  );
  layer.addEventListener('keydown', (ev) => {
    if (ev.target.closest('textarea')) {
      if (ev.key === 'Escape') ev.target.blur();
      return;
    }
    if (ev.key === 'Escape') close();
    else if (ev.key === 'ArrowLeft') step(-1);
    else if (ev.key === 'ArrowRight') step(1);
    else return;
    ev.preventDefault();
  });
  // Swipes: a mostly horizontal move of 50 px or more steps.
  let x0 = null;
  let y0 = 0;
  layer.addEventListener('pointerdown', (ev) => {
    if (ev.pointerType !== 'mouse') [x0, y0] = [ev.clientX, ev.clientY];
  });
  layer.addEventListener('pointerup', (ev) => {
    if (x0 == null) return;
    const dx = ev.clientX - x0;
    const dy = ev.clientY - y0;
    x0 = null;
    if (Math.abs(dx) > 50 && Math.abs(dx) > 2 * Math.abs(dy)) step(dx < 0 ? 1 : -1);
  });
  doc.body.append(layer);
}

function close() {
  layer.hidden = true;
  stage.replaceChildren(); // stops a playing video
  doc.documentElement.classList.remove('viewing');
}

function step(d) {
  if (!items.length) return;
  at = (at + d + items.length) % items.length;
  show();
}

function show() {
  const e = items[at];
  const url = urlOf(e);
  const kind = kindOf(e.name);
  caption.replaceChildren(
    h('a', { href: url, class: 'name', target: '_blank', rel: 'noopener' }, e.name),
    h('span', { class: 'muted' }, ` ${humanSize(e.size)} \u00b7 ${at + 1} / ${items.length}`),
  );
  layer.dataset.kind = kind;
  if (kind === 'image') stage.replaceChildren(h('img', { src: url, alt: e.name }));
  else if (kind === 'video') stage.replaceChildren(h('video', { src: url, controls: true, autoplay: true, preload: 'metadata' }));
  else if (kind === 'audio') stage.replaceChildren(h('audio', { src: url, controls: true, autoplay: true }));
  else showText(e, url, kind);
}

async function showText(e, url, kind) {
  const mine = items[at];
  stage.replaceChildren(h('p', { class: 'muted' }, 'Loading\u2026'));
  const r = await api(url, { cache: 'no-store' });
  if (items[at] !== mine) return; // stepped on meanwhile
  if (!r.ok) {
    stage.replaceChildren(h('p', { class: 'error' }, await failure(r, 'Could not open the file')));
    return;
  }
  const text = await r.text();
  const view = h('div', { class: 'text' });
  const render = (t) => {
    if (kind === 'markdown') return markdown(t);
    if (kind === 'csv') return csvTable(t, /\.tsv$/i.test(e.name) ? '\t' : ',');
    return h('pre', {}, t);
  };
  view.append(render(text));
  const tools = h('div', { class: 'tools' });
  // Replacing a file needs the right to write and to remove what is there.
  if (canWrite && canDelete) {
    tools.append(h('button', { type: 'button', class: 'edit', onclick: () => edit(e, url, text, r.headers.get('ETag')) }, 'Edit'));
  }
  stage.replaceChildren(h('div', { class: 'doc' }, tools, view));
}

function edit(e, url, text, etag) {
  const area = h('textarea', { class: 'editor', spellcheck: 'false', 'aria-label': 'Text of ' + e.name });
  area.value = text;
  const note = h('p', { class: 'note', role: 'status' });
  let tag = etag;
  const save = h('button', { type: 'button', class: 'primary save' }, 'Save');
  save.addEventListener('click', async () => {
    save.disabled = true;
    note.className = 'note';
    note.textContent = 'Saving\u2026';
    const headers = { 'Content-Type': 'text/plain; charset=utf-8' };
    if (tag) headers['If-Match'] = tag;
    const r = await api(url, { method: 'PUT', headers, body: area.value });
    save.disabled = false;
    if (r.ok) {
      tag = r.headers.get('ETag') || (await api(url, { method: 'HEAD', cache: 'no-store' })).headers.get('ETag');
      note.textContent = 'Saved.';
    } else if (r.status === 412) {
      note.className = 'note error';
      note.textContent =
        'Not saved: someone changed this file after you opened it. Your text is still here — copy it, then reopen the file to see theirs.';
    } else {
      note.className = 'note error';
      note.textContent = await failure(r, 'Not saved');
    }
  });
  const done = h('button', { type: 'button', onclick: () => show() }, 'Close editor');
  stage.replaceChildren(h('div', { class: 'doc editing' }, h('div', { class: 'tools' }, save, done, note), area));
  area.focus();
}
