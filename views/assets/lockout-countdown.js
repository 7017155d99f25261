// Brute-force lockout (spec: "toast with a countdown"): counts the wait down and keeps the form's
// submit button disabled until it is over. Without script, the server's message still gives the wait.
(function () {
  const notice = document.querySelector('[data-retry-after]');
  if (!notice) return;
  const form = notice.closest('form');
  const button = form && form.querySelector('button[type="submit"]');
  let remaining = Number(notice.getAttribute('data-retry-after'));
  const describe = (seconds) =>
    seconds < 90 ? seconds + (seconds === 1 ? ' second' : ' seconds') : Math.ceil(seconds / 60) + ' minutes';
  const render = () => {
    if (remaining <= 0) {
      notice.textContent = 'You can try again now.';
      if (button) button.disabled = false;
      return false;
    }
    notice.textContent = 'Too many failed sign-in attempts. Try again in ' + describe(remaining) + '.';
    if (button) button.disabled = true;
    return true;
  };
  if (!render()) return;
  const timer = setInterval(() => {
    remaining -= 1;
    if (!render()) clearInterval(timer);
  }, 1000);
})();
