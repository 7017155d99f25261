// The show-password toggle: a real button (keyboard, screen readers) that switches the field between
// hidden and plain text. Hidden without script, where it could not work.
(function () {
  document.querySelectorAll('button[data-reveal]').forEach(function (button) {
    const input = document.getElementById(button.getAttribute('data-reveal'));
    if (!input) return;
    button.hidden = false;
    button.addEventListener('click', function () {
      const shown = input.type === 'text';
      input.type = shown ? 'password' : 'text';
      button.setAttribute('aria-pressed', String(!shown));
      button.textContent = button.getAttribute(shown ? 'data-show' : 'data-hide');
    });
  });
})();
