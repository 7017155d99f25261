// The management dashboards page: gets an access token with the refresh cookie (same site), reads the
// dashboard API with it, shows tables and Chart.js charts. No inline script (the page's CSP).
/* global Chart */
(function () {
  'use strict';
  var root = document.getElementById('dashboards');
  var lang = root.dataset.lang;
  // The path the service is mounted under ('' at the root).
  var base = root.dataset.base;
  var t = JSON.parse(root.dataset.messages);
  var form = document.getElementById('period');
  var charts = {};
  var accessToken = null;

  function show(id, visible) {
    document.getElementById(id).hidden = !visible;
  }

  function digitsOf(currency) {
    return new Intl.NumberFormat('en', { style: 'currency', currency: currency }).resolvedOptions()
      .maximumFractionDigits;
  }

  function money(amountMinor, currency) {
    return new Intl.NumberFormat(lang, { style: 'currency', currency: currency }).format(
      amountMinor / Math.pow(10, digitsOf(currency)),
    );
  }

  function integer(value) {
    return new Intl.NumberFormat(lang).format(value);
  }

  function percent(value) {
    return value === null
      ? '—'
      : new Intl.NumberFormat(lang, { style: 'percent', maximumFractionDigits: 1 }).format(value);
  }

  function time(iso) {
    return new Intl.DateTimeFormat(lang, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(
      new Date(iso),
    );
  }

  /** A month as 2026-11, in words: "November 2026". */
  function month(yearMonth) {
    return new Intl.DateTimeFormat(lang, { year: 'numeric', month: 'long', timeZone: 'UTC' }).format(
      new Date(yearMonth + '-01T00:00:00Z'),
    );
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

  /** A table: headers, then rows of cells; a cell is text or [text, data-testid]. */
  function table(headers, rows) {
    return element('table', {}, [
      element('thead', {}, [
        element(
          'tr',
          {},
          headers.map(function (header) {
            return element('th', {}, [header]);
          }),
        ),
      ]),
      element(
        'tbody',
        {},
        rows.map(function (row) {
          return element(
            'tr',
            {},
            row.map(function (cell) {
              return Array.isArray(cell)
                ? element('td', { 'data-testid': cell[1] }, [cell[0]])
                : element('td', {}, [cell]);
            }),
          );
        }),
      ),
    ]);
  }

  function fill(id, content) {
    var container = document.getElementById(id);
    container.replaceChildren(content);
  }

  function empty() {
    return element('p', { class: 'hint' }, [t.noData]);
  }

  function chart(id, config) {
    if (charts[id]) charts[id].destroy();
    charts[id] = new Chart(document.getElementById(id), config);
  }

  var refreshing = null;

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

  async function api(path) {
    for (var attempt = 0; attempt < 2; attempt += 1) {
      var token = accessToken || (accessToken = await refreshAccessToken());
      if (!token) return { signedOut: true };
      var response = await fetch(base + '/api/v2/management' + path, {
        headers: { authorization: 'Bearer ' + token },
      });
      if (response.status === 401) {
        // Expired: one refresh for all the calls that find out together.
        if (accessToken === token) accessToken = null;
        continue;
      }
      if (response.status === 403) return { forbidden: true };
      if (!response.ok) throw new Error(path + ' answered ' + response.status);
      return { body: await response.json() };
    }
    return { signedOut: true };
  }

  function renderFinance(finance) {
    var rows = finance.currencies.map(function (entry) {
      var c = entry.currency;
      var invoices = entry.invoices;
      return [
        c,
        [money(entry.revenue.amountMinor, c), 'revenue-' + c],
        [money(entry.refunds.amountMinor, c), 'refunds-' + c],
        [money(entry.netRevenueMinor, c), 'net-revenue-' + c],
        [money(entry.failedPayments.amountMinor, c), 'failed-payments-' + c],
        [
          integer(invoices.issued.count + invoices.paid.count + invoices.overdue.count) +
            ' (' +
            t.invoicesPaid +
            ' ' +
            integer(invoices.paid.count) +
            ', ' +
            t.invoicesOverdue +
            ' ' +
            integer(invoices.overdue.count) +
            ', ' +
            t.invoicesOpen +
            ' ' +
            integer(invoices.issued.count) +
            ')',
          'invoices-' + c,
        ],
      ];
    });
    fill(
      'finance-figures',
      rows.length
        ? table([t.currency, t.revenue, t.refunds, t.netRevenue, t.failedPayments, t.invoicesIssued], rows)
        : empty(),
    );
    var days = Array.from(
      new Set(
        finance.revenueByDay.map(function (point) {
          return point.day;
        }),
      ),
    ).sort();
    var currencies = Array.from(
      new Set(
        finance.revenueByDay.map(function (point) {
          return point.currency;
        }),
      ),
    ).sort();
    chart('revenue-chart', {
      type: 'bar',
      data: {
        labels: days,
        datasets: currencies.map(function (currency) {
          var byDay = {};
          finance.revenueByDay.forEach(function (point) {
            if (point.currency === currency)
              byDay[point.day] = point.amountMinor / Math.pow(10, digitsOf(currency));
          });
          return {
            label: t.revenue + ' ' + currency,
            data: days.map(function (day) {
              return byDay[day] || 0;
            }),
          };
        }),
      },
      options: { animation: false, responsive: true, maintainAspectRatio: false },
    });
    fill(
      'balance',
      finance.balance.currencies.length
        ? table(
            [t.currency, t.received, t.refunded, t.payoutsPaid, t.net, t.outstanding, t.overdue],
            finance.balance.currencies.map(function (entry) {
              var c = entry.currency;
              return [
                c,
                money(entry.receivedMinor, c),
                money(entry.refundedMinor, c),
                money(entry.payoutsPaidMinor, c),
                [money(entry.netMinor, c), 'balance-net-' + c],
                [money(entry.outstandingMinor, c), 'balance-outstanding-' + c],
                money(entry.overdueMinor, c),
              ];
            }),
          )
        : empty(),
    );
    fill(
      'payouts',
      finance.teacherPayouts.length
        ? table(
            [t.month, t.currency, t.approved, t.paid],
            finance.teacherPayouts.map(function (entry) {
              return [
                entry.month,
                entry.currency,
                money(entry.approved.amountMinor, entry.currency),
                [
                  money(entry.paid.amountMinor, entry.currency),
                  'payouts-paid-' + entry.month + '-' + entry.currency,
                ],
              ];
            }),
          )
        : empty(),
    );
  }

  function renderReconciliation(reconciliation) {
    // [test id, label, result]: what each line compares, in words.
    var parts = [
      ['sales', t.reconciliationSales, reconciliation.sales],
      ['balance', t.reconciliationBalance, reconciliation.balance],
    ].concat(
      reconciliation.teacherPayouts.map(function (entry) {
        return [
          'payouts-' + entry.month,
          t.reconciliationPayouts.replace('{month}', month(entry.month)),
          entry,
        ];
      }),
    );
    var container = element('div', {}, []);
    parts.forEach(function (part) {
      var name = part[0];
      var label = part[1];
      var result = part[2];
      var snapshot = result.snapshot;
      var state =
        snapshot.status === 'not_configured'
          ? t.notConfigured
          : snapshot.status === 'unavailable'
            ? t.noSnapshot
            : (snapshot.status === 'stale' ? t.stale : t.fresh).replace('{time}', time(snapshot.fetchedAt)) +
              ' ' +
              (result.status === 'matched' ? t.matched : t.differs);
      container.append(
        element(
          'p',
          {
            class: 'state ' + snapshot.status,
            'data-testid': 'reconciliation-' + name,
            'data-status': result.status,
            'data-snapshot': snapshot.status,
          },
          [label + ': ' + state],
        ),
      );
      var differing = result.differences.filter(function (row) {
        return row.difference !== 0;
      });
      if (differing.length) {
        container.append(
          table(
            [t.figure, t.currency, t.consumer, t.snapshot, t.difference],
            differing.map(function (row) {
              return [
                row.figure,
                row.currency || '',
                integer(row.consumer),
                integer(row.snapshot),
                integer(row.difference),
              ];
            }),
          ),
        );
      }
    });
    fill('reconciliation', container);
  }

  function wonText(amounts) {
    return (
      amounts
        .map(function (amount) {
          return money(amount.amountMinor, amount.currency);
        })
        .join(', ') || '—'
    );
  }

  function renderMarketing(marketing) {
    fill(
      'marketing',
      marketing.sources.length
        ? table(
            [t.source, t.leads, t.dealsCreated, t.dealsWon, t.dealsLost, t.wonAmount, t.conversion],
            marketing.sources.map(function (row) {
              return [
                row.source,
                [integer(row.leads), 'leads-' + row.source],
                integer(row.dealsCreated),
                [integer(row.dealsWon), 'won-' + row.source],
                integer(row.dealsLost),
                wonText(row.wonAmounts),
                percent(row.conversion),
              ];
            }),
          )
        : empty(),
    );
    chart('marketing-chart', {
      type: 'bar',
      data: {
        labels: marketing.sources.map(function (row) {
          return row.source;
        }),
        datasets: [
          {
            label: t.leads,
            data: marketing.sources.map(function (row) {
              return row.leads;
            }),
          },
          {
            label: t.dealsWon,
            data: marketing.sources.map(function (row) {
              return row.dealsWon;
            }),
          },
        ],
      },
      options: { animation: false, responsive: true, maintainAspectRatio: false },
    });
  }

  function renderSales(sales) {
    var rows = sales.owners.map(function (row) {
      return [
        row.ownerId,
        integer(row.dealsCreated),
        [integer(row.dealsWon), 'owner-won-' + row.ownerId],
        integer(row.dealsLost),
        wonText(row.wonAmounts),
        percent(row.conversion),
      ];
    });
    rows.push([
      t.total,
      [integer(sales.total.dealsCreated), 'sales-total-created'],
      [integer(sales.total.dealsWon), 'sales-total-won'],
      [integer(sales.total.dealsLost), 'sales-total-lost'],
      wonText(sales.total.wonAmounts),
      [percent(sales.total.conversion), 'sales-total-conversion'],
    ]);
    fill('sales', table([t.owner, t.dealsCreated, t.dealsWon, t.dealsLost, t.wonAmount, t.conversion], rows));
    chart('sales-chart', {
      type: 'bar',
      data: {
        labels: sales.owners.map(function (row) {
          return row.ownerId;
        }),
        datasets: [
          {
            label: t.dealsWon,
            data: sales.owners.map(function (row) {
              return row.dealsWon;
            }),
          },
          {
            label: t.dealsLost,
            data: sales.owners.map(function (row) {
              return row.dealsLost;
            }),
          },
        ],
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: { x: { stacked: true }, y: { stacked: true } },
      },
    });
  }

  async function load() {
    var query = '?from=' + encodeURIComponent(form.from.value) + '&to=' + encodeURIComponent(form.to.value);
    show('error', false);
    root.setAttribute('aria-busy', 'true');
    try {
      var answers = await Promise.all([
        api('/dashboards/finance' + query),
        api('/dashboards/finance/reconciliation' + query),
        api('/dashboards/marketing' + query),
        api('/dashboards/sales' + query),
      ]);
      var signedOut = answers.some(function (answer) {
        return answer.signedOut;
      });
      var forbidden = answers.some(function (answer) {
        return answer.forbidden;
      });
      show('signed-out', signedOut);
      show('forbidden', !signedOut && forbidden);
      if (signedOut || forbidden) {
        show('content', false);
        return;
      }
      show('content', true);
      renderFinance(answers[0].body);
      renderReconciliation(answers[1].body);
      renderMarketing(answers[2].body);
      renderSales(answers[3].body);
      root.dataset.loaded = form.from.value + '/' + form.to.value;
    } catch (error) {
      var message = document.getElementById('error');
      message.textContent = t.failed;
      show('error', true);
      console.error(error);
    } finally {
      root.removeAttribute('aria-busy');
    }
  }

  var params = new URLSearchParams(location.search);
  var today = new Date();
  var monthStart = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), 1));
  var nextMonth = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() + 1, 1));
  form.from.value = params.get('from') || monthStart.toISOString().slice(0, 10);
  form.to.value = params.get('to') || nextMonth.toISOString().slice(0, 10);
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var url = new URL(location.href);
    url.searchParams.set('from', form.from.value);
    url.searchParams.set('to', form.to.value);
    history.replaceState(null, '', url);
    load();
  });
  load();
})();
