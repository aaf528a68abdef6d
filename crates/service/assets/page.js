// wirespeed's folder page, the loader: a classic script because the tag the
// server writes for it carries the page's CSP nonce (the policy admits no
// script by origin: an uploaded .js would run as the page's own). The page
// itself is the ES modules in page/ (main.js first); a module fetched by
// an import inherits the nonce of the script that imports it, and the
// server's <link rel="modulepreload"> tags fetch them all at once.
'use strict';
(() => {
  const root = document.documentElement;
  root.classList.add('js');
  import('./page/main.js').catch((err) => {
    // page.css shows the server's table again.
    root.classList.add('failed');
    console.error('the page failed to load: ' + err.message);
  });
})();
