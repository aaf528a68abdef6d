// Dropping files and folders anywhere on the page uploads them, folders
// with the tree inside them.
import { doc, h } from './dom.js';
import { toast } from './dialogs.js';
import { addFiles } from './upload.js';

async function walk(entry, prefix, out) {
  if (entry.isFile) {
    const file = await new Promise((res, rej) => entry.file(res, rej));
    out.push({ file, path: prefix + entry.name });
  } else if (entry.isDirectory) {
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
      if (!batch.length) break;
      for (const child of batch) await walk(child, prefix + entry.name + '/', out);
    }
  }
}

/** Files of a drop, with their paths inside dropped folders. */
async function dropped(dt) {
  const out = [];
  const folders = [];
  // Entries must be taken now: the list is emptied after the event.
  for (const item of Array.from(dt.items || [])) {
    if (item.kind !== 'file') continue;
    const entry = item.webkitGetAsEntry ? item.webkitGetAsEntry() : null;
    if (entry && entry.isDirectory) folders.push(entry);
    else {
      const file = item.getAsFile();
      if (file) out.push({ file, path: file.name });
    }
  }
  if (!out.length && !folders.length) for (const file of Array.from(dt.files || [])) out.push({ file, path: file.name });
  for (const f of folders) await walk(f, '', out);
  return out;
}

export function setupDrop() {
  let depth = 0;
  const hasFiles = (ev) => ev.dataTransfer && Array.from(ev.dataTransfer.types || []).includes('Files');
  doc.body.append(h('div', { id: 'drop', 'aria-hidden': 'true' }, 'Drop files or folders to upload here'));
  doc.addEventListener('dragenter', (ev) => {
    if (!hasFiles(ev)) return;
    ev.preventDefault();
    depth++;
    doc.body.classList.add('dragging');
  });
  doc.addEventListener('dragover', (ev) => {
    if (!hasFiles(ev)) return;
    ev.preventDefault();
    ev.dataTransfer.dropEffect = 'copy';
  });
  doc.addEventListener('dragleave', () => {
    if (--depth <= 0) {
      depth = 0;
      doc.body.classList.remove('dragging');
    }
  });
  doc.addEventListener('drop', (ev) => {
    ev.preventDefault();
    depth = 0;
    doc.body.classList.remove('dragging');
    if (ev.dataTransfer) dropped(ev.dataTransfer).then(addFiles, (err) => toast('Could not read the drop: ' + err.message));
  });
}
