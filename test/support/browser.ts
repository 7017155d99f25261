import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Pages are tested in Debian's chromium (`apt install chromium`), driven by playwright-core; no browser
 * is ever downloaded. CI installs it; on a machine without it, the page tests say so and don't run.
 */
export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const hasChromium = fs.existsSync(chromiumPath);
if (!hasChromium) {
  console.warn(
    `Browser tests need chromium at ${chromiumPath} (apt install chromium, or set CHROMIUM_PATH).`,
  );
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
