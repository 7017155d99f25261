// /inbound-login.html (docs/inbound-sso.md): the one-time login token arrives in the fragment, which
// never reaches a server log or a Referer header. It is posted to the identity API; on success the
// refresh cookie is set and the person goes to return_to (a path of this site only) or the home page.
// Its sentences come in the page's language (data-* of the script tag).
(function () {
  var script = document.currentScript;
  var params = new URLSearchParams(window.location.hash.slice(1));
  history.replaceState(null, '', window.location.pathname);
  var token = params.get('login_token');
  var target = pathOfThisSite(params.get('return_to')) || script.dataset.home;

  // return_to is only ever a path of this site (no open redirect). A pattern on the text is not enough:
  // the browser's URL parser drops tabs and newlines and reads "\" as "/", so "/<TAB>/host" would become
  // "//host", another site. So: no white space or control character at all, then resolve it as the
  // browser will and keep it only if it stays on this origin. Its resolved path may begin with "//" once
  // dot segments are gone ("/.//host"), which would read as another host: refused too.
  function pathOfThisSite(value) {
    // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
    if (!value || value.charAt(0) !== '/' || /[\u0000-\u001f\u007f-\u009f\s]/.test(value)) return null;
    var url;
    try {
      url = new URL(value, window.location.origin);
    } catch {
      return null;
    }
    return url.origin === window.location.origin && !url.pathname.startsWith('//') ? url.href : null;
  }

  function fail(reason) {
    document.getElementById('progress').hidden = true;
    document.getElementById('failed').hidden = false;
    if (reason) document.getElementById('failed-reason').textContent = reason;
  }
  if (!token) {
    fail(script.dataset.noToken);
    return;
  }
  fetch(script.dataset.endpoint, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ loginToken: token }),
  })
    .then(function (response) {
      if (!response.ok) return fail();
      // The session is in the refresh cookie now; the landing page gets its access token from it.
      window.location.replace(target);
    })
    .catch(function () {
      fail(script.dataset.unreachable);
    });
})();
