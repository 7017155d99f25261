/**
 * The speed targets are ratios to a floor or ceiling measured in the same run (the machine's
 * speed drifts; a ratio of two figures taken minutes apart on the same cores holds still). Each bench
 * script reports its rows here: printed at its end, and appended to BENCH_RATIOS_FILE when set, so that
 * `npm run bench` (bench/all.ts) can print every row of every script in one table.
 */
import fs from 'node:fs';
import os from 'node:os';

export interface FloorRatio {
  /** What is compared, e.g. "client_credentials ÷ bare engine". */
  figure: string;
  /** The measured value (a ratio, or an absolute figure where the target is one). */
  value: number;
  /** The figures it came from, for the reader (e.g. "2,448 vs 3,182 req/s; rounds 0.77 / 0.82"). */
  detail: string;
  /** "≥ 0.9", "≤ 1.5 ms"... */
  target: string;
  met: boolean;
}

export const atLeast = (
  figure: string,
  value: number,
  bound: number,
  detail: string,
  unit = '',
): FloorRatio => ({
  figure,
  value,
  detail,
  target: `≥ ${bound}${unit}`,
  met: value >= bound,
});

export const atMost = (
  figure: string,
  value: number,
  bound: number,
  detail: string,
  unit = '',
): FloorRatio => ({
  figure,
  value,
  detail,
  target: `≤ ${bound}${unit}`,
  met: value <= bound,
});

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

export const formatNumber = (value: number): string =>
  value >= 100 ? Math.round(value).toLocaleString('en-US') : String(Math.round(value * 100) / 100);

/** The machine as the rows were measured: cores, CPU, load (others' work on the same cores shows here). */
export function machineLine(): string {
  const cpus = os.cpus();
  const load = os
    .loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');
  return `${new Date().toISOString().slice(0, 16)}Z · ${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'} · ${Math.round(os.totalmem() / 2 ** 30)} GiB · Node ${process.version} · load average ${load}`;
}

export function ratioTable(rows: FloorRatio[]): string {
  const lines = [
    '| Figure | Measured | Target | Met | From |',
    '| --- | ---: | --- | --- | --- |',
    ...rows.map(
      (row) =>
        `| ${row.figure} | ${formatNumber(row.value)} | ${row.target} | ${row.met ? 'pass' : 'FAIL'} | ${row.detail} |`,
    ),
  ];
  return lines.join('\n');
}

/** Prints the rows (with the machine line) and hands them to bench/all.ts when it runs this script. */
export function reportRatios(rows: FloorRatio[]): void {
  console.log(`\n${machineLine()}\n\n${ratioTable(rows)}\n`);
  const file = process.env.BENCH_RATIOS_FILE;
  if (file) fs.appendFileSync(file, rows.map((row) => JSON.stringify(row)).join('\n') + '\n');
}
