import type { Provider } from 'oidc-provider';
import { z } from 'zod';

const loopbackHosts = new Set(['localhost', '127.0.0.1', '[::1]']);
/** RFC 8252 §7.1: a native app's private-use scheme is a reverse domain name (com.example.app). */
const privateUseScheme = /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/;

/**
 * Why a redirect URI may not be registered, or undefined when it may (RFC 9700 §2.1 and §4.1, RFC 8252
 * §7). Authorize compares redirect URIs as exact strings, so what is refused here is what would mislead
 * a reader of the client list or a URL parser along the way:
 *
 * - a wildcard `*` anywhere: it matches nothing at authorize, but reads as a pattern (RFC 9700 §4.1.1
 *   lists pattern matching as the cause of open redirectors);
 * - userinfo (`user:password@`): credentials in a URI, and the classic `https://trusted@evil/` disguise;
 * - white space, control characters and backslashes, which URL parsers drop or read as `/`;
 * - a fragment (RFC 6749 §3.1.2);
 * - anything but https, except http on a loopback host (RFC 8252 §7.3) and a reverse-domain private-use
 *   scheme for native apps (RFC 8252 §7.1).
 */
export function redirectUriProblem(value: string): string | undefined {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is looked for
  if (/[\s\x00-\x1f\x7f\\]/.test(value)) {
    return 'must not contain white space, control characters or backslashes';
  }
  if (value.includes('*')) return 'must not contain a wildcard (*): redirect URIs are matched exactly';
  const url = URL.parse(value);
  if (!url) return 'must be an absolute URL';
  if (url.username || url.password || authority(value)?.includes('@')) {
    return 'must not contain a user name or password (userinfo)';
  }
  if (url.hash || value.includes('#')) return 'must not have a fragment (#...)';
  if (url.protocol === 'https:' || (url.protocol === 'http:' && loopbackHosts.has(url.hostname))) {
    // Special schemes are parsed as if written `scheme://`; registered, they must be written so.
    return value.toLowerCase().startsWith(`${url.protocol}//`) ? undefined : 'must be an absolute URL';
  }
  if (privateUseScheme.test(url.protocol)) return undefined;
  return 'must use https (http only on localhost, 127.0.0.1 or [::1]; native apps: a reverse-domain scheme such as com.example.app:/callback)';
}

/** What stands between `scheme://` and the path, or undefined for a URI without an authority. */
function authority(value: string): string | undefined {
  return /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(value)?.[1];
}

const loopbackIpLiterals = new Set(['127.0.0.1', '[::1]']);

/**
 * A native app (RFC 8252) redirects to a private-use scheme or to http on a loopback IP literal; the
 * engine then matches its loopback redirect URIs with any port, as the app listens on whatever port is
 * free (§7.3: MUST), and asks for consent at every authorization, as any app on the device could claim
 * the redirect (§8.6). https on a loopback host is not a native app's (the engine refuses it for one):
 * a client registering it stays a web client, matched exactly.
 */
export function applicationTypeOf(redirectUris: readonly string[]): 'native' | 'web' {
  const urls = redirectUris.map((uri) => URL.parse(uri));
  const native = urls.some(
    (url) =>
      url !== null &&
      (!/^https?:$/.test(url.protocol) || (url.protocol === 'http:' && loopbackIpLiterals.has(url.hostname))),
  );
  const loopbackHttps = urls.some((url) => url?.protocol === 'https:' && loopbackHosts.has(url.hostname));
  return native && !loopbackHttps ? 'native' : 'web';
}

/**
 * Why a redirect or post-logout URI, each fine alone, can't be registered beside the client's redirect
 * URIs (which make it a web or a native app: applicationTypeOf), or undefined. The engine refuses to
 * load a web client with a private-use scheme, or a native one with https on a loopback host: such a
 * client was saved, and every authorization then failed.
 */
export function redirectUriUnfitFor(type: 'native' | 'web', value: string): string | undefined {
  const url = URL.parse(value);
  if (!url) return undefined;
  if (type === 'web' && !/^https?:$/.test(url.protocol)) {
    return 'a private-use scheme is a native app’s redirect, and this client’s https redirect URI on a loopback host makes it a web app: register one kind';
  }
  if (type === 'native' && url.protocol === 'https:' && loopbackHosts.has(url.hostname)) {
    return 'https on a loopback host is not a native app’s redirect (RFC 8252 §7.3: http on 127.0.0.1 or [::1]), and this client’s other redirect URIs make it a native app';
  }
  return undefined;
}

/** A redirect URI or post-logout redirect URI a client may register (the API and the CLI use it). */
export const redirectUriSchema = z
  .string()
  .max(2000)
  .superRefine((value, context) => {
    const problem = redirectUriProblem(value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  });

interface RedirectMatching {
  redirectUris?: string[];
  postLogoutRedirectUris?: string[];
  redirectUriAllowed(value: string): boolean;
  postLogoutRedirectUriAllowed(value: string): boolean;
}

/**
 * Authorize and logout match a native client's loopback IP redirect URIs with any port (RFC 8252 §7.3:
 * MUST), but the engine gives `localhost` that rule too. §7.3 asks it only of the IP literals, and §8.3
 * advises against `localhost`, which a hosts file or resolver may point elsewhere: a `localhost` URI is
 * matched exactly, port included, as every other URI is (docs/oauth.md).
 */
export function installExactLocalhostRedirects(provider: Provider): void {
  const prototype = provider.Client.prototype as unknown as RedirectMatching;
  const { redirectUriAllowed, postLogoutRedirectUriAllowed } = prototype;
  prototype.redirectUriAllowed = function (this: RedirectMatching, value: string) {
    return isLocalhost(value)
      ? (this.redirectUris ?? []).includes(value)
      : redirectUriAllowed.call(this, value);
  };
  prototype.postLogoutRedirectUriAllowed = function (this: RedirectMatching, value: string) {
    return isLocalhost(value)
      ? (this.postLogoutRedirectUris ?? []).includes(value)
      : postLogoutRedirectUriAllowed.call(this, value);
  };
}

function isLocalhost(value: string): boolean {
  return URL.parse(value)?.hostname === 'localhost';
}
