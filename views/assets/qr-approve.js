// /qr-approve.html: the signed-in device that scanned a QR code approves the other device's sign-in.
// The token arrives in the fragment; the session is this browser's refresh cookie. Its sentences come
// in the page's language (data-* of the script tag).
(function () {
  var script = document.currentScript;
  var token = new URLSearchParams(window.location.hash.slice(1)).get('token');
  history.replaceState(null, '', window.location.pathname);
  // The address no longer shows the token; the language links carry it, so switching keeps the approval.
  // (The switch comes after this script in the page.)
  if (token) {
    document.addEventListener('DOMContentLoaded', function () {
      document.querySelectorAll('nav.languages a').forEach(function (link) {
        link.hash = 'token=' + encodeURIComponent(token);
      });
    });
  }
  function show(id, reason) {
    ['checking', 'ask', 'done', 'failed'].forEach(function (name) {
      document.getElementById(name).hidden = name !== id;
    });
    if (reason) document.getElementById('failed-reason').textContent = reason;
  }
  if (!token) return show('failed', script.dataset.noCode);
  // Who is asking, before anyone can approve: the requesting device's browser, address and time. A link
  // someone else sent ("click to confirm") shows their device, not this one. Text only, never markup.
  function describe(requester) {
    var unknown = script.dataset.unknown;
    var lang = document.documentElement.lang || undefined;
    var when = new Date(requester.requestedAt);
    document.getElementById('requester-browser').textContent = requester.browser || unknown;
    document.getElementById('requester-ip').textContent = requester.ip || unknown;
    document.getElementById('requester-time').textContent = isNaN(when.getTime())
      ? unknown
      : when.toLocaleString(lang, { dateStyle: 'medium', timeStyle: 'short' });
    // What the approval would sign them in to: an application (by name), or this service itself.
    document.getElementById('requester-application').textContent =
      requester.application || script.dataset.thisService;
  }
  var authorization;
  fetch(script.dataset.refresh, { method: 'POST', credentials: 'same-origin' })
    .then(function (response) {
      if (!response.ok) throw new Error('signed-out');
      return response.json();
    })
    .then(function (session) {
      authorization = 'Bearer ' + session.accessToken;
      return fetch(script.dataset.request, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: authorization },
        body: JSON.stringify({ token: token }),
      })
        .then(function (response) {
          return response.ok ? response.json() : undefined;
        })
        .catch(function () {
          return undefined;
        });
    })
    .then(function (requester) {
      // Unknown, expired, used or approved already (or not described): nothing to approve.
      if (!requester) return show('failed');
      describe(requester);
      show('ask');
      document.getElementById('approve').addEventListener('click', function () {
        fetch(script.dataset.approve, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: authorization },
          body: JSON.stringify({ token: token }),
        }).then(function (response) {
          show(response.ok ? 'done' : 'failed');
        });
      });
    })
    .catch(function () {
      show('failed', script.dataset.signInFirst);
    });
})();
