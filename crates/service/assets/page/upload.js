// Uploads: the queue (three at a time), the panel with a bar per file and
// one for all (rate and time left), Cancel and Retry. A small file is one
// PUT; above BIG it goes through tus (tus.js) so that it can resume.
import { askToken, withAuth } from './api.js';
import { here, uploadOnly, withShare } from './context.js';
import { $, duration, encPath, h, humanSize } from './dom.js';
import { reloadSoon } from './listing.js';
import { Cancelled, mtimeOf, NetError, statusError, waitForNetwork } from './transfer.js';
import { tusUpload } from './tus.js';

const BIG = 8 * 1024 * 1024; // files above this go through tus
const PARALLEL = 3;
const items = [];
let active = 0;
let panel = null;
const samples = []; // [time, bytes sent in total] over the last seconds

function ensurePanel() {
  if (panel) return panel;
  const bar = h('progress', { max: 1, value: 0, 'aria-label': 'All uploads' });
  const text = h('span', { class: 'text' });
  const clear = h('button', { type: 'button', onclick: clearFinished }, 'Clear finished');
  const list = h('ul');
  panel = h('section', { id: 'uploads', 'aria-label': 'Uploads' }, h('div', { class: 'total' }, text, clear, bar), list);
  panel.wsBar = bar;
  panel.wsText = text;
  panel.wsList = list;
  const main = $('main');
  main.parentNode.insertBefore(panel, main);
  return panel;
}

function clearFinished() {
  for (let i = items.length - 1; i >= 0; i--) {
    if (items[i].state === 'done' || items[i].state === 'cancelled') {
      items[i].li.remove();
      items.splice(i, 1);
    }
  }
  if (!items.length) {
    panel.remove();
    panel = null;
  } else updateTotal();
}

/** Queue `files` ({file, path} with the path inside a chosen folder). */
export function addFiles(files) {
  if (!files.length) return;
  const p = ensurePanel();
  for (const { file, path } of files) {
    const it = { file, path, loaded: 0, state: 'queued', xhr: null, stopTransfer: null, t0: 0, wake: null };
    it.bar = h('progress', { max: file.size || 1, value: 0, 'aria-label': path });
    it.info = h('span', { class: 'info' }, 'Waiting');
    it.cancel = h('button', { type: 'button', onclick: () => cancel(it) }, 'Cancel');
    it.retry = h('button', { type: 'button', hidden: true, onclick: () => retry(it) }, 'Retry');
    it.li = h('li', { class: 'queued' }, h('span', { class: 'name' }, path), it.bar, it.info, h('span', { class: 'ctl' }, it.cancel, it.retry));
    p.wsList.append(it.li);
    items.push(it);
  }
  pump();
}

function setState(it, state, info) {
  it.state = state;
  it.li.className = state;
  if (info != null) it.info.textContent = info;
  const live = state === 'queued' || state === 'active';
  it.cancel.hidden = !live;
  it.retry.hidden = live || state === 'done' || it.permanent;
}

function cancel(it) {
  const wasActive = it.state === 'active';
  setState(it, 'cancelled', 'Cancelled');
  if (it.xhr) it.xhr.abort();
  if (it.wake) it.wake();
  if (it.stopTransfer) it.stopTransfer();
  if (!wasActive) updateTotal();
}

function retry(it) {
  if (it.permanent) return;
  it.loaded = 0;
  setState(it, 'queued', 'Waiting');
  pump();
}

function pump() {
  while (active < PARALLEL) {
    const it = items.find((i) => i.state === 'queued');
    if (!it) break;
    run(it);
  }
  updateTotal();
}

async function run(it) {
  active++;
  setState(it, 'active', 'Starting');
  it.t0 = performance.now();
  it.startLoaded = null; // a resumed tus upload counts its rate from its offset
  try {
    const sent = it.file.size > BIG && (await tusUpload(it, (l) => tusProgress(it, l)));
    if (!sent) await putUpload(it);
    it.loaded = it.file.size;
    it.bar.value = it.file.size;
    setState(it, 'done', `Done · ${humanSize(it.file.size)}`);
    if (!uploadOnly) reloadSoon();
  } catch (err) {
    // A refusal that a retry cannot change gets no Retry button.
    it.permanent = !!err.permanent;
    if (it.state !== 'cancelled') setState(it, 'failed', 'Failed: ' + err.message);
  } finally {
    it.xhr = null;
    it.stopTransfer = null;
    active--;
    pump();
  }
}

