// /inbound-login.html (docs/inbound-sso.md): the one-time login token arrives in the fragment, which
// never reaches a server log or a Referer header. It is posted to the identity API; on success the
// refresh cookie is set and the person goes to return_to (a path of this site only) or the home page.
// Its sentences come in the page's language (data-* of the script tag).
(function () {
  var script = document.currentScript;
  var params = new URLSearchParams(window.location.hash.slice(1));
  history.replaceState(null, '', window.location.pathname);
  var token = params.get('login_token');
  var returnTo = params.get('return_to');
  // Only a path of this site: "/x" but not "//host" or "/\host" (no open redirect).
  var target = returnTo && /^\/(?![/\\])/.test(returnTo) ? returnTo : script.dataset.home;
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
