// The admin page of OAuth clients: gets an access token with the refresh cookie (same site) and manages
// the clients through the admin API (/api/v2/admin/oauth-clients). No inline script (the page's CSP).
(function () {
  'use strict';
  var root = document.getElementById('admin-clients');
  var lang = root.dataset.lang;
  // The path the service is mounted under ('' at the root).
  var base = root.dataset.base;
  var t = JSON.parse(root.dataset.messages);
  var accessToken = null;
  var refreshing = null;
  var editing = null;

  function say(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, name) {
      return values && values[name] !== undefined ? String(values[name]) : '';
    });
  }

  function show(id, visible) {
    document.getElementById(id).hidden = !visible;
  }

  function status(text, isError) {
    var node = document.getElementById('status');
    node.textContent = text;
    node.classList.toggle('error', Boolean(isError));
    node.hidden = !text;
  }

  function element(tag, attributes, children) {
    var node = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (name) {
      node.setAttribute(name, attributes[name]);
    });
    (children || []).forEach(function (child) {
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    });
    return node;
  }

  // One refresh at a time: the refresh token rotates, and presenting the old one again (a second call
  // racing the first) would count as its theft and end the session.
  function refreshAccessToken() {
    refreshing =
      refreshing ||
      fetch(base + '/api/v2/identity/auth/refresh', { method: 'POST', credentials: 'same-origin' })
        .then(function (response) {
          if (response.status === 401) return null;
          if (!response.ok) throw new Error('refresh answered ' + response.status);
          return response.json().then(function (body) {
            return body.accessToken;
          });
        })
        .finally(function () {
          refreshing = null;
        });
    return refreshing;
  }

  /** Calls the admin API; answers { status, body } or one of { signedOut, forbidden, reauthenticate }. */
  async function api(method, path, body) {
    for (var attempt = 0; attempt < 2; attempt += 1) {
      var token = accessToken || (accessToken = await refreshAccessToken());
      if (!token) return { signedOut: true };
      var headers = { authorization: 'Bearer ' + token };
      if (body !== undefined) headers['content-type'] = 'application/json';
      var response = await fetch(base + '/api/v2/admin/oauth-clients' + path, {
        method: method,
        headers: headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      var text = await response.text();
      var parsed = text ? JSON.parse(text) : {};
      if (response.status === 401 && parsed.error === 'reauthentication_required')
        return { reauthenticate: true };
      if (response.status === 401) {
        // Expired: one refresh for all the calls that find out together.
        if (accessToken === token) accessToken = null;
        continue;
      }
      // Refused a reading: no permission to manage clients at all. Refused a change: this change is
      // beyond the user's permissions (a first-party client, a permission they do not hold).
      if (response.status === 403 && method === 'GET') return { forbidden: true };
      return { status: response.status, body: parsed };
    }
    return { signedOut: true };
  }

  /** Shows what an answer that is not a success means; true when it was one. */
  function handled(answer) {
    show('signed-out', Boolean(answer.signedOut));
    show('forbidden', Boolean(answer.forbidden));
    show('reauthenticate', Boolean(answer.reauthenticate));
    if (answer.signedOut || answer.forbidden) show('content', false);
    if (answer.signedOut || answer.forbidden || answer.reauthenticate) return false;
    if (answer.status === 403) {
      status(say(t.notAllowed, { reason: answer.body.message || '' }), true);
      return false;
    }
    if (answer.status >= 400) {
      var problems = (Array.isArray(answer.body.details) ? answer.body.details : [])
        .map(function (detail) {
          return detail.path ? detail.path + ': ' + detail.message : detail.message;
        })
        .join('; ');
      status(problems ? say(t.invalid, { problems: problems }) : answer.body.message || t.failed, true);
      return false;
    }
    return true;
  }

  function lines(text) {
    return text
      .split(/\s*\n\s*/)
      .map(function (line) {
        return line.trim();
      })
      .filter(Boolean);
  }

  function words(text) {
    return text.split(/\s+/).filter(Boolean);
  }

  function checked(form, name) {
    return Array.prototype.slice
      .call(form.querySelectorAll('input[name="' + name + '"]:checked'))
      .map(function (input) {
        return input.value;
      });
  }

  function showSecret(client) {
    if (!client.client_secret) {
      show('secret', false);
      return;
    }
    document.getElementById('secret-notice').textContent = say(t.secretNotice, { name: client.name });
    document.getElementById('secret-value').textContent = client.client_secret;
    show('secret', true);
    document.getElementById('secret').scrollIntoView();
  }

  function date(iso) {
    return new Intl.DateTimeFormat(lang, { dateStyle: 'medium', timeZone: 'UTC' }).format(new Date(iso));
  }

  function button(label, className, onClick, testId) {
    var node = element('button', { type: 'button', class: className, 'data-testid': testId }, [label]);
    node.addEventListener('click', onClick);
    return node;
  }

  function row(client) {
    var actions = [
      button(
        t.edit,
        'secondary',
        function () {
          openEditor(client);
        },
        'edit',
      ),
      button(
        client.is_active ? t.disable : t.enable,
        'secondary',
        function () {
          change(
            'POST',
            '/' + encodeURIComponent(client.client_id) + (client.is_active ? '/disable' : '/enable'),
            client,
          );
        },
        client.is_active ? 'disable' : 'enable',
      ),
    ];
    if (client.type === 'confidential') {
      actions.push(
        button(
          t.rotateSecret,
          'secondary',
          function () {
            if (!window.confirm(say(t.confirmRotate, { name: client.name }))) return;
            change('POST', '/' + encodeURIComponent(client.client_id) + '/rotate-secret', client);
          },
          'rotate-secret',
        ),
      );
    }
    actions.push(
      button(
        t.delete,
        'danger',
        function () {
          if (!window.confirm(say(t.confirmDelete, { name: client.name }))) return;
          change('DELETE', '/' + encodeURIComponent(client.client_id), client);
        },
        'delete',
      ),
    );
    return element('tr', { 'data-client-id': client.client_id }, [
      element('td', { 'data-testid': 'name' }, [client.name]),
      element('td', {}, [element('code', {}, [client.client_id])]),
      element('td', { 'data-testid': 'status' }, [client.is_active ? t.active : t.disabled]),
      element('td', {}, [element('time', { datetime: client.created_at }, [date(client.created_at)])]),
      element('td', {}, [element('div', { class: 'buttons' }, actions)]),
    ]);
  }

  async function load() {
    var answer = await api('GET', '?limit=100');
    if (!handled(answer)) return;
    var rows = document.getElementById('rows');
    rows.replaceChildren.apply(
      rows,
      answer.body.clients.length > 0
        ? answer.body.clients.map(row)
        : [element('tr', {}, [element('td', { colspan: '5' }, [t.none])])],
    );
    document.getElementById('count').textContent = say(t.count, {
      shown: answer.body.clients.length,
      total: answer.body.total,
    });
    show('content', true);
    root.dataset.loaded = String(Date.now());
  }

  async function change(method, path, client, body) {
    var answer = await api(method, path, body);
    if (!handled(answer)) return false;
    status(
      say(method === 'DELETE' ? t.deleted : t.saved, {
        name: (answer.body && answer.body.name) || client.name,
      }),
    );
    showSecret(answer.body || {});
    await load();
    return true;
  }

  function openEditor(client) {
    editing = client;
    var form = document.getElementById('edit-form');
    document.getElementById('editor-title').textContent = say(t.editTitle, { name: client.name });
    form.elements.name.value = client.name;
    form.elements.redirect_uris.value = client.redirect_uris.join('\n');
    form.elements.scopes.value = client.allowed_scopes.join(' ');
    form.querySelectorAll('input[name="grant_types"]').forEach(function (input) {
      input.checked = client.grant_types.indexOf(input.value) >= 0;
    });
    show('editor', true);
    form.elements.name.focus();
  }

  document.getElementById('edit-cancel').addEventListener('click', function () {
    editing = null;
    show('editor', false);
  });

  document.getElementById('edit-form').addEventListener('submit', async function (event) {
    event.preventDefault();
    if (!editing) return;
    var form = event.target;
    var saved = await change('PATCH', '/' + encodeURIComponent(editing.client_id), editing, {
      name: form.elements.name.value,
      redirect_uris: lines(form.elements.redirect_uris.value),
      scopes: words(form.elements.scopes.value),
      grant_types: checked(form, 'grant_types'),
    });
    if (saved) {
      editing = null;
      show('editor', false);
    }
  });

  document.getElementById('create-form').addEventListener('submit', async function (event) {
    event.preventDefault();
    var form = event.target;
    var answer = await api('POST', '', {
      name: form.elements.name.value,
      type: form.elements.type.value,
      redirect_uris: lines(form.elements.redirect_uris.value),
      scopes: words(form.elements.scopes.value),
      grant_types: checked(form, 'grant_types'),
    });
    if (!handled(answer)) return;
    status(say(t.created, { name: answer.body.name }));
    showSecret(answer.body);
    form.reset();
    await load();
  });

  load().catch(function () {
    status(t.failed, true);
  });
})();
