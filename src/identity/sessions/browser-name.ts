import Bowser from 'bowser';

/**
 * A readable name for the browser of a user agent, for the session list ("Firefox on Linux"), parsed by
 * bowser (a maintained UA database) rather than by our own patterns. Empty when nothing is recognised.
 */
export function browserNameOf(userAgent: string): string {
  if (!userAgent) return '';
  try {
    const parsed = Bowser.parse(userAgent);
    const browser = parsed.browser.name;
    const os = parsed.os.name;
    if (browser && os) return `${browser} on ${os}`.slice(0, 100);
    return (browser ?? os ?? '').slice(0, 100);
  } catch {
    return '';
  }
}
