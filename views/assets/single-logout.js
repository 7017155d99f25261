// Finishes an RP-initiated logout: the xsrf value of the engine's logout form arrives in the fragment.
(function () {
  var params = new URLSearchParams(window.location.hash.slice(1));
  history.replaceState(null, '', window.location.pathname);
  var xsrf = params.get('xsrf');
  var form = document.getElementById('logout');
  if (!xsrf) {
    document.getElementById('progress').hidden = true;
    document.getElementById('nothing').hidden = false;
    return;
  }
  form.elements.xsrf.value = xsrf;
  if (params.get('confirm') === '1') {
    document.getElementById('progress').hidden = true;
    form.hidden = false;
    return;
  }
  form.submit();
})();
