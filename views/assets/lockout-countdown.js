// Brute-force lockout (spec: "toast with a countdown"): counts the wait down and keeps the form's
// submit button disabled until it is over. The server gives the sentence for every second (and minute)
// of the wait in the page's language (`data-waits`: plural forms by CLDR rules, never guessed here).
// Without script, the server's message still gives the wait.
(function () {
  const notice = document.querySelector('[data-retry-after]');
  if (!notice) return;
  const form = notice.closest('form');
  const button = form && form.querySelector('button[type="submit"]');
  const texts = JSON.parse(notice.getAttribute('data-waits') || '{}');
  let remaining = Number(notice.getAttribute('data-retry-after'));
  const sentence = (seconds) =>
    seconds < 90
      ? texts.seconds && texts.seconds[seconds]
      : texts.minutes && texts.minutes[Math.ceil(seconds / 60)];
  const render = () => {
    if (remaining <= 0) {
      if (texts.ready) notice.textContent = texts.ready;
      if (button) button.disabled = false;
      return false;
    }
    const text = sentence(remaining);
    if (text) notice.textContent = text;
    if (button) button.disabled = true;
    return true;
  };
  if (!render()) return;
  const timer = setInterval(() => {
    remaining -= 1;
    if (!render()) clearInterval(timer);
  }, 1000);
})();
