// Host side of the plugin frame protocol (docs/plugins.md). The page tells the frame which step it
// is (idp-step:init, sent only to the frame's origin); the frame answers once with idp-step:submit
// { input }, accepted only from that frame's window AND its origin; the input is posted as the
// step's JSON payload. Anything else is ignored.
(function () {
  var script = document.currentScript;
  var stepId = script.dataset.step;
  var origin = script.dataset.origin;
  var section = script.closest('section') || document;
  var frame = section.querySelector('iframe.plugin-frame');
  var payload = section.querySelector('input[data-frame-payload]');
  var form = script.closest('form');
  var sent = false;
  function init() {
    frame.contentWindow.postMessage({ type: 'idp-step:init', stepId: stepId }, origin);
  }
  // The frame may finish loading while this script is still being fetched, before a load listener
  // exists: greet it now too. A greeting that reaches the frame's initial about:blank is dropped by
  // the browser (origin mismatch), and the load event then greets the real page.
  frame.addEventListener('load', init);
  init();
  window.addEventListener('message', function (event) {
    if (sent || event.origin !== origin || event.source !== frame.contentWindow) return;
    var message = event.data;
    if (!message || message.type !== 'idp-step:submit' || message.stepId !== stepId) return;
    sent = true;
    payload.value = JSON.stringify(message.input === undefined ? null : message.input);
    form.submit();
  });
})();
