import fs from 'node:fs';
import path from 'node:path';

/**
 * Copies a tree of plain files and directories (the embedded database's seed: ~1,200 files, most of
 * them a few kilobytes) to `to`, which must not exist, with each file's and directory's mode.
 *
 * Not `fs.cp`: for each file it stats the source and the destination several times and chmods the copy
 * again after `copyFile` (which already gives it the source's mode), one `await` at a time. On a slow
 * 2-vCPU VM that cost a first start 0.9–1.6 s of CPU against 0.45–1.2 s for this copy, nearly all of
 * it now the kernel's file creation, which no way of copying avoids. Synchronous on purpose: it runs
 * once, on a first start before the service listens, and a thread-pool round trip per file costs more
 * CPU than it frees the event loop for (the pool meanwhile generates the development keys).
 */
export function copyDirectorySync(from: string, to: string): void {
  makeDirectoryLike(from, to);
  for (const entry of fs.readdirSync(from, { recursive: true, withFileTypes: true })) {
    const source = path.join(entry.parentPath, entry.name);
    const target = path.join(to, path.relative(from, source));
    if (entry.isDirectory()) {
      makeDirectoryLike(source, target);
    } else if (entry.isFile()) {
      fs.copyFileSync(source, target);
    } else {
      throw new Error(`${source}: only files and directories are copied`);
    }
  }
}

function makeDirectoryLike(source: string, target: string): void {
  // `recursive`: whatever order the listing gives, a directory's parents exist before its files.
  fs.mkdirSync(target, { recursive: true });
  // mkdir's mode passes through the umask: the source's own mode, as fs.cp gave it.
  fs.chmodSync(target, fs.statSync(source).mode);
}
