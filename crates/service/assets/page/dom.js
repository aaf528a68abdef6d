// Small helpers for building the page: elements (names only ever reach
// the page as text: textContent and attributes, never markup), URL
// encoding and the formats of sizes, durations and times.
export const doc = document;
export const $ = (sel, el = doc) => el.querySelector(sel);
export const enc = (name) => encodeURIComponent(name);
export const encPath = (p) => p.split('/').map(enc).join('/');

/** An element with attributes and text or element children. */
export function h(tag, attrs, ...kids) {
  const el = doc.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v == null) continue;
    if (k === 'value') el.value = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  el.append(...kids);
  return el;
}

export function humanSize(n) {
  if (n < 1024) return n + ' B';
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return v.toFixed(1) + ' ' + units[i];
}

export function duration(s) {
  if (!isFinite(s)) return '';
  s = Math.round(s);
  const m = Math.floor(s / 60);
  const hh = Math.floor(m / 60);
  const pad = (x) => String(x).padStart(2, '0');
  return hh ? `${hh}:${pad(m % 60)}:${pad(s % 60)}` : `${m}:${pad(s % 60)}`;
}

export const dtf = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
export const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });
