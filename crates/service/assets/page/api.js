// Requests as the page: the marker header, the token (kept for the tab),
// and on a 401 the question for the token, or with users the sign-in.
import { users } from './context.js';
import { ask } from './dialogs.js';
import { signIn } from './signin.js';

const TOKEN_KEY = 'wirespeed-token';
let token = sessionStorage.getItem(TOKEN_KEY) || '';
let asking = null;

/** The token the page holds ('' for none). */
export const currentToken = () => token;

/** `headers` with the page's marker and the token. */
export function withAuth(headers) {
  // The marker: the server answers the page's 401s without a Basic
  // challenge (session.rs, respond.rs).
  const out = Object.assign({ 'X-Wirespeed-Page': '1' }, headers);
  if (token) out.Authorization = 'Bearer ' + token;
  return out;
}

/** Ask for the token (or, with users, sign in) once for every request
 * that got a 401 meanwhile. */
export function askToken() {
  if (users) {
    if (!asking) asking = signIn().then((ok) => ((asking = null), ok));
    return asking;
  }
  if (!asking) {
    const again = !!token;
    asking = ask({
      title: again ? 'That token was not accepted. Token:' : 'This server needs a token',
      input: { type: 'password', label: 'Token', autocomplete: 'current-password' },
      ok: 'Continue',
    }).then((v) => {
      asking = null;
      if (v) {
        token = v.trim();
        sessionStorage.setItem(TOKEN_KEY, token);
      }
      return !!v;
    });
  }
  return asking;
}

/** fetch with the token; a 401 asks for it and tries again. */
export async function api(url, opts = {}) {
  for (;;) {
    const r = await fetch(url, Object.assign({}, opts, { headers: withAuth(opts.headers) }));
    if (r.status !== 401 || !(await askToken())) return r;
  }
}
