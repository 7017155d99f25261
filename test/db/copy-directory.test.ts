import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copyDirectorySync } from '../../src/db/copy-directory.js';

describe('copyDirectorySync (the embedded database seed onto a first start)', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'idp-copy-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('copies nested files and directories with their contents and modes', () => {
    const from = path.join(root, 'from');
    fs.mkdirSync(path.join(from, 'base', '5'), { recursive: true });
    fs.mkdirSync(path.join(from, 'pg_wal', 'archive_status'), { recursive: true });
    fs.writeFileSync(path.join(from, 'PG_VERSION'), '17\n');
    fs.writeFileSync(path.join(from, 'base', '5', '1259'), Buffer.alloc(8192, 7));
    fs.writeFileSync(path.join(from, 'base', '5', 'empty'), '');
    fs.chmodSync(path.join(from, 'PG_VERSION'), 0o600);
    fs.chmodSync(path.join(from, 'base'), 0o700);

    const to = path.join(root, 'to');
    copyDirectorySync(from, to);

    expect(fs.readFileSync(path.join(to, 'PG_VERSION'), 'utf8')).toBe('17\n');
    expect(fs.readFileSync(path.join(to, 'base', '5', '1259')).equals(Buffer.alloc(8192, 7))).toBe(true);
    expect(fs.statSync(path.join(to, 'base', '5', 'empty')).size).toBe(0);
    expect(fs.statSync(path.join(to, 'pg_wal', 'archive_status')).isDirectory()).toBe(true);
    expect(fs.statSync(path.join(to, 'PG_VERSION')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(to, 'base')).mode & 0o777).toBe(0o700);
    // The copy is its own: writing to it leaves the source as it was.
    fs.writeFileSync(path.join(to, 'PG_VERSION'), 'changed');
    expect(fs.readFileSync(path.join(from, 'PG_VERSION'), 'utf8')).toBe('17\n');
  });

  it('refuses what is neither a file nor a directory', () => {
    const from = path.join(root, 'from');
    fs.mkdirSync(from);
    fs.symlinkSync('/etc/passwd', path.join(from, 'link'));
    expect(() => copyDirectorySync(from, path.join(root, 'to'))).toThrow(/only files and directories/);
  });
});
