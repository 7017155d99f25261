// Finishes an RP-initiated logout: the xsrf value of the engine's logout form arrives in the fragment.
// As the logout is sent, every other tab of the service hears of it (spec: a broadcast message of type
// logout) and resets its state.
(function () {
  var params = new URLSearchParams(window.location.hash.slice(1));
  history.replaceState(null, '', window.location.pathname);
  var xsrf = params.get('xsrf');
  var form = document.getElementById('logout');
  var progress = document.getElementById('progress');
  var nothing = document.getElementById('nothing');
  var broadcast = function () {
    if ('BroadcastChannel' in window) new BroadcastChannel('identity').postMessage({ type: 'logout' });
  };
  if (!xsrf) {
    form.hidden = true;
    nothing.hidden = false;
    return;
  }
  nothing.hidden = true;
  form.elements.xsrf.value = xsrf;
  form.addEventListener('submit', broadcast);
  if (params.get('confirm') === '1') {
    form.hidden = false;
    return;
  }
  form.hidden = true;
  progress.hidden = false;
  broadcast();
  form.submit();
})();
