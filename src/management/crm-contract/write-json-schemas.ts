import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { format } from 'prettier';
import { crmContractJsonSchemas } from './json-schemas.js';

/** Where the published JSON Schemas are committed. */
export const schemaDirectory = fileURLToPath(new URL('../../../docs/crm-contract/schemas/', import.meta.url));

/** Each schema file's text as committed (formatted like every JSON file of the repository). */
export async function jsonSchemaFileTexts(): Promise<Record<string, string>> {
  const texts: Record<string, string> = {};
  for (const [file, schema] of Object.entries(crmContractJsonSchemas())) {
    texts[file] = await format(JSON.stringify(schema), { parser: 'json', printWidth: 110 });
  }
  return texts;
}

// npm run crm-contract:schemas — rewrites docs/crm-contract/schemas from the zod schemas.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  await fs.rm(schemaDirectory, { recursive: true, force: true });
  for (const [file, text] of Object.entries(await jsonSchemaFileTexts())) {
    const target = path.join(schemaDirectory, file);
    await fs.mkdir(path.dirname(target), { recursive: true });
    await fs.writeFile(target, text);
  }
  console.warn(`wrote ${schemaDirectory}`);
}
