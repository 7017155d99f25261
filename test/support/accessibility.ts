import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Page } from 'playwright-core';

const axeSource = fs.readFileSync(
  path.join(path.dirname(createRequire(import.meta.url).resolve('axe-core')), 'axe.min.js'),
  'utf8',
);

/**
 * The WCAG 2.1 A/AA and best-practice violations axe-core finds on the page as it is, in light and dark
 * colour schemes ("" when none), one line each.
 */
export async function accessibilityViolations(page: Page): Promise<string> {
  const lines: string[] = [];
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
    lines.push(...violations.map((violation) => `${scheme}: ${violation}`));
  }
  await page.emulateMedia({ colorScheme: 'light' });
  return lines.join('\n');
}