/** One XHR; resolves with it when any answer arrives. */
function send(it, method, url, headers, body, onprogress) {
  return new Promise((resolve, reject) => {
    if (it.state === 'cancelled') return reject(new Cancelled('cancelled'));
    const x = new XMLHttpRequest();
    it.xhr = x;
    x.open(method, url);
    for (const [k, v] of Object.entries(withAuth(headers))) x.setRequestHeader(k, v);
    if (onprogress) x.upload.addEventListener('progress', (ev) => onprogress(ev.loaded));
    x.addEventListener('load', () => resolve(x));
    x.addEventListener('error', () => reject(new NetError('the network failed')));
    x.addEventListener('timeout', () => reject(new NetError('timed out')));
    x.addEventListener('abort', () => reject(new Cancelled('cancelled')));
    x.send(body);
  });
}

async function putUpload(it) {
  const url = withShare(here + encPath(it.path));
  for (let failures = 0; ; ) {
    let x;
    try {
      x = await send(it, 'PUT', url, Object.assign({ 'Content-Type': 'application/octet-stream' }, mtimeOf(it)), it.file, (l) => progress(it, l));
    } catch (err) {
      if (!(err instanceof NetError)) throw err;
      await waitForNetwork(it, ++failures);
      it.t0 = performance.now();
      continue;
    }
    if (x.status === 401 && (await askToken())) continue;
    if (x.status >= 200 && x.status < 300) return;
    throw statusError(x.status, x.responseText, 'refused');
  }
}

/** tus' progress: the rate counts from where this attempt resumed. */
function tusProgress(it, loaded) {
  if (it.startLoaded == null) {
    it.startLoaded = loaded;
    it.t0 = performance.now();
  }
  progress(it, loaded);
}

function progress(it, loaded) {
  it.loaded = loaded;
  it.bar.value = loaded;
  const secs = (performance.now() - it.t0) / 1000;
  const rate = secs > 0.2 ? (loaded - it.startLoaded) / secs : 0;
  const left = rate > 0 ? (it.file.size - loaded) / rate : Infinity;
  it.info.textContent =
    `${humanSize(loaded)} of ${humanSize(it.file.size)}` +
    (rate > 0 ? ` · ${humanSize(Math.round(rate))}/s · ${duration(left)} left` : '');
  scheduleTotal();
}

let totalQueued = false;
function scheduleTotal() {
  if (totalQueued) return;
  totalQueued = true;
  requestAnimationFrame(() => {
    totalQueued = false;
    updateTotal();
  });
}

function updateTotal() {
  if (!panel) return;
  let total = 0;
  let loaded = 0;
  let done = 0;
  let counted = 0;
  for (const it of items) {
    if (it.state === 'cancelled') continue;
    counted++;
    total += it.file.size;
    loaded += it.state === 'done' ? it.file.size : it.loaded;
    if (it.state === 'done') done++;
  }
  const now = performance.now();
  samples.push([now, loaded]);
  while (samples.length > 2 && now - samples[0][0] > 3000) samples.shift();
  const [t0, b0] = samples[0];
  const rate = now - t0 > 300 ? ((loaded - b0) * 1000) / (now - t0) : 0;
  panel.wsBar.max = total || 1;
  panel.wsBar.value = loaded;
  const running = items.some((i) => i.state === 'active' || i.state === 'queued');
  panel.wsText.textContent =
    `${done} of ${counted} uploaded · ${humanSize(loaded)} of ${humanSize(total)}` +
    (running && rate > 0 ? ` · ${humanSize(Math.round(rate))}/s · ${duration((total - loaded) / rate)} left` : '');
}
