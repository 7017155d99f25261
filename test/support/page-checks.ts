import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';

const axeSource = fs.readFileSync(
  path.join(path.dirname(createRequire(import.meta.url).resolve('axe-core')), 'axe.min.js'),
  'utf8',
);

/**
 * axe-core (WCAG 2.1 A/AA and best practice) on the page as it is, in the light and the dark colour
 * scheme: zero violations, or the list of them. A screenshot of each goes to `artifacts`.
 */
export async function expectAccessible(page: Page, artifacts: string, name: string): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
      const result = await (
        globalThis as unknown as { axe: { run(o: unknown): Promise<{ violations: unknown[] }> } }
      ).axe.run({
        runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
      });
      return (result.violations as { id: string; nodes: { target: string[] }[] }[]).map(
        (violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
      );
    });
    await page.screenshot({ path: path.join(artifacts, `${name}-${scheme}.png`), fullPage: true });
    expect(violations.join('\n'), `${name} (${scheme})`).toBe('');
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/**
 * A fresh browser context where the relying party's addresses (http://localhost:8080) answer a tiny
 * page; on failure, the address, the page's text and a screenshot for the report.
 */
export async function withRelyingPartyPage<T>(
  browser: Browser,
  artifacts: string,
  run: (page: Page, context: BrowserContext) => Promise<T>,
  options: { javaScriptEnabled?: boolean; locale?: string } = {},
): Promise<T> {
  const context = await browser.newContext(options);
  await context.route('http://localhost:8080/**', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>relying party</h1>' }),
  );
  const page = await context.newPage();
  try {
    return await run(page, context);
  } catch (error) {
    const text = await page
      .locator('body')
      .innerText()
      .catch(() => '');
    await page.screenshot({ path: path.join(artifacts, 'failure.png') }).catch(() => undefined);
    throw new Error(`${(error as Error).message}\nat ${page.url()}:\n${text}`, { cause: error });
  } finally {
    await context.close();
  }
}
