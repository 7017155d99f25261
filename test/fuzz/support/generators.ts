import fc from 'fast-check';

/** Text a caller might type or a fuzzer might throw: empty, long, unicode, control characters, injections. */
export const hostileText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '%00',
    "' or 1=1 --",
    '"; drop table users; --',
    '<script>alert(1)</script>',
    '../../etc/passwd',
    'null',
    'undefined',
    'NaN',
    '-1',
    '1e309',
    '__proto__',
    'constructor',
    '𝕏'.repeat(30),
    'a'.repeat(5000),
    '\ud800',
  ),
);

/** Any JSON value, nested a little; plus the prototype-pollution classics. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constant(JSON.parse('{"__proto__":{"polluted":true}}') as unknown) },
  { weight: 1, arbitrary: fc.constant({ constructor: { prototype: { polluted: true } } }) },
);

/** A value for a field: mostly of the wrong kind, sometimes one of the plausible ones. */
export function fieldValue<T>(plausible: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: plausible },
    { weight: 2, arbitrary: hostileText },
    { weight: 1, arbitrary: anyJson },
  );
}

/** An object with some of the given fields (each plausible or not) and perhaps some unknown ones. */
export function objectOf(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  const record = fc.record(
    Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, fieldValue(value)])),
    { requiredKeys: [] },
  );
  return fc.oneof(
    { weight: 6, arbitrary: record },
    {
      weight: 1,
      arbitrary: fc
        .tuple(record, fc.dictionary(hostileText, anyJson, { maxKeys: 3 }))
        .map(([known, extra]) => ({
          ...extra,
          ...(known as object),
        })),
    },
    { weight: 1, arbitrary: anyJson },
  );
}

/** A body as sent: JSON of the value, or bytes that are not JSON at all. */
export function rawJsonBody(value: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 8, arbitrary: value.map((body) => JSON.stringify(body) ?? 'null') },
    { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
    { weight: 1, arbitrary: fc.constantFrom('{', '{"a":', '[', '"', '{"a":1}}', '\u0000', '') },
  );
}

/** A form body (application/x-www-form-urlencoded) of some of the given fields, values plausible or not. */
export function formBody(fields: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<string> {
  const value = (plausible: fc.Arbitrary<string>) =>
    fc.oneof({ weight: 3, arbitrary: plausible }, { weight: 2, arbitrary: hostileText });
  return fc
    .tuple(
      fc.record(
        Object.fromEntries(Object.entries(fields).map(([key, plausible]) => [key, value(plausible)])),
        {
          requiredKeys: [],
        },
      ),
      fc.dictionary(hostileText, hostileText, { maxKeys: 2 }),
      fc.boolean(),
    )
    .map(([known, extra, duplicate]) => {
      const form = new URLSearchParams({ ...extra, ...(known as Record<string, string>) });
      // A parameter given twice is an error of its own in OAuth (RFC 6749 3.1).
      const first = [...form.keys()][0];
      if (duplicate && first !== undefined) form.append(first, form.get(first)!);
      return form.toString();
    });
}

/** A header value as a client might send it (printable ASCII: node refuses to send anything else). */
export const headerText = fc.string({ maxLength: 60 }).map((text) => text.replace(/[^\x20-\x7e]/g, ''));

/** An IP for X-Forwarded-For: one per input, so per-address rate limits don't turn every answer into a 429. */
export const forwardedIp = fc
  .tuple(fc.nat(255), fc.nat(255), fc.integer({ min: 1, max: 254 }))
  .map(([a, b, c]) => `10.${a}.${b}.${c}`);
