// Signing in and out on a server with users: the page's own form posts to
// the session route (a session cookie), and the header's corner shows who
// is signed in.
import { SESSION, user, users } from './context.js';
import { failure } from './dialogs.js';
import { $, doc, h } from './dom.js';

/** The sign-in form: resolves true once the server set the session
 * cookie, false when cancelled. A refusal is shown in the form. */
export function signIn() {
  return new Promise((resolve) => {
    const d = h('dialog', { 'aria-label': 'Sign in', id: 'signin' });
    const name = h('input', { type: 'text', name: 'username', 'aria-label': 'User name', autocomplete: 'username', required: true });
    const pw = h('input', { type: 'password', name: 'password', 'aria-label': 'Password', autocomplete: 'current-password', required: true });
    const error = h('p', { class: 'error', id: 'signin-error', role: 'alert', hidden: true });
    const cancel = h('button', { type: 'button' }, 'Cancel');
    const okb = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
    const form = h(
      'form',
      { method: 'dialog' },
      h('p', {}, h('strong', {}, 'Sign in')),
      h('label', {}, 'User name ', name),
      h('label', {}, 'Password ', pw),
      error,
      h('div', { class: 'row' }, cancel, okb),
    );
    d.append(form);
    doc.body.append(d);
    let result = false;
    cancel.addEventListener('click', () => d.close());
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      okb.disabled = true;
      error.hidden = true;
      try {
        const r = await fetch(SESSION, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-Wirespeed-Page': '1' },
          body: JSON.stringify({ name: name.value, password: pw.value }),
          credentials: 'same-origin',
        });
        if (r.ok) {
          result = true;
          d.close();
          return;
        }
        if (r.status === 401) {
          error.textContent = 'Wrong user name or password.';
        } else if (r.status === 429) {
          // Too many recent failures (here or for this name): nothing was checked.
          error.textContent = `Too many sign-in attempts: try again in ${r.headers.get('Retry-After') || 'a few'} s.`;
        } else {
          error.textContent = await failure(r, 'Could not sign in');
        }
      } catch (err) {
        error.textContent = 'Could not sign in: ' + err.message;
      }
      error.hidden = false;
      okb.disabled = false;
      pw.select();
    });
    d.addEventListener('close', () => {
      d.remove();
      resolve(result);
    });
    d.showModal();
    name.focus();
  });
}

async function signOut() {
  await fetch(SESSION, { method: 'DELETE', headers: { 'X-Wirespeed-Page': '1' }, credentials: 'same-origin' });
  location.reload();
}

/** The header's corner: who is signed in and Sign out, or Sign in. */
export function setupUser() {
  if (!users) return;
  const header = $('header');
  if (!header) return;
  const box = h('div', { id: 'who' });
  if (user) {
    box.append(
      h('span', {}, 'Signed in as ', h('strong', { id: 'user-name' }, user)),
      h('button', { type: 'button', id: 'signout-btn', onclick: signOut }, 'Sign out'),
    );
  } else {
    box.append(
      h('button', {
        type: 'button',
        id: 'signin-btn',
        class: 'primary',
        onclick: async () => {
          if (await signIn()) location.reload();
        },
      }, 'Sign in'),
    );
  }
  header.append(box);
}
