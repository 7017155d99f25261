// The `qr` step's waiting page: asks whether the code was approved, then submits the step's form.
(function () {
  var script = document.currentScript;
  var form = script.closest('form') || document.querySelector('form');
  var stopped = false;
  function poll() {
    if (stopped) return;
    fetch(script.dataset.status, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: script.dataset.token }),
    })
      .then(function (response) {
        return response.ok ? response.json() : { status: 'expired' };
      })
      .then(function (body) {
        if (body.status === 'approved' || body.status === 'expired' || body.status === 'used') {
          stopped = true;
          form.submit();
          return;
        }
        setTimeout(poll, 1500);
      })
      .catch(function () {
        setTimeout(poll, 3000);
      });
  }
  setTimeout(poll, 1000);
})();
