// Text shown by the viewer: Markdown rendered and CSV as a table, built
// with DOM calls only (text nodes and attributes, never markup), so
// nothing in a file becomes a tag: a <script> in a Markdown file is shown
// as the text it is. Links keep only http(s), mailto and relative targets.
import { h } from './dom.js';

const MAX_CSV_ROWS = 2000;

/** A CSV (or TSV, by `sep`) as a table; the first row is its head. */
export function csvTable(text, sep) {
  const rows = parseCsv(text, sep);
  const table = h('table', { class: 'csv' });
  rows.slice(0, MAX_CSV_ROWS).forEach((cells, i) => {
    const tag = i === 0 ? 'th' : 'td';
    table.append(h('tr', {}, ...cells.map((c) => h(tag, {}, c))));
  });
  const more = rows.length > MAX_CSV_ROWS ? h('p', { class: 'muted' }, `${rows.length - MAX_CSV_ROWS} more rows not shown.`) : '';
  return h('div', { class: 'csv-wrap' }, table, more);
}

function parseCsv(text, sep) {
  const rows = [];
  let row = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"' && cell === '') quoted = true;
    else if (c === sep) {
      row.push(cell);
      cell = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      if (rows.length > MAX_CSV_ROWS) return rows;
    } else cell += c;
  }
  if (cell !== '' || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** Markdown (CommonMark's common blocks and inlines) as elements. */
export function markdown(text) {
  const out = h('div', { class: 'md' });
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (/^\s*$/.test(line)) {
      i++;
    } else if ((m = /^(`{3,}|~{3,})\s*(\S*)/.exec(line))) {
      const fence = m[1];
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith(fence); i++) code.push(lines[i]);
      i++;
      out.append(h('pre', {}, h('code', m[2] ? { 'data-lang': m[2] } : {}, code.join('\n'))));
    } else if ((m = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
      out.append(h('h' + m[1].length, {}, ...inline(m[2])));
      i++;
    } else if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.append(h('hr', {}));
      i++;
    } else if (/^\s{0,3}>/.test(line)) {
      const quote = [];
      for (; i < lines.length && /^\s{0,3}>/.test(lines[i]); i++) quote.push(lines[i].replace(/^\s{0,3}>\s?/, ''));
      out.append(h('blockquote', {}, ...markdown(quote.join('\n')).childNodes));
    } else if (/^\s{0,3}([-*+]|\d{1,9}[.)])\s+/.test(line)) {
      const ordered = /^\s{0,3}\d/.test(line);
      const list = h(ordered ? 'ol' : 'ul', {});
      for (; i < lines.length && /^\s{0,3}([-*+]|\d{1,9}[.)])\s+/.test(lines[i]); i++) {
        list.append(h('li', {}, ...inline(lines[i].replace(/^\s{0,3}([-*+]|\d{1,9}[.)])\s+/, ''))));
      }
      out.append(list);
    } else if (/^( {4}|\t)/.test(line)) {
      const code = [];
      for (; i < lines.length && /^( {4}|\t)/.test(lines[i]); i++) code.push(lines[i].replace(/^( {4}|\t)/, ''));
      out.append(h('pre', {}, h('code', {}, code.join('\n'))));
    } else {
      const para = [];
      for (; i < lines.length && !/^\s*$/.test(lines[i]) && !/^(#{1,6}\s|`{3}|~{3}|\s{0,3}>)/.test(lines[i]); i++) para.push(lines[i].trim());
      out.append(h('p', {}, ...inline(para.join('\n'))));
    }
  }
  return out;
}

const SAFE_HREF = /^(https?:|mailto:|[^:]*$)/i;

/** Inline Markdown: code, links, images (as links), strong, emphasis. */
function inline(text) {
  const out = [];
  const re = /`([^`]+)`|!?\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*]+)\*|_([^_]+)_|<(https?:\/\/[^>\s]+)>/g;
  let at = 0;
  let m;
  while ((m = re.exec(text))) {
    if (m.index > at) out.push(text.slice(at, m.index));
    at = re.lastIndex;
    if (m[1] != null) out.push(h('code', {}, m[1]));
    else if (m[3] != null) {
      const href = SAFE_HREF.test(m[3]) ? m[3] : null;
      out.push(href ? h('a', { href, rel: 'noopener noreferrer' }, ...inline(m[2])) : m[0]);
    } else if (m[4] != null || m[5] != null) out.push(h('strong', {}, ...inline(m[4] ?? m[5])));
    else if (m[6] != null || m[7] != null) out.push(h('em', {}, ...inline(m[6] ?? m[7])));
    else if (m[8] != null) out.push(h('a', { href: m[8], rel: 'noopener noreferrer' }, m[8]));
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}
