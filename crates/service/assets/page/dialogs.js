// Messages and dialogs: the toast, modal forms, a link to copy, and the
// text of a failed request.
import { $, doc, h } from './dom.js';

let toastTimer = 0;
export function toast(text) {
  let t = $('#toast');
  if (!t) {
    t = h('div', { id: 'toast', role: 'status', 'aria-live': 'polite' });
    doc.body.append(t);
  }
  t.textContent = text;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (t.hidden = true), 5000);
}

/** Show dialog `d` holding `form`, with Cancel and `okb` as its last
 * row: resolves to `value()` when the form is sent, null when closed. */
export function modal(d, form, okb, value, focus) {
  return new Promise((resolve) => {
    const cancel = h('button', { type: 'button' }, 'Cancel');
    form.append(h('div', { class: 'row' }, cancel, okb));
    d.append(form);
    doc.body.append(d);
    let result = null;
    cancel.addEventListener('click', () => d.close());
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      result = value();
      d.close();
    });
    d.addEventListener('close', () => {
      d.remove();
      resolve(result);
    });
    d.showModal();
    focus();
  });
}

/** A modal asking for a value (or a yes): resolves to it, or null. */
export function ask({ title, input, ok, danger }) {
  const d = h('dialog', { 'aria-label': title });
  const form = h('form', { method: 'dialog' });
  form.append(h('p', {}, h('strong', {}, title)));
  let field = null;
  if (input) {
    field = h('input', {
      type: input.type || 'text',
      'aria-label': input.label,
      name: 'value',
      value: input.value || '',
      autocomplete: input.autocomplete || 'off',
      required: true,
    });
    form.append(field);
  }
  const okb = h('button', { type: 'submit', class: danger ? 'danger' : 'primary' }, ok);
  return modal(
    d,
    form,
    okb,
    () => (field ? field.value : true),
    () => {
      if (field) {
        field.focus();
        if (input.select != null) field.setSelectionRange(0, input.select);
      } else {
        okb.focus();
      }
    },
  );
}

export async function copyLink(url) {
  try {
    await navigator.clipboard.writeText(url);
    toast('Link copied');
  } catch (_) {
    // No clipboard (a plain-http origin, or denied): show the link to copy.
    await ask({ title: 'Copy this link', input: { value: url, label: 'Link', select: url.length }, ok: 'Done' });
  }
}

/** "what: status — the start of the body" for a failed response. */
export async function failure(r, what) {
  let text = '';
  try {
    text = (await r.text()).trim();
  } catch (_) {
    // the body is only a detail
  }
  return `${what}: ${r.status}${text ? ' — ' + text.slice(0, 200) : ''}`;
}
